# Per-node stamps and offsets (issue 14, docs/scale-out.md): the rows of a
# hash-distributed source are stamped on the node that stores them (its
# transaction id and cq.node_id()), and a batch reads each node's rows
# against that node's own snapshots.  Writes through any node are exact.
# Oracle: the plain query over the distributed table.
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

$coord->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE TABLE ev (id bigint, k int, v int);
  SELECT create_distributed_table('ev', 'id', shard_count := 4);
  INSERT INTO ev SELECT i, i % 7, i FROM generate_series(1, 1000) i;
  CREATE TABLE colo (id bigint, k int, v int);
  SELECT create_distributed_table('colo', 'id', colocate_with := 'ev');
  INSERT INTO colo SELECT i, i % 5, i + 70000 FROM generate_series(5001, 5100) i;
});
my ($rc, $out, $err) = $coord->psql('postgres', q{
  CREATE TABLE by_k WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k;
  CREATE TABLE by_k3 WITH (cq.trigger = 'available_now', cq.output_mode = 'complete')
    AS SELECT k % 3 AS k3, count(*) AS n, max(v) AS hi FROM ev GROUP BY 1;
  CREATE TABLE lim WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.max_rows_per_trigger = 150)
    AS SELECT k, count(*) AS n FROM ev GROUP BY k;
}, on_error_stop => 1);
is($rc, 0, 'continuous queries over a hash-distributed table can be created');
like($err, qr/column "cq_node" bigint DEFAULT 0.*stamps each new row on the node that stores it/s,
	'the source is stamped per node');
is($coord->safe_psql('postgres', q{
  SELECT string_agg(DISTINCT r.result, ',') FROM run_command_on_placements('ev',
    $$SELECT format_type(atttypid, -1) || ' ' || pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a
        JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
       WHERE a.attrelid = '%s'::regclass AND a.attname = 'cq_node'$$) r}),
	"bigint '0'::bigint", 'every shard has the column cq_node with its default 0');

my %ids = map { $_ => $_->safe_psql('postgres', 'SELECT cq.node_id()') } ($coord, $w1, $w2);
my $worker_ids = join(',', $ids{$w1}, $ids{$w2});
isnt($ids{$w1}, $ids{$w2}, 'the workers have distinct node ids');

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
my $oracle_lim = q{
  SELECT count(*) FROM ((TABLE lim EXCEPT ALL SELECT k, count(*) FROM ev GROUP BY k)
    UNION ALL (SELECT k, count(*) FROM ev GROUP BY k EXCEPT ALL TABLE lim)) x};
my $run = q{CALL cq.run('by_k'); CALL cq.run('by_k3');};
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'batch 0 equals the plain query');

# stamps: every stamped row carries the node that stores it
my $misstamped = qq{
  SELECT sum(bad) FROM (SELECT (r.result)::int AS bad FROM run_command_on_placements('ev',
    \$\$SELECT count(*) FROM %s WHERE cq_xid IS NOT NULL AND cq_node IS DISTINCT FROM cq.node_id()\$\$) r) x};

# ---- writes through the coordinator and through the workers ----
my @writes = (
	[ $coord, 'coordinator: one-row INSERT', q{INSERT INTO ev VALUES (2001, 1, 5)} ],
	[ $coord, 'coordinator: multi-row INSERT (two-phase commit)', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(2002, 2100) i} ],
	[ $coord, 'coordinator: COPY', q{COPY ev (id, k, v) FROM PROGRAM 'seq 3001 3200 | sed "s/.*/&,2,7/"' WITH (format csv)} ],
	[ $coord, 'coordinator: INSERT ... SELECT pushed down', q{INSERT INTO ev (id, k, v) SELECT id, k, v FROM colo} ],
	[ $w1, 'worker 1: one-row INSERT', q{INSERT INTO ev VALUES (6001, 3, 11)} ],
	[ $w1, 'worker 1: multi-row INSERT over both workers', q{INSERT INTO ev SELECT i, i % 7, 2 * i FROM generate_series(6002, 6300) i} ],
	[ $w2, 'worker 2: COPY', q{COPY ev (id, k, v) FROM PROGRAM 'seq 7001 7150 | sed "s/.*/&,4,9/"' WITH (format csv)} ],
	[ $w2, 'worker 2: INSERT giving cq_xid (restamped)', q{INSERT INTO ev (id, k, v, cq_xid) VALUES (7201, 5, 1, '5')} ],
	[ $coord, 'coordinator: INSERT ... SELECT that Citus repartitions', q{INSERT INTO ev (id, k, v) SELECT v, k, id FROM colo} ],
	[ $w2, 'worker 2: INSERT ... SELECT that Citus repartitions', q{INSERT INTO ev (id, k, v) SELECT id + 200000, v % 7, k FROM ev WHERE id <= 300} ],
);
for my $w (@writes)
{
	$w->[0]->safe_psql('postgres', $w->[2]);
	$coord->safe_psql('postgres', $run);
	is($coord->safe_psql('postgres', $oracle), '0', "after a write by $w->[1]: targets equal the plain query");
}
is($coord->safe_psql('postgres', $misstamped), '0', 'every new row is stamped by the node that stores it');
is($coord->safe_psql('postgres', qq{SELECT count(*) FROM ev WHERE cq_xid IS NOT NULL AND cq_node NOT IN ($worker_ids)}),
	'0', 'no row carries the coordinator\'s or another stamp');
