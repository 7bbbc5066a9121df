# Reference tables and Citus local tables as sources (issue 14,
# docs/scale-out.md, "Reference tables and Citus local tables").
#
# A batch reads the coordinator's own copy of the table (its shard placed in
# group 0) as a plain local table, with the coordinator's offsets; the copy's
# stamp trigger stamps every row stored there with the coordinator's
# transaction id, whichever node issued the write.  Oracle: after each
# batch, the target equals the plain query over the table.
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

# loc had a column dropped before it became a Citus local table: its shard
# (the original table) and its shell number their columns differently
$coord->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE TABLE ref (id bigint, k int, v numeric);
  SELECT create_reference_table('ref');
  CREATE TABLE loc (id bigint, gone int, k int, v numeric);
  ALTER TABLE loc DROP COLUMN gone;
  SELECT citus_add_local_table_to_metadata('loc');
  INSERT INTO ref SELECT i, i % 5, i FROM generate_series(1, 100) i;
  INSERT INTO loc SELECT i, i % 5, i FROM generate_series(1, 100) i;
  CREATE TABLE ref_agg WITH (cq.trigger = '1 hour', cq.output_mode = 'update', cq.starting = 'earliest')
    AS SELECT k, count(*) AS n, sum(v) AS s FROM ref GROUP BY k;
  CREATE TABLE loc_agg WITH (cq.trigger = '1 hour', cq.output_mode = 'update', cq.starting = 'latest')
    AS SELECT k, count(*) AS n, sum(v) AS s FROM loc WHERE v > 0 GROUP BY k;
});

# the coordinator's copy is recorded, the batch statement names it
for my $t ('ref', 'loc')
{
	like($coord->safe_psql('postgres',
		"SELECT read_relation::regclass FROM cq.queries WHERE name = '${t}_agg'"),
		qr/^${t}_\d+$/, "query over $t reads the coordinator's copy");
	like($coord->safe_psql('postgres', "SELECT cq.explain('${t}_agg')"),
		qr/FROM public\.${t}_\d+\s/, "... and its batch statement names only that shard table");
}

my %oracle = (
	ref => q{SELECT k, count(*), sum(v) FROM ref GROUP BY k},
	loc => q{SELECT k, count(*), sum(v) FROM loc WHERE v > 0 GROUP BY k});

sub check
{
	my ($what) = @_;
	for my $t ('ref', 'loc')
	{
		$coord->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('${t}_agg')");
		my $o = $t eq 'ref' ? $oracle{ref}
		  : q{SELECT k, count(*), sum(v) FROM loc WHERE v > 0 AND id > 100 GROUP BY k};
		is($coord->safe_psql('postgres', qq{
		  SELECT count(*) FROM ((TABLE ${t}_agg EXCEPT ALL $o) UNION ALL ($o EXCEPT ALL TABLE ${t}_agg)) x}),
			'0', "$t: target equals the plain query after $what");
	}
}

check('batch 0');

# writes through the coordinator and both workers, one-row, multi-row, COPY
my $id = 1000;
for my $node ($coord, $w1, $w2)
{
	my $name = $node->name;
	for my $t ('ref', 'loc')
	{
		$node->safe_psql('postgres', "INSERT INTO $t (id, k, v) VALUES ($id, 1, 7)");
		$id++;
		$node->safe_psql('postgres',
			"INSERT INTO $t (id, k, v) SELECT i, i % 5, i FROM generate_series($id, $id + 49) i");
		$id += 50;
		$node->safe_psql('postgres', "COPY $t (id, k, v) FROM STDIN", stdin => join('', map { "$_\t3\t2\n" } $id .. $id + 9) . "\\.\n");
		$id += 10;
	}
	check("writes issued on $name");
}

# every row of the copies is stamped by the coordinator
my $node_id = $coord->safe_psql('postgres', 'SELECT cq.node_id()');
for my $t ('ref', 'loc')
{
	my $copy = $coord->safe_psql('postgres', "SELECT read_relation::regclass FROM cq.queries WHERE name = '${t}_agg'");
	is($coord->safe_psql('postgres', "SELECT count(*) FROM $copy WHERE id >= 1000 AND cq_node IS DISTINCT FROM $node_id"),
		'0', "$t: every new row of the coordinator's copy is stamped by the coordinator");
}
my $ref_copy = $coord->safe_psql('postgres', "SELECT read_relation::regclass FROM cq.queries WHERE name = 'ref_agg'");
isnt($w1->safe_psql('postgres', "SELECT count(DISTINCT cq_node) FROM $ref_copy WHERE id >= 1000"), '0',
	"a worker's copy is stamped by that worker (not read)");
