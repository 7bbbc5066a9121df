# The shared-memory state store (issue 15, state_storage = 'memory'): its
# state is gone after any restart of the server (shared memory is created
# anew).  Images are written every cq.state_image_batches batches of a store
# (2 here), the first by its second batch, not its first: a clean restart
# before any image rebuilds the state from the source.  After a clean
# restart with an image the next batch loads the image in the unlogged
# state table (older than the last batch) and folds the rows of the later
# batches again; after an immediate stop or a kill -9 of a backend in the
# middle of a batch (crash recovery empties the image) it rebuilds the state
# from the source.  Every target equals the plain SELECT after the next
# batches.  Until the next batch after a restart the final view reads the
# image (the state of the image's batch, exactly), then the store.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use CqTest;

my $node = cq_node('store');

$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE ev (ts timestamptz, k int, u text, v numeric);
  INSERT INTO ev SELECT '2024-01-01'::timestamptz + i * interval '1 second', i % 5, 'u' || i % 13, i FROM generate_series(1, 1000) i;
  SELECT cq.create_query('by_k', 'SELECT k, u, count(*) AS n, sum(v) AS s, avg(v) AS a, min(u) AS mu FROM ev GROUP BY k, u',
    output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory');
  SELECT cq.create_query('by_k_c', 'SELECT k, count(*) AS n, max(v) AS m FROM ev GROUP BY k',
    output_mode => 'complete', "trigger" => 'available_now', state_storage => 'memory');
  SELECT cq.create_query('per_min', 'SELECT date_bin(''1 minute'', ts, ''2024-01-01'') AS minute, count(*) AS n, sum(v) AS s FROM ev GROUP BY 1',
    output_mode => 'append', "trigger" => 'available_now', event_time => 'ts', watermark => '30 seconds', state_storage => 'memory');
  SELECT cq.create_query('per_min_u', 'SELECT date_bin(''1 minute'', ts, ''2024-01-01'') AS minute, k, count(*) AS n, sum(v) AS s FROM ev GROUP BY 1, 2',
    output_mode => 'update', "trigger" => 'available_now', event_time => 'ts', watermark => '30 seconds', state_storage => 'memory');
});

my @queries = ('by_k', 'by_k_c', 'per_min', 'per_min_u');

sub run_all
{
	$node->safe_psql('postgres',
		"SET client_min_messages = warning; " . join(' ', map { "CALL cq.run('$_');" } @queries));
}

# more rows: ids from .. to, event times one second apart from 2024-01-01
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
	is(mismatches($node, 'postgres', "SELECT date_bin('1 minute', ts, '2024-01-01'), k, count(*), sum(v) FROM ev GROUP BY 1, 2", 'per_min_u'),
		'0', "windowed update target equals the oracle $when (no row was late)");
	my $wm = $node->safe_psql('postgres', "SELECT watermark FROM cq.offsets WHERE name = 'per_min' ORDER BY batch_id DESC LIMIT 1");
	is(mismatches($node, 'postgres',
			"SELECT date_bin('1 minute', ts, '2024-01-01'), count(*), sum(v) FROM ev GROUP BY 1 HAVING date_bin('1 minute', ts, '2024-01-01') + interval '1 minute' <= '$wm'",
			'per_min'),
		'0', "append target holds every closed window exactly once $when");
}

$node->safe_psql('postgres', 'ALTER SYSTEM SET cq.state_image_batches = 2');
$node->reload;
run_all();
# (by_k runs one batch per run_all; the windowed queries may run a second,
# without data, when their watermark moved)
my $by_k_images = "SELECT count(*) FROM cq.state_images i JOIN cq.queries q ON q.id = i.query_id WHERE q.name = 'by_k'";
is($node->safe_psql('postgres', $by_k_images), '0',
	'no image after the first batch of a store (the first is due after 2)');

# 0. clean restart before any image: the store is rebuilt from the source
my $off = -s $node->logfile;
$node->restart;
add_rows(1001, 1200, 7);
run_all();
check('after a clean restart before the first image');
ok($node->log_contains(qr/rebuilt lost state of continuous query "by_k"/, $off),
	'without an image the store was rebuilt from the source');
is($node->safe_psql('postgres', $by_k_images), '0',
	'no image after the first batch of the rebuilt store');

add_rows(1201, 1350, 5);
run_all();
add_rows(1351, 1500, 7);
run_all();
check('before a restart with an image');
is($node->safe_psql('postgres', "SELECT batch_id FROM cq.state_images i JOIN cq.queries q ON q.id = i.query_id WHERE q.name = 'by_k'"),
	'2', 'the image is of batch 2, the rebuilt store\'s second');
