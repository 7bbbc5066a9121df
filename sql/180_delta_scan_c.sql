-- Session 39: the new rows of an incremental batch on the store read in C
-- (delta_scan.c, cq.delta_scan_in_c) for deltagg.c's aggregation, instead
-- of the statement's bitmap heap scan.  Each query has a twin whose batches
-- run with the setting off (the statement); after every batch the two
-- targets must be equal row for row, and equal to the plain GROUP BY:
-- NULL keys and arguments, NaN, -0 and infinities, long, compressed and
-- out-of-line values, rolled-back transactions and subtransactions,
-- deleted and updated rows, HOT-pruned pages, dropped columns before and
-- after the columns read, a column added after cq_xid, a WHERE clause.
-- Whether a batch read its rows in C shows in cq.xid_new's call count
-- (track_functions = all): the statement calls it for each row its WHERE
-- keeps, the C reader calls the C function directly.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET timezone = 'UTC';
SET cq.run_in_worker = off;
SET track_functions = 'all';

\i sql/include/ds_diff.sql
CREATE FUNCTION ds_calls() RETURNS bigint LANGUAGE sql AS
  $$ SELECT coalesce((SELECT sum(calls) FROM pg_stat_user_functions
                      WHERE schemaname = 'cq' AND funcname IN ('xid_new', 'xid48_new')), 0)::bigint $$;

-- dropped columns before (d1, d2) and after (d3) the ones read
CREATE TABLE ds_src (d1 int, k int, d2 text, t text, ts timestamptz, v numeric, i int, d3 text)
  WITH (fillfactor = 50, autovacuum_enabled = off);
ALTER TABLE ds_src DROP COLUMN d1, DROP COLUMN d2;
INSERT INTO ds_src (k, t, ts, v, i) VALUES (1, 'history', '2026-01-01 10:00+00', 1.5, 1);
CREATE TABLE ds_c WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, t, date_bin('1 hour', ts, '2000-01-01') AS hr, count(*) AS n, count(v) AS nv,
         sum(v) AS s, avg(v) AS a, min(v) AS lo, max(v) AS hi, sum(i) AS si, max(ts) AS last_ts
  FROM ds_src WHERE k IS DISTINCT FROM 3 GROUP BY 1, 2, 3;
CREATE TABLE ds_sql WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, t, date_bin('1 hour', ts, '2000-01-01') AS hr, count(*) AS n, count(v) AS nv,
         sum(v) AS s, avg(v) AS a, min(v) AS lo, max(v) AS hi, sum(i) AS si, max(ts) AS last_ts
  FROM ds_src WHERE k IS DISTINCT FROM 3 GROUP BY 1, 2, 3;
ALTER TABLE ds_src DROP COLUMN d3;
-- a column added after cq_xid, read by the second pair
ALTER TABLE ds_src ADD COLUMN extra int;
CREATE TABLE ds_kc WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT ts, upper(t) AS ut, count(*) AS n, sum(extra) AS se, min(k) AS lo FROM ds_src GROUP BY 1, 2;
CREATE TABLE ds_ksql WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT ts, upper(t) AS ut, count(*) AS n, sum(extra) AS se, min(k) AS lo FROM ds_src GROUP BY 1, 2;
SELECT attname FROM pg_attribute WHERE attrelid = 'ds_src'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
SELECT name, state_path FROM cq.queries WHERE name LIKE 'ds\_%' ORDER BY name;

\i sql/include/delta_scan_run.sql

-- batch 1: many rows, NULL keys and values, a WHERE that drops k = 3
INSERT INTO ds_src (k, t, ts, v, i, extra)
  SELECT CASE WHEN g % 17 = 0 THEN NULL ELSE g % 7 END, CASE WHEN g % 11 = 0 THEN NULL ELSE 'c' || (g % 5) END,
         '2026-01-01 00:00+00'::timestamptz + (g % 4) * interval '50 minutes',
         CASE WHEN g % 13 = 0 THEN NULL ELSE round((g * 7919 % 100000) / 100.0, g % 3) END,
         CASE WHEN g % 19 = 0 THEN NULL ELSE g END, g % 3
  FROM generate_series(1, 5000) g;
