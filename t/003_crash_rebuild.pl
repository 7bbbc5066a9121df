# Unlogged state lost in a crash-restart is rebuilt exactly before the next
# batch (DESIGN.md "State"): after an immediate shutdown (crash recovery
# empties every unlogged table) every target still equals the plain SELECT.
# Aggregations the shared-memory store can hold are on it by default (a
# crash loses the store and its unlogged image: full rebuild); by_k_t pins
# the table path.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCrash;

my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_cq'\n");
$node->start;

$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE ev (ts timestamptz, k int, v numeric);
  INSERT INTO ev SELECT '2024-01-01'::timestamptz + i * interval '1 second', i % 5, i FROM generate_series(1, 1000) i;
  CREATE TABLE by_k WITH (cq.trigger = 'available_now', cq.output_mode = 'update') AS SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a FROM ev GROUP BY k;
  CREATE TABLE by_k_c WITH (cq.trigger = 'available_now', cq.output_mode = 'complete') AS SELECT k, count(*) AS n, max(v) AS m FROM ev GROUP BY k;
  CREATE TABLE per_min WITH (cq.trigger = 'available_now', cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '30 seconds')
    AS SELECT date_bin('1 minute', ts, '2024-01-01') AS minute, count(*) AS n, sum(v) AS s FROM ev GROUP BY 1;
  CREATE TABLE per_min_u WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '30 seconds')
    AS SELECT date_bin('1 minute', ts, '2024-01-01') AS minute, count(*) AS n, sum(v) AS s FROM ev GROUP BY 1;
  CREATE TABLE dist_k WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
    AS SELECT k, count(DISTINCT v % 10) AS d, sum(DISTINCT v % 10) AS s FROM ev GROUP BY k;
  CREATE TABLE dist_min_u WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '30 seconds')
    AS SELECT date_bin('1 minute', ts, '2024-01-01') AS minute, count(DISTINCT k) AS dk FROM ev GROUP BY 1;
  CREATE TABLE seen WITH (cq.trigger = 'available_now') AS SELECT DISTINCT k, v % 4 AS r FROM ev;
  -- by_k and by_k_c keep their state in the shared-memory store (the default), by_k_t in its table
  CREATE TABLE by_k_t WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.state_storage = 'unlogged') AS SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a FROM ev GROUP BY k;
  INSERT INTO ev SELECT '2024-01-01'::timestamptz + i * interval '1 second', i % 7, i FROM generate_series(1001, 1500) i;
  CALL cq.run('by_k'); CALL cq.run('by_k_c'); CALL cq.run('per_min'); CALL cq.run('per_min_u'); CALL cq.run('seen');
  CALL cq.run('dist_k'); CALL cq.run('dist_min_u'); CALL cq.run('by_k_t');
});

# by_k (s_1) keeps its state in the shared-memory store: its rows are there,
# its table image is written only every cq.state_image_interval
my $state_rows = $node->safe_psql('postgres', "SELECT state_rows FROM cq.state_store_info('by_k')");
ok($state_rows > 0, 'state exists before the crash');

# crash: immediate shutdown, then recovery resets unlogged tables
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', 'SELECT count(*) FROM cq_state.s_1'), '0', 'crash recovery emptied the unlogged state');
is($node->safe_psql('postgres', 'SELECT count(*) FROM cq_state.sd_5'), '0',
	'and the (group, value) pairs of DISTINCT aggregates');

# more rows, some in windows that were open at the crash
$node->safe_psql('postgres', q{
  INSERT INTO ev SELECT '2024-01-01'::timestamptz + i * interval '1 second', i % 3, i * 2 FROM generate_series(1490, 2000) i;
});
$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CALL cq.run('by_k'); CALL cq.run('by_k_c'); CALL cq.run('per_min'); CALL cq.run('per_min_u'); CALL cq.run('seen');
  CALL cq.run('dist_k'); CALL cq.run('dist_min_u'); CALL cq.run('by_k_t');
});

sub diff
{
	my ($oracle, $target) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM (($oracle EXCEPT ALL TABLE $target) UNION ALL (TABLE $target EXCEPT ALL $oracle)) x");
}

