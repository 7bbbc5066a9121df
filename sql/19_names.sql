-- Query names follow PostgreSQL's schema rules (issue 9 item 27, SPEC §8): a
-- query lives in its target's schema, and its name is unique there only.
-- Every function that takes a name reads it as regclass input reads a
-- table's: 's.q' is query q of schema s, 'q' the first query q of a schema
-- of the caller's search_path (schemas without USAGE skipped).  Two roles,
-- each with a schema of its own, use the same name; workers run both.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

-- shared helpers: wait_until, mismatches, fingerprint
\i sql/include/helpers.sql

-- each role has a schema named after it: first in its default search_path
CREATE ROLE regress_cq_names_alice;
CREATE ROLE regress_cq_names_bob;
CREATE SCHEMA regress_cq_names_alice AUTHORIZATION regress_cq_names_alice;
CREATE SCHEMA regress_cq_names_bob AUTHORIZATION regress_cq_names_bob;
GRANT CREATE ON SCHEMA public TO regress_cq_names_alice;

-- bob: query nm_counts in his schema, run by hand
SET ROLE regress_cq_names_bob;
SHOW search_path;
CREATE TABLE nm_src (k int, v int);
CREATE TABLE nm_counts WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT k, count(*) AS n FROM nm_src GROUP BY k WITH NO DATA;
INSERT INTO nm_src VALUES (1, 1), (2, 2);
CALL cq.run('nm_counts');
RESET ROLE;

