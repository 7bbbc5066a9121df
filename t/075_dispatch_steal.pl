# Issue 12 goal 5, dispatch of many trigger-'0' queries to few workers
# (scheduler.c): a batch that waits (here for a lock on its target; in
# production a long batch, or a worker the machine does not schedule) does
# not hold the rest of its worker's group hostage.  When a worker is idle
# and no due query is left for it, the scheduler gives it the batches of
# another worker's group that this worker has not begun (taken back under
# the lock; the worker checks before each batch), so those queries keep up
# with the commits.  Then the waiting query catches up once the lock is
# gone, and every target is exactly its query over the whole source:
# nothing was run twice or lost.
#
# Without the take-back, the queries after the waiting one in its group
# stayed behind until the lock was released.  Each of the two rounds below
# blocks a different query; that query was the last of its group (so that
# nothing waited behind it) in about one case in four.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use CqTest;

my $nq = 8;
my $node = PostgreSQL::Test::Cluster->new('dispatch_steal');
$node->init;
# a long naptime: only commits wake the queries, not the periodic poll
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq'
max_worker_processes = 20
cq.naptime = 60000
cq.max_workers = 2
});
$node->start;
my $db = 'postgres';

my @names = map { "sq_$_" } 0 .. $nq - 1;
my $sql = "SET client_min_messages = warning;\nCREATE EXTENSION pg_cq;\n"
  . "CREATE TABLE st_src (id bigserial, a int, v int);\n";
for my $i (0 .. $nq - 1)
{
	my $k = $i + 2;
	$sql .= "CREATE TABLE sq_$i WITH (cq.output_mode = 'update', cq.trigger = '0') AS "
	  . "SELECT a % $k AS g, count(*) AS n, sum(v) AS s FROM st_src GROUP BY 1;\n";
}
$node->safe_psql($db, $sql);
ok($node->poll_query_until($db,
	"SELECT count(DISTINCT name) = $nq FROM cq.offsets WHERE name LIKE 'sq\\_%'"),
	'batch 0 of every query');

my $row = 0;
sub insert_row
{
	$row++;
	$node->safe_psql($db, "INSERT INTO st_src (a, v) VALUES ($row * 7919 % 1000, $row % 100)");
}

for my $blocked (0, 5)
{
	my @others = grep { $_ ne "sq_$blocked" } @names;

	my $last_batch = "SELECT max(batch_id) FROM cq.offsets WHERE name = 'sq_$blocked'";
	my $before = $node->safe_psql($db, $last_batch);

	# hold the target: the next batch of sq_$blocked waits for the lock
	my $holder = $node->background_psql($db);
	$holder->query_safe("BEGIN; LOCK TABLE sq_$blocked IN ACCESS EXCLUSIVE MODE;");
	insert_row();
	ok($node->poll_query_until($db, qq{
		SELECT EXISTS (SELECT FROM pg_stat_activity
		                WHERE backend_type = 'pg_cq worker' AND wait_event_type = 'Lock'
		                  AND query LIKE '%"sq_$blocked"%')}),
		"round $blocked: a batch of sq_$blocked waits for the lock");
	# the others keep up with the commits while it waits
	for my $r (1 .. 3)
	{
		insert_row();
		ok($node->poll_query_until($db, CqTest::caught_up_sql('st_src', @others)),
			"round $blocked, commit $r: every other query caught up while sq_$blocked waits");
	}
	is($node->safe_psql($db, $last_batch), $before,
		"round $blocked: sq_$blocked has run no batch since the lock");
	$holder->query_safe('COMMIT');
	$holder->quit;
	CqTest::wait_caught_up($node, $db, 'st_src', "after round $blocked", @names);
}

# exactly once: every target is its query over the whole source
for my $i (0 .. $nq - 1)
{
	my $k = $i + 2;
	is(CqTest::mismatches($node, $db,
			"SELECT a % $k AS g, count(*) AS n, sum(v) AS s FROM st_src GROUP BY 1", "sq_$i"),
		'0', "sq_$i equals its query over the source");
}
is($node->safe_psql($db, "SELECT count(*) FROM cq.queries WHERE state <> 'active'"), '0',
	'no query failed');

$node->stop;
done_testing();
