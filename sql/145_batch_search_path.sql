-- Every batch of a query runs the user's code -- the triggers its target statement fires
-- and the functions of its query -- under one search_path, pg_catalog, pg_temp
-- (docs/semantics.md, "The search_path of a batch"), whichever path runs it: batch 0 of
-- CREATE TABLE ... AS in the creating transaction, a CALL cq.run in the caller's process,
-- a CALL handed to a pool worker, a background batch.  Never the caller's search_path:
-- here it puts an attacker's schema first, whose same-named table and function would
-- otherwise be used, and names the owner's schema, where unqualified names would resolve.
-- Session 32's sql/136 looked as if batch 0 resolved an unqualified name in a target
-- trigger and batch 1 did not: its batch 0 wrote no row (HAVING kept every group out), so
-- the trigger never ran.  Here every batch writes rows, and the trigger records them.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SELECT pause_others() AS others_paused;

CREATE ROLE sp145_owner;
CREATE ROLE sp145_evil;
CREATE SCHEMA sp145 AUTHORIZATION sp145_owner;
CREATE SCHEMA sp145_evil AUTHORIZATION sp145_evil;
GRANT USAGE ON SCHEMA sp145_evil TO PUBLIC;

-- the attacker's same-named table (anyone may write it) and function
SET ROLE sp145_evil;
CREATE TABLE sp145_evil.sp_log (tag text, q text, n bigint, path text);
GRANT INSERT, SELECT ON sp145_evil.sp_log TO PUBLIC;
CREATE TABLE sp145_evil.sp_labels (k int, label text);
GRANT SELECT ON sp145_evil.sp_labels TO PUBLIC;
RESET ROLE;

SET ROLE sp145_owner;
SET search_path = sp145_evil, sp145, public;
CREATE TABLE sp145.src (k int, v int);
INSERT INTO sp145.src SELECT g % 3, g FROM generate_series(1, 30) g;
-- what the owner's code writes: per statement, its tag, table, rows and search_path
CREATE TABLE sp145.sp_log (tag text, q text, n bigint, path text);
CREATE TABLE sp145.sp_labels (k int, label text);
INSERT INTO sp145.sp_labels VALUES (0, 'zero'), (1, 'one'), (2, 'two');

-- a trigger that names its table unqualified: resolves under no batch's path
CREATE FUNCTION sp145.log_bare() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO sp_log SELECT 'bare', TG_TABLE_NAME, count(*), current_setting('search_path') FROM nt;
  RETURN NULL;
END $$;
-- the same with a search_path of its own (as a SECURITY DEFINER function should have)
CREATE FUNCTION sp145.log_own() RETURNS trigger LANGUAGE plpgsql SET search_path = sp145 AS $$
BEGIN
  INSERT INTO sp_log SELECT 'own', TG_TABLE_NAME, count(*), current_setting('search_path') FROM nt;
  RETURN NULL;
END $$;
-- and one that names it qualified, recording the search_path the batch runs under
CREATE FUNCTION sp145.log_path() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO sp145.sp_log SELECT 'path', TG_TABLE_NAME, count(*), current_setting('search_path') FROM nt;
  RETURN NULL;
END $$;
-- functions of the query: one whose body names a table unqualified, one with its own path
CREATE FUNCTION sp145.label_bare(k int) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT label FROM sp_labels WHERE sp_labels.k = $1 $$;
CREATE FUNCTION sp145.label_own(k int) RETURNS text LANGUAGE sql STABLE SET search_path = sp145 AS $$
  SELECT label FROM sp_labels WHERE sp_labels.k = $1 $$;
CREATE FUNCTION sp145.path_seen(k int) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT current_setting('search_path') $$;

-- 1. batch 0 of CREATE TABLE ... AS, in the creating transaction: the query's functions
-- see the pinned path, the one with a path of its own finds its table
CREATE TABLE sp145.ctas WITH (cq.trigger = 'available_now', cq.output_mode = 'update') AS
  SELECT k, sp145.label_own(k) AS label, sp145.path_seen(k) AS path, count(*) AS n
    FROM sp145.src GROUP BY k;
SELECT k, label, path, n FROM sp145.ctas ORDER BY k;
-- the one without fails, here and in every later batch alike
\set VERBOSITY terse
CREATE TABLE sp145.ctas_bare WITH (cq.trigger = 'available_now', cq.output_mode = 'update') AS
  SELECT k, sp145.label_bare(k) AS label, count(*) AS n FROM sp145.src GROUP BY k;
