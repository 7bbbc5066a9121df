# The nodes' snapshots of a batch over a source stamped per node are taken
# through the batch's own Citus connections (issue 14, docs/scale-out.md,
# src/citus.c cq_citus_node_snapshots): one query per node, routed to a shard
# of the source, over the connection Citus keeps open between transactions.
# A warm session's batches open no connection of their own for the
# snapshots; with the old way (cq.citus_snapshot_probes = off:
# run_command_on_all_nodes) each batch opens one to every node.  The workers
# log every statement; Citus names a connection of run_command_on_all_nodes
# (and master_run_on_worker) 'citus_run_command gpid=<global pid of the
# coordinator session>' as its first statement.  (The batch's shard queries
# may still open a second connection to a worker for parallel tasks: Citus'
# adaptive executor, not counted here.)
# Sources distributed by bigint, text and uuid (probed) and by inet (a type
# pg_cq has no probe values for: the old way), with writes through the
# coordinator and both workers; oracle: the plain query after every batch.
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
	$w->append_conf('postgresql.conf', "log_statement = 'all'\n");
	$w->reload;
}

# one source per type of distribution column; its rows' ids come from an
# integer through the expression given
my %types = (
	b => [ 'bigint', 'i' ],
	t => [ 'text', q{'k' || i} ],
	u => [ 'uuid', q{md5(i::text)::uuid} ],
	x => [ 'inet', q{('10.0.0.0'::inet + i)} ],
);
for my $s (sort keys %types)
{
	my ($type, $expr) = @{ $types{$s} };
	$coord->safe_psql('postgres', qq{
  SET client_min_messages = warning;
  CREATE TABLE ev_$s (id $type, k int, v int);
  SELECT create_distributed_table('ev_$s', 'id', shard_count := 6);
  INSERT INTO ev_$s SELECT $expr, i % 5, i FROM generate_series(1, 300) i;
  CREATE TABLE agg_$s WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n, sum(v) AS s FROM ev_$s GROUP BY k;
});
}
sub oracle
{
	my ($s) = @_;
	return $coord->safe_psql('postgres', qq{
  SELECT count(*) FROM ((TABLE agg_$s EXCEPT ALL SELECT k, count(*), sum(v) FROM ev_$s GROUP BY k)
    UNION ALL (SELECT k, count(*), sum(v) FROM ev_$s GROUP BY k EXCEPT ALL TABLE agg_$s)) x});
}

# writes ROUND: one through the coordinator, one on each worker, into every source
sub writes
{
	my ($round) = @_;
	my @nodes = ($coord, $w1, $w2);
	for my $n (0 .. 2)
	{
		my $lo = 1000 * $round + 100 * $n + 1;
		my $hi = $lo + 19;
		$nodes[$n]->safe_psql('postgres', join('', map {
			my ($type, $expr) = @{ $types{$_} };
			"INSERT INTO ev_$_ SELECT $expr, i % 5, 2 * i FROM generate_series($lo, $hi) i;\n"
		} sort keys %types));
	}
}

# the warm session: a scheduler's worker keeps its session the same way
my $session = $coord->background_psql('postgres', on_error_stop => 1);
$session->query_safe('SET client_min_messages = warning');
my $gpid = $session->query_safe('SELECT citus_backend_gpid()');
like($gpid, qr/^\d+$/, "the session's global pid ($gpid)");
$session->query_safe("CALL cq.run('agg_$_')") for sort keys %types;
is(oracle($_), '0', "source by $types{$_}[0]: batch 0 equals the plain query") for sort keys %types;

# connections(): connections the session opened to the workers so far to
# run a command on every node (the old way of taking the snapshots)
sub connections
{
	my $n = 0;
	for my $w ($w1, $w2)
	{
		my $log = slurp_file($w->logfile);
		$n += () = $log =~ /SET application_name TO 'citus_run_command gpid=$gpid'/g;
	}
	return $n;
}

