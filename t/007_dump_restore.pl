# A dump of a database with continuous queries restores into another
# cluster and the queries work there: their offsets (transaction ids of the
# old cluster) are not carried over; each restored query starts over and
# recomputes its result from the restored source, then continues with new
# rows exactly once.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCrash;

my $conf = "shared_preload_libraries = 'pg_cq'\nmax_worker_processes = 16\ncq.naptime = 1\n";
my $old = PostgreSQL::Test::Cluster->new('old');
$old->init;
$old->append_conf('postgresql.conf', $conf);
$old->start;

$old->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE ev (ts timestamptz, k int, v numeric);
  INSERT INTO ev SELECT '2024-01-01'::timestamptz + i * interval '1 second', i % 5, i FROM generate_series(1, 500) i;
  CREATE TABLE by_k WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k;
  CREATE TABLE by_k_c WITH (cq.trigger = 'available_now', cq.output_mode = 'complete')
    AS SELECT k, max(v) AS m, regr_count(v::float8, v::float8) AS rc FROM ev GROUP BY k;
  CREATE TABLE big WITH (cq.trigger = 'available_now', cq.output_mode = 'append')
    AS SELECT k, v FROM ev WHERE v > 450;
  CREATE TABLE per_min WITH (cq.trigger = 'available_now', cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '10 seconds')
    AS SELECT date_bin('1 minute', ts, '2024-01-01') AS minute, count(*) AS n FROM ev GROUP BY 1;
  CREATE TABLE firsts WITH (cq.trigger = 'available_now', cq.event_time = 'ts', cq.watermark = '1 hour')
    AS SELECT DISTINCT ON (k) k, v FROM ev;
  CREATE TABLE live WITH (cq.output_mode = 'update')
    AS SELECT k, count(*) AS n FROM ev GROUP BY k;
  INSERT INTO ev SELECT '2024-01-01'::timestamptz + i * interval '1 second', i % 7, i FROM generate_series(501, 700) i;
  CALL cq.run('by_k'); CALL cq.run('by_k_c'); CALL cq.run('big'); CALL cq.run('per_min'); CALL cq.run('firsts');
  -- committed but not yet processed when the dump is taken
  INSERT INTO ev SELECT '2024-01-01'::timestamptz + i * interval '1 second', i % 3, i FROM generate_series(701, 800) i;
});
$old->poll_query_until('postgres', "SELECT sum(n) = 800 FROM live") or die 'live query did not catch up';

my $old_installation = $old->safe_psql('postgres', 'SELECT id FROM cq.installation');
my $dump = $old->basedir . '/cq.sql';
$old->command_ok(['pg_dump', '-d', $old->connstr('postgres'), '-f', $dump], 'pg_dump');

my $new = PostgreSQL::Test::Cluster->new('new');
$new->init;
$new->append_conf('postgresql.conf', $conf);
$new->start;
$new->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '--single-transaction',
	'-d', $new->connstr('postgres'), '-f', $dump], 'restore in one transaction');

is($new->safe_psql('postgres', 'SELECT count(*) FROM cq.queries'), '6', 'the query definitions were restored');

# new rows in the new cluster
$new->safe_psql('postgres', q{
  INSERT INTO ev (ts, k, v) SELECT '2024-01-01'::timestamptz + i * interval '1 second', i % 4, i FROM generate_series(801, 900) i;
});
$new->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CALL cq.run('by_k'); CALL cq.run('by_k_c'); CALL cq.run('big'); CALL cq.run('per_min'); CALL cq.run('firsts');
});
$new->poll_query_until('postgres', "SELECT sum(n) = 900 FROM live") or die 'restored live query did not catch up';

sub diff
{
	my ($oracle, $target) = @_;
	return $new->safe_psql('postgres',
		"SELECT count(*) FROM (($oracle EXCEPT ALL TABLE $target) UNION ALL (TABLE $target EXCEPT ALL $oracle)) x");
}
is(diff('SELECT k, count(*), sum(v) FROM ev GROUP BY k', 'by_k'), '0', 'update target equals the oracle after restore');
# by_k_c's regr_count takes the generic path: its cq.agg_state column was
# dumped as text, which restores as no state, and the state is recomputed
is(diff('SELECT k, max(v), regr_count(v::float8, v::float8) FROM ev GROUP BY k', 'by_k_c'), '0',
	'complete target (with a generic aggregate) equals the oracle after restore');
is(diff('SELECT k, v FROM ev WHERE v > 450', 'big'), '0', 'append target holds every row exactly once after restore');
is(diff('(SELECT DISTINCT ON (k) k, v FROM ev ORDER BY k, ts)', 'firsts'), '0',
	'deduplication within a watermark writes each key once after restore (no key expired)');
is($new->safe_psql('postgres', "SELECT c.relpersistence FROM cq.queries q JOIN pg_class c ON c.oid = q.state_table WHERE q.name = 'firsts'"),
	'p', 'its recreated state table is logged');
is(diff('SELECT k, count(*) FROM ev GROUP BY k', 'live'), '0', 'a background query resumed by itself after restore');
my $wm = $new->safe_psql('postgres', "SELECT watermark FROM cq.offsets WHERE name = 'per_min' ORDER BY batch_id DESC LIMIT 1");
is(diff("SELECT date_bin('1 minute', ts, '2024-01-01'), count(*) FROM ev GROUP BY 1 HAVING date_bin('1 minute', ts, '2024-01-01') + interval '1 minute' <= '$wm'", 'per_min'),
	'0', 'windowed append target holds each closed window once after restore');
is($new->safe_psql('postgres', "SELECT count(DISTINCT cluster_id) = 1 AND bool_and(cluster_id = (SELECT id::text FROM cq.installation)) FROM cq.queries"),
	't', 'the queries now belong to the new installation');
isnt($new->safe_psql('postgres', 'SELECT id FROM cq.installation'), $old_installation,
	'a restored database is a new installation (cq.installation is not dumped)');

# exactly once from here on
$new->safe_psql('postgres', q{
  SET client_min_messages = warning;
  INSERT INTO ev (ts, k, v) VALUES ('2024-01-02', 1, 1);
  CALL cq.run('by_k');
});
is(diff('SELECT k, count(*), sum(v) FROM ev GROUP BY k', 'by_k'), '0', 'later batches count new rows once');

# dependencies were recreated: dropping a target drops its internal objects
my $before = $new->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relnamespace = 'cq_state'::regnamespace AND relkind IN ('r', 'v')");
$new->safe_psql('postgres', 'DROP TABLE by_k');
my $after = $new->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relnamespace = 'cq_state'::regnamespace AND relkind IN ('r', 'v')");
is($before - $after, 3, 'DROP TABLE of a restored target drops its query view, state and final view');

$old->stop;
$new->stop;
done_testing();
