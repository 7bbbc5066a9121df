# Background execution across processes and restarts (issue 4, "Done when"):
# two databases run their own queries; killing a worker (SIGTERM, then SIGKILL
# = crash-restart) brings it back with no duplicates; a server restart resumes
# queries; SIGHUP reloads cq.max_workers; DROP DATABASE and DROP EXTENSION do
# not hang while queries run.  Every wait polls with a deadline.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use CqTest qw(kill_and_restart);
use Time::HiRes qw(time);

my $node = PostgreSQL::Test::Cluster->new('workers');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq'
max_worker_processes = 20
cq.naptime = 1000
cq.max_workers = 2
restart_after_crash = on
});
$node->start;

# a stateless append query (every row exactly once) and a logged-state
# aggregate (survives a crash-restart) over a source with unique ids
sub setup_db
{
	my ($db) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
		SET client_min_messages = warning;
		CREATE EXTENSION pg_cq;
		CREATE TABLE src (id bigint, k int);
		CREATE TABLE rows_out WITH (cq.output_mode = 'append') AS SELECT id, k FROM src;
		CREATE TABLE per_k WITH (cq.output_mode = 'update', cq.state_storage = 'logged')
		  AS SELECT k, count(*) AS n, sum(id) AS s FROM src GROUP BY k;
	});
}

my $next_id = 1;
sub insert_rows
{
	my ($db, $n) = @_;
	my $first = $next_id;
	$next_id += $n;
	$node->safe_psql($db,
		"INSERT INTO src SELECT g, g % 7 FROM generate_series($first, $first + $n - 1) g");
}

# both targets hold exactly the source: no row lost, none twice
my $exact = q{
	SELECT (SELECT count(*) FROM rows_out) = (SELECT count(*) FROM src)
	   AND (SELECT count(DISTINCT id) FROM rows_out) = (SELECT count(*) FROM src)
	   AND NOT EXISTS (SELECT k, count(*), sum(id) FROM src GROUP BY k
	                   EXCEPT SELECT k, n, s FROM per_k)
	   AND (SELECT count(*) FROM per_k) = (SELECT count(DISTINCT k) FROM src)};

sub wait_exact
{
	my ($db, $what) = @_;
	ok($node->poll_query_until($db, $exact), "$db: targets exact $what");
}

sub worker_pids
{
	my ($db) = @_;
	my $pids = $node->safe_psql('postgres',
		"SELECT string_agg(pid::text, ' ') FROM pg_stat_activity "
		  . "WHERE backend_type = 'pg_cq worker' AND datname = '$db'");
	return grep { $_ ne '' } split(/ /, $pids);
}

# --- two databases run their own queries
setup_db('db1');
setup_db('db2');
insert_rows('db1', 100);
insert_rows('db2', 50);
wait_exact('db1', 'after the first commits');
wait_exact('db2', 'after the first commits');
is($node->safe_psql('db2', 'SELECT count(*) FROM src'), '50', 'db2 has its own rows');
ok($node->poll_query_until('postgres', q{
	SELECT count(DISTINCT datname) = 2 FROM pg_stat_activity
	 WHERE backend_type = 'pg_cq scheduler' AND datname IN ('db1', 'db2')}),
	'one scheduler per database');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_cq launcher'}),
	'1', 'one launcher');

# --- killing workers mid-stream: they come back, nothing is lost or doubled
for my $round (1 .. 10)
{
	insert_rows('db1', 37);
	if ($round % 2 == 0)
	{
		$node->safe_psql('postgres', q{
			SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			 WHERE backend_type IN ('pg_cq worker', 'pg_cq scheduler') AND datname = 'db1'});
	}
}
wait_exact('db1', 'after workers and scheduler were terminated');
ok($node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'pg_cq worker' AND datname = 'db1'}),
	'workers are back after pg_terminate_backend');

# SIGKILL of a worker: the postmaster reinitializes everything (crash-restart)
my @pids = worker_pids('db1');
ok(@pids > 0, 'a worker to kill');
insert_rows('db1', 25);
ok(kill_and_restart($node, 'postgres', $pids[0]), 'the server is back after the crash-restart');
insert_rows('db1', 25);
wait_exact('db1', 'after SIGKILL of a worker (crash-restart)');
wait_exact('db2', 'after the crash-restart');

# --- a clean restart resumes the queries
$node->restart;
insert_rows('db1', 40);
insert_rows('db2', 40);
wait_exact('db1', 'after a server restart');
wait_exact('db2', 'after a server restart');

# --- SIGHUP reloads settings: fewer workers
$node->safe_psql('postgres', 'ALTER SYSTEM SET cq.max_workers = 1');
$node->reload;
insert_rows('db1', 10);
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_cq worker' AND datname = 'db1'}),
	'cq.max_workers = 1 after reload');
wait_exact('db1', 'with one worker');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET cq.max_workers');
$node->reload;

# --- DROP DATABASE while its queries run: does not hang, does not fail
insert_rows('db2', 500);
my $t0 = time();
my ($rc, $out, $err) = $node->psql('postgres', 'DROP DATABASE db2');
is($rc, 0, 'DROP DATABASE of a database with running queries') or diag($err);
ok(time() - $t0 < 10, 'DROP DATABASE did not wait for workers');
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 0 FROM pg_stat_activity WHERE datname = 'db2'}), 'no process left in db2');
insert_rows('db1', 10);
wait_exact('db1', 'after db2 was dropped');

# CREATE DATABASE ... TEMPLATE a database with running queries works, and its queries go on
($rc, $out, $err) = $node->psql('postgres', 'CREATE DATABASE db1copy TEMPLATE db1');
is($rc, 0, 'CREATE DATABASE ... TEMPLATE a database with a scheduler') or diag($err);
insert_rows('db1', 10);
wait_exact('db1', 'after being copied');
wait_exact('db1copy', 'in the copy (its own scheduler)');

# --- DROP EXTENSION: the scheduler exits, nothing hangs
$t0 = time();
($rc, $out, $err) = $node->psql('db1', 'DROP EXTENSION pg_cq CASCADE');
is($rc, 0, 'DROP EXTENSION with running queries') or diag($err);
ok(time() - $t0 < 10, 'DROP EXTENSION did not wait for workers');
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 0 FROM pg_stat_activity WHERE datname = 'db1' AND backend_type LIKE 'pg_cq%'}),
	'the scheduler and workers of db1 exited');
($rc, $out, $err) = $node->psql('postgres', 'DROP DATABASE db1');
is($rc, 0, 'DROP DATABASE after DROP EXTENSION') or diag($err);

$node->stop;
done_testing();