is(diff('SELECT k, count(*), sum(v), avg(v) FROM ev GROUP BY k', 'by_k'), '0', 'update target equals the oracle after the rebuild');
is(diff('SELECT k, count(*), max(v) FROM ev GROUP BY k', 'by_k_c'), '0', 'complete target equals the oracle after the rebuild');
is(diff('SELECT date_bin(\'1 minute\', ts, \'2024-01-01\'), count(*), sum(v) FROM ev GROUP BY 1', 'per_min_u'), '0',
	'windowed update target equals the oracle after the rebuild (no row was late)');
my $wm = $node->safe_psql('postgres', "SELECT watermark FROM cq.offsets WHERE name = 'per_min' ORDER BY batch_id DESC LIMIT 1");
is(diff("SELECT date_bin('1 minute', ts, '2024-01-01'), count(*), sum(v) FROM ev GROUP BY 1 HAVING date_bin('1 minute', ts, '2024-01-01') + interval '1 minute' <= '$wm'", 'per_min'),
	'0', 'append target holds every closed window exactly once');
# SELECT DISTINCT: the keys seen before the crash are not written again
is(diff('SELECT DISTINCT k, v % 4 FROM ev', 'seen'), '0', 'SELECT DISTINCT target equals the oracle after the rebuild');
is(diff('SELECT k, count(DISTINCT v % 10), sum(DISTINCT v % 10) FROM ev GROUP BY k', 'dist_k'), '0',
	'DISTINCT aggregates equal the oracle after the rebuild (their pairs were rebuilt)');
is(diff("SELECT date_bin('1 minute', ts, '2024-01-01'), count(DISTINCT k) FROM ev GROUP BY 1", 'dist_min_u'), '0',
	'windowed DISTINCT aggregate equals the oracle after the rebuild');
is(diff('SELECT k, count(*), sum(v), avg(v) FROM ev GROUP BY k', 'by_k_t'), '0', 'its twin on the table path (unlogged state table) too');
is($node->safe_psql('postgres', "SELECT string_agg(name, ',' ORDER BY name) FROM cq.queries WHERE state_storage = 'memory'"),
	'by_k,by_k_c,per_min,per_min_u', 'the aggregations the store can hold are on it by default');
is($node->safe_psql('postgres', 'SELECT count(*) FROM cq.queries WHERE state_rebuilt_at IS NOT NULL'), '8',
	'each stateful query recorded its rebuild');
like($node->safe_psql('postgres', "SELECT durations->>'stateRebuild' FROM cq.progress WHERE name = 'by_k' ORDER BY batch_id DESC LIMIT 1"),
	qr/^[0-9.]+$/, 'progress shows the rebuild time');

# a logged state survives: in a logged table (an aggregation the store cannot
# hold) it is not rebuilt; in the store, its logged image (written by its
# first batch) is loaded, never the whole source refolded
$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE TABLE by_k_l WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.state_storage = 'logged') AS SELECT k, count(*) AS n FROM ev GROUP BY k;
  CREATE TABLE by_k_ld WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.state_storage = 'logged') AS SELECT k, count(DISTINCT v) AS n FROM ev GROUP BY k;
});
is($node->safe_psql('postgres', "SELECT string_agg(name || ': ' || state_path, ', ' ORDER BY name) FROM cq.queries WHERE name LIKE 'by_k_l%'"),
	'by_k_l: memory: logged image, by_k_ld: table: not supported by the store (DISTINCT aggregates keep the values they have seen in a table)',
	'where the logged states are');
my $off = -s $node->logfile;
$node->stop('immediate');
$node->start;
$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  INSERT INTO ev (ts, k, v) VALUES ('2024-01-02', 1, 1);
  CALL cq.run('by_k_l');
  CALL cq.run('by_k_ld');
});
is(diff('SELECT k, count(*) FROM ev GROUP BY k', 'by_k_l'), '0', 'logged store state survived the crash');
is(diff('SELECT k, count(DISTINCT v) FROM ev GROUP BY k', 'by_k_ld'), '0', 'logged table state survived the crash');
is($node->safe_psql('postgres', "SELECT state_rebuilt_at IS NULL FROM cq.queries WHERE name = 'by_k_ld'"), 't', 'logged table state is not rebuilt');
ok($node->log_contains(qr/restored lost state of continuous query "by_k_l" from its image of batch 0/, $off),
	'logged store state is loaded from its image');
ok(!$node->log_contains(qr/rebuilt lost state of continuous query "by_k_l/, $off),
	'neither is refolded from the whole source');

$node->stop;
done_testing();
