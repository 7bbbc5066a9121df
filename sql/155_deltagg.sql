-- Session 35: the partial aggregation of an incremental batch on the store
-- in C (deltagg.c, cq.delta_agg_in_c): the batch's statement only reads the
-- new rows, and C groups them and makes count(*), count(x) and numeric's
-- sum, min and max.  The same query with the setting off (d's hash
-- aggregation) must give the same target, byte for byte (the display scale
-- of sums and of the kept min and max, NaN and infinities, NULL keys and
-- values, long, compressed and out-of-line keys), and so must a plain GROUP BY.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET timezone = 'UTC';
SET cq.run_in_worker = off;

CREATE TABLE dg_src (k int, t text, vc varchar(20), ts timestamptz, b bool, v numeric);
INSERT INTO dg_src VALUES (1, 'history', 'h', '2026-01-01 10:00+00', true, 1.5);
CREATE TABLE dg_c WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, t, date_bin('1 hour', ts, '2000-01-01') AS hr, count(*) AS n, count(v) AS nv,
         sum(v) AS s, avg(v) AS a, min(v) AS lo, max(v) AS hi
  FROM dg_src GROUP BY 1, 2, 3;
CREATE TABLE dg_sql WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, t, date_bin('1 hour', ts, '2000-01-01') AS hr, count(*) AS n, count(v) AS nv,
         sum(v) AS s, avg(v) AS a, min(v) AS lo, max(v) AS hi
  FROM dg_src GROUP BY 1, 2, 3;
-- other key types, complete mode
CREATE TABLE dg_keys WITH (cq.output_mode = 'complete', cq.trigger = 'available_now') AS
  SELECT vc, b, k::int8 AS k8, ts::date AS d, count(*) AS n, max(v) AS hi FROM dg_src GROUP BY 1, 2, 3, 4;
-- sums of int2 and int4, min and max of integers, dates and timestamps
CREATE TABLE dg_int WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT t, sum(k) AS s, sum((k - 3)::int2) AS s2, avg(k) AS a, min(k) AS lo, max(k::int8 * 1000000000000) AS hi8,
         min((k - 3)::int2) AS lo2, max(ts) AS last_ts, min(ts::timestamp) AS first_ts, max(ts::date) AS last_d
  FROM dg_src GROUP BY t;
-- shapes d keeps: FILTER, sum of an int8 (a numeric), no keys, a key under
-- no bytewise equality (numeric)
CREATE TABLE dg_filter WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) FILTER (WHERE v > 1) AS n FROM dg_src GROUP BY k;
CREATE TABLE dg_int8 WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT t, sum(k::int8) AS s FROM dg_src GROUP BY t;
CREATE TABLE dg_nokeys WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT count(*) AS n, sum(v) AS s FROM dg_src;
CREATE TABLE dg_numkey WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT v, count(*) AS n FROM dg_src GROUP BY v;
SELECT name, state_path FROM cq.queries WHERE name LIKE 'dg\_%' ORDER BY name;

-- which batches aggregate in C (cq.explain shows the statement a batch runs)
CREATE FUNCTION dg_in_c(q text) RETURNS bool LANGUAGE sql AS
  $$ SELECT cq.explain(q) LIKE '%made in C (cq.delta_agg_in_c)%' $$;
SELECT q, dg_in_c(q) FROM unnest(ARRAY['dg_c', 'dg_keys', 'dg_int', 'dg_filter', 'dg_int8', 'dg_nokeys', 'dg_numkey']) q;
SET cq.delta_agg_in_c = off;
SELECT dg_in_c('dg_c') AS in_c_when_off;
RESET cq.delta_agg_in_c;

-- a batch of each query, dg_sql's with the setting off
\set run_all 'CALL cq.run(''dg_c''); SET cq.delta_agg_in_c = off; CALL cq.run(''dg_sql''); RESET cq.delta_agg_in_c; CALL cq.run(''dg_keys''); CALL cq.run(''dg_filter''); CALL cq.run(''dg_int''); CALL cq.run(''dg_int8''); CALL cq.run(''dg_nokeys''); CALL cq.run(''dg_numkey'');'
:run_all

-- batch 1: many rows, some groups with NULL keys and values
INSERT INTO dg_src
  SELECT g % 7, CASE WHEN g % 11 = 0 THEN NULL ELSE 'c' || (g % 5) END, 'v' || (g % 3),
         '2026-01-01 00:00+00'::timestamptz + (g % 4) * interval '50 minutes', g % 2 = 0,
         CASE WHEN g % 13 = 0 THEN NULL ELSE round((g * 7919 % 100000) / 100.0, g % 3) END
  FROM generate_series(1, 5000) g;
:run_all
-- batch 2: equal values at other scales (the later one kept by min and
-- max), NaN, infinities, sums beyond 128 bits, long and compressed keys,
-- a group whose values are all NULL; a rolled-back insert
INSERT INTO dg_src VALUES
  (1, 'c1', 'v1', '2026-01-01 00:10+00', true, 5), (1, 'c1', 'v1', '2026-01-01 00:20+00', true, 5.000),
  (1, 'c1', 'v1', '2026-01-01 00:30+00', true, 0.001),
  (2, 'nan', 'v2', '2026-01-01 00:10+00', false, 'NaN'), (2, 'nan', 'v2', '2026-01-01 00:11+00', false, 3),
  (2, 'inf', 'v2', '2026-01-01 00:10+00', false, 'Infinity'), (2, 'inf', 'v2', '2026-01-01 00:10+00', false, '-Infinity'),
  (2, 'pinf', 'v2', '2026-01-01 00:10+00', false, 'Infinity'), (2, 'pinf', NULL, '2026-01-01 00:10+00', NULL, 2),
  (3, 'big', NULL, NULL, NULL, 1e40), (3, 'big', NULL, NULL, NULL, -1e40), (3, 'big', NULL, NULL, NULL, 123456789012345678901234567890.123456789),
  (4, 'nulls', NULL, NULL, NULL, NULL), (4, 'nulls', NULL, NULL, NULL, NULL),
  (5, repeat('long-key-', 400), 'v1', NULL, true, 1), (5, repeat('long-key-', 400), 'v1', NULL, true, 2.50),
  (5, repeat('x', 200), 'v1', NULL, true, -7),
  -- keys stored out of line (10 kB that do not compress): each row its own TOAST pointer
  (5, (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 320) g), 'v1', NULL, true, 1),
  (5, (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 320) g), 'v1', NULL, true, 2);
