-- Session 40 review of session 39's C reader of an incremental batch's new
-- rows (delta_scan.c): the source changed between batches.  Each query has
-- a twin whose batches run the statement (cq.delta_scan_in_c off); after
-- each pair of batches the twins must be equal, and equal to the plain
-- GROUP BY over the source (no row of it deleted after it was folded).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET cq.run_in_worker = off;

\i sql/include/ds_diff.sql

CREATE ROLE regress_rd_owner;
GRANT CREATE, USAGE ON SCHEMA public TO regress_rd_owner;
CREATE TABLE rd_src (k int, w int, t text, v numeric, pad text) WITH (autovacuum_enabled = off);
ALTER TABLE rd_src OWNER TO regress_rd_owner;
SET ROLE regress_rd_owner;
CREATE TABLE rd_c WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, upper(t) AS ut, count(*) AS n, sum(v) AS s, max(length(t)) AS ml FROM rd_src WHERE w > 0 GROUP BY 1, 2;
CREATE TABLE rd_s WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, upper(t) AS ut, count(*) AS n, sum(v) AS s, max(length(t)) AS ml FROM rd_src WHERE w > 0 GROUP BY 1, 2;
RESET ROLE;
CREATE VIEW rd_groupby AS
  SELECT k, upper(t) AS ut, count(*) AS n, sum(v) AS s, max(length(t)) AS ml FROM rd_src WHERE w > 0 GROUP BY 1, 2;
-- rd_batch: a batch of each twin as the owner, then both compared with the
-- GROUP BY
\set c rd_c
\set s rd_s
CREATE FUNCTION rd_check() RETURNS TABLE (c_vs_sql bigint, c_vs_groupby bigint, rows_c bigint) LANGUAGE sql AS
  $$ SELECT ds_diff('rd_c', 'TABLE rd_s'), ds_diff('rd_c', 'TABLE rd_groupby'), (SELECT sum(n) FROM rd_c)::bigint $$;
INSERT INTO rd_src SELECT g % 5, g % 3, 't' || (g % 4), g, NULL FROM generate_series(1, 200) g;
SET ROLE regress_rd_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT * FROM rd_check();

-- 1. a column read renamed, a column not read dropped, one added
ALTER TABLE rd_src RENAME COLUMN t TO t2;
ALTER TABLE rd_src DROP COLUMN pad;
ALTER TABLE rd_src ADD COLUMN later int DEFAULT 7;
INSERT INTO rd_src (k, w, t2, v) SELECT g % 5, g % 3, 'u' || (g % 4), g FROM generate_series(1, 100) g;
SET ROLE regress_rd_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
CREATE OR REPLACE VIEW rd_groupby AS
  SELECT k, upper(t2) AS ut, count(*) AS n, sum(v) AS s, max(length(t2)) AS ml FROM rd_src WHERE w > 0 GROUP BY 1, 2;
SELECT * FROM rd_check();

-- 2. a column the query reads cannot be retyped (pg_cq's view of the
-- query depends on it); one it does not read retyped: a rewrite of the
-- table with rows pending
INSERT INTO rd_src (k, w, t2, v) SELECT g % 5, g % 3, 'w' || (g % 4), g FROM generate_series(1, 100) g;
DROP VIEW rd_groupby;
\set VERBOSITY terse
ALTER TABLE rd_src ALTER COLUMN w TYPE bigint;
\set VERBOSITY default
ALTER TABLE rd_src ALTER COLUMN later TYPE bigint;
CREATE VIEW rd_groupby AS
  SELECT k, upper(t2) AS ut, count(*) AS n, sum(v) AS s, max(length(t2)) AS ml FROM rd_src WHERE w > 0 GROUP BY 1, 2;
SET ROLE regress_rd_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT * FROM rd_check();

-- 3. VACUUM FULL and CLUSTER with rows pending, updated and deleted
INSERT INTO rd_src (k, w, t2, v) SELECT g % 5, g % 3, 'x' || (g % 4), g FROM generate_series(1, 300) g;
DELETE FROM rd_src WHERE t2 = 'x1';
UPDATE rd_src SET v = v + 1000 WHERE t2 = 'x2';
VACUUM FULL rd_src;
SET ROLE regress_rd_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT * FROM rd_check();
CREATE INDEX rd_src_k ON rd_src (k);
INSERT INTO rd_src (k, w, t2, v) SELECT g % 5, g % 3, 'y' || (g % 4), g FROM generate_series(1, 300) g;
CLUSTER rd_src USING rd_src_k;
SET ROLE regress_rd_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT * FROM rd_check();

