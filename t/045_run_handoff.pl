# CALL cq.run hands its batches to an idle pool worker (cq.run_in_worker,
# src/handoff.c).  With a batch blocked on the target's lock (another
# session holds it), checked:
#   1. the hand-off happens: the worker waits for the lock, on a call that
#      names the caller's pid, and the caller waits for the worker;
#   2. pg_cancel_backend of the caller: the caller gets the cancel, and when
#      it returns the worker's batch is already gone (rolled back); the
#      query is not 'failed'; a later call counts every row once;
#   3. statement_timeout of the caller: the same;
#   4. the worker terminated mid-call: the caller gets a clear error
#      (SQLSTATE 08006), nothing is counted twice;
#   5. the only worker busy (cq.max_workers = 1): another CALL runs
#      in-process at once rather than waiting;
#   6. a pg_cron-style loop: a new session per CALL with rows inserted
#      between them, the target checked against the plain query each time.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('run_handoff');
my $oracle = 'SELECT k, count(*) AS n, sum(v) AS s FROM src GROUP BY k';

$node->safe_psql('postgres', qq{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE src (k int, v int);
  INSERT INTO src SELECT i % 7, i FROM generate_series(1, 1000) i;
  SELECT cq.create_query('q', '$oracle', output_mode => 'update', "trigger" => 'available_now');
  CREATE TABLE src2 (k int, v int);
  SELECT cq.create_query('q2', 'SELECT k, count(*) AS n FROM src2 GROUP BY k',
                         output_mode => 'update', "trigger" => 'available_now');
});

# an idle worker: the first CALL asks the scheduler for one
$node->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('q')");
ok($node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'pg_cq worker' AND coalesce(state, 'idle') = 'idle'}),
	'a CALL that found no idle worker got one started');

my $batches = "SELECT count(*) FROM cq.offsets WHERE name = 'q'";
my $state = "SELECT state || coalesce(' ' || last_error, '') FROM cq.queries WHERE name = 'q'";

# start a CALL of q in a background session while the target is locked;
# returns (locker, caller, caller's pid, worker's pid) once the worker waits
sub blocked_call
{
	my ($setup) = @_;
	my $locker = $node->background_psql('postgres');
	$locker->query_safe('BEGIN; LOCK TABLE q IN ACCESS EXCLUSIVE MODE;');
	$node->safe_psql('postgres', 'INSERT INTO src SELECT i % 7, i FROM generate_series(1, 100) i');
	my $caller = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $caller->query_safe('SELECT pg_backend_pid()');
	$caller->query_until(qr/started/, qq{
  SET client_min_messages = warning;
  $setup
  \\echo started
  CALL cq.run('q');
  \\echo done
});
	ok($node->poll_query_until('postgres', qq{
	  SELECT count(*) = 1 FROM pg_stat_activity
	   WHERE backend_type = 'pg_cq worker' AND wait_event_type = 'Lock'
	     AND query = 'pg_cq: CALL cq.run(''q'') for PID $pid'}),
		'the batch runs in a worker, for the caller, and waits for the lock');
	my $worker = $node->safe_psql('postgres', qq{
	  SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_cq worker'
	     AND query = 'pg_cq: CALL cq.run(''q'') for PID $pid'});
	return ($locker, $caller, $pid, $worker);
}

# nobody but the locker holds or waits for a lock on the target
my $target_locks = q{SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
  WHERE c.relname = 'q' AND l.pid <> %d};

# 1. the hand-off, and its end
my $before = $node->safe_psql('postgres', $batches);
my ($locker, $caller, $pid, $worker) = blocked_call('');
is($node->safe_psql('postgres', "SELECT wait_event_type || ':' || wait_event FROM pg_stat_activity WHERE pid = $pid"),
	'Extension:Extension', 'the caller waits for the worker');
# a caller that wrote nothing let its transaction go before it waits: no
# snapshot of it holds back vacuum during the call
is($node->safe_psql('postgres', "SELECT backend_xmin IS NULL AND backend_xid IS NULL FROM pg_stat_activity WHERE pid = $pid"),
	't', 'the waiting caller holds no snapshot');
$locker->query_safe('COMMIT;');
$caller->query_until(qr/done/, '');
is($node->safe_psql('postgres', $batches), $before + 1, '1: one batch');
is(mismatches($node, 'postgres', $oracle, 'q'), '0', '1: the target is the query');
$caller->quit;
$locker->quit;