is($w1->safe_psql('postgres', "SELECT count(*) FROM $ref_copy WHERE id >= 1000 AND cq_node = $node_id"), '0',
	"... with its own node id");

# ---- the two-phase-commit window, with the coordinator's COMMIT PREPARED
# held: a write issued on worker 1 commits there first, then sends COMMIT
# PREPARED to the other nodes.  The workers reach the coordinator through a
# proxy that holds that message: the coordinator's part is still prepared,
# in progress in its snapshots, so a batch does not read those rows yet
# (although worker 1 shows them) and reads them once it commits.
my $ctl = PostgreSQL::Test::Utils::tempdir();
my ($pport, $ppid) = CqCitus::start_proxy($coord->port, $ctl);
END { kill 'KILL', $ppid if $ppid; }
$coord->safe_psql('postgres', "SELECT citus_set_coordinator_host('127.0.0.1', $pport)");
my $writer = $w1->background_psql('postgres', on_error_stop => 0);
my $wpid = $writer->query_safe('SELECT pg_backend_pid()');
$wpid =~ s/\s+//g;
my $wgroup = $w1->safe_psql('postgres', 'SELECT groupid FROM pg_dist_local_group');
CqCitus::touch("$ctl/hold", "citus_${wgroup}_${wpid}_");
$writer->{stdin} .= "INSERT INTO ref (id, k, v) SELECT i, 4, 100 FROM generate_series(4000, 4099) i;\n";
$writer->{run}->pump_nb;
my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
while (!-e "$ctl/held" && time() < $deadline) { select(undef, undef, undef, 0.05); $writer->{run}->pump_nb; }
ok(-e "$ctl/held", 'the COMMIT PREPARED to the coordinator of a write issued on worker 1 is held');
CqCitus::wait_for($w1, q{SELECT count(*) FROM ref WHERE id BETWEEN 4000 AND 4099}, '100',
	'worker 1 has committed its part: its copy shows the rows');
is($coord->safe_psql('postgres', q{SELECT count(*) FROM pg_prepared_xacts}), '1',
	'the coordinator\'s part is prepared');
check('a batch in the window');
is($coord->safe_psql('postgres', q{SELECT n FROM ref_agg WHERE k = 4}),
	$coord->safe_psql('postgres', q{SELECT count(*) FROM ref WHERE k = 4 AND id NOT BETWEEN 4000 AND 4099}),
	'... which does not count the held rows');
unlink("$ctl/hold");
$writer->quit;
CqCitus::wait_for($coord, q{SELECT count(*) FROM ref WHERE id BETWEEN 4000 AND 4099}, '100',
	'the coordinator\'s part committed once COMMIT PREPARED arrived');
check('the held COMMIT PREPARED arrived');
$coord->safe_psql('postgres', "SELECT citus_set_coordinator_host('127.0.0.1', " . $coord->port . ")");

# a transaction prepared on the coordinator's copy (the coordinator's part
# of a two-phase commit whose COMMIT PREPARED has not arrived yet): not read
# until it commits, then read once
$coord->safe_psql('postgres', qq{
  BEGIN;
  SET LOCAL citus.enable_manual_changes_to_shards = on;
  INSERT INTO $ref_copy (id, k, v) VALUES (5000, 2, 1000), (5001, 3, 1000);
  PREPARE TRANSACTION 'cq_held';
});
$coord->safe_psql('postgres', q{INSERT INTO ref (id, k, v) VALUES (5002, 4, 5)});
$coord->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('ref_agg')");
is($coord->safe_psql('postgres', q{SELECT n FROM ref_agg WHERE k = 2}),
	$coord->safe_psql('postgres', q{SELECT count(*) FROM ref WHERE k = 2}),
	'a batch while the copy\'s transaction is prepared equals the plain query (rows not visible yet)');
$coord->safe_psql('postgres', q{COMMIT PREPARED 'cq_held'});
check('COMMIT PREPARED on the coordinator');