-- 4. the BRIN index on cq_xid rebuilt, then gone (the C reader steps aside:
-- the statement reads the rows), then back
INSERT INTO rd_src (k, w, t2, v) SELECT g % 5, g % 3, 'z' || (g % 4), g FROM generate_series(1, 100) g;
SELECT indexrelid::regclass AS brin FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE indrelid = 'rd_src'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'brin') \gset
REINDEX INDEX :brin;
SET ROLE regress_rd_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT * FROM rd_check();
DROP INDEX :brin;
INSERT INTO rd_src (k, w, t2, v) SELECT g % 5, g % 3, 'q' || (g % 4), g FROM generate_series(1, 100) g;
SET ROLE regress_rd_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT * FROM rd_check();
CREATE INDEX rd_brin_again ON rd_src USING brin (cq_xid);
INSERT INTO rd_src (k, w, t2, v) SELECT g % 5, g % 3, 'r' || (g % 4), g FROM generate_series(1, 100) g;
SET ROLE regress_rd_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT * FROM rd_check();

-- 5. long values stored out of line and compressed after the table's
-- TOAST settings changed
ALTER TABLE rd_src SET (toast_tuple_target = 128);
ALTER TABLE rd_src ALTER COLUMN t2 SET STORAGE EXTERNAL;
INSERT INTO rd_src (k, w, t2, v) SELECT g % 2, 1, repeat('long' || (g % 3), 500), g FROM generate_series(1, 20) g;
ALTER TABLE rd_src ALTER COLUMN t2 SET STORAGE MAIN;
INSERT INTO rd_src (k, w, t2, v) SELECT g % 2, 1, repeat('main' || (g % 3), 3000), g FROM generate_series(1, 20) g;
SET ROLE regress_rd_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT * FROM rd_check();

-- 6. the owner's SELECT on the WHERE's column revoked: both fail alike
-- (nothing folded), then granted again
INSERT INTO rd_src (k, w, t2, v) SELECT g % 5, g % 3, 's' || (g % 4), g FROM generate_series(1, 50) g;
CREATE TABLE rd_other (k int, w int, t2 text, v numeric);
ALTER TABLE rd_other OWNER TO regress_rd_owner;
SET ROLE regress_rd_owner;
REVOKE SELECT ON rd_src FROM regress_rd_owner;
GRANT SELECT (k, t2, v, cq_xid) ON rd_src TO regress_rd_owner;
\i sql/include/delta_scan_pair.sql
GRANT SELECT ON rd_src TO regress_rd_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT * FROM rd_check();

-- 7. row-level security enabled (and forced for the owner) after the
-- batches began: the C reader steps aside, the policy applies both ways
ALTER TABLE rd_src ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY rd_sel ON rd_src FOR SELECT USING (k < 3);
CREATE POLICY rd_ins ON rd_src FOR INSERT WITH CHECK (true);
INSERT INTO rd_src (k, w, t2, v) SELECT g % 5, g % 3, 'p' || (g % 4), g FROM generate_series(1, 50) g;
SET ROLE regress_rd_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT ds_diff('rd_c', 'TABLE rd_s') AS rls_c_vs_sql,
       (SELECT count(*) FROM rd_c WHERE ut LIKE 'P%' AND k >= 3) AS rls_hidden_groups,
       (SELECT count(*) FROM rd_c WHERE ut LIKE 'P%') AS rls_groups;
ALTER TABLE rd_src DISABLE ROW LEVEL SECURITY, NO FORCE ROW LEVEL SECURITY;
DROP POLICY rd_sel ON rd_src;
DROP POLICY rd_ins ON rd_src;

-- 8. an inheritance child added after the batches began: the statement
-- reads it, and so the reader steps aside; then the source attached as a
-- partition (the query reads it alone, as before)
CREATE TABLE rd_child () INHERITS (rd_src);
INSERT INTO rd_child (k, w, t2, v) SELECT g % 5, 1, 'child', g FROM generate_series(1, 10) g;
INSERT INTO rd_src (k, w, t2, v) SELECT g % 5, 1, 'parent', g FROM generate_series(1, 10) g;
SET ROLE regress_rd_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT ds_diff('rd_c', 'TABLE rd_s') AS inh_c_vs_sql,
       (SELECT sum(n) FROM rd_c WHERE ut IN ('CHILD', 'PARENT')) AS inh_rows;
DROP TABLE rd_child;
INSERT INTO rd_src (k, w, t2, v) SELECT g % 5, g % 3, 'end' || (g % 4), g FROM generate_series(1, 50) g;
SET ROLE regress_rd_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
-- (the GROUP BY without the groups the policy hid and the child's rows)
CREATE VIEW rd_c_end AS SELECT * FROM rd_c WHERE ut NOT LIKE 'P%' AND ut <> 'CHILD';
SELECT ds_diff('rd_c', 'TABLE rd_s') AS end_c_vs_sql,
       ds_diff('rd_c_end', 'SELECT * FROM rd_groupby WHERE ut NOT LIKE ''P%''') AS end_c_vs_groupby,
       (SELECT sum(n) FROM rd_c) AS rows_c;
DROP VIEW rd_c_end;

DROP TABLE rd_c, rd_s, rd_other;
DROP VIEW rd_groupby;
DROP TABLE rd_src;
DROP OWNED BY regress_rd_owner;
DROP ROLE regress_rd_owner;
DROP FUNCTION ds_diff(regclass, text), rd_check();
