# kill -9 of the postmaster while two writers insert and queries in all three
# output modes run, with triggers '0' and '1 second' (issue 5, "Done when").
# After the restart (crash recovery: unlogged state emptied, uncommitted
# batches and writes lost) the queries catch up by themselves, and every
# target equals the plain SELECT oracle over the rows that were committed
# (append: every closed window exactly once).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('crash_pm');
my $db = 'postgres';

$node->safe_psql($db, writers_sql() . q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CALL cq_write(1, 50, 20, 0, 0, true);
} . all_modes_sql());

for my $round (1 .. 2)
{
	# two writers, random batches, 10% rollbacks; event time on the synthetic
	# clock (1 ms per row), so windows close within the test's seconds
	my @writers = map { start_writer($node, $db, "CALL cq_write($_, 1000000, 30, 10, 0, true)") } (1, 2);

	# wait until every query ran batches over the writers' rows (in the last
	# second) and the append queries have emitted closed windows
	my $rows0 = $node->safe_psql($db, 'SELECT count(*) FROM ev');
	ok($node->poll_query_until($db, qq{
		SELECT (SELECT count(*) FROM ev) > $rows0 + 3000
		   AND EXISTS (SELECT 1 FROM a_zero) AND EXISTS (SELECT 1 FROM a_tick)
		   AND (SELECT count(DISTINCT name) FROM cq.offsets
		         WHERE name IN (SELECT name FROM cq.queries) AND committed_at > now() - interval '1 second'
		           AND batch_id > 1) = 9}),
		"round $round: writers insert, every query runs batches, windows close");

	my $log_offset = -s $node->logfile;
	ok(crash_restart($node, $db), "round $round: restarted after kill -9 of the postmaster");
	stop_writers(@writers);
	ok($node->log_contains(qr/database system was not properly shut down; automatic recovery in progress/, $log_offset),
		"round $round: the restart ran crash recovery");

	# a little more after the restart, then catch up
	$node->safe_psql($db, 'CALL cq_write(3, 20, 20, 10, 0, true)');
	wait_caught_up($node, $db, 'ev', "after crash $round", @ALL_MODES);
	check_all_modes($node, $db, "after crash $round");
}
is($node->safe_psql($db, q{
	SELECT count(*) FROM cq.queries WHERE state_rebuilt_at IS NOT NULL AND name <> 'u_logged'}),
	'7', 'every query with unlogged state rebuilt it');
is($node->safe_psql($db, "SELECT count(*) FROM cq.queries WHERE state_storage = 'memory'"),
	'7', 'the unlogged ones kept it in the shared-memory store (the default), lost and rebuilt');
# u_logged (state_storage 'logged') is in the store too, its image logged:
# restored from it after each crash, never refolded from the whole source
is($node->safe_psql($db, "SELECT state_path FROM cq.queries WHERE name = 'u_logged'"),
	'memory: logged image', 'the logged query is on the store with a logged image');
ok($node->log_contains(qr/restored lost state of continuous query "u_logged" from its image/),
	'logged state was restored from its image');
ok(!$node->log_contains(qr/rebuilt lost state of continuous query "u_logged"/),
	'logged state was not rebuilt from the source');
note('rows: ' . $node->safe_psql($db, 'SELECT count(*) FROM ev')
	  . ', batches: ' . $node->safe_psql($db, 'SELECT count(*) FROM cq.offsets'));

$node->stop;
done_testing();
