# The shared-memory state store under a hostile search_path (session 29):
# a database owned by a plain role who sets search_path = attacker,
# pg_catalog for the database, with operators, functions, aggregates and
# types of schema attacker shadowing pg_catalog's (CqTest::attacker_sql).
# Every session of the database, a superuser's too, gets that path.  The
# store's life runs there: ALTER EXTENSION pg_cq UPDATE from 0.1 by a
# superuser, queries on the store created and run in the foreground by
# the plain role (an image written by every batch: superuser sections),
# read by the role and by a superuser (final view, cq.state_rows,
# cq.state_store_info, cq.explain, cq.status), a restart (the next batch
# loads the image), a batch that outgrows cq.state_memory and moves its
# query to the table path, a query dropped by cq.drop_query and one by
# DROP TABLE, then DROP EXTENSION by a superuser.  None of the attacker's
# objects may ever run: every section with other rights goes through
# security.c, its search_path pinned.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('store_path', 'cq.state_image_batches = 1', 'cq.run_in_worker = off');

$node->safe_psql('postgres', q{
	CREATE ROLE dbowner LOGIN;
	CREATE DATABASE hostile OWNER dbowner;
});
$node->safe_psql('hostile', q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq VERSION '0.1';
	CREATE SCHEMA attacker AUTHORIZATION dbowner;
	CREATE SCHEMA app AUTHORIZATION dbowner;
});
$node->safe_psql('hostile', 'SET ROLE dbowner;' . attacker_sql('dbowner') . q{
	ALTER DATABASE hostile SET search_path = attacker, pg_catalog;
});
is($node->safe_psql('hostile', 'SHOW search_path'), 'attacker, pg_catalog',
	'new sessions get the hostile search_path');

# what nothing of the attacker's may ever show: read through a path of its own
sub log_says
{
	return $node->safe_psql('hostile', q{
		SET search_path = public, pg_catalog;
		SELECT coalesce(string_agg(DISTINCT who || ' ' || su || ' ' || what, ', '), 'nothing')
		FROM attacker.log});
}

# the plain role's query before the update (its catalog at 0.1: a state table)
$node->safe_psql('hostile', q{
	SET client_min_messages = warning;
	SET ROLE dbowner;
	CREATE TABLE app.src (k int, v bigint, ts timestamptz);
	INSERT INTO app.src SELECT g % 7, g, '2024-01-01'::timestamptz + g * interval '1 minute'
	  FROM pg_catalog.generate_series(1, 300) g;
	SELECT cq.create_query('old_q', 'SELECT k, pg_catalog.count(*) AS n FROM app.src GROUP BY k',
	  output_mode => 'update', "trigger" => 'available_now', starting => 'earliest',
	  target => 'app.old_q');
	CALL cq.run('old_q');
});

# the update, by a superuser whose session has the hostile path
$node->safe_psql('hostile', 'SET client_min_messages = warning; ALTER EXTENSION pg_cq UPDATE');
is($node->safe_psql('hostile', q{SELECT extversion FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'pg_cq'}),
	'0.2', 'updated to 0.2');
is(log_says(), 'nothing', 'no shadowing object ran in the update');

# queries on the store, created and run by the plain role
my $run_all = q{
	SET client_min_messages = warning;
	SET ROLE dbowner;
	CALL cq.run('app.per_k');
	CALL cq.run('app.per_hour');
	CALL cq.run('app.old_q');
};
$node->safe_psql('hostile', q{
	SET client_min_messages = warning;
	SET ROLE dbowner;
	SELECT cq.create_query('per_k',
	  'SELECT k, pg_catalog.count(*) AS n, pg_catalog.sum(v) AS s, pg_catalog.max(v) AS m, pg_catalog.max(ts) AS last_ts FROM app.src GROUP BY k',
	  output_mode => 'update', "trigger" => 'available_now', starting => 'earliest', target => 'app.per_k');
	SELECT cq.create_query('per_hour',
	  'SELECT pg_catalog.date_bin(''1 hour'', ts, ''2024-01-01'') AS h, k, pg_catalog.count(*) AS n FROM app.src GROUP BY 1, 2',
	  output_mode => 'append', "trigger" => 'available_now', starting => 'earliest',
	  event_time => 'ts', watermark => '10 minutes', target => 'app.per_hour');
} . $run_all);
is($node->safe_psql('hostile', q{
	SET search_path = public, pg_catalog;
	SELECT string_agg(name || ' ' || state_path, ', ' ORDER BY name) FROM cq.queries}),
	'old_q table: created before pg_cq 0.2, per_hour memory, per_k memory', 'two queries on the store');