for my $round (1 .. 3)
{
	writes($round);
	for my $s (sort keys %types)
	{
		my $before = connections();
		$session->query_safe("CALL cq.run('agg_$s')");
		# the statement is logged before it runs, so before the batch ends
		my $opened = connections() - $before;
		is(oracle($s), '0', "round $round, source by $types{$s}[0]: the target equals the plain query");
		if ($s ne 'x')
		{
			is($opened, 0, "round $round, source by $types{$s}[0]: the snapshots came over the session's own connections");
		}
		else
		{
			cmp_ok($opened, '>', 0,
				"round $round, source by inet (no probe values): the batch asks the nodes over new connections ($opened)");
		}
	}
}

# the old way, for comparison: new connections every batch
$session->query_safe('SET cq.citus_snapshot_probes = off');
writes(4);
my $before = connections();
$session->query_safe(q{CALL cq.run('agg_b')});
cmp_ok(connections() - $before, '>=', 2,
	'with cq.citus_snapshot_probes off, a batch opens a connection to each worker');
is(oracle('b'), '0', 'and stays exact');
$session->query_safe('RESET cq.citus_snapshot_probes');

# a worker with no shard of the source (added, not rebalanced): asked over a
# new connection; the others still through the session's own
my $w3 = CqCitus::new_node('worker3');
$w3->append_conf('postgresql.conf', "log_statement = 'all'\n");
$w3->reload;
$coord->safe_psql('postgres', "SELECT citus_add_node('127.0.0.1', " . $w3->port . ")");
writes(5);
$w3->safe_psql('postgres', q{INSERT INTO ev_b SELECT i, i % 5, i FROM generate_series(6001, 6030) i});
$before = connections();
my $at3 = -s $w3->logfile;
$session->query_safe(q{CALL cq.run('agg_b')});
is(connections() - $before, 0, 'a worker without shards: the others are asked over the session\'s connections');
like(slurp_file($w3->logfile, $at3), qr/SET application_name TO 'citus_run_command gpid=$gpid'/,
	'and the new worker over a new connection');
is(oracle('b'), '0', 'the target equals the plain query (writes on the new worker too)');
is($coord->safe_psql('postgres', q{
  SELECT pg_catalog.array_length(pg_catalog.string_to_array(o.end_offset, ';'), 1) FROM cq.node_offsets o
   WHERE o.query_id = (SELECT id FROM cq.queries WHERE name = 'agg_b') ORDER BY o.batch_id DESC LIMIT 1}),
	'4', 'the end offset has the snapshots of all four nodes');
$session->quit;

# a query owned by a role that is not a superuser: its probes run as that
# role, over the connections its batches use
$coord->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE ROLE alice LOGIN;
  GRANT CREATE ON SCHEMA public TO alice;
  SET ROLE alice;
  CREATE TABLE oev (id bigint, k int, v int);
  SELECT create_distributed_table('oev', 'id', shard_count := 4);
  INSERT INTO oev SELECT i, i % 5, i FROM generate_series(1, 100) i;
  CREATE TABLE oagg WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n FROM oev GROUP BY k;
});
$w1->safe_psql('postgres', q{INSERT INTO oev SELECT i, i % 5, i FROM generate_series(101, 150) i});
$w2->safe_psql('postgres', q{INSERT INTO oev SELECT i, i % 5, i FROM generate_series(151, 180) i});
my $alice = $coord->background_psql('postgres', on_error_stop => 1);
$alice->query_safe('SET client_min_messages = warning');
$alice->query_safe('SET ROLE alice');
$gpid = $alice->query_safe('SELECT citus_backend_gpid()');
$alice->query_safe(q{CALL cq.run('oagg')});
$before = connections();
$w1->safe_psql('postgres', q{INSERT INTO oev SELECT i, i % 5, i FROM generate_series(181, 220) i});
$alice->query_safe(q{CALL cq.run('oagg')});
is(connections() - $before, 0, 'a query owned by a role without superuser rights: snapshots over its own connections');
is($coord->safe_psql('postgres', q{
  SELECT count(*) FROM ((TABLE oagg EXCEPT ALL SELECT k, count(*) FROM oev GROUP BY k)
    UNION ALL (SELECT k, count(*) FROM oev GROUP BY k EXCEPT ALL TABLE oagg)) x}),
	'0', 'and its target equals the plain query');
$alice->quit;

done_testing();