is($node->safe_psql('postgres', "SELECT max(batch_id) FROM cq.offsets WHERE name = 'by_k'"), '3', 'the last batch is 3');
my $image_rows = $node->safe_psql('postgres', "SELECT count(*) FROM cq_state.s_1");
ok($image_rows > 0, 'the image has rows');

# 1. clean restart: shared memory is new, the store is loaded from the stale
# image and the rows of batch 3 are folded again
$off = -s $node->logfile;
$node->restart;
# until then the final view reads the image: exactly the state batch 2 left
# (rows up to 1350), behind the target (batch 3)
my $by_k_oracle = 'SELECT k, u, count(*), sum(v), avg(v), min(u) FROM ev GROUP BY k, u';
is($node->safe_psql('postgres', "SELECT cq.state_store_info('by_k') IS NULL"), 't',
	'no store in memory after the restart');
is(mismatches($node, 'postgres',
		"SELECT k, u, count(*), sum(v), avg(v), min(u) FROM ev WHERE ts <= '2024-01-01'::timestamptz + interval '1350 seconds' GROUP BY k, u",
		'cq_state.f_1'),
	'0', 'before the next batch the final view reads the image: the state of batch 2');
ok(mismatches($node, 'postgres', $by_k_oracle, 'cq_state.f_1') > 0, 'which lags the target (batch 3)');
add_rows(1490, 1700, 3);
run_all();
check('after a clean restart');
is(mismatches($node, 'postgres', $by_k_oracle, 'cq_state.f_1'), '0',
	'after the next batch the final view reads the restored store');
ok($node->log_contains(qr/restored lost state of continuous query "by_k" from its image of batch 2/, $off),
	'the store was loaded from the image and replayed');
ok(!$node->log_contains(qr/rebuilt lost state of continuous query/, $off), 'no query was rebuilt from scratch');

# 2. immediate stop (crash recovery empties the image), windows open at the
# stop get more rows
$off = -s $node->logfile;
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', "SELECT count(*) FROM cq.state_images"), '0', 'crash recovery emptied the images');
add_rows(1690, 1900, 4);
run_all();
check('after an immediate stop');
ok($node->log_contains(qr/rebuilt lost state of continuous query "by_k"/, $off), 'the store was rebuilt from the source');

# 3. kill -9 of a backend in the middle of a batch: the target's trigger
# sleeps, so the batch has merged its rows into its overlay when it dies
gate_target($node, 'postgres', 'by_k');
add_rows(1901, 2100, 5);
my $bg = start_writer($node, 'postgres', "CALL cq.run('by_k')");
# (the process running the batch: the caller, or the pool worker it handed the
# batch to, whose query reads "pg_cq: CALL cq.run('by_k') for PID n")
ok($node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE query LIKE '%CALL cq.run(''by_k'')%' AND wait_event = 'PgSleep'"),
	'a batch is in the middle of writing its target');
my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE query LIKE '%CALL cq.run(''by_k'')%' AND wait_event = 'PgSleep'");
# the postmaster resets shared memory and restarts: wait until it serves again
ok(kill_and_restart($node, 'postgres', $pid), 'the server is back after the crash');
stop_writers($bg);
$node->safe_psql('postgres', 'UPDATE gate SET open = true');
run_all();
check('after a kill -9 in the middle of a batch');
is($node->safe_psql('postgres', "SELECT state FROM cq.queries WHERE name = 'by_k'"), 'active', 'the query is still active');

# 4. and the store keeps working incrementally after the rebuild
add_rows(2101, 2300, 6);
run_all();
add_rows(2301, 2400, 9);
run_all();
check('after more batches');

# 5. images every 2 batches: a clean restart replays at most one batch
for my $i (0 .. 4)
{
	add_rows(2401 + $i * 50, 2450 + $i * 50, 4 + $i);
	run_all();
}
my $last = $node->safe_psql('postgres', "SELECT max(batch_id) FROM cq.offsets WHERE name = 'by_k'");
my $img = $node->safe_psql('postgres', "SELECT batch_id FROM cq.state_images i JOIN cq.queries q ON q.id = i.query_id WHERE q.name = 'by_k'");
ok($last - $img <= 1 && $last - $img >= 0, "the image is at most one batch old ($img of $last)");
$off = -s $node->logfile;
$node->restart;
add_rows(2700, 2800, 3);
run_all();
check('after a restart with a recent image');
ok($node->log_contains(qr/restored lost state of continuous query "per_min_u" from its image/, $off),
	'the windowed query was restored from its image');

$node->stop;
done_testing();
