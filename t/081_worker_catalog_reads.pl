# A long-lived worker's per-batch catalog reads (session 33): the column
# numbers of cq.queries and of the directly written cq.offsets row are
# cached per backend (colmap.c) and dropped when another backend's ALTER
# TABLE invalidates the table; a batch whose changed groups all exist runs
# the target statement without o1 (CqStoreSql.sink_existing).  One worker
# (cq.max_workers = 1), so every batch below runs in the same process:
#   - new groups, then existing groups only (a NULL key among them), then a
#     target row deleted by hand: after each, the target equals the GROUP BY;
#   - ALTER TABLE ... SET (cq.max_rows_per_trigger = 3) between batches
#     (the query paused while 10 one-row transactions commit): the next
#     batches read at most 3 rows each;
#   - cq.queries' timezone column renamed and a new one added with
#     'America/New_York' (another backend's DDL): the worker's next batch
#     runs in New York time, and the offset row's state_rows, renamed and
#     re-added likewise, is written into the new column.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = CqTest::cq_node('worker_catalog_reads', 'cq.max_workers = 1', "TimeZone = 'UTC'");
my $q = q{SELECT date_trunc('day', ts) AS d, count(*) AS n, sum(v) AS s FROM src GROUP BY 1};
$node->safe_psql('postgres', qq{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE src (ts timestamptz, v int);
	CREATE TABLE agg WITH (cq.output_mode = 'update', cq.trigger = '0') AS $q;
});
is($node->safe_psql('postgres', "SELECT state_path FROM cq.queries WHERE name = 'agg'"), 'memory',
	'the query is on the store');

my $differ = qq{SELECT (SELECT count(*) FROM (SELECT * FROM agg EXCEPT SELECT * FROM ($q) x) a)
	+ (SELECT count(*) FROM (SELECT * FROM ($q) x EXCEPT SELECT * FROM agg) b)};

sub step
{
	my ($what, $sql) = @_;
	$node->safe_psql('postgres', $sql);
	CqTest::wait_caught_up($node, 'postgres', 'src', $what, 'agg');
	is($node->safe_psql('postgres', $differ), '0', "$what: the target equals the GROUP BY");
}

step('new groups', q{INSERT INTO src VALUES ('2026-01-01 12:00+00', 1), ('2026-01-02 12:00+00', 2), (NULL, 3)});
step('existing groups', q{INSERT INTO src VALUES ('2026-01-01 13:00+00', 10), (NULL, 30)});
step('a deleted target row',
	q{DELETE FROM agg WHERE d = '2026-01-02 00:00+00'; INSERT INTO src VALUES ('2026-01-02 13:00+00', 20)});

# an option changed between batches of the same worker
my $last = $node->safe_psql('postgres', "SELECT max(batch_id) FROM cq.offsets WHERE name = 'agg'");
# (paused meanwhile, so that the 10 one-row transactions wait for the batches)
$node->safe_psql('postgres', "SELECT cq.pause('agg')");
$node->safe_psql('postgres', 'ALTER TABLE agg SET (cq.max_rows_per_trigger = 3)');
$node->safe_psql('postgres', join(";\n", map {
	"INSERT INTO src VALUES ('2026-01-01 14:00+00'::timestamptz + interval '$_ second', $_)" } 1 .. 10));
step('after max_rows_per_trigger = 3', "SELECT cq.resume('agg')");
is($node->safe_psql('postgres',
		"SELECT count(*) >= 4 AND max(num_input_rows) <= 3 FROM cq.progress WHERE name = 'agg' AND batch_id > $last"),
	't', 'the worker read the new max_rows_per_trigger: batches of at most 3 rows');
$node->safe_psql('postgres', 'ALTER TABLE agg SET (cq.max_rows_per_trigger = 0)');

# columns renamed and re-added by another backend
$node->safe_psql('postgres', q{
	BEGIN;
	ALTER TABLE cq.queries RENAME COLUMN timezone TO timezone_old;
	ALTER TABLE cq.queries ADD COLUMN timezone text NOT NULL DEFAULT 'America/New_York';
	ALTER TABLE cq.offsets RENAME COLUMN state_rows TO state_rows_old;
	ALTER TABLE cq.offsets ALTER COLUMN state_rows_old DROP NOT NULL;
	ALTER TABLE cq.offsets ALTER COLUMN state_rows_old DROP DEFAULT;
	ALTER TABLE cq.offsets ADD COLUMN state_rows bigint;
	COMMIT;
});
$last = $node->safe_psql('postgres', "SELECT max(batch_id) FROM cq.offsets WHERE name = 'agg'");
$node->safe_psql('postgres', q{INSERT INTO src VALUES ('2026-01-05 02:00+00', 5)});
CqTest::wait_caught_up($node, 'postgres', 'src', 'after the columns changed', 'agg');
is($node->safe_psql('postgres', q{SELECT n, s FROM agg WHERE d = '2026-01-04 05:00+00'}), '1|5',
	'the next batch ran in the new timezone column\'s time zone');
is($node->safe_psql('postgres',
		"SELECT bool_and(state_rows IS NOT NULL AND state_rows_old IS NULL) FROM cq.offsets WHERE name = 'agg' AND batch_id > $last"),
	't', 'its offset row has state_rows in the new column');

$node->stop;
done_testing();