is($coord->safe_psql('postgres', q{SELECT count(*) FROM ev WHERE id = 7201 AND cq_xid = '5'}), '0',
	'a cq_xid given by the INSERT is replaced');

# ---- the row limit cuts per node ----
$coord->safe_psql('postgres', q{CALL cq.run('lim')});
is($coord->safe_psql('postgres', $oracle_lim), '0', 'a query with max_rows_per_trigger = 150 equals the plain query');
$w1->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, 1 FROM generate_series(8001, 8100) i});
$w2->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, 1 FROM generate_series(8101, 8200) i});
$coord->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, 1 FROM generate_series(8201, 8300) i});
my $nb = $coord->safe_psql('postgres', q{SELECT coalesce(max(batch_id), -1) FROM cq.progress WHERE name = 'lim'});
$coord->safe_psql('postgres', q{CALL cq.run('lim')});
is($coord->safe_psql('postgres', $oracle_lim), '0', 'after 300 rows in 3 transactions of 3 nodes: equal the plain query');
# each statement is a transaction on each worker (about 50 rows each): the
# limit cuts between them, per node
is($coord->safe_psql('postgres', qq{
  SELECT sum(num_input_rows) || ' ' || (max(num_input_rows) <= 150) || ' ' || (count(*) >= 2)
    FROM cq.progress WHERE name = 'lim' AND batch_id > $nb}), '300 true true',
	'the limit split the 300 rows into batches of at most 150 rows');

# ---- refused: a value for cq_node, TRUNCATE on a worker ----
my $count = $coord->safe_psql('postgres', 'SELECT count(*) FROM ev');
for my $bad (
	[ $coord, 'an INSERT that gives cq_node a value', q{INSERT INTO ev (id, k, v, cq_node) VALUES (9003, 1, 1, 42)},
	  qr/428C9: column "cq_node" of distributed table "ev" cannot be given a value/ ],
	[ $w1, 'an INSERT on a worker that copies cq_node', q{INSERT INTO ev SELECT id, k, v, cq_xid, cq_node FROM ev WHERE id <= 3},
	  qr/428C9: column "cq_node" of distributed table "ev" cannot be given a value/ ],
	[ $w2, 'a COPY without a column list', q{COPY ev FROM PROGRAM 'echo 9004,1,1,,' WITH (format csv)},
	  qr/428C9: column "cq_node" of distributed table "ev" cannot be given a value/ ],
	[ $w1, 'an UPDATE of cq_node', q{UPDATE ev SET cq_node = 1 WHERE id = 1},
	  qr/428C9: column "cq_node" of table "ev_\d+" cannot be changed/ ],
	[ $w1, 'a TRUNCATE issued on a worker', q{TRUNCATE ev},
	  qr/55006: cannot truncate "ev" on a Citus worker/ ])
{
	my ($node, $what, $sql, $re) = @$bad;
	my ($rc, $out, $err) = $node->psql('postgres', $sql, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	isnt($rc, 0, "$what is refused");
	like($err, $re, "... with its SQLSTATE and reason ($what)");
}
is($coord->safe_psql('postgres', 'SELECT count(*) FROM ev'), $count, 'no refused write left rows behind');

# ---- a transaction of a worker in progress across batches ----
my $open = $w1->background_psql('postgres', on_error_stop => 0);
$open->query_safe(q{BEGIN; INSERT INTO ev SELECT i, 6, 1 FROM generate_series(9101, 9150) i});
$w2->safe_psql('postgres', q{INSERT INTO ev SELECT i, 6, 1 FROM generate_series(9151, 9160) i});
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'a batch with a worker transaction in progress equals the plain query');
$open->query_safe('COMMIT');
$open->quit;
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'after it commits: its rows are counted');

