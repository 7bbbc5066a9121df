-- Issue 12 goal 4: CALL cq.run hands its batches to an idle pool worker
-- (cq.run_in_worker, src/handoff.c).  What the caller sees must not change:
-- the same NOTICEs, errors and failed-state bookkeeping as in-process, once,
-- the transaction-block path and the setting off run in-process, and the
-- owner check comes before any batch.  Each CALL below says whether a worker served it
-- (ho_served: the worker's pg_stat_activity entry names this backend and
-- changed since the last look).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
\i sql/include/helpers.sql

-- no batch of another test's query may take the worker meanwhile
SELECT count(cq.pause(CASE WHEN schema IS NULL OR schema = 'public' THEN name
                           ELSE format('%I.%I', schema, name) END)) >= 0 AS others_paused
  FROM cq.queries WHERE state <> 'paused';

-- when a worker last served a CALL of query q for this backend (NULL: never)
CREATE FUNCTION ho_last_served(q text) RETURNS timestamptz LANGUAGE plpgsql AS $$
DECLARE t timestamptz;
BEGIN
  PERFORM pg_stat_clear_snapshot();
  SELECT max(state_change) INTO t FROM pg_stat_activity
   WHERE backend_type = 'pg_cq worker'
     AND query = format('pg_cq: CALL cq.run(''%s'') for PID %s', q, pg_backend_pid());
  RETURN t;
