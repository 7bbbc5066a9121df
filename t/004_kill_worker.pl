# kill -9 of a pg_cq worker in the middle of a batch (issue 5, "Done when"):
# the postmaster crash-restarts (every unlogged state is emptied), the
# interrupted batch left nothing behind, the next batches rebuild the state
# exactly, and once the writers stop and the queries catch up every target
# equals the plain SELECT oracle (append: every closed window exactly once).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('kill_worker');
my $db = 'postgres';

# a batch of q_slow that meets a row with v = -1 sleeps in the query
$node->safe_psql($db, writers_sql() . q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE FUNCTION slow(x numeric) RETURNS numeric LANGUAGE plpgsql AS $$
	BEGIN
	  IF x < 0 THEN PERFORM pg_sleep(3); END IF;
	  RETURN x;
	END $$;
	CALL cq_write(1, 20, 20, 0, 0, true);
	CREATE TABLE q_slow WITH (cq.output_mode = 'update')
	  AS SELECT k, count(*) AS n, sum(slow(v)) AS s FROM ev GROUP BY k;
	CREATE TABLE q_upd WITH (cq.output_mode = 'update', cq.trigger = '1 second')
	  AS SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a, min(ts) AS first FROM ev GROUP BY k;
	CREATE TABLE q_all WITH (cq.output_mode = 'complete')
	  AS SELECT k, max(v) AS m, count(*) AS n FROM ev GROUP BY k;
	CREATE TABLE q_win WITH (cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '200 milliseconds')
	  AS SELECT w.window_start, w.window_end, count(*) AS n, sum(v) AS s
	       FROM ev, LATERAL cq.window(ts, '100 milliseconds') AS w GROUP BY 1, 2;
	CREATE TABLE q_rows WITH (cq.output_mode = 'append') AS SELECT id, k, v FROM ev;
});
my @queries = qw(q_slow q_upd q_all q_win q_rows);

sub check_oracles
{
	my ($what) = @_;
	is(mismatches($node, $db, 'SELECT k, count(*), sum(v) FROM ev GROUP BY k', 'q_slow'), '0',
		"update target (slow query) equals the oracle $what");
	is(mismatches($node, $db, 'SELECT k, count(*), sum(v), avg(v), min(ts) FROM ev GROUP BY k', 'q_upd'), '0',
		"update target (interval trigger) equals the oracle $what");
	is(mismatches($node, $db, 'SELECT k, max(v), count(*) FROM ev GROUP BY k', 'q_all'), '0',
		"complete target equals the oracle $what");
	my $wm = $node->safe_psql($db, "SELECT watermark FROM cq.offsets WHERE name = 'q_win' ORDER BY batch_id DESC LIMIT 1");
	is(mismatches($node, $db,
			"SELECT w.window_start, w.window_end, count(*), sum(v)
			   FROM ev, LATERAL cq.window(ts, '100 milliseconds') AS w GROUP BY 1, 2 HAVING w.window_end <= '$wm'",
			'q_win'), '0', "append target holds every closed window exactly once $what");
	is($node->safe_psql($db, 'SELECT count(*) = count(DISTINCT window_start) AND count(*) > 0 FROM q_win'), 't',
		"closed windows were appended, none twice $what");
	is(mismatches($node, $db, 'SELECT id, k, v FROM ev', 'q_rows'), '0',
		"stateless append target holds every row exactly once $what");
}

$node->safe_psql($db, 'CALL cq_write(1, 30, 20, 10, 0, true)');
wait_caught_up($node, $db, 'ev', 'before the kill', @queries);
check_oracles('before the kill');

# a transaction with the slow row; catch q_slow's worker sleeping in it
$node->safe_psql($db, q{
	INSERT INTO ev (id, w, k, ts, v)
	SELECT nextval('ev_id'), 1, 2, '2024-01-01'::timestamptz + currval('ev_id') * interval '1 millisecond', -1;
	CALL cq_write(1, 5, 20, 0, 0, true);
});
my $pid;
ok($node->poll_query_until($db, q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'pg_cq worker' AND state = 'active'
	   AND query LIKE '%"q_slow"%' AND wait_event = 'PgSleep'}),
	'a worker is in the middle of a batch of q_slow');
$pid = $node->safe_psql($db, q{
	SELECT pid FROM pg_stat_activity
	 WHERE backend_type = 'pg_cq worker' AND state = 'active' AND query LIKE '%"q_slow"%'});
my $batches_before = $node->safe_psql($db, "SELECT count(*) FROM cq.offsets WHERE name = 'q_slow'");
# the postmaster reinitializes: wait for it to accept connections again
ok(kill_and_restart($node, $db, $pid), "kill -9 of worker $pid: server is back after the crash-restart");
is($node->safe_psql($db, "SELECT count(*) FROM cq.offsets WHERE name = 'q_slow'"), $batches_before,
	'the interrupted batch left no offset');
ok($node->log_contains(qr/terminated by signal 9/), 'the postmaster saw the killed worker');

# more rows after the restart, in windows that were open at the crash
$node->safe_psql($db, 'CALL cq_write(2, 30, 20, 10, 0, true)');
wait_caught_up($node, $db, 'ev', 'after the crash-restart', @queries);
check_oracles('after the crash-restart');
is($node->safe_psql($db, q{
	SELECT count(*) FROM cq.queries WHERE name IN ('q_slow', 'q_upd', 'q_all', 'q_win') AND state_rebuilt_at IS NOT NULL}),
	'4', 'every stateful query rebuilt its lost state');
ok($node->log_contains(qr/rebuilt lost state of continuous query "q_slow"/), 'the rebuild is logged');

$node->stop;
done_testing();
