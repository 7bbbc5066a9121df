# Soak (issue 5, "Done when"): for SOAK_SECONDS (default 60) two writers
# insert random batches with some rollbacks and a few late rows, a third
# keeps transactions open while others commit (out-of-order commits), and
# workers are terminated now and then; nine queries in every output mode
# run with triggers '0' and '1 second'.  Then the writers stop, the queries
# catch up, and every target must equal its plain SELECT oracle (append:
# the closed windows exactly once; late rows never appear).  The
# aggregations keep their state in the shared-memory store (the default).
# bench/soak.sh runs this for 10+ minutes.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use CqTest;

my $seconds = $ENV{SOAK_SECONDS} || 60;
my $node = cq_node('soak');
my $db = 'postgres';

$node->safe_psql($db, writers_sql() . q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	-- a transaction that takes its xid, stays open while others commit, then
	-- inserts (its rows are not late in event time: ts is taken at the end)
	CREATE PROCEDURE cq_long(wr int) LANGUAGE plpgsql AS $$
	BEGIN
	  LOOP
	    EXIT WHEN EXISTS (SELECT 1 FROM cq_stop);
	    PERFORM pg_current_xact_id();
	    PERFORM pg_sleep(0.1 + random() * 0.5);
	    INSERT INTO ev (id, w, k, ts, v)
	    SELECT s, wr, s % 5, clock_timestamp(), (s % 1000) / 7.0
	      FROM (SELECT nextval('ev_id') AS s FROM generate_series(1, 1 + floor(random() * 20)::int)) x;
	    COMMIT;
	  END LOOP;
	END $$;
	CALL cq_write(1, 50, 20, 0, 0);
} . all_modes_sql());

my $t0 = time();
my @writers = (
	start_writer($node, $db, 'CALL cq_write(1, 1000000000, 50, 10, 1)'),
	start_writer($node, $db, 'CALL cq_write(2, 1000000000, 20, 10, 1)'),
	start_writer($node, $db, 'CALL cq_long(3)'));

# let it run; every 10 s terminate a worker (its batch rolls back and runs again)
my $terminated = 0;
my $next_chaos = time() + 10;
while (time() < $t0 + $seconds)
{
	usleep(200_000);
	if (time() >= $next_chaos)
	{
		$terminated += $node->safe_psql($db, q{
			SELECT count(pg_terminate_backend(pid)) FROM (
			  SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_cq worker'
			   ORDER BY random() LIMIT 1) x});
		$next_chaos += 10;
	}
}
$node->safe_psql($db, 'INSERT INTO cq_stop VALUES (true)');
# the writers' backends end their loops at cq_stop: wait for them (a
# signalled psql leaves its CALL running, which could commit rows after the
# caught-up check below)
ok(end_writers($node, $db, @writers), 'writers finished');
my $write_seconds = time() - $t0;

wait_caught_up($node, $db, 'ev', 'after the soak', @ALL_MODES);
my $total_seconds = time() - $t0;
check_all_modes($node, $db, 'after the soak');

is($node->safe_psql($db, q{SELECT count(*) FROM cq.queries WHERE state <> 'active'}), '0',
	'every query is active');
# the aggregations ran on the shared-memory store (the default), and stayed there
is($node->safe_psql($db, q{SELECT string_agg(name || ':' || state_path, ',' ORDER BY name) FROM cq.queries WHERE state_storage = 'memory'}),
	'a_tick:memory,a_zero:memory,c_tick:memory,c_zero:memory,u_tick:memory,u_zero:memory,uw_zero:memory',
	'the unlogged aggregations kept their state in the shared-memory store');
my ($rows, $late, $writers_seen) = split(/\|/, $node->safe_psql($db,
	'SELECT count(*), count(*) FILTER (WHERE late), count(DISTINCT w) FROM ev'));
ok($late > 0, "late rows were written ($late)");
is($writers_seen, '3', 'all three writers wrote');
my $batches = $node->safe_psql($db, 'SELECT sum(n) FROM (SELECT max(batch_id) + 1 AS n FROM cq.offsets GROUP BY name) x');
my $per_query = $node->safe_psql($db,
	q{SELECT string_agg(name || '=' || n, ' ' ORDER BY name) FROM (SELECT name, max(batch_id) + 1 n FROM cq.offsets GROUP BY name) x});
my $dropped = $node->safe_psql($db,
	q{SELECT coalesce(sum(num_rows_dropped_by_watermark), 0) FROM cq.progress WHERE name = 'a_zero'});
diag(sprintf('soak: %d s of writes, caught up after %.1f s; %d rows (%d late), %d batches (%s); '
		  . '%d workers terminated; late rows dropped by a_zero in its last 100 batches: %d; %s',
		$write_seconds, $total_seconds - $write_seconds, $rows, $late, $batches, $per_query,
		$terminated, $dropped, Test::More->builder->is_passing ? 'mismatches=0' : 'MISMATCHES'));

$node->stop;
# a worker that crashed was restarted and the checks above may still pass
no_crashes($node, 'during the soak');
done_testing();