# a third worker: the reference table is copied to it, then written there
my $w3 = CqCitus::new_node('worker3');
$coord->safe_psql('postgres', "SELECT citus_add_node('127.0.0.1', " . $w3->port . ")");
$coord->safe_psql('postgres', q{SELECT replicate_reference_tables('block_writes')});
$w3->safe_psql('postgres', "INSERT INTO ref (id, k, v) SELECT i, i % 5, 1 FROM generate_series(6000, 6099) i");
$w3->safe_psql('postgres', "INSERT INTO loc (id, k, v) SELECT i, i % 5, 1 FROM generate_series(6000, 6099) i");
check('a node added and written to');

# ---- kill -9 of the coordinator in the middle of a batch ----
# The batch is held inside its transaction: another session locks the
# query's target, which the batch statement writes.
$w2->safe_psql('postgres', q{INSERT INTO ref (id, k, v) SELECT i, i % 5, 1 FROM generate_series(100001, 120000) i});
my $locker = $coord->background_psql('postgres', on_error_stop => 0);
$locker->query_safe('BEGIN; LOCK TABLE ref_agg IN ACCESS EXCLUSIVE MODE');
my $victim = $coord->background_psql('postgres', on_error_stop => 0);
$victim->{stdin} .= "CALL cq.run('ref_agg');\n";
$victim->{run}->pump_nb;
CqCitus::wait_for($coord,
	q{SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%CALL cq.run(%' AND wait_event_type = 'Lock'},
	'1', 'a batch is running (waiting for the target)');
$coord->kill9;
$victim->{run}->kill_kill;
$locker->{run}->kill_kill;
my $restart_deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
until (do { $coord->{_pid} = undef; $coord->start(fail_ok => 1) })    # a failed start leaves _pid set
{
	die 'the coordinator did not restart' if time() > $restart_deadline;
	select(undef, undef, undef, 0.5);
}
check('kill -9 of the coordinator mid-batch');

# TRUNCATE on a worker is refused
my ($rc, $out, $err) = $w1->psql('postgres', 'TRUNCATE ref', extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/55006: cannot truncate "ref" on a Citus worker/, 'TRUNCATE of a reference source on a worker is refused');

# the internal objects stay on the coordinator
is($w1->safe_psql('postgres', q{SELECT coalesce(string_agg(c.relname, ' '), '') FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'cq_state'}),
	'', "the queries' internal objects are not propagated to the workers");

# a local source whose query began, then made a reference table: refused at
# the next batch (its offsets were taken over the table itself).  (Citus
# propagates the query's view, which depends on the table, to the workers
# when it distributes the table: after the check above.)
$coord->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE TABLE pl (id bigint, k int);
  CREATE TABLE pl_agg WITH (cq.trigger = '1 hour', cq.output_mode = 'update') AS SELECT k, count(*) AS n FROM pl GROUP BY k;
  INSERT INTO pl VALUES (1, 1);
  SET citus.enable_unsafe_triggers = on;
  SELECT create_reference_table('pl');
});
($rc, $out, $err) = $coord->psql('postgres', "CALL cq.run('pl_agg')", extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/55000: source "pl" of continuous query "pl_agg" became a Citus reference table or Citus local table after the query began to read it/,
	'a local source made a reference table after its query began: the batch fails with SQLSTATE 55000');
$coord->safe_psql('postgres', q{SET client_min_messages = warning; SELECT cq.drop_query('pl_agg')});

# a stream-static join reads a reference table as its static side
$coord->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE TABLE ev (id bigint, k int);
  CREATE TABLE dim (k int, label text);
  SELECT create_reference_table('dim');
  INSERT INTO dim SELECT i, 'k' || i FROM generate_series(0, 4) i;
  CREATE TABLE ev_dim WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.source = 'ev')
    AS SELECT d.label, count(*) AS n FROM ev JOIN dim d ON d.k = ev.k GROUP BY d.label;
  INSERT INTO ev SELECT i, i % 5 FROM generate_series(1, 50) i;
  CALL cq.run('ev_dim');
});
is($coord->safe_psql('postgres', q{
  SELECT count(*) FROM ((TABLE ev_dim EXCEPT ALL SELECT d.label, count(*) FROM ev JOIN dim d ON d.k = ev.k GROUP BY d.label)
    UNION ALL (SELECT d.label, count(*) FROM ev JOIN dim d ON d.k = ev.k GROUP BY d.label EXCEPT ALL TABLE ev_dim)) x}),
	'0', 'a stream-static join with a reference table as static side equals the plain query');

