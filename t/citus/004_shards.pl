# The shards' side of batches over a source stamped per node (issue 14,
# docs/scale-out.md, src/shard.c): on the workers, a batch's shard queries
# read only new rows (per-node cq_xid ranges through the shards' BRIN
# indexes, summarized there, no sequential scan), and stay exact; and a
# query with trigger '0' progresses on writes issued on workers, which do not
# wake it, by the cq.naptime poll.  Oracle: the plain query over the
# distributed table.  The workers log the plan of every statement they run
# (auto_explain with ANALYZE): the test reads the shard queries' plans there.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCitus;

my ($coord, $workers) = CqCitus::new_cluster(2);
my ($w1, $w2) = @$workers;
for my $w ($w1, $w2)
{
	# no autovacuum: a batch does not wait for the lock it holds on a shard
	# and leaves that shard's summarization to it (tracking.c)
	$w->append_conf('postgresql.conf', q{
autovacuum = off
session_preload_libraries = 'auto_explain'
auto_explain.log_min_duration = 0
auto_explain.log_analyze = on
auto_explain.log_timing = off
});
	$w->reload;
}
# a statement of the test itself, without auto_explain's ANALYZE (Citus
# refuses EXPLAIN ANALYZE of a distributed INSERT ... SELECT)
sub run_sql
{
	my ($node, $sql) = @_;
	return $node->safe_psql('postgres', "SET auto_explain.log_min_duration = -1;\n$sql");
}

# The nodes' transaction counters apart before the load: worker 2's 3,000
# ahead of worker 1's, the coordinator's 6,000.  The union of the nodes'
# ranges, [lowest low bound, highest xmax), would then cover every row worker
# 2 stamped since the query began.  (The BRIN index is on cq_xid alone: with
# counters close together, one node's range of new ids would also match the
# page ranges where another node stamped the same numbers; docs/scale-out.md.)
run_sql($w2, join('', map { "SELECT pg_current_xact_id();\n" } 1 .. 3000));
$coord->safe_psql('postgres', join('', map { "SELECT pg_current_xact_id();\n" } 1 .. 6000));
$coord->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE TABLE ev (id bigint, k int, v int);
  SELECT create_distributed_table('ev', 'id', shard_count := 4);
});
my ($rc, $out, $err) = $coord->psql('postgres', q{
  CREATE TABLE by_k WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k;
}, on_error_stop => 1);
is($rc, 0, 'a continuous query over a hash-distributed table');
$coord->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(1, 120000) i});
run_sql($w1, q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(120001, 125000) i});
run_sql($w2, q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(125001, 130000) i});
my $oracle = q{
  SELECT count(*) FROM ((TABLE by_k EXCEPT ALL SELECT k, count(*), sum(v) FROM ev GROUP BY k)
    UNION ALL (SELECT k, count(*), sum(v) FROM ev GROUP BY k EXCEPT ALL TABLE by_k)) x};
$coord->safe_psql('postgres', q{CALL cq.run('by_k')});
is($coord->safe_psql('postgres', $oracle), '0', 'batch 0 equals the plain query');
my $min_pages = $coord->safe_psql('postgres', q{
  SELECT min(result::bigint) FROM run_command_on_shards('ev', $$SELECT pg_relation_size('%s') / 8192$$)});
cmp_ok($min_pages, '>', 150, "every shard has more than 150 pages ($min_pages)");

# batch BATCH: run a batch of by_k and return the plans the workers logged
# for its shard queries (one string per worker)
sub batch
{
	my @at = map { -s $_->logfile } ($w1, $w2);
	$coord->safe_psql('postgres', q{CALL cq.run('by_k')});
	my @logs = map { slurp_file(($w1, $w2)[$_]->logfile, $at[$_]) } (0, 1);
	return @logs;
}