BEGIN;
INSERT INTO dg_src VALUES (6, 'rolled back', 'v9', NULL, true, 99);
ROLLBACK;
:run_all
-- batch 3: existing groups again, new ones, and values that move the min and max
INSERT INTO dg_src
  SELECT g % 7, 'c' || (g % 5), 'v' || (g % 3), '2026-01-01 00:00+00'::timestamptz + (g % 6) * interval '50 minutes',
         g % 3 = 0, (g - 1000) * 1.25
  FROM generate_series(1, 2000) g;
INSERT INTO dg_src VALUES (1, 'c1', 'v1', '2026-01-01 00:15+00', true, 1e6), (1, 'c1', 'v1', '2026-01-01 00:25+00', true, 1000000.00);
:run_all

-- batch 4: more new groups than the batch's memory holds (cq.work_mem
-- 64kB, hash_mem_multiplier 1): the aggregation in C stops the scan, and d,
-- whose hash aggregation spills to disk, runs instead
INSERT INTO dg_src SELECT 100 + g, 'many', 'v1', '2026-01-01 00:00+00', g % 2 = 0, g FROM generate_series(1, 3000) g;
SET cq.work_mem = 64;
SET hash_mem_multiplier = 1;
:run_all
RESET cq.work_mem;
RESET hash_mem_multiplier;
-- the C aggregation and d's give the same rows, and both the GROUP BY's
SELECT count(*) AS c_rows, (SELECT count(*) FROM dg_sql) AS sql_rows FROM dg_c;
SELECT count(*) AS c_vs_sql FROM (
  (SELECT r1::text FROM dg_c r1 EXCEPT ALL SELECT r2::text FROM dg_sql r2)
  UNION ALL (SELECT r2::text FROM dg_sql r2 EXCEPT ALL SELECT r1::text FROM dg_c r1)) x;
CREATE VIEW dg_direct AS
  SELECT k, t, date_bin('1 hour', ts, '2000-01-01') AS hr, count(*) AS n, count(v) AS nv,
         sum(v) AS s, avg(v) AS a, min(v) AS lo, max(v) AS hi
  FROM dg_src GROUP BY 1, 2, 3;
SELECT count(*) AS c_vs_direct FROM (
  (SELECT r1::text FROM dg_c r1 EXCEPT ALL SELECT r2::text FROM dg_direct r2)
  UNION ALL (SELECT r2::text FROM dg_direct r2 EXCEPT ALL SELECT r1::text FROM dg_c r1)) x;
CREATE VIEW dg_keys_direct AS
  SELECT vc, b, k::int8 AS k8, ts::date AS d, count(*) AS n, max(v) AS hi FROM dg_src GROUP BY 1, 2, 3, 4;
SELECT count(*) AS keys_vs_direct FROM (
  (SELECT r1::text FROM dg_keys r1 EXCEPT ALL SELECT r2::text FROM dg_keys_direct r2)
  UNION ALL (SELECT r2::text FROM dg_keys_direct r2 EXCEPT ALL SELECT r1::text FROM dg_keys r1)) x;
CREATE VIEW dg_int_direct AS
  SELECT t, sum(k) AS s, sum((k - 3)::int2) AS s2, avg(k) AS a, min(k) AS lo, max(k::int8 * 1000000000000) AS hi8,
         min((k - 3)::int2) AS lo2, max(ts) AS last_ts, min(ts::timestamp) AS first_ts, max(ts::date) AS last_d
  FROM dg_src GROUP BY t;
SELECT count(*) AS int_vs_direct FROM (
  (SELECT r1::text FROM dg_int r1 EXCEPT ALL SELECT r2::text FROM dg_int_direct r2)
  UNION ALL (SELECT r2::text FROM dg_int_direct r2 EXCEPT ALL SELECT r1::text FROM dg_int r1)) x;
SELECT left(t, 12) AS t, s, s2, a, lo, hi8, lo2, last_ts, first_ts, last_d FROM dg_int
WHERE t IN ('c1', 'nulls', 'big') OR t IS NULL ORDER BY t;
-- the values that tell the two apart when wrong
SELECT k, left(t, 12) AS t, hr, n, nv, s, lo, hi FROM dg_c
WHERE t IN ('nan', 'inf', 'pinf', 'big', 'nulls') OR (k = 1 AND t = 'c1' AND hr = '2026-01-01 00:00+00') OR (k = 5 AND hr IS NULL)
ORDER BY k, t, hr;

DROP VIEW dg_direct, dg_keys_direct, dg_int_direct;
DROP TABLE dg_c, dg_sql, dg_keys, dg_int, dg_filter, dg_int8, dg_nokeys, dg_numkey;
DROP TABLE dg_src;
DROP FUNCTION dg_in_c(text);
