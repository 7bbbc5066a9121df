# state_storage = 'logged' on the shared-memory store (issue 15, Build item
# 3): an aggregation the store can hold keeps its state in shared memory, and
# its image is a logged table recorded in cq.logged_state_images.  A crash
# (immediate stop, kill -9 of a backend in the middle of a batch) keeps the
# image: the next batch loads it and folds again only the rows of the batches
# after it, never the whole source.  A 'logged' query the store cannot hold
# keeps its state in a logged table, as before, and is not rebuilt.  Every
# target equals the plain SELECT after the next batches.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('logged_image');

$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE ev (ts timestamptz, k int, u text, v numeric);
  INSERT INTO ev SELECT '2024-01-01'::timestamptz + i * interval '1 second', i % 5, 'u' || i % 13, i FROM generate_series(1, 1000) i;
  SELECT cq.create_query('by_k', 'SELECT k, u, count(*) AS n, sum(v) AS s, avg(v) AS a, min(u) AS mu FROM ev GROUP BY k, u',
    output_mode => 'update', "trigger" => 'available_now', state_storage => 'logged');
  SELECT cq.create_query('by_k_c', 'SELECT k, count(*) AS n, max(v) AS m FROM ev GROUP BY k',
    output_mode => 'complete', "trigger" => 'available_now', state_storage => 'logged');
  SELECT cq.create_query('per_min', 'SELECT date_bin(''1 minute'', ts, ''2024-01-01'') AS minute, count(*) AS n, sum(v) AS s FROM ev GROUP BY 1',
    output_mode => 'append', "trigger" => 'available_now', event_time => 'ts', watermark => '30 seconds', state_storage => 'logged');
  SELECT cq.create_query('by_k_d', 'SELECT k, count(DISTINCT u) AS du FROM ev GROUP BY k',
    output_mode => 'update', "trigger" => 'available_now', state_storage => 'logged');
  SET cq.default_state_storage = 'logged';
  SELECT cq.create_query('by_u', 'SELECT u, sum(v) AS s FROM ev GROUP BY u',
    output_mode => 'update', "trigger" => 'available_now');
});

my @queries = ('by_k', 'by_k_c', 'per_min', 'by_k_d', 'by_u');

is($node->safe_psql('postgres', "SELECT string_agg(name || ' ' || state_storage || ' ' || state_path, ', ' ORDER BY name) FROM cq.queries"),
	"by_k logged memory: logged image, by_k_c logged memory: logged image, by_k_d logged table: not supported by the store (DISTINCT aggregates keep the values they have seen in a table), by_u logged memory: logged image, per_min logged memory: logged image",
	"'logged' keeps the state in the store when it can hold the query, else in a logged table");
is($node->safe_psql('postgres', q{
	SELECT string_agg(q.name || ' ' || c.relpersistence::text, ', ' ORDER BY q.name)
	  FROM cq.queries q JOIN pg_class c ON c.oid = q.state_table}),
	'by_k p, by_k_c p, by_k_d p, by_u p, per_min p', 'every state table (image) is logged');

sub run_all
{
	$node->safe_psql('postgres',
		"SET client_min_messages = warning; " . join(' ', map { "CALL cq.run('$_');" } @queries));
}

sub add_rows
{
	my ($from, $to, $mod) = @_;
	$node->safe_psql('postgres',
		"INSERT INTO ev SELECT '2024-01-01'::timestamptz + i * interval '1 second', i % $mod, 'u' || i % 11, i * 2 FROM generate_series($from, $to) i");
}

sub check
{
	my ($when) = @_;
	is(mismatches($node, 'postgres', 'SELECT k, u, count(*), sum(v), avg(v), min(u) FROM ev GROUP BY k, u', 'by_k'),
		'0', "update target equals the oracle $when");
	is(mismatches($node, 'postgres', 'SELECT k, count(*), max(v) FROM ev GROUP BY k', 'by_k_c'),
		'0', "complete target equals the oracle $when");
	is(mismatches($node, 'postgres', 'SELECT k, count(DISTINCT u) FROM ev GROUP BY k', 'by_k_d'),
		'0', "logged-table target equals the oracle $when");
	is(mismatches($node, 'postgres', 'SELECT u, sum(v) FROM ev GROUP BY u', 'by_u'),
		'0', "target of the query on the default equals the oracle $when");
	my $wm = $node->safe_psql('postgres', "SELECT watermark FROM cq.offsets WHERE name = 'per_min' ORDER BY batch_id DESC LIMIT 1");
	is(mismatches($node, 'postgres',
			"SELECT date_bin('1 minute', ts, '2024-01-01'), count(*), sum(v) FROM ev GROUP BY 1 HAVING date_bin('1 minute', ts, '2024-01-01') + interval '1 minute' <= '$wm'",
			'per_min'),
		'0', "append target holds every closed window exactly once $when");
}

sub image_of
{
	my ($name) = @_;
	return $node->safe_psql('postgres',
		"SELECT i.batch_id FROM cq.logged_state_images i JOIN cq.queries q ON q.id = i.query_id WHERE q.name = '$name'");
}

$node->safe_psql('postgres', 'ALTER SYSTEM SET cq.state_image_batches = 2');
$node->reload;
run_all();
is(image_of('by_k'), '0', 'the first batch wrote a logged image');
is(image_of('by_u'), '0', 'so did the query on the default');
add_rows(1001, 1200, 7);
run_all();
add_rows(1201, 1350, 5);
run_all();
check('before a crash');
# batches 0, 1, 2: then images every two batches (batch 2)
is(image_of('by_k'), '2', 'the logged image of by_k is of batch 2');
add_rows(1351, 1480, 3);
run_all();
is(image_of('by_k'), '2', 'batch 3 wrote no image');
is($node->safe_psql('postgres', "SELECT count(*) FROM cq.state_images"), '0', 'no unlogged image was written');
is($node->safe_psql('postgres', "SELECT max(batch_id) FROM cq.offsets WHERE name = 'by_k'"), '3', 'the last batch is 3');

