-- The creator's DateStyle, IntervalStyle... (cq.queries.settings, sql/204)
-- also in a join of two streams' batches (src/join.c) and in the rewrite of
-- an update target after cq.alter_query changes its HAVING (src/api.c):
-- run here under other settings, they write the creator's format.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SELECT pause_others();
CREATE ROLE pin205_user;
CREATE SCHEMA pin205 AUTHORIZATION pin205_user;
SET ROLE pin205_user;
SET cq.run_in_worker = off;
CREATE TABLE pin205.l (k int, ts timestamptz);
CREATE TABLE pin205.r (k int, ts timestamptz, d interval);

SET DateStyle = 'SQL, DMY';
SET IntervalStyle = 'sql_standard';
CREATE TABLE pin205.j
  WITH (cq.trigger = 'available_now', cq.source = 'pin205.l, pin205.r',
        cq.event_time = 'l.ts, r.ts', cq.watermark = '1 hour')
  AS SELECT l.k, l.ts::date::text AS day, r.d::text AS dur
       FROM pin205.l l JOIN pin205.r r
         ON l.k = r.k AND r.ts BETWEEN l.ts AND l.ts + interval '1 hour' WITH NO DATA;
CREATE TABLE pin205.u WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, max(ts)::text AS last FROM pin205.l GROUP BY k WITH NO DATA;
RESET DateStyle; RESET IntervalStyle;
SELECT l FROM regexp_split_to_table(cq.explain('pin205.j'), E'\n') l WHERE l LIKE '-- DateStyle%';

-- batches under ISO and postgres
SET DateStyle = 'ISO, MDY';
SET IntervalStyle = 'postgres';
INSERT INTO pin205.l VALUES (1, '2026-01-02 10:00+00');
INSERT INTO pin205.r VALUES (1, '2026-01-02 10:30+00', '1 day 2 hours');
CALL cq.run('pin205.j');
CALL cq.run('pin205.u');
SELECT current_setting('DateStyle') AS datestyle, current_setting('IntervalStyle') AS intervalstyle;
SELECT * FROM pin205.j;
SELECT * FROM pin205.u;

-- a new HAVING rewrites the target from the state, with the new projection:
-- the creator's format
SELECT cq.alter_query('pin205.u', query => 'SELECT k, max(ts)::date::text AS last FROM pin205.l GROUP BY k HAVING max(ts) IS NOT NULL') IS NOT NULL AS altered;
SELECT * FROM pin205.u;
SELECT current_setting('DateStyle') AS datestyle;

RESET ROLE;
SELECT cq.drop_query('pin205.j');
SELECT cq.drop_query('pin205.u');
DROP SCHEMA pin205 CASCADE;
DROP ROLE pin205_user;
