# Issue 9, background workers:
#  - item 22: an idle query costs (almost) nothing, even with trigger
#    '1 microsecond': the scheduler skips ticks with nothing new instead of
#    running a batch transaction each time (it burnt ~0.9 core);
#  - item 23: pg_cancel_backend() of a worker is a retry, not a failure (the
#    query went 'failed' with backoff); a cancel between batches is ignored;
#  - item 13: workers run READ COMMITTED whatever the database's default
#    (they failed under repeatable read).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCrash;
use POSIX ();
use Time::HiRes qw(time sleep);

my $node = PostgreSQL::Test::Cluster->new('worker_rules');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq'
max_worker_processes = 20
cq.naptime = 1000
cq.max_workers = 2
});
$node->start;
my $db = 'postgres';

$node->safe_psql($db, q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE idle_src (k int);
	CREATE TABLE idle_q WITH (cq.output_mode = 'update', cq."trigger" = '1 microsecond')
	  AS SELECT k, count(*) AS n FROM idle_src GROUP BY k;
	CREATE TABLE c_src (k int);
	CREATE TABLE c_q WITH (cq.output_mode = 'update') AS SELECT k, count(*) AS n FROM c_src GROUP BY k;
});

sub pg_cq_pids
{
	my ($dbname) = @_;
	my $pids = $node->safe_psql($dbname, q{
		SELECT string_agg(pid::text, ' ' ORDER BY pid) FROM pg_stat_activity
		 WHERE backend_type IN ('pg_cq scheduler', 'pg_cq worker') AND datname = current_database()});
	return split(/ /, $pids);
}

# --- item 22: CPU of the scheduler and workers while nothing happens
$node->safe_psql($db, 'INSERT INTO idle_src VALUES (1)');
ok($node->poll_query_until($db, 'SELECT sum(n) = 1 FROM idle_q'), 'the 1-microsecond query runs');
my $clk = POSIX::sysconf(POSIX::_SC_CLK_TCK());
sub cpu_seconds
{
	my $ticks = 0;
	for my $pid (@_)
	{
		open(my $fh, '<', "/proc/$pid/stat") or die "cannot read /proc/$pid/stat: $!";
		my $stat = <$fh>;
		close($fh);
		$stat =~ s/^.*\) //;                # after "pid (comm) "
		my @f = split(/ /, $stat);
		$ticks += $f[11] + $f[12];          # utime, stime (fields 14 and 15)
	}
	return $ticks / $clk;
}
my @pids = pg_cq_pids($db);
cmp_ok(scalar(@pids), '>=', 2, 'a scheduler and a worker run');
my ($t0, $c0) = (time(), cpu_seconds(@pids));
sleep(3);                                   # the measured window
my ($t1, $c1) = (time(), cpu_seconds(@pids));
my $share = ($c1 - $c0) / ($t1 - $t0);
note(sprintf('scheduler and workers used %.3f s of CPU in %.2f s', $c1 - $c0, $t1 - $t0));
cmp_ok($share, '<', 0.05, 'an idle 1-microsecond query uses under 5% of a core');
$node->safe_psql($db, 'INSERT INTO idle_src VALUES (1), (2)');
ok($node->poll_query_until($db, 'SELECT sum(n) = 3 FROM idle_q'), 'a commit still wakes it');

# --- item 23: a canceled batch is retried, the query stays active
ok($node->poll_query_until($db, q{
	SELECT count(*) >= 1 FROM pg_stat_activity WHERE backend_type = 'pg_cq worker' AND state = 'idle'}),
	'a worker is idle');
my $idle_worker = $node->safe_psql($db, q{
	SELECT min(pid) FROM pg_stat_activity WHERE backend_type = 'pg_cq worker' AND state = 'idle'});
is($node->safe_psql($db, "SELECT pg_cancel_backend($idle_worker)"), 't', 'cancel an idle worker');
$node->safe_psql($db, 'INSERT INTO c_src VALUES (1)');
ok($node->poll_query_until($db, 'SELECT sum(n) = 1 FROM c_q'), 'batches run after the cancel');
is($node->safe_psql($db, "SELECT count(*) FROM pg_stat_activity WHERE pid = $idle_worker"), '1',
	'a cancel between batches leaves the worker running');