# an interrupted call (2-4): the caller's error, then no trace of the
# batch (checked at once when the caller returned: no poll), the query
# not failed, and the next call counts every row once
sub interrupted
{
	my ($label, $interrupt, $setup, $error) = @_;
	my $before = $node->safe_psql('postgres', $batches);
	my ($locker, $caller, $pid, $worker) = blocked_call($setup);
	my $lpid = $locker->query_safe('SELECT pg_backend_pid()');
	$node->safe_psql('postgres', $interrupt->($pid, $worker)) if $interrupt;
	$caller->query_until(qr/done/, '');
	is($node->safe_psql('postgres', sprintf($target_locks, $lpid)), '0',
		"$label: when the caller returns, the worker holds and waits for nothing");
	like($caller->{stderr}, $error, "$label: the caller's error");
	is($node->safe_psql('postgres', $state), 'active', "$label: the query is not failed");
	is($node->safe_psql('postgres', $batches), $before, "$label: the batch rolled back");
	$locker->query_safe('COMMIT;');
	$node->safe_psql('postgres', "CALL cq.run('q')");
	is(mismatches($node, 'postgres', $oracle, 'q'), '0', "$label: the next call counts every row once");
	$caller->quit;
	$locker->quit;
}

# 2. cancel of the caller
interrupted('2 (cancel)', sub { "SELECT pg_cancel_backend($_[0])" }, '',
	qr/canceling statement due to user request/);
# 3. statement_timeout of the caller
interrupted('3 (statement_timeout)', undef, "SET statement_timeout = '2s';",
	qr/canceling statement due to statement timeout/);
# 4. the worker terminated mid-call: a clear error with a hint
interrupted('4 (worker terminated)', sub { "SELECT pg_terminate_backend($_[1])" }, '\\set VERBOSITY verbose',
	qr/ERROR:  08006: lost the pg_cq worker running continuous query "q" for this call.*HINT:  Call cq.run again/s);

# 5. the only worker busy: another CALL does not wait for it
$node->safe_psql('postgres', 'ALTER SYSTEM SET cq.max_workers = 1; SELECT pg_reload_conf();');
ok($node->poll_query_until('postgres', q{
  SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_cq worker'}),
	'5: one worker left');
# it may have been stopped and none started yet: a call asks for one
$node->safe_psql('postgres', "CALL cq.run('q')");
ok($node->poll_query_until('postgres', q{
  SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_cq worker' AND coalesce(state, 'idle') = 'idle'}),
	'5: the worker is idle');
($locker, $caller, $pid, $worker) = blocked_call('');
$node->safe_psql('postgres', 'INSERT INTO src2 SELECT i % 3 FROM generate_series(1, 30) i');
my $other = $node->background_psql('postgres');
my $opid = $other->query_safe('SELECT pg_backend_pid()');
$other->query_safe("SET client_min_messages = warning; CALL cq.run('q2')");
is(mismatches($node, 'postgres', 'SELECT k, count(*) AS n FROM src2 GROUP BY k', 'q2'), '0',
	'5: the other CALL ran while the only worker was busy');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'pg_cq: CALL cq.run(''q2'') for PID $opid'"),
	'0', '5: in its own process');
$other->quit;
$locker->query_safe('COMMIT;');
$caller->query_until(qr/done/, '');
$caller->quit;
$locker->quit;
$node->safe_psql('postgres', 'ALTER SYSTEM RESET cq.max_workers; SELECT pg_reload_conf();');

# 6. pg_cron style: a new session per CALL, rows inserted between them
my ($served, $exact) = (0, 0);
for my $i (1 .. 20)
{
	$node->safe_psql('postgres', "INSERT INTO src SELECT (i * $i) % 11, i FROM generate_series(1, 50 + $i) i");
	my $cpid = $node->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('q'); SELECT pg_backend_pid();");
	$exact++ if mismatches($node, 'postgres', $oracle, 'q') eq '0';
	$served++ if $node->safe_psql('postgres', qq{
	  SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_cq worker'
	     AND query = 'pg_cq: CALL cq.run(''q'') for PID $cpid'}) eq '1';
}
is($exact, 20, '6: the target equals the query after every call');
cmp_ok($served, '>=', 18, "6: the calls ran in a worker ($served of 20)");

$node->stop;
done_testing();
