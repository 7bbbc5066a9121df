# d's bitmap heap scan of the source without the recheck of the cq_xid
# range (issue 12 goal 4, session 35: delta_plan.c).  The range [$1, $2)
# bounds the BRIN scan and is implied by the filter cq.xid_new(cq_xid, $3,
# $4), so the plan of a batch's d statement on the store drops it:
#   - d's plan (auto_explain, nested statements, in the session: the
#     hand-off off) is a bitmap heap scan of the source with the filter
#     and no "Recheck Cond"; a user's own statement with the same
#     predicates keeps its recheck;
#   - rows of a transaction still in progress at a batch (a prepared
#     transaction: its rows sit in the same pages as the batch's new rows)
#     are left out of that batch and folded by the next one after its
#     commit, once: after every batch the target equals the GROUP BY, for
#     the generic plan (the first batches) and the custom plan alike, and
#     for the rows read in C (cq.delta_scan_in_c, delta_scan.c) alike.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('delta_recheck');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq'
max_worker_processes = 16
max_prepared_transactions = 4
});
$node->start;

my $q = q{SELECT k, count(*) AS n, sum(v) AS s FROM src GROUP BY k};
$node->safe_psql('postgres', qq{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE src (k int, v int) WITH (autovacuum_enabled = off);
	INSERT INTO src SELECT g % 7, g FROM generate_series(1, 1000) g;
	CREATE TABLE agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $q;
});
is($node->safe_psql('postgres', "SELECT state_storage FROM cq.queries WHERE name = 'agg'"), 'memory',
	'the query is on the store');

my $same = qq{SELECT (SELECT count(*) FROM (SELECT * FROM agg EXCEPT ALL SELECT * FROM ($q) x) d)
	+ (SELECT count(*) FROM (SELECT * FROM ($q) x EXCEPT ALL SELECT * FROM agg) d)};
for my $round (1 .. 8)
{
	my $lo = 1000 * $round;
	# odd rounds read the new rows in C (delta_scan.c), even ones by d's statement
	my $call = 'SET cq.run_in_worker = off; SET enable_seqscan = off; SET cq.delta_scan_in_c = '
	  . ($round % 2 ? 'on' : 'off') . "; CALL cq.run('agg');";
	# rows of a transaction left in progress, then rows committed after it
	$node->safe_psql('postgres', qq{BEGIN; INSERT INTO src SELECT g % 5, g FROM generate_series($lo, $lo + 99) g;
		PREPARE TRANSACTION 'p$round';});
	$node->safe_psql('postgres', qq{INSERT INTO src SELECT g % 3, g FROM generate_series($lo + 100, $lo + 399) g});
	$node->safe_psql('postgres', $call);
	is($node->safe_psql('postgres', $same), '0', "round $round: the batch leaves the prepared rows out");
	$node->safe_psql('postgres', "COMMIT PREPARED 'p$round'");
	$node->safe_psql('postgres', $call);
	is($node->safe_psql('postgres', $same), '0', "round $round: the next batch folds them, once");
}

# d's plan, logged by auto_explain in the session (the statement: the rows
# not read in C)
$node->safe_psql('postgres', q{INSERT INTO src SELECT g % 3, g FROM generate_series(20000, 20299) g});
my ($rc, $out, $err) = $node->psql('postgres', q{
	LOAD 'auto_explain';
	SET auto_explain.log_min_duration = 0;
	SET auto_explain.log_nested_statements = on;
	SET client_min_messages = log;
	SET cq.run_in_worker = off;
	SET cq.delta_scan_in_c = off;
	SET enable_seqscan = off;
	CALL cq.run('agg');
});
my ($plan) = $err =~ /(Bitmap Heap Scan on (?:public\.)?src.*?)(?:\nLOG:|\z)/s;
ok(defined $plan, "d's plan is a bitmap heap scan of the source") or diag($err);
like($plan // '', qr/Filter: cq\.xid_new\(/, 'filtered by cq.xid_new');
unlike($plan // '', qr/Recheck Cond/, 'without the recheck of the range');
is($node->safe_psql('postgres', $same), '0', 'and the target equals the GROUP BY');

my $user = $node->safe_psql('postgres', q{SET enable_seqscan = off;
	EXPLAIN SELECT count(*) FROM src WHERE cq_xid >= '3'::xid8 AND cq_xid < '100000'::xid8
	AND cq.xid_new(cq_xid, '100000:100000:'::pg_snapshot, '3:3:'::pg_snapshot)});
like($user, qr/Recheck Cond/, "a user's statement with the same predicates keeps its recheck");

done_testing();
