# CALL cq.run in a database where no scheduler runs yet (session 32,
# src/handoff.c).  A call that finds no idle worker runs its batches itself
# at once (it never waits for a worker) and asks for a worker for the next
# call.  When the database had no scheduler (a new database whose only
# queries are called: available_now), that request was dropped, so calls
# alone never got a worker; now it waits in the database's slot and the
# scheduler starts the worker when it comes up.
#
# "No scheduler yet" is made deterministic by stopping the launcher (SIGSTOP)
# before the database is created, so nothing can start its scheduler until
# the launcher goes on (SIGCONT).  Every wait polls with a deadline.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('handoff_fresh_db');

ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_cq launcher'}),
	'the launcher runs');
my $launcher = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_cq launcher'});
ok(kill('STOP', $launcher), 'the launcher is stopped');

$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE src (k int, v int);
	INSERT INTO src SELECT i % 5, i FROM generate_series(1, 100) i;
	SELECT cq.create_query('q', 'SELECT k, count(*) AS n, sum(v) AS s FROM src GROUP BY k',
	                       output_mode => 'update', "trigger" => 'available_now');
});
my $pool = q{SELECT count(*) FROM pg_stat_activity
  WHERE backend_type IN ('pg_cq scheduler', 'pg_cq worker') AND datname = 'fresh'};
is($node->safe_psql('postgres', $pool), '0', 'no scheduler and no worker in the new database');

# the first call: in the caller's process, at once
my ($ret, $out, $err) = $node->psql('fresh', "SET client_min_messages = warning; CALL cq.run('q')");
is($ret, 0, 'the first CALL completes without a worker') or diag($err);
is($node->safe_psql('fresh', 'SELECT sum(n) FROM q'), '100', 'and counts every row');
is($node->safe_psql('postgres', $pool), '0', 'still no scheduler (the launcher is stopped)');

# the launcher goes on: it starts the scheduler, which starts a worker for
# the next call (no other query wants one)
ok(kill('CONT', $launcher), 'the launcher goes on');
ok($node->poll_query_until('fresh', q{
	SELECT count(*) > 0 FROM pg_stat_activity
	 WHERE backend_type = 'pg_cq worker' AND datname = 'fresh' AND coalesce(state, 'idle') = 'idle'}),
	'the first CALL got a worker started for the next one');

# the next call is handed to it
$node->safe_psql('fresh', 'INSERT INTO src SELECT i % 5, i FROM generate_series(101, 150) i');
($ret, $out, $err) = $node->psql('fresh', q{
	SET client_min_messages = warning;
	SELECT pg_backend_pid();
	CALL cq.run('q');
});
is($ret, 0, 'the second CALL completes') or diag($err);
is($node->safe_psql('fresh', qq{
	SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_cq worker'
	   AND query = 'pg_cq: CALL cq.run(''q'') for PID $out'}), '1', 'in the worker');
is($node->safe_psql('fresh', 'SELECT sum(n), sum(s) FROM q'), '150|11325', 'every row once');

$node->stop;
done_testing();