\i sql/include/delta_scan_run.sql
-- batch 2: NaN, -0, infinities (numeric and timestamptz), sums beyond 128
-- bits, long, compressed and out-of-line keys; a rolled-back transaction;
-- subtransactions, one rolled back
INSERT INTO ds_src (k, t, ts, v, i, extra) VALUES
  (1, 'nan', '2026-01-01 00:10+00', 'NaN', 1, 1), (1, 'nan', '2026-01-01 00:11+00', 3, 2, 2),
  (1, 'zero', '2026-01-01 00:10+00', '-0', 1, 1), (1, 'zero', '2026-01-01 00:11+00', '-0.000', 1, 1),
  (2, 'inf', 'infinity', 'Infinity', 1, 1), (2, 'inf', '-infinity', '-Infinity', 1, 1),
  (2, 'pinf', 'infinity', 'Infinity', NULL, NULL), (2, 'pinf', 'infinity', 2, 2147483647, 2147483647),
  (4, 'big', NULL, 1e40, 2147483647, 2147483647), (4, 'big', NULL, -1e40, 2147483647, 2147483647),
  (4, 'big', NULL, 123456789012345678901234567890.123456789, -2147483648, -2147483648),
  (5, repeat('long-key-', 400), NULL, 1, 1, 1), (5, repeat('long-key-', 400), NULL, 2.50, 1, 1),
  (5, (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 320) g), NULL, 1, 1, 1),
  (5, (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 320) g), NULL, 2, 1, 1),
  (6, 'long value', NULL, (repeat('9', 900) || '.5')::numeric, 1, 1);
BEGIN;
INSERT INTO ds_src (k, t, v) VALUES (1, 'rolled back', 99);
ROLLBACK;
BEGIN;
INSERT INTO ds_src (k, t, v) VALUES (1, 'top', 1);
SAVEPOINT a;
INSERT INTO ds_src (k, t, v) VALUES (1, 'sub rolled back', 1);
ROLLBACK TO SAVEPOINT a;
SAVEPOINT b;
INSERT INTO ds_src (k, t, v) VALUES (1, 'sub committed', 1);
RELEASE SAVEPOINT b;
COMMIT;
\i sql/include/delta_scan_run.sql
-- both equal to the GROUP BY while no row was deleted or updated
SELECT ds_diff('ds_c', 'SELECT k, t, date_bin(''1 hour'', ts, ''2000-01-01'') AS hr, count(*) AS n, count(v) AS nv, sum(v) AS s, avg(v) AS a, min(v) AS lo, max(v) AS hi, sum(i) AS si, max(ts) AS last_ts FROM ds_src WHERE k IS DISTINCT FROM 3 GROUP BY 1, 2, 3') AS c_vs_groupby,
       ds_diff('ds_kc', 'SELECT ts, upper(t) AS ut, count(*) AS n, sum(extra) AS se, min(k) AS lo FROM ds_src GROUP BY 1, 2') AS k_c_vs_groupby;
SELECT k, left(t, 12) AS t, hr, n, nv, left(s::text, 24) AS s, left(lo::text, 24) AS lo, left(hi::text, 24) AS hi, si, last_ts FROM ds_c
WHERE t IN ('nan', 'zero', 'inf', 'pinf', 'big', 'top', 'sub committed', 'sub rolled back', 'rolled back', 'long value') OR (k = 5 AND hr IS NULL)
ORDER BY k, t, hr;
-- batch 3: new rows deleted or updated before the batch, history rows
-- updated, HOT chains in the new rows' pages pruned by VACUUM
INSERT INTO ds_src (k, t, ts, v, i, extra)
  SELECT g % 7, 'd' || (g % 3), '2026-01-01 00:00+00', g, g, g FROM generate_series(1, 3000) g;
