# A hash-distributed table as the source of continuous queries (issue 14,
# docs/scale-out.md): rows are stamped in the coordinator's transaction-id
# space only, and every batch takes its snapshot behind the two-phase-commit
# barrier.  Oracle: the plain query over the distributed table.
# This is the mode of cq.citus_per_node = off; the default, rows stamped on
# the node that stores them, is tested by 003_per_node.pl.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCitus;

my ($coord, $workers) = CqCitus::new_cluster(2, "cq.citus_per_node = off");
my ($w1, $w2) = @$workers;

$coord->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE TABLE ev (id bigint, k int, v int);
  SELECT create_distributed_table('ev', 'id', shard_count := 4);
  INSERT INTO ev SELECT i, i % 7, i FROM generate_series(1, 1000) i;
  CREATE TABLE colo (id bigint, k int, v int);
  SELECT create_distributed_table('colo', 'id', colocate_with := 'ev');
  INSERT INTO colo SELECT i, i % 5, 1 FROM generate_series(5001, 5100) i;
});
my ($rc, $out, $err) = $coord->psql('postgres', q{
  CREATE TABLE by_k WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k;
  CREATE TABLE by_k3 WITH (cq.trigger = 'available_now', cq.output_mode = 'complete')
    AS SELECT k % 3 AS k3, count(*) AS n, max(v) AS hi FROM ev GROUP BY 1;
}, on_error_stop => 1);
is($rc, 0, 'continuous queries over a hash-distributed table can be created');
like($err, qr/DEFAULT cq\.coordinator_xact_id\(\)/, 'the source is stamped by cq.coordinator_xact_id()');
unlike($err, qr/WARNING/, 'no Citus warning about propagating internal views');
is($w1->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relnamespace = 'cq_state'::regnamespace}),
	'0', 'internal views and state are not propagated to the workers');

# rows of the targets that differ from the plain query (over the rows of ev
# that satisfy a condition)
sub oracle_where
{
	my ($cond) = @_;
	return qq{
  SELECT (SELECT count(*) FROM ((TABLE by_k EXCEPT ALL SELECT k, count(*), sum(v) FROM ev WHERE $cond GROUP BY k)
          UNION ALL (SELECT k, count(*), sum(v) FROM ev WHERE $cond GROUP BY k EXCEPT ALL TABLE by_k)) x)
       + (SELECT count(*) FROM ((TABLE by_k3 EXCEPT ALL SELECT k % 3, count(*), max(v) FROM ev WHERE $cond GROUP BY 1)
          UNION ALL (SELECT k % 3, count(*), max(v) FROM ev WHERE $cond GROUP BY 1 EXCEPT ALL TABLE by_k3)) x)};
}
my $oracle = oracle_where('true');
my $run = q{CALL cq.run('by_k'); CALL cq.run('by_k3');};
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'batch 0 equals the plain query');

# ---- writes through the coordinator ----
my @writes = (
	[ 'one-row INSERT', q{INSERT INTO ev VALUES (2001, 1, 5)} ],
	[ 'multi-row INSERT (two-phase commit)', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(2002, 2100) i} ],
	[ 'COPY', q{COPY ev (id, k, v) FROM PROGRAM 'seq 3001 3200 | sed "s/.*/&,2,7/"' WITH (format csv)} ],
	[ 'INSERT ... SELECT pushed down to colocated shards', q{INSERT INTO ev (id, k, v) SELECT id, k, v FROM colo} ],
);
for my $w (@writes)
{
	$coord->safe_psql('postgres', $w->[1]);
	$coord->safe_psql('postgres', $run);
	is($coord->safe_psql('postgres', $oracle), '0', "after a $w->[0]: targets equal the plain query");
}
is($coord->safe_psql('postgres', q{SELECT count(DISTINCT cq_xid) FROM ev WHERE cq_xid IS NOT NULL}), '4',
	'every write stamped its rows with one coordinator transaction id');