# ---- every batch reads only new rows on the shards, and is exact ----
my $open = $w1->background_psql('postgres', on_error_stop => 0);
$open->query_safe('SET auto_explain.log_min_duration = -1');
my @rounds = (
	[ $coord, 'a multi-row INSERT through the coordinator', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(200001, 200100) i} ],
	[ $w1, 'an INSERT on worker 1', q{INSERT INTO ev SELECT i, i % 7, 3 * i FROM generate_series(200101, 200150) i} ],
	[ $w2, 'a COPY on worker 2', q{COPY ev (id, k, v) FROM PROGRAM 'seq 200151 200190 | sed "s/.*/&,4,9/"' WITH (format csv)} ],
	[ $w1, 'a transaction of worker 1 left open, then other writes',
	  q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(200201, 200230) i},
	  q{BEGIN; INSERT INTO ev SELECT i, 6, 1 FROM generate_series(200301, 200340) i} ],
	[ $coord, 'the open transaction committed', q{SELECT 1}, 'COMMIT' ],
	[ $w2, 'nothing new on the workers', q{SELECT 1} ],
);
for my $r (@rounds)
{
	my ($node, $what, $sql, $in_open) = @$r;
	$open->query_safe($in_open) if defined $in_open;
	run_sql($node, $sql);
	my @logs = batch();
	is($coord->safe_psql('postgres', $oracle), '0', "after $what: the target equals the plain query");
	for my $i (0, 1)
	{
		my $log = $logs[$i];
		my $n = $i + 1;
		unlike($log, qr/Seq Scan on ev_\d+/, "after $what: no sequential scan of a shard on worker $n");
		my @blocks = $log =~ /Heap Blocks: (?:exact=\d+ )?lossy=(\d+)/g;
		my $most = (sort { $b <=> $a } @blocks, 0)[0];
		cmp_ok($most, '<', $min_pages / 2,
			"after $what: a scan of a shard on worker $n reads fewer than half of its pages ($most)");
	}
	like(join('', @logs), qr/Bitmap Heap Scan on ev_\d+/, "after $what: the shards are read through their BRIN index")
	  unless $what =~ /nothing new/;
}
$open->quit;
is($coord->safe_psql('postgres', q{SELECT count(*) FROM ev WHERE id BETWEEN 200301 AND 200340}), '40',
	'the open transaction\'s rows are there');

# ---- trigger '0': writes through the coordinator wake it, writes on workers are polled ----
# set_naptime(VALUE): reload, and wait until new sessions have it (the
# postmaster has signalled every process, the scheduler too)
sub set_naptime
{
	my ($value) = @_;
	$coord->safe_psql('postgres', qq{ALTER SYSTEM SET cq.naptime = '$value'; SELECT pg_reload_conf()});
	CqCitus::wait_for($coord, q{SHOW cq.naptime}, $value, "cq.naptime is $value");
}
$coord->safe_psql('postgres', q{
  CREATE TABLE live WITH (cq.trigger = '0', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k});
my $oracle_live = q{
  SELECT count(*) FROM ((TABLE live EXCEPT ALL SELECT k, count(*), sum(v) FROM ev GROUP BY k)
    UNION ALL (SELECT k, count(*), sum(v) FROM ev GROUP BY k EXCEPT ALL TABLE live)) x};
CqCitus::wait_for($coord, $oracle_live, '0', 'a trigger \'0\' query over a distributed source runs its first batch');
# no poll within the test's deadline: only a wake-up can run a batch
set_naptime('1h');
$coord->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(300001, 300050) i});
CqCitus::wait_for($coord, $oracle_live, '0', 'a write through the coordinator wakes the query');
# writes on the workers cannot wake it (docs/scale-out.md): the poll runs it
set_naptime('1s');
my $before = $coord->safe_psql('postgres', q{SELECT count(*) FROM cq.progress WHERE name = 'live'});
run_sql($w1, q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(300101, 300130) i});
run_sql($w2, q{COPY ev (id, k, v) FROM PROGRAM 'seq 300201 300220 | sed "s/.*/&,5,2/"' WITH (format csv)});
CqCitus::wait_for($coord, $oracle_live, '0', 'writes on the workers: the cq.naptime poll catches up');
cmp_ok($coord->safe_psql('postgres', q{SELECT count(*) FROM cq.progress WHERE name = 'live'}), '>', $before,
	'by batches of its own');

done_testing();