DELETE FROM ds_src WHERE t = 'd0' AND v < 1000;
UPDATE ds_src SET v = v + 1 WHERE t = 'd1' AND v < 1500;
UPDATE ds_src SET v = v + 1 WHERE t = 'd1' AND v < 1500;
UPDATE ds_src SET i = 7 WHERE t = 'history';
VACUUM ds_src;
INSERT INTO ds_src (k, t, ts, v, i, extra)
  SELECT g % 7, 'e' || (g % 3), '2026-01-01 00:00+00', g, g, g FROM generate_series(1, 500) g;
\i sql/include/delta_scan_run.sql
-- batch 4: more new groups than the batch's memory holds: the aggregation
-- stops the read, and d runs instead
INSERT INTO ds_src (k, t, ts, v, i, extra)
  SELECT 100 + g, 'many', '2026-01-01 00:00+00', g, g, g FROM generate_series(1, 3000) g;
SET cq.work_mem = 64;
SET hash_mem_multiplier = 1;
\i sql/include/delta_scan_run.sql
RESET cq.work_mem;
RESET hash_mem_multiplier;
-- batch 5: nothing new
\i sql/include/delta_scan_run.sql

-- shapes the reader leaves to the statement (cq.explain says which read in C)
-- (a join of a static table: aggregated in C, read by the statement)
CREATE TABLE ds_dim (k int PRIMARY KEY, name text);
CREATE TABLE ds_join WITH (cq.output_mode = 'update', cq.trigger = 'available_now', cq.source = 'ds_src') AS
  SELECT name, count(*) AS n FROM ds_src JOIN ds_dim USING (k) GROUP BY name;
CREATE FUNCTION ds_in_c(q text) RETURNS bool LANGUAGE sql AS
  $$ SELECT cq.explain(q) LIKE '%read in C (cq.delta_scan_in_c)%' $$;
SET cq.delta_scan_in_c = on;
SELECT q, cq.explain(q) LIKE '%made in C (cq.delta_agg_in_c)%' AS agg_in_c, ds_in_c(q) AS read_in_c
FROM unnest(ARRAY['ds_c', 'ds_kc', 'ds_join']) q;
SET cq.delta_scan_in_c = off;
SELECT ds_in_c('ds_c') AS in_c_when_off;
RESET cq.delta_scan_in_c;

-- privileges: the query's owner needs SELECT on every column the batch
-- reads; without it both readers fail with the statement's error and fold
-- nothing
CREATE ROLE regress_ds_owner;
CREATE TABLE ds_priv (k int, v numeric, secret text);
ALTER TABLE ds_priv OWNER TO regress_ds_owner;
GRANT CREATE ON SCHEMA public TO regress_ds_owner;
SET ROLE regress_ds_owner;
CREATE TABLE ds_pc WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM ds_priv GROUP BY k;
CREATE TABLE ds_ps WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM ds_priv GROUP BY k;
INSERT INTO ds_priv VALUES (1, 1, 'a'), (2, 2, 'b'), (2, 3, 'c');
CALL cq.run('ds_pc');
CALL cq.run('ds_ps');
INSERT INTO ds_priv VALUES (1, 10, 'd'), (3, 30, 'e');
REVOKE SELECT ON ds_priv FROM regress_ds_owner;
GRANT SELECT (k, secret, cq_xid) ON ds_priv TO regress_ds_owner;
\set c ds_pc
\set s ds_ps
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT 'ds_pc' AS q, k, n, s FROM ds_pc UNION ALL SELECT 'ds_ps', k, n, s FROM ds_ps ORDER BY 1, 2;
GRANT SELECT (v) ON ds_priv TO regress_ds_owner;
SET ROLE regress_ds_owner;
\set c ds_pc
\set s ds_ps
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT ds_diff('ds_pc', 'TABLE ds_ps') AS priv_c_vs_sql, ds_diff('ds_pc', 'SELECT k, count(*) AS n, sum(v) AS s FROM ds_priv GROUP BY k') AS priv_c_vs_groupby;