# ---- writes that would stamp another node's id are refused ----
my $count = $coord->safe_psql('postgres', 'SELECT count(*) FROM ev');
for my $bad (
	[ $w1, 'an INSERT issued on a worker', q{INSERT INTO ev VALUES (9001, 1, 1)},
	  qr/0A000: rows of distributed table "ev" can only be written through the Citus coordinator/ ],
	[ $w2, 'a COPY issued on a worker', q{COPY ev (id, k, v) FROM PROGRAM 'echo 9002,1,1' WITH (format csv)},
	  qr/0A000: rows of distributed table "ev" can only be written through the Citus coordinator/ ],
	[ $coord, 'an INSERT ... SELECT that Citus repartitions', q{INSERT INTO ev (id, k, v) SELECT id + 100000, k, v FROM ev WHERE id <= 50},
	  qr/0A000: rows of a distributed source of continuous queries can only be stamped on the Citus coordinator/ ],
	[ $coord, 'an INSERT that gives cq_xid a value', q{INSERT INTO ev (id, k, v, cq_xid) VALUES (9003, 1, 1, '5')},
	  qr/428C9: column "cq_xid" of distributed table "ev" cannot be given a value/ ],
	[ $coord, 'an INSERT ... SELECT that copies cq_xid', q{INSERT INTO ev SELECT id, k, v, cq_xid FROM ev WHERE id <= 3},
	  qr/428C9: column "cq_xid" of distributed table "ev" cannot be given a value/ ],
	[ $coord, 'a COPY with cq_xid', q{COPY ev FROM PROGRAM 'echo 9004,1,1,5' WITH (format csv)},
	  qr/428C9: column "cq_xid" of distributed table "ev" cannot be given a value/ ],
	[ $w1, 'a TRUNCATE issued on a worker', q{TRUNCATE ev},
	  qr/55006: cannot truncate "ev" on a Citus worker/ ])
{
	my ($node, $what, $sql, $re) = @$bad;
	my ($rc, $out, $err) = $node->psql('postgres', $sql, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	isnt($rc, 0, "$what is refused");
	like($err, $re, "... with its SQLSTATE and reason ($what)");
}
like(($w1->psql('postgres', q{INSERT INTO ev VALUES (9001, 1, 1)}, extra_params => [ '-v', 'VERBOSITY=verbose' ]))[2],
	qr/DETAIL:  .*transaction ids of its own.*\n.*HINT:  Issue the INSERT or COPY on the coordinator/s,
	'the refusal says why and what to do');
is($coord->safe_psql('postgres', 'SELECT count(*) FROM ev'), $count, 'no refused write left rows behind');
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'after the refused writes: targets equal the plain query');

# ---- trigger '0': a write through the coordinator wakes the query ----
# Citus does not fire the shell table's statement trigger; pg_cq's planner hook
# notes the source instead.  With cq.naptime = 1 h only a wake-up runs batches.
$coord->safe_psql('postgres', q{ALTER SYSTEM SET cq.naptime = '1h'; SELECT pg_reload_conf()});
$coord->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE TABLE live_k WITH (cq.trigger = '0', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n FROM ev GROUP BY k;
});
my $live = q{
  SELECT count(*) FROM ((TABLE live_k EXCEPT ALL SELECT k, count(*) FROM ev GROUP BY k)
    UNION ALL (SELECT k, count(*) FROM ev GROUP BY k EXCEPT ALL TABLE live_k)) x};
CqCitus::wait_for($coord, $live, '0', 'a trigger-0 query over the distributed table runs its first batch');
$coord->safe_psql('postgres', q{INSERT INTO ev VALUES (10001, 99, 1)});
CqCitus::wait_for($coord, q{SELECT n FROM live_k WHERE k = 99}, '1', 'an INSERT through the coordinator wakes it');
$coord->safe_psql('postgres', q{COPY ev (id, k, v) FROM PROGRAM 'echo 10002,99,1' WITH (format csv)});
CqCitus::wait_for($coord, q{SELECT n FROM live_k WHERE k = 99}, '2', 'a COPY through the coordinator wakes it');
is($coord->safe_psql('postgres', $live), '0', 'the trigger-0 target equals the plain query');
$coord->safe_psql('postgres', q{
  SELECT cq.drop_query('live_k');
  ALTER SYSTEM RESET cq.naptime; SELECT pg_reload_conf()});
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'targets equal the plain query');