# hold the target: the next batch of c_q waits for the lock
my $holder = $node->background_psql($db);
$holder->query_safe('BEGIN; LOCK TABLE c_q IN ACCESS EXCLUSIVE MODE;');
$node->safe_psql($db, 'INSERT INTO c_src VALUES (1), (2)');
my $waiting = q{
	SELECT pid || ' ' || extract(epoch FROM xact_start) FROM pg_stat_activity
	 WHERE backend_type = 'pg_cq worker' AND wait_event_type = 'Lock' AND query LIKE '%"c_q"%'};
ok($node->poll_query_until($db, "SELECT EXISTS ($waiting)"), 'a batch of c_q waits for the lock');
my ($pid, $start) = split(/ /, $node->safe_psql($db, $waiting));
is($node->safe_psql($db, "SELECT pg_cancel_backend($pid)"), 't', "cancel worker $pid in the batch");
ok($node->poll_query_until($db, qq{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'pg_cq worker' AND wait_event_type = 'Lock' AND query LIKE '%"c_q"%'
	   AND extract(epoch FROM xact_start) > $start}),
	'the batch is retried (and waits again)');
is($node->safe_psql($db, "SELECT state || ' ' || coalesce(last_error, 'no error') FROM cq.queries WHERE name = 'c_q'"),
	'active no error', 'the canceled batch did not fail the query');
$holder->query_safe('COMMIT');
$holder->quit;
ok($node->poll_query_until($db, 'SELECT sum(n) = 3 FROM c_q'), 'the retried batch completes exactly');
is($node->safe_psql($db, "SELECT count(*) FROM c_q WHERE k = 1 AND n = 2"), '1', 'no row counted twice');

# --- item 13: a database whose sessions default to repeatable read.  A
# worker's batch waits for the query's row lock while another session
# changes the query (cq.alter_query updates its catalog row): with a
# transaction snapshot the worker then failed with "could not serialize
# access due to concurrent update" (or, after another batch, read stale
# offsets).
$node->safe_psql($db, q{
	CREATE DATABASE rr;
	ALTER DATABASE rr SET default_transaction_isolation = 'repeatable read';
});
$node->safe_psql('rr', q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE src (k int);
	CREATE TABLE per_k WITH (cq.output_mode = 'update') AS SELECT k, count(*) AS n FROM src GROUP BY k;
	INSERT INTO src VALUES (1), (2);
});
ok($node->poll_query_until('rr', 'SELECT sum(n) = 2 FROM per_k'), 'workers run in a repeatable-read database');
my $log_offset = -s $node->logfile;
my $alter = $node->background_psql('rr');
$alter->query_safe(q{BEGIN; SELECT cq.alter_query('per_k', "trigger" => '0');});
$node->safe_psql('rr', 'INSERT INTO src VALUES (1), (3)');
ok($node->poll_query_until('rr', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'pg_cq worker' AND wait_event_type = 'Lock' AND datname = current_database()}),
	'a batch waits for the row lock held by cq.alter_query');
$alter->query_safe('COMMIT');
$alter->quit;
ok($node->poll_query_until('rr', 'SELECT sum(n) = 4 FROM per_k'), 'the batch completes after the change');
is($node->safe_psql('rr', q{SELECT state || ' ' || coalesce(last_error, 'no error') FROM cq.queries}),
	'active no error', 'the query is active');
ok(!$node->log_contains(qr/ERROR:  could not serialize access/, $log_offset),
	'the batch did not fail (a failure was retried after a backoff before)');
is($node->safe_psql('rr', q{SELECT count(*) FROM (SELECT k, count(*) FROM src GROUP BY k EXCEPT SELECT k, n FROM per_k) x}),
	'0', 'the aggregate is exact');

$node->stop;
done_testing();