-- a function of the query called directly (not through the interpreter):
-- the owner needs EXECUTE on it, as the statement's executor checks; without
-- it both readers fail with the same error and fold nothing
CREATE FUNCTION ds_bucket(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN i % 2; END $$;
SET ROLE regress_ds_owner;
CREATE TABLE ds_fc WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT ds_bucket(k) AS b, count(*) AS n FROM ds_priv GROUP BY 1;
CREATE TABLE ds_fs WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT ds_bucket(k) AS b, count(*) AS n FROM ds_priv GROUP BY 1;
CALL cq.run('ds_fc');
CALL cq.run('ds_fs');
RESET ROLE;
REVOKE EXECUTE ON FUNCTION ds_bucket(int) FROM PUBLIC;
INSERT INTO ds_priv VALUES (4, 4, 'f'), (5, 5, 'g');
SET ROLE regress_ds_owner;
\set c ds_fc
\set s ds_fs
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT 'ds_fc' AS q, b, n FROM ds_fc UNION ALL SELECT 'ds_fs', b, n FROM ds_fs ORDER BY 1, 2;
GRANT EXECUTE ON FUNCTION ds_bucket(int) TO regress_ds_owner;
SET ROLE regress_ds_owner;
\set c ds_fc
\set s ds_fs
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT ds_diff('ds_fc', 'TABLE ds_fs') AS exec_c_vs_sql, ds_diff('ds_fc', 'SELECT ds_bucket(k) AS b, count(*) AS n FROM ds_priv GROUP BY 1') AS exec_c_vs_groupby;

-- row-level security on the source (forced for its owner): the statement
-- applies the policy, so the reader steps aside
CREATE TABLE ds_rls (k int, v numeric);
ALTER TABLE ds_rls OWNER TO regress_ds_owner;
SET ROLE regress_ds_owner;
ALTER TABLE ds_rls ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY ds_sel ON ds_rls FOR SELECT USING (k < 5);
CREATE POLICY ds_ins ON ds_rls FOR INSERT WITH CHECK (true);
CREATE TABLE ds_rc WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM ds_rls GROUP BY k;
CREATE TABLE ds_rs WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM ds_rls GROUP BY k;
INSERT INTO ds_rls SELECT g % 10, g FROM generate_series(1, 100) g;
\set c ds_rc
\set s ds_rs
\i sql/include/delta_scan_pair.sql
SELECT ds_diff('ds_rc', 'TABLE ds_rs') AS rls_c_vs_sql, (SELECT max(k) FROM ds_rc) AS rls_max_k;
RESET ROLE;

-- a source with an inheritance child: the statement reads both, and so
-- the reader steps aside
CREATE TABLE ds_parent (k int, v numeric);
CREATE TABLE ds_ic WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM ds_parent GROUP BY k;
CREATE TABLE ds_is WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM ds_parent GROUP BY k;
CREATE TABLE ds_child () INHERITS (ds_parent);
INSERT INTO ds_parent SELECT g % 3, g FROM generate_series(1, 30) g;
INSERT INTO ds_child SELECT g % 3, g FROM generate_series(1, 30) g;
\set c ds_ic
\set s ds_is
\i sql/include/delta_scan_pair.sql
SELECT ds_diff('ds_ic', 'TABLE ds_is') AS inh_c_vs_sql, (SELECT sum(n) FROM ds_ic) AS inh_rows;

DROP TABLE ds_c, ds_sql, ds_kc, ds_ksql, ds_join, ds_dim, ds_src, ds_ic, ds_is, ds_child, ds_parent;
DROP OWNED BY regress_ds_owner;
DROP ROLE regress_ds_owner;
DROP FUNCTION ds_diff(regclass, text), ds_calls(), ds_in_c(text), ds_bucket(int);