# ---- the two-phase-commit window: COMMIT PREPARED delayed ----
# The prepared transaction is in progress in worker 1's own snapshot: a batch
# neither waits nor skips its rows.
my $ctl = PostgreSQL::Test::Utils::tempdir();
my ($pport, $ppid) = CqCitus::start_proxy($w1->port, $ctl);
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
CqCitus::wait_for($coord, q{SELECT count(*) > 0 FROM ev WHERE id > 20000 AND id <= 20400}, 't',
	'the coordinator has committed: the rows of worker 2 are visible');
my $visible = $coord->safe_psql('postgres', q{SELECT count(*) FROM ev WHERE id > 20000 AND id <= 20400});
cmp_ok($visible, '<', 400, "only part of the write is visible meanwhile ($visible of 400 rows)");
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0',
	'a batch in the window (no wait) counts exactly the visible rows: worker 1\'s are in progress there');
unlink("$ctl/hold");
$writer->quit;
is($coord->safe_psql('postgres', q{SELECT count(*) FROM ev WHERE id > 20000 AND id <= 20400}), '400', 'the write completed');
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'after the delayed COMMIT PREPARED: its rows on worker 1 are counted');

# ---- COMMIT PREPARED lost (an orphan, committed later by recovery) ----
$coord->safe_psql('postgres', q{ALTER SYSTEM SET citus.recover_2pc_interval = -1; SELECT pg_reload_conf()});
CqCitus::touch("$ctl/drop");
$coord->psql('postgres', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(30001, 30400) i});
ok(-e "$ctl/dropped", 'the COMMIT PREPARED of a distributed INSERT to worker 1 was lost');
unlink("$ctl/drop");
my $part = $coord->safe_psql('postgres', q{SELECT count(*) FROM ev WHERE id > 30000 AND id <= 30400});
cmp_ok($part, '<', 400, "the orphan's rows on worker 1 are not visible ($part of 400)");
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'a batch counts the orphan\'s visible rows only');
$coord->safe_psql('postgres', q{SELECT recover_prepared_transactions()});
is($coord->safe_psql('postgres', q{SELECT count(*) FROM ev WHERE id > 30000 AND id <= 30400}), '400', 'recovery committed the orphan');
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'after recovery: the rest of its rows are counted');
$coord->safe_psql('postgres', qq{
  SELECT citus_update_node(nodeid, '127.0.0.1', } . $w1->port . qq{) FROM pg_dist_node WHERE nodeport = $pport;
  ALTER SYSTEM RESET citus.recover_2pc_interval; SELECT pg_reload_conf()});
kill 'KILL', $ppid;
waitpid($ppid, 0);
$ppid = undef;

# ---- shard moves during the stream keep the stamps ----
my $stamps = q{SELECT md5(string_agg(id || ':' || coalesce(cq_xid::text, '-') || ':' || coalesce(cq_node::text, '-'), ',' ORDER BY id, cq_xid)) FROM ev};
my ($shard, $from, $to) = split(/\|/, $coord->safe_psql('postgres', q{
  SELECT s.shardid, p.nodeport, (SELECT nodeport FROM pg_dist_node WHERE noderole = 'primary' AND groupid > 0 AND nodeport <> p.nodeport LIMIT 1)
    FROM pg_dist_shard s JOIN pg_dist_placement pl USING (shardid) JOIN pg_dist_node p ON p.groupid = pl.groupid
   WHERE s.logicalrelid = 'ev'::regclass ORDER BY s.shardid LIMIT 1}));
$w1->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(40001, 40100) i});
my $before = $coord->safe_psql('postgres', $stamps . ' WHERE id <= 40100');
my $hist_before = $coord->safe_psql('postgres', q{SELECT count(*) FROM ev WHERE cq_xid IS NULL AND cq_node IS NULL});
$coord->safe_psql('postgres', qq{
  SELECT citus_move_shard_placement($shard, '127.0.0.1', $from, '127.0.0.1', $to, shard_transfer_mode := 'block_writes')});
$w2->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(40101, 40200) i});
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'after a shard move between batches: targets equal the plain query');
$coord->safe_psql('postgres', qq{
  SELECT citus_move_shard_placement($shard, '127.0.0.1', $to, '127.0.0.1', $from, shard_transfer_mode := 'force_logical')});
is($coord->safe_psql('postgres', $stamps . ' WHERE id <= 40100'), $before,
	'shard moves (block_writes, then logical) keep every stamp, node included');
