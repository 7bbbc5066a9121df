# Security of background processes and of the catalog upgrade (issue 9,
# items 1 and 4; sql/11_security.sql covers the foreground).
#  - A database owned by a non-superuser who sets a hostile database-level
#    search_path (ALTER DATABASE ... SET search_path = attacker, pg_catalog)
#    with operators, functions and types shadowing pg_catalog's: the
#    scheduler and workers connect as the bootstrap superuser, and none of
#    the attacker's objects may ever run in them.
#  - A pg_cq 0.1 catalog (no row-level security) keeps working with this
#    library; ALTER EXTENSION pg_cq UPDATE hides other roles' queries.
# Every wait polls with a deadline.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = PostgreSQL::Test::Cluster->new('security');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq'
max_worker_processes = 20
cq.naptime = 1000
cq.max_workers = 2
});
$node->start;

# --- the hostile database
$node->safe_psql('postgres', q{
	CREATE ROLE dbowner LOGIN;
	CREATE DATABASE hostile OWNER dbowner;
});
$node->safe_psql('hostile', q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE SCHEMA attacker AUTHORIZATION dbowner;
});
# everything below as the database owner, a plain role
$node->safe_psql('hostile', 'SET ROLE dbowner;' . attacker_sql('dbowner') . q{
	-- what a plain database owner may do
	ALTER DATABASE hostile SET search_path = attacker, pg_catalog;
});
is($node->safe_psql('hostile', 'SHOW search_path'), 'attacker, pg_catalog',
	'new sessions get the hostile search_path');

# The test's own polls run in sessions with the hostile path too: through
# a function with a path of its own, so that they touch nothing of the
# attacker's.
$node->safe_psql('hostile', q{
	SET search_path = public;
	CREATE FUNCTION public.holds(cond text) RETURNS boolean
	LANGUAGE plpgsql SET search_path = public, pg_catalog AS $$
	DECLARE
	  ok boolean;
	BEGIN
	  EXECUTE 'SELECT (' || cond || ')' INTO ok;
	  RETURN ok;
	END $$;
});
sub poll_holds
{
	my ($cond, $what) = @_;
	ok($node->poll_query_until('hostile', "SELECT public.holds(\$c\$$cond\$c\$)"), $what);
}

# the database owner's queries, run by the workers ('0' and interval triggers)
$node->safe_psql('hostile', q{
	SET search_path = public;
	SET client_min_messages = warning;
	CREATE SCHEMA app AUTHORIZATION dbowner;
	SET ROLE dbowner;
	CREATE TABLE app.src (k int, v int);
	CREATE TABLE app.per_k WITH (cq.output_mode = 'update')
	  AS SELECT k, pg_catalog.count(*) AS n, pg_catalog.sum(v) AS s FROM app.src GROUP BY k;
	CREATE TABLE app.rows_out WITH (cq.output_mode = 'append', cq.trigger = '1 second')
	  AS SELECT k, v FROM app.src;
	INSERT INTO app.src SELECT g % 3, g FROM pg_catalog.generate_series(1, 30) g;
});
poll_holds(q{(SELECT count(*) FROM app.rows_out) = 30
	   AND NOT EXISTS (SELECT k, count(*), sum(v) FROM app.src GROUP BY k
	                   EXCEPT SELECT k, n, s FROM app.per_k)
	   AND (SELECT count(*) FROM app.per_k) = 3}, 'the workers ran the batches');
# more batches, a catalog reload (pause/resume), a failure recorded by a worker
$node->safe_psql('hostile', q{
	SET search_path = public;
	SET ROLE dbowner;
	SELECT cq.pause('app.per_k');
	INSERT INTO app.src VALUES (1, 100), (2, 200);
	SELECT cq.resume('app.per_k');
	CREATE TABLE app.bad WITH (cq.output_mode = 'append')
	  AS SELECT k, 1 / (v - 100) AS x FROM app.src WITH NO DATA;
	INSERT INTO app.src VALUES (3, 300);
});
poll_holds(q{(SELECT sum(n) FROM app.per_k) = 33 AND (SELECT count(*) FROM app.rows_out) = 33
	   AND (SELECT state FROM cq.queries WHERE name = 'bad') = 'failed'},
	'more batches, a failure recorded');
poll_holds(q{(SELECT count(*) > 0 FROM pg_stat_activity
	           WHERE backend_type = 'pg_cq worker' AND datname = 'hostile')},
	'the batches ran in workers');
is($node->safe_psql('hostile', q{
	SET search_path = public;
	SELECT coalesce(string_agg(DISTINCT who || ' ' || su || ' ' || what, ', '), 'nothing') FROM attacker.log}),
	'nothing', 'no shadowing object ran in the scheduler or the workers');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'dbowner'}),
	'f', 'the database owner is no superuser');

# --- a 0.1 catalog: everyone sees every query; after the update, only their own
$node->safe_psql('postgres', q{
	CREATE ROLE alice;
	CREATE ROLE bob;
	CREATE DATABASE upgraded;
});
$node->safe_psql('upgraded', q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq VERSION '0.1';
	GRANT CREATE ON SCHEMA public TO alice, bob;
	SET ROLE alice;
	CREATE TABLE a_src (k int);
	CREATE TABLE a_q WITH (cq.trigger = 'available_now') AS SELECT k FROM a_src WITH NO DATA;
	INSERT INTO a_src VALUES (1);
	CALL cq.run('a_q');
	RESET ROLE;
	SET ROLE bob;
	CREATE TABLE b_src (k int);
	CREATE TABLE b_q WITH (cq.trigger = 'available_now') AS SELECT k FROM b_src WITH NO DATA;
	INSERT INTO b_src VALUES (2);
	CALL cq.run('b_q');
});
my $seen_by_bob = q{
	SET ROLE bob;
	SELECT (SELECT string_agg(name, ',' ORDER BY name) FROM cq.queries) || ' / ' ||
	       (SELECT string_agg(DISTINCT name, ',') FROM cq.offsets) || ' / ' ||
	       (SELECT string_agg(DISTINCT name, ',') FROM cq.progress) || ' / ' ||
	       (SELECT string_agg(name, ',' ORDER BY name) FROM cq.status)};
is($node->safe_psql('upgraded', $seen_by_bob), 'a_q,b_q / a_q,b_q / a_q,b_q / a_q,b_q',
	'0.1 catalog: bob sees every query');
is($node->safe_psql('upgraded', q{
	SELECT string_agg(k::text, ',' ORDER BY k) FROM (TABLE a_q UNION ALL TABLE b_q) x}),
	'1,2', '0.1 catalog: batches run with this library');
$node->safe_psql('upgraded', 'ALTER EXTENSION pg_cq UPDATE');
is($node->safe_psql('upgraded', q{SELECT extversion FROM pg_extension WHERE extname = 'pg_cq'}),
	'0.2', 'updated to 0.2');
is($node->safe_psql('upgraded', $seen_by_bob), 'b_q / b_q / b_q / b_q',
	'0.2 catalog: bob sees his own queries only');
$node->safe_psql('upgraded', q{
	SET ROLE alice;
	INSERT INTO a_src VALUES (3);
	CALL cq.run('a_q');
});
is($node->safe_psql('upgraded', q{SELECT string_agg(k::text, ',' ORDER BY k) FROM a_q}),
	'1,3', '0.2 catalog: the owner still runs her query');
is($node->safe_psql('upgraded', q{SELECT count(*) FROM cq.queries}), '2',
	'a superuser sees every query');

$node->stop;
done_testing();
