# The new rows of a batch read in C (delta_scan.c, cq.delta_scan_in_c on)
# by the worker of a trigger '0' query while writers commit and roll back
# concurrently (issue 12 goal 3, session 39): every row folded exactly once.
#   - three writers (CqTest's cq_write: 1..40-row transactions, 20 % rolled
#     back) and, from the test, transactions with subtransactions (one
#     rolled back to its savepoint) and prepared transactions: the query's
#     rows equal the GROUP BY once it caught up;
#   - a prepared transaction's rows, in the same pages as rows committed
#     after it, are left out of the batches that run while it is prepared
#     and folded once after COMMIT PREPARED (ROLLBACK PREPARED: never);
#   - the worker read the rows in C (its DEBUG1 line in the server log).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $db = 'postgres';
my $node = cq_node('delta_scan_writers', 'cq.delta_scan_in_c = on', 'max_prepared_transactions = 4',
	'log_min_messages = debug1');
$node->safe_psql($db, writers_sql() . q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE live WITH (cq.output_mode = 'update')
	  AS SELECT w, k, date_bin('1 minute', ts, '2000-01-01') AS m, count(*) AS n, sum(v) AS s, max(v) AS hi
	       FROM ev WHERE NOT late GROUP BY 1, 2, 3;
});
my $oracle = q{SELECT w, k, date_bin('1 minute', ts, '2000-01-01'), count(*), sum(v), max(v)
	FROM ev WHERE NOT late GROUP BY 1, 2, 3};
my $oracle_own = q{SELECT w, k, date_bin('1 minute', ts, '2000-01-01'), count(*), sum(v), max(v)
	FROM ev WHERE NOT late AND w >= 10 GROUP BY 1, 2, 3};
is($node->safe_psql($db, "SELECT state_storage FROM cq.queries WHERE name = 'live'"), 'memory',
	'the query is on the store');
like($node->safe_psql($db, q{SET cq.delta_scan_in_c = on; SELECT cq.explain('live')}),
	qr/read in C \(cq\.delta_scan_in_c\)/, 'cq.explain: its batches read the new rows in C');

my @writers = map { start_writer($node, $db, "CALL cq_write($_, 400, 40, 20, 0)") } (1, 2, 3);
for my $round (1 .. 6)
{
	# subtransactions: the part rolled back to the savepoint is never folded
	$node->safe_psql($db, qq{
		BEGIN;
		INSERT INTO ev (id, w, k, ts, v) SELECT nextval('ev_id'), 10, g % 3, clock_timestamp(), g FROM generate_series(1, 20) g;
		SAVEPOINT a;
		INSERT INTO ev (id, w, k, ts, v) SELECT nextval('ev_id'), 11, g % 3, clock_timestamp(), g FROM generate_series(1, 20) g;
		ROLLBACK TO SAVEPOINT a;
		SAVEPOINT b;
		INSERT INTO ev (id, w, k, ts, v) SELECT nextval('ev_id'), 12, g % 3, clock_timestamp(), g FROM generate_series(1, 20) g;
		RELEASE SAVEPOINT b;
		COMMIT;
		BEGIN;
		INSERT INTO ev (id, w, k, ts, v) SELECT nextval('ev_id'), 20, g % 3, clock_timestamp(), g FROM generate_series(1, 50) g;
		PREPARE TRANSACTION 'p$round';
	});
	# batches run while it is prepared (rows committed after it, in its pages)
	$node->safe_psql($db, qq{INSERT INTO ev (id, w, k, ts, v) SELECT nextval('ev_id'), 21, g % 3, clock_timestamp(), g FROM generate_series(1, 30) g});
	wait_caught_up($node, $db, 'ev', "with p$round prepared", 'live');
	# the test's own rows only (w >= 10): the writers go on committing
	# after the wait, and their groups may be ahead of the target by then
	is($node->safe_psql($db, qq{SELECT count(*) FROM
		(($oracle_own EXCEPT ALL SELECT * FROM live WHERE w >= 10)
		 UNION ALL (SELECT * FROM live WHERE w >= 10 EXCEPT ALL $oracle_own)) x}),
		'0', "round $round: the prepared rows left out");
	$node->safe_psql($db, $round % 3 == 0 ? "ROLLBACK PREPARED 'p$round'" : "COMMIT PREPARED 'p$round'");
}
$node->safe_psql($db, 'INSERT INTO cq_stop VALUES (true)');
ok(end_writers($node, $db, @writers), 'the writers ended');
wait_caught_up($node, $db, 'ev', 'after the writers', 'live');
is(mismatches($node, $db, $oracle, 'live'), '0', 'every committed row folded once');
is($node->safe_psql($db, q{SELECT count(*) FILTER (WHERE w = 11) = 0 AND count(*) FILTER (WHERE w = 20) = 200
	AND count(*) FILTER (WHERE w BETWEEN 1 AND 3) > 0 FROM ev}), 't',
	'the source: rolled-back subtransactions and prepared transactions absent, writers present');
my $log = slurp_file($node->logfile);
ok($log =~ /new rows of "ev" read in C/, 'the worker read the new rows in C');
unlike($log, qr/PANIC|server process .* was terminated/, 'no crash');

done_testing();