# 1. immediate stop: crash recovery keeps the logged image and its row; the
# store is loaded from it and batch 3's rows are folded again
my $off = -s $node->logfile;
$node->stop('immediate');
$node->start;
is(image_of('by_k'), '2', 'crash recovery kept the logged image');
my $image_rows = $node->safe_psql('postgres',
	"SELECT count(*) FROM cq_state.s_1");
ok($image_rows > 0, "the image has rows after the crash ($image_rows)");
add_rows(1490, 1700, 4);
run_all();
check('after an immediate stop');
ok($node->log_contains(qr/restored lost state of continuous query "by_k" from its image of batch 2/, $off),
	'the store was loaded from the logged image and replayed');
ok($node->log_contains(qr/restored lost state of continuous query "per_min" from its image/, $off),
	'so was the windowed query\'s');
ok(!$node->log_contains(qr/rebuilt lost state of continuous query/, $off),
	'no query was rebuilt from the whole source');

# 2. kill -9 of a backend in the middle of a batch (after its merge, while
# its target statement waits): the crash keeps the committed image
gate_target($node, 'postgres', 'by_k');
add_rows(1701, 1900, 5);
my $bg = start_writer($node, 'postgres', "CALL cq.run('by_k')");
# (the process running the batch: the caller, or the pool worker it handed the
# batch to, whose query reads "pg_cq: CALL cq.run('by_k') for PID n")
ok($node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE query LIKE '%CALL cq.run(''by_k'')%' AND wait_event = 'PgSleep'"),
	'a batch is in the middle of writing its target');
my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE query LIKE '%CALL cq.run(''by_k'')%' AND wait_event = 'PgSleep'");
$off = -s $node->logfile;
ok(kill_and_restart($node, 'postgres', $pid), 'the server is back after the crash');
stop_writers($bg);
$node->safe_psql('postgres', 'UPDATE gate SET open = true');
run_all();
check('after a kill -9 in the middle of a batch');
ok($node->log_contains(qr/restored lost state of continuous query "by_k" from its image/, $off),
	'the store was loaded from the logged image again');
ok(!$node->log_contains(qr/rebuilt lost state of continuous query/, $off),
	'no query was rebuilt from the whole source');

# 3. and goes on incrementally, writing new images
for my $i (0 .. 3)
{
	add_rows(1901 + $i * 50, 1950 + $i * 50, 4 + $i);
	run_all();
}
check('after more batches');
my $last = $node->safe_psql('postgres', "SELECT max(batch_id) FROM cq.offsets WHERE name = 'by_k'");
my $img = image_of('by_k');
ok($last - $img <= 1 && $last - $img >= 0, "the logged image is at most one batch old ($img of $last)");

# 4. beyond cq.state_memory a logged store moves to its state table, which
# is logged: the query stays 'logged', its image row is gone, and a crash
# afterwards neither rebuilds nor restores it
$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE TABLE big (k int, x int);
  SELECT cq.create_query('big_l', 'SELECT k, count(*) AS n, sum(x) AS sx FROM big GROUP BY k',
    output_mode => 'update', "trigger" => 'available_now', state_storage => 'logged');
  INSERT INTO big SELECT i % 100, i FROM generate_series(1, 300) i;
  CALL cq.run('big_l');
});
is(image_of('big_l'), '0', 'the small store has a logged image');
$node->safe_psql('postgres', q{
  SET client_min_messages = error;
  SET cq.state_memory = '64kB';
  INSERT INTO big SELECT i, i FROM generate_series(1, 3000) i;
  CALL cq.run('big_l');
});
like($node->safe_psql('postgres', "SELECT state_storage || ' ' || state_path FROM cq.queries WHERE name = 'big_l'"),
	qr/^logged table: moved after exceeding cq\.state_memory \(64 kB\) at batch 1$/, 'the query moved to its logged table');
is(image_of('big_l'), '', 'its image row is gone');
is(mismatches($node, 'postgres', 'SELECT k, count(*), sum(x) FROM big GROUP BY k', 'big_l'), '0', 'target right after the move');
$off = -s $node->logfile;
$node->stop('immediate');
$node->start;
$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  INSERT INTO big SELECT i % 4000, i FROM generate_series(1, 500) i;
  CALL cq.run('big_l');
});
is(mismatches($node, 'postgres', 'SELECT k, count(*), sum(x) FROM big GROUP BY k', 'big_l'), '0', 'target right after a crash on the logged table path');
ok(!$node->log_contains(qr/lost state of continuous query "big_l"/, $off), 'its logged table was neither rebuilt nor restored');

# cq.explain shows the logged image
like($node->safe_psql('postgres', "SELECT cq.explain('by_k')"),
	qr/-- image: the store of batch $img .*\n-- \(cq\.logged_state_images;/s, 'cq.explain reads the logged image');

# 5. a dropped query's image row goes with it
$node->safe_psql('postgres', "SELECT cq.drop_query('by_u')");
is($node->safe_psql('postgres', 'SELECT count(*) FROM cq.logged_state_images i WHERE NOT EXISTS (SELECT FROM cq.queries q WHERE q.id = i.query_id)'),
	'0', 'no image row outlives its query');
ok($node->safe_psql('postgres', 'SELECT count(*) FROM cq.logged_state_images') > 0, 'the others keep theirs');

$node->stop;
done_testing();
