# A pool worker started for a CALL cq.run warms up for that call's query
# while it is idle (src/warm.c), so that the next call of the query, handed
# to it, does not pay the worker's first batch (bench/README.md, "Cold
# first batch").  Checked:
#   1. the first CALL finds no worker (runs in-process) and the worker the
#      scheduler starts for it warms up for that query: it builds the
#      analysis and SQL, reads the target's index and touches the store;
#   2. the next CALL, from a new session (pg_cron's way), goes to that
#      worker, whose batch builds no analysis or SQL (its cache is warm),
#      although every table was analyzed and vacuumed meanwhile and other
#      tables created (autovacuum is on);
#   3. the target matches the plain query after each call;
#   4. a new query run by CALLs (available_now, CREATE TABLE ... AS) is
#      warmed up for by an idle worker at once, which its first call goes to;
#   5. a warm-up of a query dropped meanwhile is no error (DEBUG1 at most).
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

# autovacuum on (session 33): its ANALYZE or VACUUM of a table, the query's
# own included, no longer drops a cached analysis (plan_deps.c); before, it
# dropped every backend's and made a call rebuild by chance
my $node = cq_node('warm_worker', 'log_min_messages = debug1', q{log_line_prefix = '%m [%p] '},
	'autovacuum_naptime = 1s', 'autovacuum_analyze_threshold = 10', 'autovacuum_vacuum_insert_threshold = 10');
my $oracle = 'SELECT k, count(*) AS n, sum(v) AS s FROM src GROUP BY k';

$node->safe_psql('postgres', qq{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE src (k int, v int);
  INSERT INTO src SELECT i % 50, i FROM generate_series(1, 5000) i;
  SELECT cq.create_query('q', '$oracle', output_mode => 'update', "trigger" => 'available_now');
});
my $id = $node->safe_psql('postgres', q{SELECT id FROM cq.queries WHERE name = 'q'});
my $diff = qq{SELECT count(*) FROM ((TABLE q EXCEPT ALL $oracle) UNION ALL ($oracle EXCEPT ALL TABLE q)) x};

# the pids of the log lines matching re, from log offset $from
sub log_pids
{
	my ($from, $re) = @_;
	my $log = slurp_file($node->logfile, $from);
	my @pids;
	push @pids, $1 while $log =~ /\[(\d+)\] DEBUG:  $re/g;
	return @pids;
}

# 1. no worker yet: the first CALL runs in-process and asks for one, which
#    warms up for q
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_cq worker'}), '0', 'no worker before the first call');
my $off = -s $node->logfile;
$node->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('q')");
ok($node->wait_for_log(qr/pg_cq: worker warmed up for continuous query $id in [0-9.]+ ms: [1-9]\d* blocks, [1-9]\d* store rows/, $off),
	'the worker started for the call warmed up for its query (index blocks read, store rows touched)');
my ($warm_pid) = log_pids($off, qr/pg_cq: worker warmed up for continuous query $id /);
ok(grep({ $_ == $warm_pid } log_pids($off, qr/pg_cq: analysis and SQL of continuous query $id built/)),
	'the warm-up built the analysis and SQL');
is($node->safe_psql('postgres', $diff), '0', 'target matches the plain query after the first call');

# 2. the next call, in a new session, goes to the warmed-up worker and
#    builds nothing
$node->safe_psql('postgres', 'INSERT INTO src SELECT i % 60, i FROM generate_series(1, 3000) i');
# what autovacuum and other sessions do meanwhile does not cool the worker
# down: ANALYZE and VACUUM of every table (the query's own too), a temporary
# table, a new table (session 32: any of them dropped its cached analysis)
$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  ANALYZE; VACUUM src; VACUUM q;
  CREATE TEMP TABLE scratch (x int); CREATE TABLE unrelated (x int); ANALYZE unrelated;
});
$off = -s $node->logfile;
my $out = $node->safe_psql('postgres', qq{
  SET client_min_messages = debug1;
  CALL cq.run('q');
  SELECT pg_backend_pid();
});
my ($caller) = $out =~ /(\d+)\s*\z/;
ok($node->wait_for_log(qr/\[$warm_pid\] DEBUG:  pg_cq: store fold/, $off),
	'the call was handed to the warmed-up worker');