\set VERBOSITY default
SELECT to_regclass('sp145.ctas_bare') IS NULL AS ctas_bare_not_created;

-- 2. a query whose target fires the three triggers, and one whose query calls label_bare
SELECT cq.create_query('sp145.tq', 'SELECT k, sp145.path_seen(k) AS path, count(*) AS n FROM sp145.src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now');
SELECT cq.create_query('sp145.fq', 'SELECT k, sp145.label_bare(k) AS label, count(*) AS n FROM sp145.src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now');
CREATE TRIGGER a_path AFTER INSERT ON sp145.tq REFERENCING NEW TABLE AS nt
  FOR EACH STATEMENT EXECUTE FUNCTION sp145.log_path();
CREATE TRIGGER b_own AFTER INSERT ON sp145.tq REFERENCING NEW TABLE AS nt
  FOR EACH STATEMENT EXECUTE FUNCTION sp145.log_own();
CREATE TRIGGER c_path_u AFTER UPDATE ON sp145.tq REFERENCING NEW TABLE AS nt
  FOR EACH STATEMENT EXECUTE FUNCTION sp145.log_path();
CREATE TRIGGER d_own_u AFTER UPDATE ON sp145.tq REFERENCING NEW TABLE AS nt
  FOR EACH STATEMENT EXECUTE FUNCTION sp145.log_own();
-- a twin whose target has the bare trigger only
SELECT cq.create_query('sp145.bq', 'SELECT k, count(*) AS n FROM sp145.src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now');
CREATE TRIGGER bare AFTER INSERT ON sp145.bq REFERENCING NEW TABLE AS nt
  FOR EACH STATEMENT EXECUTE FUNCTION sp145.log_bare();
CREATE TRIGGER bare_u AFTER UPDATE ON sp145.bq REFERENCING NEW TABLE AS nt
  FOR EACH STATEMENT EXECUTE FUNCTION sp145.log_bare();

-- (a) batch 0 and (b) batch 1 in the caller's process, (c) a background batch, (d) a
-- CALL handed to the pool worker that ran it when it is idle (or run in the caller's
-- process when it is not: the same either way)
SET cq.run_in_worker = off;
CALL cq.run('sp145.tq');
\set VERBOSITY terse
CALL cq.run('sp145.fq');
CALL cq.run('sp145.bq');
\set VERBOSITY default
SELECT k, path, n FROM sp145.tq ORDER BY k;
INSERT INTO sp145.src VALUES (0, 100), (3, 100);
CALL cq.run('sp145.tq');
\set VERBOSITY terse
CALL cq.run('sp145.fq');
CALL cq.run('sp145.bq');
\set VERBOSITY default
-- the background: an interval trigger, whose batch a worker runs
INSERT INTO sp145.src VALUES (1, 100), (4, 100);
SELECT cq.alter_query('sp145.tq', "trigger" => '10 milliseconds');
SELECT wait_until($$(SELECT count(*) FROM cq.offsets WHERE schema = 'sp145' AND name = 'tq') = 3$$)
  AS background_ran;
SELECT cq.alter_query('sp145.tq', "trigger" => 'available_now');
RESET cq.run_in_worker;
INSERT INTO sp145.src VALUES (2, 100), (5, 100);
CALL cq.run('sp145.tq');
\set VERBOSITY terse
CALL cq.run('sp145.fq');
CALL cq.run('sp145.bq');
\set VERBOSITY default

-- what ran: every statement saw pg_catalog, pg_temp; the trigger with its own path found
-- its table; nothing reached the attacker's table; the bare trigger's query and the bare
-- function's query have no batch
SELECT tag, q, path, sum(n) > 0 AS wrote FROM sp145.sp_log GROUP BY tag, q, path ORDER BY tag, q, path;
SELECT count(*) AS evil_rows FROM sp145_evil.sp_log;
SELECT q.name, count(o.batch_id) AS batches
  FROM cq.queries q LEFT JOIN cq.offsets o ON o.schema = q.schema AND o.name = q.name
 WHERE q.schema = 'sp145' GROUP BY q.name ORDER BY q.name;
SELECT k, path, n FROM sp145.tq ORDER BY k;

RESET ROLE;
RESET search_path;
SELECT cq.drop_query(format('sp145.%s', name), drop_target => true)
  FROM cq.queries WHERE schema = 'sp145' ORDER BY name;
DROP SCHEMA sp145 CASCADE;
DROP SCHEMA sp145_evil CASCADE;
DROP ROLE sp145_owner;
DROP ROLE sp145_evil;