$node->safe_psql('hostile', q{
	SET ROLE dbowner;
	INSERT INTO app.src SELECT g % 9, g, '2024-01-01 06:00'::timestamptz + g * interval '1 minute'
	  FROM pg_catalog.generate_series(1, 200) g;
} . $run_all);

my $oracle_check = q{
	SET search_path = public, pg_catalog;
	SELECT (SELECT count(*) FROM ((SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m, max(ts) AS last_ts
	                               FROM app.src GROUP BY k EXCEPT ALL TABLE app.per_k)
	                              UNION ALL (TABLE app.per_k EXCEPT ALL SELECT k, count(*), sum(v), max(v), max(ts)
	                                         FROM app.src GROUP BY k)) x)
	    || ' ' || (SELECT count(*) FROM (TABLE app.per_hour EXCEPT ALL
	                                     SELECT date_bin('1 hour', ts, '2024-01-01'), k, count(*)
	                                     FROM app.src GROUP BY 1, 2) x)
	    || ' ' || (SELECT count(*) > 0 FROM app.per_hour)};
is($node->safe_psql('hostile', $oracle_check), '0 0 true', 'the targets are exact');
is($node->safe_psql('hostile', q{
	SET search_path = public, pg_catalog;
	SELECT (SELECT count(*) FROM cq.state_images) || ' ' ||
	       (SELECT state_rows FROM cq.state_store_info('app.per_k'))}),
	'2 9', 'images written, the store read');

# reads by the plain role and by a superuser, both with the hostile path
my $reads = q{
	SELECT pg_catalog.count(*) FROM cq_state.f_2;
	SELECT pg_catalog.count(*) FROM cq.state_rows(2, NULL::cq_state.s_2);
	SELECT * FROM cq.state_store_info('app.per_k');
	SELECT pg_catalog.length(cq.explain('app.per_k'));
	SELECT pg_catalog.length(cq.explain('app.per_hour'));
	SELECT * FROM cq.status;
	SELECT * FROM cq.progress;
};
$node->safe_psql('hostile', 'SET ROLE dbowner;' . $reads);
$node->safe_psql('hostile', $reads);
is(log_says(), 'nothing', 'no shadowing object ran in the batches or the reads');

# a restart: the next batch loads the image (superuser section)
$node->restart;
$node->safe_psql('hostile', q{
	SET ROLE dbowner;
	INSERT INTO app.src SELECT g % 11, g, '2024-01-01 12:00'::timestamptz + g * interval '1 minute'
	  FROM pg_catalog.generate_series(1, 100) g;
} . $run_all);
is($node->safe_psql('hostile', $oracle_check), '0 0 true', 'the targets are exact after the restart');
is(log_says(), 'nothing', 'no shadowing object ran in the image load');

# a batch that outgrows cq.state_memory (set by a superuser) moves to the table path
$node->safe_psql('hostile', q{
	SET ROLE dbowner;
	INSERT INTO app.src SELECT 100 + g, g, '2024-01-01 18:00'::timestamptz FROM pg_catalog.generate_series(1, 3000) g;
});
$node->safe_psql('hostile', q{
	SET client_min_messages = error;
	SET cq.state_memory = '64kB';
	CALL cq.run('app.per_k');
});
like($node->safe_psql('hostile', q{
	SET search_path = public, pg_catalog;
	SELECT state_path FROM cq.queries WHERE name = 'per_k'}),
	qr/^table: moved after exceeding cq\.state_memory/, 'per_k moved to the table path');
$node->safe_psql('hostile', $run_all);
is($node->safe_psql('hostile', $oracle_check), '0 0 true', 'the targets are exact after the move');

# drops: by cq.drop_query and by DROP TABLE (the plain role), then DROP EXTENSION
$node->safe_psql('hostile', q{
	SET client_min_messages = warning;
	SET ROLE dbowner;
	SELECT cq.drop_query('app.per_hour');
	DROP TABLE app.per_k;
});
$node->safe_psql('hostile', 'DROP EXTENSION pg_cq CASCADE');
is(log_says(), 'nothing', 'no shadowing object ran at all');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'dbowner'}),
	'f', 'the database owner is no superuser');

$node->stop;
done_testing();
