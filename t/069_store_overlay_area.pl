# Session 31: a batch on the shared-memory store writes its changed groups
# (items and rows) into the store's area as it makes them, not into the
# backend's memory; they are linked nowhere until pre-commit.  Every end
# of a batch that does not publish must free them: the area does not grow
# over repeated rounds of (a) batches rolled back, (b) batches in a
# savepoint rolled back, (c) batches failing in their target statement,
# (d) a backend terminated (FATAL) in the middle of a batch, its overlay
# full; and the store stays as it was (its batch, its rows), the next
# batch equal to the plain query.  (e) kill -9 of a backend in the middle
# of a batch: the server restarts, the next batch rebuilds the store from
# the source, exactly.  The area is measured as the size of the files of
# its segments (dynamic_shared_memory_type = mmap: in pg_dynshmem).
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('overlay_area', 'dynamic_shared_memory_type = mmap', 'cq.run_in_worker = off');
my $groups = 30000;

$node->safe_psql('postgres', qq{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE src (k int, v numeric(10,2));
  INSERT INTO src SELECT g % $groups, (g % 1000) / 10.0 FROM generate_series(1, 2 * $groups) g;
  SELECT cq.create_query('q', 'SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m FROM src GROUP BY k',
    output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory');
  CALL cq.run('q');
});
my $oracle = 'SELECT k, count(*), sum(v), max(v) FROM src GROUP BY k';

# bytes of the DSM segments (the store's area, and nothing else when idle)
sub area_bytes
{
	my $dir = $node->data_dir . '/pg_dynshmem';
	opendir(my $dh, $dir) or die "$dir: $!";
	my $sum = 0;
	for my $f (readdir $dh)
	{
		next unless $f =~ /^mmap\./;
		$sum += -s "$dir/$f" // 0;
	}
	closedir $dh;
	return $sum;
}

sub store_info
{
	return $node->safe_psql('postgres', "SELECT batch_id || '/' || state_rows FROM cq.state_store_info('q')");
}

# new rows touching every group, and new groups
$node->safe_psql('postgres',
	"INSERT INTO src SELECT g % ($groups + 5000), (g % 997) / 10.0 FROM generate_series(1, 2 * $groups) g");
my $info = store_info();
like($info, qr{^0/$groups$}, "batch 0 published $groups groups");

# (a) rolled back: the first round may grow the area, later rounds reuse it
$node->safe_psql('postgres', "BEGIN; CALL cq.run('q'); ROLLBACK;");
my $base = area_bytes();
ok($base > 0, "the area's segments are files ($base bytes)");
my $slack = 1024 * 1024;
for my $i (1 .. 3)
{
	$node->safe_psql('postgres', "BEGIN; CALL cq.run('q'); ROLLBACK;");
}
my $after = area_bytes();
ok($after <= $base + $slack, "3 more batches rolled back: the area did not grow ($base -> $after bytes)");
is(store_info(), $info, 'the store is as batch 0 left it');

# (b) a savepoint rolled back
for my $i (1 .. 3)
{
	$node->safe_psql('postgres', "BEGIN; SAVEPOINT s; CALL cq.run('q'); ROLLBACK TO SAVEPOINT s; COMMIT;");
}
$after = area_bytes();
ok($after <= $base + $slack, "3 batches in savepoints rolled back: the area did not grow ($base -> $after bytes)");
is(store_info(), $info, 'the store is as batch 0 left it');

# (c) an error in the target statement, after the fold
$node->safe_psql('postgres', q{
  CREATE TABLE fail (on_ boolean);
  INSERT INTO fail VALUES (true);
  CREATE FUNCTION raise_it() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF (SELECT on_ FROM public.fail) THEN RAISE EXCEPTION 'target refused'; END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER raise_it AFTER INSERT OR UPDATE ON q FOR EACH STATEMENT EXECUTE FUNCTION raise_it();
});
for my $i (1 .. 3)
{
	my ($ret, $out, $err) = $node->psql('postgres', "CALL cq.run('q')");
	like($err, qr/target refused/, "batch $i failed in its target statement");
	$node->safe_psql('postgres', "SELECT cq.resume('q')");
}
$after = area_bytes();
ok($after <= $base + $slack, "3 failed batches: the area did not grow ($base -> $after bytes)");
is(store_info(), $info, 'the store is as batch 0 left it');
$node->safe_psql('postgres', 'UPDATE fail SET on_ = false');

# (d) FATAL in the middle of a batch: the target's trigger waits, the fold
# is done (every changed group in the area), the backend is terminated
gate_target($node, 'postgres', 'q');
my $bg = start_writer($node, 'postgres', "CALL cq.run('q')");
my $waiting = "SELECT pid FROM pg_stat_activity WHERE query LIKE '%CALL cq.run(''q'')%' AND wait_event = 'PgSleep'";
ok($node->poll_query_until('postgres', "SELECT count(*) > 0 FROM ($waiting) w"),
	'a batch is in the middle of writing its target');
my $pid = $node->safe_psql('postgres', $waiting);
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid"),
	'the backend exited');
stop_writers($bg);
$after = area_bytes();
ok($after <= $base + $slack, "a batch terminated after its fold: the area did not grow ($base -> $after bytes)");
is(store_info(), $info, 'the store is as batch 0 left it');
is($node->safe_psql('postgres', "SELECT count(*) FROM cq.offsets WHERE name = 'q'"), '1', 'one batch committed');

# the next batch commits, exactly
$node->safe_psql('postgres', 'UPDATE gate SET open = true');
$node->safe_psql('postgres', "CALL cq.run('q')");
is(mismatches($node, 'postgres', $oracle, 'q'), '0', 'the next batch equals the plain query');
like(store_info(), qr{^1/@{[$groups + 5000]}$}, 'and is published');

# (e) kill -9 in the middle of a batch: crash restart, the store rebuilt
$node->safe_psql('postgres',
	"UPDATE gate SET open = false; INSERT INTO src SELECT g % ($groups + 9000), g % 13 FROM generate_series(1, $groups + 9000) g");
$bg = start_writer($node, 'postgres', "CALL cq.run('q')");
ok($node->poll_query_until('postgres', "SELECT count(*) > 0 FROM ($waiting) w"),
	'a batch is in the middle of writing its target');
$pid = $node->safe_psql('postgres', $waiting);
my $off = -s $node->logfile;
ok(kill_and_restart($node, 'postgres', $pid), 'the server is back after the crash');
stop_writers($bg);
$node->safe_psql('postgres', 'UPDATE gate SET open = true');
$node->safe_psql('postgres', "CALL cq.run('q')");
ok($node->log_contains(qr/rebuilt lost state of continuous query "q"/, $off), 'the store was rebuilt from the source');
is(mismatches($node, 'postgres', $oracle, 'q'), '0', 'the batch after the crash equals the plain query');
like(store_info(), qr{^2/@{[$groups + 9000]}$}, 'and is published');

$node->stop;
done_testing();