is(scalar(log_pids($off, qr/pg_cq: analysis and SQL of continuous query $id built/)), 0,
	'no analysis or SQL built for the handed-off call (neither worker nor caller)');
isnt($caller, $warm_pid, 'the caller is not the worker');
is($node->safe_psql('postgres', $diff), '0', 'target matches the plain query after the handed-off call');

# 3. a later call, again a new session: still the same worker, still correct
$node->safe_psql('postgres', 'INSERT INTO src SELECT i % 70, -i FROM generate_series(1, 2000) i');
$off = -s $node->logfile;
$node->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('q')");
ok($node->wait_for_log(qr/\[$warm_pid\] DEBUG:  pg_cq: store fold/, $off), 'the next call went to the same worker');
is($node->safe_psql('postgres', $diff), '0', 'target matches the plain query');

# 4. a new query run by CALLs, with an idle worker in the pool: that
#    worker warms up for it at once, and its first call builds nothing
$off = -s $node->logfile;
$node->safe_psql('postgres', qq{
  SET client_min_messages = warning;
  CREATE TABLE src3 (k int, v int);
  INSERT INTO src3 SELECT i % 9, i FROM generate_series(1, 900) i;
  CREATE TABLE q3 WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
    SELECT k, count(*) AS n, sum(v) AS s FROM src3 GROUP BY k;
});
my $id3 = $node->safe_psql('postgres', q{SELECT id FROM cq.queries WHERE name = 'q3'});
ok($node->wait_for_log(qr/\[$warm_pid\] DEBUG:  pg_cq: worker warmed up for continuous query $id3 in [0-9.]+ ms: [1-9]\d* blocks, [1-9]\d* store rows/, $off),
	'the idle worker warmed up for the new query');
$node->safe_psql('postgres', 'INSERT INTO src3 SELECT i % 11, i FROM generate_series(1, 500) i');
$off = -s $node->logfile;
$node->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('q3')");
# (whether that call rebuilds the analysis depends on invalidations this
# test does not control: the first INSERT after CREATE TABLE ... AS sends one)
ok($node->wait_for_log(qr/\[$warm_pid\] DEBUG:  pg_cq: store fold/, $off), 'its first call went to that worker');
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM ((TABLE q3 EXCEPT ALL SELECT k, count(*), sum(v) FROM src3 GROUP BY k) UNION ALL (SELECT k, count(*), sum(v) FROM src3 GROUP BY k EXCEPT ALL TABLE q3)) x}),
	'0', 'q3 matches its query');

# 5. a worker started for a query that is dropped before it warms up:
#    the warm-up finds no query, no error; the worker stays usable
$node->safe_psql('postgres', qq{
  SET client_min_messages = warning;
  CREATE TABLE src2 (k int, v int);
  INSERT INTO src2 SELECT i % 5, i FROM generate_series(1, 100) i;
  SELECT cq.create_query('q2', 'SELECT k, count(*) AS n FROM src2 GROUP BY k', output_mode => 'update', "trigger" => 'available_now');
  SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'pg_cq worker';
});
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'pg_cq worker'}), 'worker gone');
$off = -s $node->logfile;
$node->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('q2'); SELECT cq.drop_query('q2', drop_target => true);");
ok($node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'pg_cq worker' AND coalesce(state, 'idle') = 'idle'}),
	'a worker was started for the call');
$node->safe_psql('postgres', 'INSERT INTO src SELECT 1, 1');
$node->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('q')");
is($node->safe_psql('postgres', $diff), '0', 'the worker serves calls after a warm-up of a dropped query');
unlike(slurp_file($node->logfile, $off), qr/(LOG|WARNING|ERROR):  pg_cq: warm-up/,
	'a warm-up that found the query dropped logs nothing above DEBUG1');

$node->stop;
done_testing();