# ---- the two-phase-commit window: COMMIT PREPARED delayed ----
my $ctl = PostgreSQL::Test::Utils::tempdir();
my ($pport, $ppid) = CqCitus::start_proxy($w1->port, $ctl);
# the proxy must not outlive a test that dies (it would hold prove's pipe)
END { kill 'KILL', $ppid if $ppid; }
$coord->safe_psql('postgres', qq{
  SELECT citus_update_node(nodeid, '127.0.0.1', $pport) FROM pg_dist_node WHERE nodeport = } . $w1->port);
my $writer = $coord->background_psql('postgres', on_error_stop => 0);
# only the writer's COMMIT PREPARED (CqCitus::hold_gid says why)
CqCitus::touch("$ctl/hold", CqCitus::hold_gid($writer));
$writer->{stdin} .= "INSERT INTO ev SELECT i, i % 7, i FROM generate_series(20001, 20400) i;\n";
$writer->{run}->pump_nb;
my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
while (!-e "$ctl/held" && time() < $deadline) { select(undef, undef, undef, 0.05); $writer->{run}->pump_nb; }
ok(-e "$ctl/held", 'the COMMIT PREPARED of a distributed INSERT to worker 1 is held');
CqCitus::wait_for($coord, q{SELECT count(*) > 0 FROM ev WHERE id > 20000}, 't',
	'the coordinator has committed: the rows of worker 2 are visible');
my $visible = $coord->safe_psql('postgres', q{SELECT count(*) FROM ev WHERE id > 20000});
cmp_ok($visible, '<', 400, "only part of the write is visible meanwhile ($visible of 400 rows)");
my $batch = $coord->background_psql('postgres', on_error_stop => 0);
$batch->{stdin} .= "CALL cq.run('by_k');\n";
$batch->{run}->pump_nb;
CqCitus::wait_for($coord, q{
  SELECT count(*) FROM pg_locks WHERE relation = 'pg_catalog.pg_dist_transaction'::regclass
     AND mode = 'ExclusiveLock' AND NOT granted}, '1',
	'a batch waits at the barrier for the COMMIT PREPARED in flight');
unlink("$ctl/hold");
$writer->quit;
$batch->quit;
is($coord->safe_psql('postgres', q{SELECT count(*) FROM ev WHERE id > 20000}), '400', 'the write completed');
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'after a delayed COMMIT PREPARED: targets equal the plain query');

# ---- the two-phase-commit window: COMMIT PREPARED lost (an orphan) ----
$coord->safe_psql('postgres', q{ALTER SYSTEM SET citus.recover_2pc_interval = -1; SELECT pg_reload_conf()});
CqCitus::touch("$ctl/drop");
$coord->psql('postgres', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(30001, 30400) i});
ok(-e "$ctl/dropped", 'the COMMIT PREPARED of a distributed INSERT to worker 1 was lost');
unlink("$ctl/drop");
my $part = $coord->safe_psql('postgres', q{SELECT count(*) FROM ev WHERE id > 30000});
cmp_ok($part, '<', 400, "the orphan's rows on worker 1 are not visible ($part of 400)");
$coord->safe_psql('postgres', $run);
# the plain query sees the orphan's rows on worker 2 but not on worker 1: a
# batch leaves the whole transaction for later (it is still in progress for it)
is($coord->safe_psql('postgres', oracle_where('id NOT BETWEEN 30001 AND 30400')), '0',
	'a batch leaves an orphaned distributed transaction out as a whole');
$coord->safe_psql('postgres', q{SELECT recover_prepared_transactions()});
is($coord->safe_psql('postgres', q{SELECT count(*) FROM ev WHERE id > 30000}), '400', 'recovery committed the orphan');
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'after recovery: the orphan\'s rows are counted, targets equal the plain query');
$coord->safe_psql('postgres', qq{
  SELECT citus_update_node(nodeid, '127.0.0.1', } . $w1->port . qq{) FROM pg_dist_node WHERE nodeport = $pport;
  ALTER SYSTEM RESET citus.recover_2pc_interval; SELECT pg_reload_conf()});
