# Batch 0's whole-page loads (heappage.c, cq.fold_direct_pages) through
# crashes and on a streaming standby.  The pages go to the file outside
# shared buffers, WAL-logged as full page images: what must hold is what the
# buffered path gives.
#  1. A committed batch 0, then a crash before any checkpoint: recovery
#     replays the images; the target equals its query, its heap and index are
#     sound (amcheck), and the next batches go on exactly.
#  2. The backend killed while batch 0 writes its pages (the target's file
#     growing): after the crash-restart none of its rows is visible, the heap
#     is sound, and batch 0 run again is exact.
#  3. A standby replaying the primary's WAL: its copy of the target equals the
#     query and passes amcheck.
# Store path (the target) and table path (unlogged state and logged target).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use IPC::Run;
use CqTest;

my $node = PostgreSQL::Test::Cluster->new('direct');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq'
cq.fold_direct_pages = always
checkpoint_timeout = 1h
restart_after_crash = on
max_wal_size = 4GB
});
$node->start;
$node->backup('b0');
my $standby = PostgreSQL::Test::Cluster->new('direct_standby');
$standby->init_from_backup($node, 'b0', has_streaming => 1);
$standby->start;

# ~150,000 groups: the target's pages are well above one group of 32 pages
$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE EXTENSION amcheck;
  CREATE TABLE ev (k int, c text, v numeric);
  INSERT INTO ev SELECT g % 150000, 'c' || (g % 3), g % 1000 FROM generate_series(1, 450000) g;
  ALTER DATABASE postgres SET cq.run_in_worker = off;
  CHECKPOINT;
});
# the targets are created empty: batch 0 is the first CALL (created after
# the checkpoint above, so that a crash replays everything from here)
$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  SELECT cq.create_query('by_k', 'SELECT k, c, count(*) AS n, sum(v) AS s, max(v) AS m FROM ev GROUP BY k, c',
                         output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory');
  SELECT cq.create_query('by_k_t', 'SELECT k, c, count(*) AS n, sum(v) AS s, max(v) AS m FROM ev GROUP BY k, c',
                         output_mode => 'update', "trigger" => 'available_now', state_storage => 'unlogged');
  SELECT cq.create_query('by_k_kill', 'SELECT k, c, count(*) AS n, sum(v) AS s, max(v) AS m FROM ev GROUP BY k, c',
                         output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory');
});
my $oracle = 'SELECT k, c, count(*), sum(v), max(v) FROM ev GROUP BY k, c';
my $redo = $node->safe_psql('postgres', 'SELECT redo_lsn FROM pg_control_checkpoint()');

sub sound
{
	my ($n, $target) = @_;
	return $n->safe_psql('postgres', qq{
	  SELECT (SELECT count(*) FROM verify_heapam('$target'))
	       + (SELECT count(*) FROM (SELECT bt_index_check(i.indexrelid, true) FROM pg_index i
	                                WHERE i.indrelid = '$target'::regclass) x WHERE false)});
}

# 1. batch 0 committed, crash before any checkpoint
$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CALL cq.run('by_k'); CALL cq.run('by_k_t');
});
my $pages = $node->safe_psql('postgres', "SELECT pg_relation_size('by_k') / 8192");
is($node->safe_psql('postgres', 'SELECT redo_lsn FROM pg_control_checkpoint()'), $redo,
	'no checkpoint since the one before batch 0: recovery must replay its pages');
ok($pages > 64, "batch 0 wrote a target of $pages pages");
ok(CqTest::crash_restart($node, 'postgres'), 'crash-restart after batch 0');
ok(CqTest::wait_accepting($node, 'postgres'), 'accepting after recovery');
is(CqTest::mismatches($node, 'postgres', $oracle, 'by_k'), '0', 'store target replayed from its page images equals the query');
is(CqTest::mismatches($node, 'postgres', $oracle, 'by_k_t'), '0', 'table path target replayed equals the query');
is(sound($node, 'by_k'), '0', 'store target: heap and index sound after recovery');
is(sound($node, 'by_k_t'), '0', 'table path target: heap and index sound after recovery');
$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  INSERT INTO ev SELECT g % 200000, 'c' || (g % 3), g % 997 FROM generate_series(1, 60000) g;
  CALL cq.run('by_k'); CALL cq.run('by_k_t');
});
is(CqTest::mismatches($node, 'postgres', $oracle, 'by_k'), '0', 'store target exact after the next batch (its store rebuilt)');
is(CqTest::mismatches($node, 'postgres', $oracle, 'by_k_t'), '0', 'table path target exact after the next batch (state rebuilt)');
is(sound($node, 'by_k'), '0', 'store target sound after the next batch');

# 2. the backend killed while batch 0 writes its pages
my $file = $node->data_dir . '/' . $node->safe_psql('postgres', "SELECT pg_relation_filepath('by_k_kill')");
my $before = -s $file // 0;
my $bg = CqTest::start_writer($node, 'postgres',
	"CALL cq.run('by_k_kill')");
my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
my $grew = 0;
while (time() < $deadline)
{
	my $size = -s $file // 0;
	if ($size > $before + 64 * 8192) { $grew = 1; last; }
	usleep(2_000);
}
ok($grew, 'the killed batch had written pages of its target');
my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE application_name = 'cq_writer'");
ok(CqTest::kill_and_restart($node, 'postgres', $pid), 'the backend killed mid-load, the node restarted');
eval { $bg->finish; };
is($node->safe_psql('postgres', 'SELECT count(*) FROM by_k_kill'), '0', 'none of the killed batch 0 rows is visible');
is($node->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('by_k_kill')"), '0', 'its heap is sound');
$node->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('by_k_kill')");
is(CqTest::mismatches($node, 'postgres', $oracle, 'by_k_kill'), '0', 'batch 0 run again equals the query');
is(sound($node, 'by_k_kill'), '0', 'and its heap and index are sound');

# 3. the standby replays the primary's page images
$node->wait_for_catchup($standby, 'replay');
is(CqTest::mismatches($standby, 'postgres', $oracle, 'by_k'), '0', 'standby: store target equals the query');
is(CqTest::mismatches($standby, 'postgres', $oracle, 'by_k_kill'), '0', 'standby: the rerun batch 0 target equals the query');
is($standby->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('by_k_kill')"), '0', 'standby: its heap is sound');

$standby->stop;
$node->stop;
done_testing();
