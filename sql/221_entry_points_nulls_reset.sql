-- Session 43: SQL entry points with NULL arguments, cq.explain's last batch on the table
-- path, and what cq.reset does with a query's pinned settings.
-- (1) A NULL where a value is required is 22004 (null_value_not_allowed), as PostgreSQL's
-- own functions say it; an empty name or query text stays 22023.  A NULL optional argument
-- means its default (create_query's options, drop_query's drop_target, cq.run's once) or,
-- in cq.alter_query, "unchanged".  Functions that only read (cq.explain,
-- cq.state_store_info) are strict: NULL in, NULL out.
-- (2) cq.explain's "last batch in this session" on the table path counts the batch's new
-- rows after its statement (under cq.merge_max_groups = -1, the default, nothing counts
-- them before it: it said "MERGE (0 new rows)" for every batch).
-- (3) cq.reset restarts the query as if created anew by the caller: it takes the caller's
-- TimeZone and pinned settings (DateStyle and the others), as cq.alter_query does before
-- a first batch; a key computed as text then follows them.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET cq.run_in_worker = off;
CREATE TABLE ep_src (k int NOT NULL, ts timestamptz);
INSERT INTO ep_src VALUES (1, '2026-01-02 10:00+00'), (2, '2026-01-02 11:00+00');

-- (1)
\set VERBOSITY default
CREATE FUNCTION ep_state(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE stmt;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT stmt, ep_state(stmt) AS result FROM unnest(ARRAY[
  $$SELECT cq.create_query(NULL, 'SELECT k FROM ep_src')$$,
  $$SELECT cq.create_query('', 'SELECT k FROM ep_src')$$,
  $$SELECT cq.create_query('ep_x', NULL)$$,
  $$SELECT cq.create_query('ep_x', '')$$,
  $$SELECT cq.alter_query(NULL, "trigger" => '1 minute')$$,
  $$SELECT cq.drop_query(NULL)$$,
  $$SELECT cq.pause(NULL)$$,
  $$SELECT cq.resume(NULL)$$,
  $$SELECT cq.reset(NULL)$$,
  $$CALL cq.run(NULL)$$,
  $$SELECT cq.state_rows(NULL, 1)$$
]) AS stmt;
SELECT cq.explain(NULL) IS NULL AS explain_null, cq.state_store_info(NULL) IS NULL AS info_null;
-- optional arguments given as NULL: their defaults
SELECT cq.create_query('ep_q', 'SELECT k, count(*) AS n FROM ep_src GROUP BY k', output_mode => 'update',
                       "trigger" => NULL, starting => NULL, max_rows_per_trigger => NULL,
                       state_storage => 'unlogged');
SELECT output_mode, "trigger", starting, max_rows_per_trigger FROM cq.queries WHERE name = 'ep_q';
SELECT cq.alter_query('ep_q', "trigger" => NULL, max_rows_per_trigger => NULL);
SELECT "trigger" FROM cq.queries WHERE name = 'ep_q';
CALL cq.run('ep_q', NULL);
SELECT cq.drop_query('ep_q', NULL);
SELECT to_regclass('ep_q') IS NOT NULL AS target_kept;
DROP TABLE ep_q;

-- (2) the table path's writer and the rows of the last batch in this session
CREATE TABLE ep_m WITH (cq.output_mode = 'update', cq.trigger = 'available_now', cq.state_storage = 'unlogged')
  AS SELECT k, count(*) AS n FROM ep_src GROUP BY k;
CREATE FUNCTION ep_last(q text) RETURNS text LANGUAGE sql
  AS $$ SELECT substring(cq.explain(q) FROM '-- last batch in this session: [^\n]*') $$;
INSERT INTO ep_src VALUES (1, '2026-01-02 12:00+00'), (3, '2026-01-02 12:00+00'), (3, '2026-01-02 12:00+00');
CALL cq.run('ep_m');
SELECT ep_last('ep_m');
INSERT INTO ep_src VALUES (4, '2026-01-02 13:00+00');
CALL cq.run('ep_m');
SELECT ep_last('ep_m');
SET cq.merge_max_groups = 0;
INSERT INTO ep_src VALUES (4, '2026-01-02 13:00+00'), (5, '2026-01-02 13:00+00');
CALL cq.run('ep_m');
SELECT ep_last('ep_m');
RESET cq.merge_max_groups;
TABLE ep_m ORDER BY k;

-- (3) created under DateStyle 'SQL, DMY' in Europe/Paris: its key is that text (16:00 UTC
-- is January 2 in Paris, January 3 in Tokyo)
INSERT INTO ep_src VALUES (6, '2026-01-02 16:00+00');
SET DateStyle = 'SQL, DMY';
SET TimeZone = 'Europe/Paris';
CREATE TABLE ep_r WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT ts::date::text AS d, count(*) AS n FROM ep_src GROUP BY 1;
RESET DateStyle;
RESET TimeZone;
SELECT timezone, settings[1] AS datestyle FROM cq.queries WHERE name = 'ep_r';
TABLE ep_r ORDER BY d;
-- reset by a session under ISO and Asia/Tokyo: the query starts over under those
SET DateStyle = 'ISO, YMD';
SET TimeZone = 'Asia/Tokyo';
SELECT cq.reset('ep_r');
RESET DateStyle;
RESET TimeZone;
SELECT timezone, settings[1] AS datestyle FROM cq.queries WHERE name = 'ep_r';
CALL cq.run('ep_r');
TABLE ep_r ORDER BY d;
-- the plain query under the same settings gives the same rows
SET DateStyle = 'ISO, YMD';
SET TimeZone = 'Asia/Tokyo';
SELECT NOT EXISTS (SELECT d, n FROM ep_r EXCEPT SELECT ts::date::text, count(*) FROM ep_src GROUP BY 1)
   AND NOT EXISTS (SELECT ts::date::text, count(*) FROM ep_src GROUP BY 1 EXCEPT SELECT d, n FROM ep_r) AS equal;
RESET DateStyle;
RESET TimeZone;

SELECT cq.drop_query(name, drop_target => true) FROM cq.queries WHERE name LIKE 'ep\_%';
DROP TABLE ep_src;
DROP FUNCTION ep_state(text), ep_last(text);