kill 'KILL', $ppid;
waitpid($ppid, 0);
$ppid = undef;

# ---- a shard move keeps the stamps ----
my $stamps = q{SELECT md5(string_agg(id || ':' || coalesce(cq_xid::text, '-'), ',' ORDER BY id)) FROM ev};
my ($shard, $from, $to) = split(/\|/, $coord->safe_psql('postgres', q{
  SELECT s.shardid, p.nodeport, (SELECT nodeport FROM pg_dist_node WHERE noderole = 'primary' AND groupid > 0 AND nodeport <> p.nodeport LIMIT 1)
    FROM pg_dist_shard s JOIN pg_dist_placement pl USING (shardid) JOIN pg_dist_node p ON p.groupid = pl.groupid
   WHERE s.logicalrelid = 'ev'::regclass ORDER BY s.shardid LIMIT 1}));
$coord->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(40001, 40100) i});
my $before = $coord->safe_psql('postgres', $stamps . ' WHERE id <= 40100');
$coord->safe_psql('postgres', qq{
  SELECT citus_move_shard_placement($shard, '127.0.0.1', $from, '127.0.0.1', $to, shard_transfer_mode := 'block_writes')});
$coord->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(40101, 40200) i});
$coord->safe_psql('postgres', qq{
  SELECT citus_move_shard_placement($shard, '127.0.0.1', $to, '127.0.0.1', $from, shard_transfer_mode := 'force_logical')});
is($coord->safe_psql('postgres', $stamps . ' WHERE id <= 40100'), $before,
	'shard moves (block_writes, then logical) keep every stamp');
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'after writes around two shard moves: targets equal the plain query');

# ---- a node added during the stream ----
my $w3 = CqCitus::new_node('worker3');
$coord->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(50001, 50100) i});
$coord->safe_psql('postgres', "SELECT citus_add_node('127.0.0.1', " . $w3->port . ")");
$coord->safe_psql('postgres', q{SELECT rebalance_table_shards('ev', shard_transfer_mode := 'block_writes')});
is($coord->safe_psql('postgres', q{
  SELECT count(*) > 0 FROM pg_dist_placement pl JOIN pg_dist_node n USING (groupid) WHERE n.nodeport = } . $w3->port),
	't', 'the new node holds shards after the rebalance');
$coord->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(50101, 50300) i});
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'after a node was added and shards rebalanced: targets equal the plain query');
my ($rc3, $o3, $e3) = $w3->psql('postgres', q{INSERT INTO ev VALUES (9005, 1, 1)}, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($e3, qr/0A000: rows of distributed table "ev" can only be written through the Citus coordinator/,
	'writes issued on the new worker are refused too');

# ---- kill -9 of the coordinator in the middle of a batch ----
$coord->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(100001, 400000) i});
my $victim = $coord->background_psql('postgres', on_error_stop => 0);
$victim->{stdin} .= "CALL cq.run('by_k');\n";
$victim->{run}->pump_nb;
CqCitus::wait_for($coord, q{SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'CALL cq.run(%' AND state = 'active'},
	'1', 'a batch is running');
$coord->kill9;
$victim->{run}->kill_kill;
# the killed postmaster's backends may take a moment to exit (one was waiting
# on the workers): start again once they have
my $restart_deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
until (do { $coord->{_pid} = undef; $coord->start(fail_ok => 1) })    # a failed start leaves _pid set
{
	die 'the coordinator did not restart' if time() > $restart_deadline;
	select(undef, undef, undef, 0.5);
}
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'after kill -9 of the coordinator mid-batch: targets equal the plain query');

# figures for docs/scale-out.md (not checked): time to the end offset of a batch
note('coordinator-stamped: latestOffset of by_k batches, median and max (ms): ' . $coord->safe_psql('postgres', q{
  SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY (durations->>'latestOffset')::float8)::numeric, 1) || ' '
         || round(max((durations->>'latestOffset')::float8)::numeric, 1) || ' over ' || count(*) || ' batches'
    FROM cq.progress WHERE name = 'by_k'}));
$_->stop for ($w1, $w2, $w3);
$coord->stop;
done_testing();
