# Issue 9 item 2: DROP DATABASE, ALTER DATABASE ... RENAME and CREATE
# DATABASE ... TEMPLATE stop the database's scheduler and workers only when
# the user may run them by core's rules.  The hook stopped them first, so
# any role, even one with no rights at all, could stop a database's
# queries with a statement bound to fail.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCrash;

my $node = PostgreSQL::Test::Cluster->new('database_ddl_rights');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq'
max_worker_processes = 20
cq.naptime = 1000
cq.max_workers = 2
});
$node->start;

$node->safe_psql('postgres', q{
	CREATE DATABASE app;
	CREATE ROLE nobody LOGIN;
	CREATE ROLE maker LOGIN CREATEDB;
});
$node->safe_psql('app', q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE src (id int);
	CREATE TABLE counts WITH (cq.output_mode = 'update') AS SELECT id % 3 AS k, count(*) AS n FROM src GROUP BY 1;
	INSERT INTO src SELECT generate_series(1, 10);
});
ok($node->poll_query_until('app', 'SELECT sum(n) = 10 FROM counts'), 'the query runs');

# the pids of app's scheduler and workers
sub pg_cq_pids
{
	return $node->safe_psql('postgres', q{
		SELECT string_agg(pid::text, ' ' ORDER BY pid) FROM pg_stat_activity
		 WHERE datname = 'app' AND backend_type IN ('pg_cq scheduler', 'pg_cq worker')});
}
my $before = pg_cq_pids();
like($before, qr/^\d+ \d+/, 'a scheduler and a worker run in app');

my @attempts = (
	[ 'nobody', 'DROP DATABASE app',                  qr/must be owner of database app/ ],
	[ 'nobody', 'ALTER DATABASE app RENAME TO app2',  qr/must be owner of database app/ ],
	[ 'nobody', 'CREATE DATABASE copy TEMPLATE app',  qr/permission denied to create database/ ],
	[ 'maker',  'CREATE DATABASE copy TEMPLATE app',  qr/permission denied to copy database "app"/ ],
	[ 'maker',  'ALTER DATABASE app RENAME TO app2',  qr/must be owner of database app/ ]);
for my $a (@attempts)
{
	my ($role, $sql, $error) = @$a;
	my ($ret, $stdout, $stderr) = $node->psql('postgres', $sql, extra_params => [ '-U', $role ]);
	isnt($ret, 0, "$role: $sql fails");
	like($stderr, $error, "$role: $sql is refused by core");
	is(pg_cq_pids(), $before, "$role: $sql leaves app's scheduler and workers running");
}

$node->safe_psql('app', 'INSERT INTO src SELECT generate_series(11, 20)');
ok($node->poll_query_until('app', 'SELECT sum(n) = 20 FROM counts'), 'the query still runs');

# the owner (here a superuser) still gets the database to itself
$node->safe_psql('postgres', 'ALTER DATABASE app RENAME TO app2');
$node->safe_psql('postgres', 'DROP DATABASE app2');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_database WHERE datname LIKE 'app%'"), '0',
	'a superuser renames and drops the database');

$node->stop;
done_testing();
