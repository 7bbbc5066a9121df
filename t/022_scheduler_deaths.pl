# Issue 9 item 3: worker slots are not lost when a scheduler dies.  A
# scheduler that exited left the slots of its workers taken: with
# max_worker_processes = 8 (8 slots) and 2 workers per scheduler, after
# four deaths no batch ran in any database until a restart.  Here the
# scheduler is terminated six times and batches still run each time; then
# kill -9 (a crash-restart, which rebuilds shared memory) once more.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use CqTest qw(kill_and_restart);

my $node = PostgreSQL::Test::Cluster->new('scheduler_deaths');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq'
max_worker_processes = 8
cq.naptime = 1000
cq.max_workers = 2
restart_after_crash = on
});
$node->start;
my $db = 'postgres';

# two queries, so that the scheduler starts two workers
$node->safe_psql($db, q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE src (id int);
	CREATE TABLE a_rows WITH (cq.output_mode = 'append') AS SELECT id FROM src;
	CREATE TABLE b_counts WITH (cq.output_mode = 'update', cq.state_storage = 'logged')
	  AS SELECT id % 5 AS k, count(*) AS n FROM src GROUP BY 1;
});

my $next = 1;
sub insert_and_wait
{
	my ($what) = @_;
	$node->safe_psql($db, "INSERT INTO src SELECT generate_series($next, $next + 9)");
	$next += 10;
	my $n = $next - 1;
	ok($node->poll_query_until($db,
			"SELECT (SELECT count(*) FROM a_rows) = $n AND (SELECT sum(n) FROM b_counts) = $n"),
		"batches run $what");
}

sub scheduler_pid
{
	return $node->safe_psql($db, q{
		SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_cq scheduler' AND datname = current_database()});
}

insert_and_wait('at first');
ok($node->poll_query_until($db, q{
	SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'pg_cq worker' AND datname = current_database()}),
	'the scheduler runs two workers');

for my $round (1 .. 6)
{
	my $pid = scheduler_pid();
	ok($node->safe_psql($db, "SELECT pg_terminate_backend($pid)") eq 't', "round $round: scheduler $pid terminated");
	ok($node->poll_query_until($db, qq{
		SELECT count(*) = 1 FROM pg_stat_activity
		 WHERE backend_type = 'pg_cq scheduler' AND datname = current_database() AND pid <> $pid}),
		"round $round: a new scheduler runs");
	insert_and_wait("after scheduler death $round");
}

# kill -9: the postmaster crash-restarts; shared memory starts over
my $pid = scheduler_pid();
ok(kill_and_restart($node, $db, $pid), "kill -9 of scheduler $pid: the server is back after the crash-restart");
insert_and_wait('after the crash-restart');

$node->stop;
done_testing();