is($coord->safe_psql('postgres', q{SELECT count(*) FROM ev WHERE cq_xid IS NULL AND cq_node IS NULL}), $hist_before,
	'history rows stay history');
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'after writes around two shard moves: targets equal the plain query');

# ---- a shard split keeps the stamps ----
$w2->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(45001, 45100) i});
my $all_before = $coord->safe_psql('postgres', $stamps);
my ($split_shard, $mid, $n1, $n2) = split(/\|/, $coord->safe_psql('postgres', q{
  SELECT s.shardid, ((s.shardminvalue::bigint + s.shardmaxvalue::bigint) / 2)::int,
         (SELECT min(nodeid) FROM pg_dist_node WHERE groupid > 0 AND noderole = 'primary'),
         (SELECT max(nodeid) FROM pg_dist_node WHERE groupid > 0 AND noderole = 'primary')
    FROM pg_dist_shard s WHERE s.logicalrelid = 'ev'::regclass ORDER BY s.shardid LIMIT 1}));
$coord->safe_psql('postgres', qq{
  SELECT citus_split_shard_by_split_points($split_shard, ARRAY['$mid'], ARRAY[$n1, $n2], shard_transfer_mode := 'block_writes')});
is($coord->safe_psql('postgres', q{SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'ev'::regclass}), '5',
	'the shard was split in two');
is($coord->safe_psql('postgres', $stamps), $all_before, 'a shard split keeps every stamp, node included');
$w1->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(45101, 45200) i});
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'after a shard split during the stream: targets equal the plain query');
is($coord->safe_psql('postgres', qq{
  SELECT sum((r.result)::int) FROM run_command_on_placements('ev',
    \$\$SELECT count(*) FROM %s WHERE id BETWEEN 45101 AND 45200 AND cq_node IS DISTINCT FROM cq.node_id()\$\$) r}),
	'0', 'rows written after the split are stamped by the node that stores them');

# ---- a node added during the stream ----
my $w3 = CqCitus::new_node('worker3');
$w1->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(50001, 50100) i});
$coord->safe_psql('postgres', "SELECT citus_add_node('127.0.0.1', " . $w3->port . ")");
$coord->safe_psql('postgres', q{SELECT rebalance_table_shards('ev', shard_transfer_mode := 'block_writes')});
is($coord->safe_psql('postgres', q{
  SELECT count(*) > 0 FROM pg_dist_placement pl JOIN pg_dist_node n USING (groupid) WHERE n.nodeport = } . $w3->port),
	't', 'the new node holds shards after the rebalance');
$w3->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(50101, 50300) i});
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'after a node was added, shards rebalanced and writes on it: targets equal the plain query');
is($coord->safe_psql('postgres', qq{SELECT count(*) > 0 FROM ev WHERE cq_node = } . $w3->safe_psql('postgres', 'SELECT cq.node_id()')),
	't', 'the new node stamps the rows it stores');

# ---- kill -9 of the coordinator in the middle of a batch ----
$w2->safe_psql('postgres', q{INSERT INTO ev SELECT i, i % 7, i FROM generate_series(100001, 400000) i});
my $victim = $coord->background_psql('postgres', on_error_stop => 0);
$victim->{stdin} .= "CALL cq.run('by_k');\n";
$victim->{run}->pump_nb;
CqCitus::wait_for($coord, q{SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'CALL cq.run(%' AND state = 'active'},
	'1', 'a batch is running');
$coord->kill9;
$victim->{run}->kill_kill;
my $restart_deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
until (do { $coord->{_pid} = undef; $coord->start(fail_ok => 1) })    # a failed start leaves _pid set
{
	die 'the coordinator did not restart' if time() > $restart_deadline;
	select(undef, undef, undef, 0.5);
}
$coord->safe_psql('postgres', $run);
is($coord->safe_psql('postgres', $oracle), '0', 'after kill -9 of the coordinator mid-batch: targets equal the plain query');
$coord->safe_psql('postgres', q{CALL cq.run('lim')});
is($coord->safe_psql('postgres', $oracle_lim), '0', 'the row-limited query too');

# figures for docs/scale-out.md (not checked): time to the end offset of a batch
note('per-node: latestOffset of by_k batches, median and max (ms): ' . $coord->safe_psql('postgres', q{
  SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY (durations->>'latestOffset')::float8)::numeric, 1) || ' '
         || round(max((durations->>'latestOffset')::float8)::numeric, 1) || ' over ' || count(*) || ' batches'
    FROM cq.progress WHERE name = 'by_k'}));
$_->stop for ($w1, $w2, $w3);
$coord->stop;
done_testing();
