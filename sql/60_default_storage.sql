-- Issue 15: the shared-memory state store is the default.  A query that
-- does not give state_storage takes cq.default_state_storage ('memory'):
-- the store when it can hold the query, an unlogged state table otherwise,
-- never an error; cq.queries.state_path and cq.status say which path and
-- why.  An explicit state_storage is kept (explicit 'memory' the store
-- cannot hold is an error).  Stateless queries are unaffected.
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SET client_min_messages = warning;
SET timezone = 'UTC';

CREATE TABLE ds_src (k int, t text, x int, ts timestamptz);
CREATE TABLE ds_src2 (k int, y int, ts timestamptz);
CREATE FUNCTION ds_paths() RETURNS TABLE (name text, state_storage text, persistence "char", state_path text)
LANGUAGE sql AS $$
  SELECT q.name, q.state_storage, c.relpersistence, q.state_path
    FROM cq.queries q LEFT JOIN pg_class c ON c.oid = q.state_table
   WHERE q.name LIKE 'ds\_%' ORDER BY q.name
$$;

-- 1. No state_storage given: the store where it can hold the query, else a table with the reason
SELECT cq.create_query('ds_mem', 'SELECT k, count(*) AS n, sum(x) AS sx FROM ds_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
SELECT cq.create_query('ds_distinct', 'SELECT k, count(DISTINCT x) AS d FROM ds_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
SELECT cq.create_query('ds_dedup', 'SELECT DISTINCT k, t FROM ds_src', "trigger" => 'available_now') IS NOT NULL AS created;
SELECT cq.create_query('ds_session', 'SELECT k, s.session_start, s.session_end, count(*) AS n '
                                     'FROM ds_src, LATERAL cq.session_window(ts, ''1 minute'') s GROUP BY 1, 2, 3',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
SELECT cq.create_query('ds_join', 'SELECT a.k, a.x, b.y FROM ds_src a JOIN ds_src2 b ON a.k = b.k '
                                  'AND b.ts BETWEEN a.ts AND a.ts + interval ''1 minute''',
                       source => 'ds_src, ds_src2', event_time => 'ds_src.ts, ds_src2.ts', watermark => '1 minute',
                       "trigger" => 'available_now') IS NOT NULL AS created;
SELECT cq.create_query('ds_stateless', 'SELECT k, x FROM ds_src WHERE x > 10', "trigger" => 'available_now') IS NOT NULL AS created;
-- the DDL form too
CREATE TABLE ds_ddl WITH (cq.trigger = 'available_now', cq.output_mode = 'complete')
  AS SELECT t, count(*) AS n FROM ds_src GROUP BY t;
-- 2. Explicit choices are kept
SELECT cq.create_query('ds_req_mem', 'SELECT t, max(x) AS mx FROM ds_src GROUP BY t',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory') IS NOT NULL AS created;
SELECT cq.create_query('ds_req_unl', 'SELECT t, max(x) AS mx FROM ds_src GROUP BY t',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'unlogged') IS NOT NULL AS created;
SELECT cq.create_query('ds_req_log', 'SELECT t, max(x) AS mx FROM ds_src GROUP BY t',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'logged') IS NOT NULL AS created;
SELECT cq.create_query('ds_bad', 'SELECT k, count(DISTINCT x) FROM ds_src GROUP BY k',
                       output_mode => 'update', state_storage => 'memory');
-- 3. The setting chooses the default
SET cq.default_state_storage = 'logged';
SELECT cq.create_query('ds_guc_log', 'SELECT k, min(x) AS mn FROM ds_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
SET cq.default_state_storage = 'unlogged';
SELECT cq.create_query('ds_guc_unl', 'SELECT k, min(x) AS mn FROM ds_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
SET cq.default_state_storage = 'disk';
RESET cq.default_state_storage;
SHOW cq.default_state_storage;
SELECT * FROM ds_paths();
-- cq.status says the same
SELECT name, state_path FROM cq.status WHERE name IN ('ds_mem', 'ds_distinct', 'ds_stateless') ORDER BY name;

-- 4. Every query gives the right answer on the path it got
INSERT INTO ds_src SELECT i % 7, 't' || (i % 3), i, '2024-01-01'::timestamptz + i * interval '10 seconds'
  FROM generate_series(1, 200) i;
INSERT INTO ds_src2 SELECT i % 7, i, '2024-01-01'::timestamptz + i * interval '10 seconds'
  FROM generate_series(1, 50) i;
DO $$
DECLARE q text;
BEGIN
  FOR q IN SELECT name FROM cq.queries WHERE name LIKE 'ds\_%' ORDER BY name LOOP
    CALL cq.run(q);
  END LOOP;
END $$;
INSERT INTO ds_src SELECT i % 11, 't' || (i % 4), i, '2024-01-01'::timestamptz + i * interval '10 seconds'
  FROM generate_series(201, 300) i;
DO $$
DECLARE q text;
BEGIN
  FOR q IN SELECT name FROM cq.queries WHERE name LIKE 'ds\_%' ORDER BY name LOOP
    CALL cq.run(q);
  END LOOP;
END $$;
SELECT mismatches('ds_mem', 'SELECT k, count(*), sum(x) FROM ds_src GROUP BY k') AS mem,
       mismatches('ds_distinct', 'SELECT k, count(DISTINCT x) FROM ds_src GROUP BY k') AS distinct_agg,
       mismatches('ds_dedup', 'SELECT DISTINCT k, t FROM ds_src') AS dedup,
       mismatches('ds_stateless', 'SELECT k, x FROM ds_src WHERE x > 10') AS stateless,
       mismatches('ds_ddl', 'SELECT t, count(*) FROM ds_src GROUP BY t') AS ddl,
       mismatches('ds_req_mem', 'SELECT t, max(x) FROM ds_src GROUP BY t') AS req_mem,
       mismatches('ds_req_log', 'SELECT t, max(x) FROM ds_src GROUP BY t') AS req_log,
       mismatches('ds_guc_log', 'SELECT k, min(x) FROM ds_src GROUP BY k') AS guc_log;
-- the store holds the default query's state
SELECT i.state_rows AS store_rows FROM cq.state_store_info('ds_mem') i;

-- 5. Changing the query before its first batch chooses again, when the
-- default chose: a query the store cannot hold moves to a table (no
-- error), and back; an explicit 'memory' stays and refuses
CREATE TABLE ds_alt_src (k int, x int);
SELECT cq.create_query('ds_alt', 'SELECT k, count(*) AS n FROM ds_alt_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
SELECT cq.alter_query('ds_alt', query => 'SELECT k, count(DISTINCT x) AS n FROM ds_alt_src GROUP BY k');
SELECT state_storage, state_path FROM cq.queries WHERE name = 'ds_alt';
SELECT cq.alter_query('ds_alt', query => 'SELECT k, count(x) AS n FROM ds_alt_src GROUP BY k');
SELECT state_storage, state_path FROM cq.queries WHERE name = 'ds_alt';
INSERT INTO ds_alt_src SELECT i % 4, i FROM generate_series(1, 20) i;
CALL cq.run('ds_alt');
SELECT mismatches('ds_alt', 'SELECT k, count(x) FROM ds_alt_src GROUP BY k') AS alt_mismatches,
       (SELECT state_rows FROM cq.state_store_info('ds_alt')) AS store_rows;
SELECT cq.alter_query('ds_req_mem', query => 'SELECT t, count(DISTINCT x)::int AS mx FROM ds_src GROUP BY t');
SELECT cq.reset('ds_req_mem');
SELECT cq.alter_query('ds_req_mem', query => 'SELECT t, count(DISTINCT x)::int AS mx FROM ds_src GROUP BY t');

-- 6. A query that outgrows cq.state_memory moves to its table: the path says when
SET cq.state_memory = '64kB';
CREATE TABLE ds_big (k int, x int);
SELECT cq.create_query('ds_bigq', 'SELECT k, count(*) AS n FROM ds_big GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
INSERT INTO ds_big SELECT i % 10, i FROM generate_series(1, 30) i;
CALL cq.run('ds_bigq');
INSERT INTO ds_big SELECT i, i FROM generate_series(1, 3000) i;
CALL cq.run('ds_bigq');
SELECT state_storage, state_path FROM cq.queries WHERE name = 'ds_bigq';
SELECT name, state_path FROM cq.status WHERE name = 'ds_bigq';
SELECT mismatches('ds_bigq', 'SELECT k, count(*) FROM ds_big GROUP BY k') AS big_mismatches;
RESET cq.state_memory;

-- 7. Queries whose state columns have the same names but other types, in
-- one backend: each runs its own merge statement (a saved plan over the
-- store's pairs was once shared by its text)
CREATE TABLE ds_ty (i int, t text, n numeric);
SELECT cq.create_query('ds_ty_' || c, format('SELECT %s AS g, count(*) AS n, max(i) AS mx FROM ds_ty GROUP BY 1', c),
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created
  FROM unnest(ARRAY['i', 't', 'n']) c ORDER BY c;
INSERT INTO ds_ty SELECT i % 3, 't' || (i % 4), i % 5 FROM generate_series(1, 30) i;
CALL cq.run('ds_ty_i'); CALL cq.run('ds_ty_t'); CALL cq.run('ds_ty_n');
INSERT INTO ds_ty SELECT i % 3, 't' || (i % 4), i % 5 FROM generate_series(31, 60) i;
CALL cq.run('ds_ty_i'); CALL cq.run('ds_ty_t'); CALL cq.run('ds_ty_n');
SELECT mismatches('ds_ty_i', 'SELECT i, count(*), max(i) FROM ds_ty GROUP BY 1') AS i_mismatches,
       mismatches('ds_ty_t', 'SELECT t, count(*), max(i) FROM ds_ty GROUP BY 1') AS t_mismatches,
       mismatches('ds_ty_n', 'SELECT n, count(*), max(i) FROM ds_ty GROUP BY 1') AS n_mismatches;
SELECT count(*) AS on_store FROM cq.queries WHERE name LIKE 'ds\_ty\_%' AND state_storage = 'memory';

SELECT cq.drop_query(name, drop_target => true) FROM cq.queries WHERE name LIKE 'ds\_%' ORDER BY name;
DROP TABLE ds_src, ds_src2, ds_alt_src, ds_big, ds_ty;
DROP FUNCTION ds_paths();
