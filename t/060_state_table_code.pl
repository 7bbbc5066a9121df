# Code that a query's owner attaches to the query's state table
# (cq_state.s_<id>, which belongs to the owner) runs as that owner when a
# background worker writes the table for pg_cq: the image of the
# shared-memory store after every batch (cq.state_image_batches = 1), and
# the move of a store that outgrew cq.state_memory to the table path.
# Before session 30 both wrote the table as the bootstrap superuser, so a
# trigger on it made its owner a superuser.  (sql/117_adversarial.sql
# attacks the same in the foreground, and cq.state_rows.)  Every wait polls
# with a deadline.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('state_table_code', 'cq.state_image_batches = 1', "cq.state_memory = '64kB'");

$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE ROLE mallory LOGIN;
	CREATE SCHEMA evil AUTHORIZATION mallory;
});
# everything below as mallory, a plain role
$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	SET ROLE mallory;
	CREATE TABLE evil.log (who name, su boolean, what text);
	CREATE FUNCTION evil.note() RETURNS trigger
	LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
	DECLARE
	  su boolean := (SELECT rolsuper FROM pg_roles WHERE rolname OPERATOR(pg_catalog.=) current_user);
	BEGIN
	  INSERT INTO evil.log VALUES (current_user, su, TG_OP);
	  IF su THEN
	    EXECUTE 'ALTER ROLE mallory SUPERUSER';
	  END IF;
	  IF TG_LEVEL = 'ROW' THEN
	    RETURN NEW;
	  END IF;
	  RETURN NULL;
	END $$;
	CREATE TABLE evil.src (k int, v int);
	-- a few groups: on the store, its image written after every batch
	CREATE TABLE evil.small WITH (cq.output_mode = 'update')
	  AS SELECT k, count(*) AS n FROM evil.src WHERE k < 3 GROUP BY k WITH NO DATA;
	-- 5,000 groups: more than 64kB, the store moves it to its state table
	CREATE TABLE evil.big WITH (cq.output_mode = 'update')
	  AS SELECT k, count(*) AS n, sum(v) AS s FROM evil.src GROUP BY k WITH NO DATA;
	DO $d$
	DECLARE
	  st regclass;
	BEGIN
	  FOR st IN SELECT state_table FROM cq.queries LOOP
	    EXECUTE format('CREATE TRIGGER t_truncate BEFORE TRUNCATE ON %s '
	                   'FOR EACH STATEMENT EXECUTE FUNCTION evil.note()', st);
	    EXECUTE format('CREATE TRIGGER t_insert BEFORE INSERT ON %s '
	                   'FOR EACH ROW EXECUTE FUNCTION evil.note()', st);
	  END LOOP;
	END $d$;
});
is($node->safe_psql('postgres', q{SELECT string_agg(name || ' ' || state_path, ', ' ORDER BY name) FROM cq.queries}),
	'big memory, small memory', 'both queries start on the store');

$node->safe_psql('postgres', q{
	SET ROLE mallory;
	INSERT INTO evil.src SELECT g % 5000, g FROM generate_series(1, 10000) g;
});
ok($node->poll_query_until('postgres', q{
	SELECT (SELECT string_agg(k || ':' || n, ',' ORDER BY k) FROM evil.small) = '0:2,1:2,2:2'
	   AND (SELECT count(*) = 5000 AND sum(n) = 10000 AND sum(s) = 50005000 FROM evil.big)
	   AND EXISTS (SELECT 1 FROM cq.state_images i JOIN cq.queries q ON q.id = i.query_id
	                WHERE q.name = 'small')}),
	'the workers ran both queries and wrote the image of small');
like($node->safe_psql('postgres', q{SELECT state_path FROM cq.queries WHERE name = 'big'}),
	qr/^table: moved after exceeding cq\.state_memory/, 'big moved to its state table');

# a second batch: small writes its image again, big runs on its table
$node->safe_psql('postgres', q{
	SET ROLE mallory;
	INSERT INTO evil.src VALUES (1, 1), (4999, 1);
});
ok($node->poll_query_until('postgres', q{
	SELECT (SELECT n FROM evil.small WHERE k = 1) = 3 AND (SELECT n FROM evil.big WHERE k = 4999) = 3
	   AND (SELECT i.batch_id FROM cq.state_images i JOIN cq.queries q ON q.id = i.query_id
	         WHERE q.name = 'small') >= 1}),
	'second batches ran');

is($node->safe_psql('postgres', q{
	SELECT string_agg(DISTINCT who || ' ' || su, ', ') FROM evil.log}),
	'mallory false', 'the triggers on the state tables ran as their owner, never as superuser');
is($node->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE what = 'TRUNCATE') >= 3 AND count(*) FILTER (WHERE what = 'INSERT') >= 5000
	  FROM evil.log}),
	't', 'they ran: the images (TRUNCATE, INSERT) and the move to the table');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}),
	'f', 'mallory is no superuser');
is($node->safe_psql('postgres', q{SELECT string_agg(name || ' ' || state, ', ' ORDER BY name) FROM cq.queries}),
	'big active, small active', 'both queries are still active');

$node->stop;
done_testing();