# loc made hash-distributed: Citus replaces the table (undistribute, then
# distribute; alter_distributed_table and undistribute_table do the same)
# and drops the old one with CASCADE, which drops the query with it
$coord->safe_psql('postgres', q{
  SET client_min_messages = warning;
  SET citus.enable_unsafe_triggers = on;
  SELECT create_distributed_table('loc', 'id');
});
is($coord->safe_psql('postgres', q{SELECT count(*) FROM cq.queries WHERE name = 'loc_agg'}), '0',
	'a Citus local source made distributed: Citus drops the old table and its query with it');

# the workers' transaction ids far ahead of the coordinator's
my $burn = q{DO $$ BEGIN FOR i IN 1..3000 LOOP PERFORM pg_catalog.pg_current_xact_id(); COMMIT; END LOOP; END $$};
$_->safe_psql('postgres', $burn) for ($w1, $w2, $w3);

# the coordinator removed from the metadata: its copy of ref is gone
$coord->safe_psql('postgres', 'SELECT citus_remove_node(\'127.0.0.1\', ' . $coord->port . ')');
($rc, $out, $err) = $coord->psql('postgres', "CALL cq.run('ref_agg')", extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($rc, 0, 'a batch over ref fails once the coordinator has no copy');
like($err, qr/55000: the coordinator's copy of source "ref" of continuous query "ref_agg" is gone/, '... with SQLSTATE 55000 and why');
like($err, qr/HINT:  Drop and recreate the continuous query/, '... and a hint');

# a query over ref cannot be created while the coordinator has no copy
($rc, $out, $err) = $coord->psql('postgres',
	"CREATE TABLE ref_agg2 WITH (cq.trigger = '1 hour') AS SELECT k, count(*) FROM ref GROUP BY k",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/55000: the Citus coordinator has no copy of reference table "ref"/, 'creating a query without the coordinator\'s copy is refused');
like($err, qr/citus_set_coordinator_host/, '... and the hint names citus_set_coordinator_host');

# rows written meanwhile (stamped by the workers), then the coordinator
# added again: its new copy has them with the workers' stamps
$w1->safe_psql('postgres', "INSERT INTO ref (id, k, v) SELECT i, i % 5, 2 FROM generate_series(7000, 7049) i");
$coord->safe_psql('postgres', "DROP TABLE IF EXISTS $ref_copy");
$coord->safe_psql('postgres', "SELECT citus_set_coordinator_host('127.0.0.1', " . $coord->port . ")");
$coord->safe_psql('postgres', q{SELECT replicate_reference_tables('block_writes')});
($rc, $out, $err) = $coord->psql('postgres', "CALL cq.run('ref_agg')", extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/55000: the coordinator's copy of source "ref" of continuous query "ref_agg" was replaced/,
	'a batch over a replaced copy fails with SQLSTATE 55000');
$coord->safe_psql('postgres', q{SET client_min_messages = warning; SELECT cq.drop_query('ref_agg')});

# a new query over that copy: refused while the copied rows' stamps are
# ahead of the coordinator's transaction ids, created once they are passed
my $create = q{CREATE TABLE ref_agg3 WITH (cq.trigger = '1 hour', cq.output_mode = 'update', cq.starting = 'earliest')
  AS SELECT k, count(*) AS n, sum(v) AS s FROM ref GROUP BY k};
($rc, $out, $err) = $coord->psql('postgres', $create, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/55000: the coordinator's copy of "ref" holds rows stamped on other nodes/,
	'a query over a copy holding rows stamped ahead on other nodes is refused');
like($err, qr/HINT:  Create the query once the coordinator's transaction ids/, '... with a hint');
$coord->safe_psql('postgres', $burn . ';' . $burn);
$coord->safe_psql('postgres', "SET client_min_messages = warning; $create");
$coord->safe_psql('postgres', "INSERT INTO ref (id, k, v) SELECT i, i % 5, 3 FROM generate_series(8000, 8019) i");
$w2->safe_psql('postgres', "INSERT INTO ref (id, k, v) SELECT i, i % 5, 3 FROM generate_series(8020, 8039) i");
$coord->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('ref_agg3')");
is($coord->safe_psql('postgres', qq{
  SELECT count(*) FROM ((TABLE ref_agg3 EXCEPT ALL $oracle{ref}) UNION ALL ($oracle{ref} EXCEPT ALL TABLE ref_agg3)) x}),
	'0', 'then created: history and new rows equal the plain query');

$_->stop for ($w1, $w2, $w3);
$coord->stop;
done_testing();