-- alice: a query nm_counts in her own schema (the target is created where a
-- table would be) although bob has one of that name (before: 'continuous
-- query "nm_counts" already exists'), and public.nm_counts
SET ROLE regress_cq_names_alice;
CREATE TABLE nm_src (k int, v int);
SELECT cq.create_query('nm_counts', 'SELECT k, count(*) AS n FROM nm_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now');
CREATE TABLE public.nm_counts WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT k, count(*) AS n FROM regress_cq_names_alice.nm_src WHERE v > 10 GROUP BY k;
-- the same name twice in one schema is refused, even with another target
SELECT cq.create_query('public.nm_counts', 'SELECT k FROM nm_src', target => 'public.nm_other');
SELECT cq.create_query('nm_counts', 'SELECT k FROM nm_src', target => 'public.nm_other');
-- a query lives in its target's schema
SELECT cq.create_query('regress_cq_names_alice.nm_elsewhere', 'SELECT k FROM nm_src',
                       target => 'public.nm_other');
SELECT to_regclass('public.nm_other') IS NULL AS nothing_left_behind;
-- names are read as identifiers: unquoted parts fold to lower case, quoted
-- ones are kept, a part too long for an identifier is refused
SELECT cq.create_query('"NM Quoted"', 'SELECT k FROM nm_src', "trigger" => 'available_now');
SELECT cq.create_query('"nm_open', 'SELECT k FROM nm_src');
SELECT cq.create_query('regress_cq_names_alice.' || repeat('x', 64), 'SELECT k FROM nm_src');
SELECT cq.create_query('nosuch.nm_q', 'SELECT k FROM nm_src');
RESET ROLE;

SELECT schema, name, owner, target FROM cq.queries WHERE name LIKE 'nm\_%' OR name = 'NM Quoted'
 ORDER BY schema, name;

-- resolution: as alice, 'nm_counts' is her own (first in her path); a
-- qualified name is exact; quoting as in regclass input
INSERT INTO regress_cq_names_alice.nm_src VALUES (1, 100), (2, 5), (3, 30);
SET ROLE regress_cq_names_alice;
CALL cq.run('nm_counts');
SELECT k, n FROM regress_cq_names_alice.nm_counts ORDER BY k;
SELECT k, n FROM public.nm_counts ORDER BY k;
CALL cq.run('PUBLIC.NM_COUNTS');
SELECT k, n FROM public.nm_counts ORDER BY k;
CALL cq.run('"regress_cq_names_alice"."nm_counts"');
CALL cq.run('"NM_COUNTS"');
CALL cq.run('"NM Quoted"');
CALL cq.run('NM Quoted');
-- with public first in the path, 'nm_counts' is public's
SET search_path = public, regress_cq_names_alice;
INSERT INTO regress_cq_names_alice.nm_src VALUES (4, 40);
CALL cq.run('nm_counts');
SELECT k, n FROM public.nm_counts ORDER BY k;
SELECT k, n FROM regress_cq_names_alice.nm_counts ORDER BY k;
-- a schema without USAGE is skipped, as for tables; named, it is refused
SET search_path = regress_cq_names_bob, public;
SELECT cq.pause('nm_counts');
SELECT schema, state FROM cq.queries WHERE name = 'nm_counts' ORDER BY schema;
SELECT cq.resume('regress_cq_names_bob.nm_counts');
RESET ROLE;
GRANT USAGE ON SCHEMA regress_cq_names_bob TO regress_cq_names_alice;
SET ROLE regress_cq_names_alice;
-- with USAGE, bob's query is found first: it is not hers
SELECT cq.resume('nm_counts');
SELECT cq.resume('public.nm_counts');
RESET search_path;
RESET ROLE;
REVOKE USAGE ON SCHEMA regress_cq_names_bob FROM regress_cq_names_alice;

-- each function and DDL form acts on exactly the query named
SET ROLE regress_cq_names_alice;
SELECT cq.alter_query('regress_cq_names_alice.nm_counts', max_rows_per_trigger => 7);
ALTER TABLE public.nm_counts SET (cq.max_rows_per_trigger = 9);
SELECT cq.alter_query('public.nm_counts', query => 'SELECT k, count(*) AS n FROM regress_cq_names_alice.nm_src WHERE v > 20 GROUP BY k');
SELECT schema, max_rows_per_trigger, query FROM cq.queries WHERE name = 'nm_counts' ORDER BY schema;
SELECT cq.pause('public.nm_counts');
SELECT schema, state FROM cq.queries WHERE name = 'nm_counts' ORDER BY schema;
SELECT cq.resume('public.nm_counts');
SELECT cq.reset('nm_counts');
RESET ROLE;
-- the reset forgot only alice's own query's batches; cq.offsets, cq.progress
-- and cq.status show the schema
SELECT schema, name, count(*) AS batches FROM cq.offsets WHERE name = 'nm_counts'
 GROUP BY schema, name ORDER BY schema;
SELECT schema, name, count(*) AS batches, sum(num_input_rows) AS rows FROM cq.progress
 WHERE name = 'nm_counts' GROUP BY schema, name ORDER BY schema;
SELECT schema, name, message, last_batch_id FROM cq.status WHERE name = 'nm_counts' ORDER BY schema;
SELECT k, n FROM regress_cq_names_alice.nm_counts ORDER BY k;
-- each role sees its own queries only
SET ROLE regress_cq_names_bob;
SELECT schema, name FROM cq.queries WHERE name = 'nm_counts';
SELECT DISTINCT schema, name FROM cq.offsets WHERE name = 'nm_counts';
SELECT schema, name FROM cq.status WHERE name = 'nm_counts';
RESET ROLE;

-- a query follows its target's schema: ALTER SCHEMA ... RENAME, ALTER TABLE
-- ... SET SCHEMA (refused where the name is taken, as a table would be)
ALTER SCHEMA regress_cq_names_bob RENAME TO regress_cq_names_bob2;
SELECT schema, name FROM cq.queries WHERE owner = 'regress_cq_names_bob'::regrole;
SELECT DISTINCT schema FROM cq.offsets WHERE name = 'nm_counts' ORDER BY 1;
SET ROLE regress_cq_names_bob;
INSERT INTO regress_cq_names_bob2.nm_src VALUES (1, 1);
CALL cq.run('regress_cq_names_bob2.nm_counts');
CALL cq.run('regress_cq_names_bob.nm_counts');
RESET ROLE;
SET ROLE regress_cq_names_bob;
SELECT cq.create_query('nm_twin', 'SELECT k FROM regress_cq_names_bob2.nm_src',
                       target => 'regress_cq_names_bob2.nm_twin_bob', "trigger" => 'available_now');
RESET ROLE;
SET ROLE regress_cq_names_alice;
SELECT cq.create_query('nm_twin', 'SELECT k FROM regress_cq_names_alice.nm_src',
                       target => 'public.nm_twin_alice', "trigger" => 'available_now');
RESET ROLE;
ALTER TABLE regress_cq_names_bob2.nm_twin_bob SET SCHEMA public;
CREATE SCHEMA regress_cq_names_moved AUTHORIZATION regress_cq_names_bob;
ALTER TABLE regress_cq_names_bob2.nm_counts SET SCHEMA regress_cq_names_moved;
SELECT schema, name, target FROM cq.queries WHERE owner = 'regress_cq_names_bob'::regrole ORDER BY 1, 2;
SELECT DISTINCT schema FROM cq.progress WHERE name = 'nm_counts' ORDER BY 1;
SET ROLE regress_cq_names_bob;
INSERT INTO regress_cq_names_bob2.nm_src VALUES (3, 3);
CALL cq.run('regress_cq_names_moved.nm_counts');
SELECT k, n FROM regress_cq_names_moved.nm_counts ORDER BY k;
RESET ROLE;

-- workers: two queries of the same name in two schemas, both in the
-- background, each batch of its own query
SET ROLE regress_cq_names_alice;
CREATE TABLE regress_cq_names_alice.nm_bg WITH (cq.output_mode = 'update')
  AS SELECT k, sum(v) AS s FROM regress_cq_names_alice.nm_src GROUP BY k;
RESET ROLE;
SET ROLE regress_cq_names_bob;
CREATE TABLE regress_cq_names_moved.nm_bg WITH (cq.output_mode = 'update')
  AS SELECT k, sum(v) AS s FROM regress_cq_names_bob2.nm_src GROUP BY k;
RESET ROLE;
INSERT INTO regress_cq_names_alice.nm_src VALUES (1, 1000);
INSERT INTO regress_cq_names_bob2.nm_src VALUES (1, 2000);
SELECT wait_until($$
  (SELECT s FROM regress_cq_names_alice.nm_bg WHERE k = 1) = 1100
  AND (SELECT s FROM regress_cq_names_moved.nm_bg WHERE k = 1) = 2002$$);
SELECT wait_until($$(SELECT count(*) FROM cq.status
                      WHERE name = 'nm_bg' AND message = 'Waiting for data to arrive') = 2$$);
SELECT schema, name, state, last_error FROM cq.queries WHERE name = 'nm_bg' ORDER BY schema;
SELECT 'alice' AS who, k, s FROM regress_cq_names_alice.nm_bg
UNION ALL SELECT 'bob', k, s FROM regress_cq_names_moved.nm_bg ORDER BY 1, 2;
-- a worker pauses with its own query only
SET ROLE regress_cq_names_bob;
SELECT cq.pause('regress_cq_names_moved.nm_bg');
RESET ROLE;
INSERT INTO regress_cq_names_alice.nm_src VALUES (1, 1);
INSERT INTO regress_cq_names_bob2.nm_src VALUES (1, 1);
SELECT wait_until($$(SELECT s FROM regress_cq_names_alice.nm_bg WHERE k = 1) = 1101$$);
SELECT schema, name, state FROM cq.queries WHERE name = 'nm_bg' ORDER BY schema;
SELECT s AS bob_paused FROM regress_cq_names_moved.nm_bg WHERE k = 1;

-- drop by name and by target: exactly the query named
SET ROLE regress_cq_names_alice;
SELECT cq.drop_query('public.nm_counts');
SELECT schema, name FROM cq.queries WHERE name = 'nm_counts' ORDER BY schema;
DROP TABLE nm_counts;
SELECT schema, name FROM cq.queries WHERE name = 'nm_counts' ORDER BY schema;
SELECT cq.drop_query('"NM Quoted"', drop_target => true);
RESET ROLE;

-- clean up
DROP TABLE public.nm_counts, public.nm_twin_alice;
DROP SCHEMA regress_cq_names_alice, regress_cq_names_bob2, regress_cq_names_moved CASCADE;
SELECT count(*) AS left_behind FROM cq.queries
 WHERE owner IN ('regress_cq_names_alice'::regrole, 'regress_cq_names_bob'::regrole);
REVOKE CREATE ON SCHEMA public FROM regress_cq_names_alice;
DROP ROLE regress_cq_names_alice, regress_cq_names_bob;