END $$;
CREATE TABLE ho_seen (qname text PRIMARY KEY, seen timestamptz);
-- did a worker serve a CALL of q since the last ho_served(q)?
CREATE FUNCTION ho_served(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  t timestamptz := ho_last_served(q);
  before timestamptz;
BEGIN
  SELECT s.seen INTO before FROM ho_seen s WHERE s.qname = q;
  INSERT INTO ho_seen VALUES (q, t) ON CONFLICT (qname) DO UPDATE SET seen = excluded.seen;
  RETURN t IS NOT NULL AND (before IS NULL OR t > before);
END $$;

CREATE TABLE ho_src (k int, v int, ts timestamptz);
INSERT INTO ho_src SELECT i % 3, i, '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 minute'
  FROM generate_series(1, 30) i;
SELECT cq.create_query('ho_q', 'SELECT k, sum(v) AS s, count(*) AS c FROM ho_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
SET client_min_messages = notice;
-- the first call runs wherever it can; it asks for a worker if none is idle
CALL cq.run('ho_q');
SELECT wait_until('pool_idle_worker()');
SELECT ho_served('ho_q') IS NOT NULL AS looked;

-- through the worker: the NOTICE per batch, then "no new data"
INSERT INTO ho_src VALUES (1, 100, '2024-01-02'), (2, 200, '2024-01-02');
CALL cq.run('ho_q');
SELECT ho_served('ho_q') AS served;
CALL cq.run('ho_q');
SELECT ho_served('ho_q') AS served;
SELECT mismatches('ho_q', 'SELECT k, sum(v) AS s, count(*) AS c FROM ho_src GROUP BY k') AS mismatches;

-- once => true: one batch without max_rows_per_trigger; then the rest in
-- batches of at most 5 rows (one transaction per row: the cut is by transaction)
SELECT cq.alter_query('ho_q', max_rows_per_trigger => 5);
DO $$ BEGIN FOR i IN 1 .. 12 LOOP INSERT INTO ho_src VALUES (i % 3, i, '2024-01-03'); COMMIT; END LOOP; END $$;
CALL cq.run('ho_q', once => true);
SELECT ho_served('ho_q') AS served;
DO $$ BEGIN FOR i IN 1 .. 12 LOOP INSERT INTO ho_src VALUES (i % 3, i, '2024-01-03'); COMMIT; END LOOP; END $$;
CALL cq.run('ho_q');
SELECT ho_served('ho_q') AS served;
SELECT mismatches('ho_q', 'SELECT k, sum(v) AS s, count(*) AS c FROM ho_src GROUP BY k') AS mismatches;

-- the session's TimeZone and DateStyle reach the worker: the watermark in
-- the NOTICE of a query with event time is shown as the caller would show it
SELECT cq.create_query('ho_w', 'SELECT w.window_start, count(*) AS c FROM ho_src, LATERAL cq.window(ts, ''1 hour'') AS w GROUP BY w.window_start',
                       output_mode => 'append', "trigger" => 'available_now',
                       event_time => 'ts', watermark => '10 minutes') IS NOT NULL AS created;
SET TimeZone = 'Asia/Tokyo';
SET DateStyle = 'ISO, YMD';
CALL cq.run('ho_w');
SELECT ho_served('ho_w') AS served;
INSERT INTO ho_src VALUES (0, 1, '2024-01-04 12:00:00+00');
SET TimeZone = 'America/New_York';
SET DateStyle = 'SQL, DMY';
CALL cq.run('ho_w');
SELECT ho_served('ho_w') AS served;
-- the same in-process
SET cq.run_in_worker = off;
INSERT INTO ho_src VALUES (0, 1, '2024-01-05 12:00:00+00');
CALL cq.run('ho_w');
SELECT ho_served('ho_w') AS served;
RESET cq.run_in_worker;
RESET TimeZone;
RESET DateStyle;

-- a failing batch: the same error fields either way, the query 'failed'
-- (committed), and a batch that runs clears it
CREATE FUNCTION ho_check(v int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF v < 0 THEN
    RAISE EXCEPTION 'negative value % in ho_src', v
      USING ERRCODE = '22023', DETAIL = 'Values must not be negative.', HINT = 'Delete the row.';
  END IF;
  RETURN v;
END $$;
SELECT cq.create_query('ho_e', 'SELECT k, sum(ho_check(v)) AS s FROM ho_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
CALL cq.run('ho_e');
SELECT ho_served('ho_e') AS served;
INSERT INTO ho_src VALUES (1, -5, '2024-01-06');
\set SHOW_CONTEXT never
CALL cq.run('ho_e');
\echo :LAST_ERROR_SQLSTATE
SELECT ho_served('ho_e') AS served;
SELECT state, last_error FROM cq.queries WHERE name = 'ho_e';
SET cq.run_in_worker = off;
CALL cq.run('ho_e');
\echo :LAST_ERROR_SQLSTATE
SELECT ho_served('ho_e') AS served;
SELECT state, last_error FROM cq.queries WHERE name = 'ho_e';
RESET cq.run_in_worker;
\set SHOW_CONTEXT errors
DELETE FROM ho_src WHERE v < 0;
INSERT INTO ho_src VALUES (1, 5, '2024-01-06');
CALL cq.run('ho_e');
SELECT ho_served('ho_e') AS served;
SELECT state, last_error FROM cq.queries WHERE name = 'ho_e';
SELECT mismatches('ho_e', 'SELECT k, sum(v) AS s FROM ho_src GROUP BY k') AS mismatches;

-- inside a transaction block: in-process, the batches share the transaction
INSERT INTO ho_src VALUES (2, 7, '2024-01-07');
BEGIN;
CALL cq.run('ho_q');
SELECT ho_served('ho_q') AS served;
ROLLBACK;
-- the setting off: in-process
SET cq.run_in_worker = off;
CALL cq.run('ho_q');
SELECT ho_served('ho_q') AS served;
RESET cq.run_in_worker;
SELECT mismatches('ho_q', 'SELECT k, sum(v) AS s, count(*) AS c FROM ho_src GROUP BY k') AS mismatches;

-- a role without the owner's privileges is refused before any batch: by the
-- worker, which reads the query for a call by name (handoff.c, "By name")
CREATE ROLE ho_other;
GRANT USAGE ON SCHEMA cq TO ho_other;
INSERT INTO ho_src VALUES (2, 8, '2024-01-07');
SET ROLE ho_other;
CALL cq.run('ho_q');
RESET ROLE;
SELECT ho_served('ho_q') AS served;

-- a hostile search_path in the caller does not reach the batch in the worker
CREATE SCHEMA ho_evil;
CREATE FUNCTION ho_evil.ho_eq(int, int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'hostile operator called'; END $$;
CREATE OPERATOR ho_evil.= (LEFTARG = int, RIGHTARG = int, FUNCTION = ho_evil.ho_eq);
CREATE FUNCTION ho_evil.sum(int) RETURNS int LANGUAGE sql AS 'SELECT 0';
SET search_path = ho_evil, public, pg_catalog;
CALL cq.run('ho_q');
SELECT public.ho_served('ho_q') AS served;
RESET search_path;
SELECT mismatches('ho_q', 'SELECT k, sum(v) AS s, count(*) AS c FROM ho_src GROUP BY k') AS mismatches;

SET client_min_messages = warning;
SELECT cq.drop_query(n, drop_target => true) FROM unnest(ARRAY['ho_q', 'ho_w', 'ho_e']) n;
DROP SCHEMA ho_evil CASCADE;
DROP TABLE ho_src, ho_seen;
DROP FUNCTION ho_last_served(text), ho_served(text), ho_check(int);
REVOKE USAGE ON SCHEMA cq FROM ho_other;
DROP ROLE ho_other;
