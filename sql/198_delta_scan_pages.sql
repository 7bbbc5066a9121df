-- Session 41: the C reader of an incremental batch's new rows reads each
-- bitmap page's visible rows from the pinned page and deforms only the
-- columns the row needs (delta_scan.c: deform_row), and decides the
-- visibility of a run of one transaction's rows once a page
-- (delta_page.c).  Each query has a twin whose batches run the statement
-- (cq.delta_scan_in_c off); after every batch the twins must be equal and
-- equal to the plain GROUP BY.  The shapes: cq_xid after fixed-length
-- columns only (read alone at its offset) and after NULLs, a fixed-length
-- column passed by reference (name), mixed alignments; pages holding runs
-- of many transactions, rolled-back ones among them, rows updated,
-- deleted, locked, deleted by a rolled-back transaction, rows already
-- hinted; a serializable batch (heapam's own page reader).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET timezone = 'UTC';
SET cq.run_in_worker = off;
SET track_functions = 'all';

\i sql/include/ds_diff.sql
CREATE FUNCTION ds_calls() RETURNS bigint LANGUAGE sql AS
  $$ SELECT coalesce((SELECT sum(calls) FROM pg_stat_user_functions
                      WHERE schemaname = 'cq' AND funcname IN ('xid_new', 'xid48_new')), 0)::bigint $$;

-- fixed-length columns only (cq_xid at a fixed offset in a row without
-- NULLs), a name (fixed-length, by reference) between by-value ones
CREATE TABLE dp_fix (b bool, s int2, nm name, i int4, l int8, ts timestamptz)
  WITH (fillfactor = 60, autovacuum_enabled = off);
CREATE TABLE dp_fc WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT b, s, date_bin('1 hour', ts, '2000-01-01') AS hr, count(*) AS n, count(i) AS ni, sum(i) AS si,
         max(l) AS hl, min(ts) AS lo, max(length(nm)) AS mn
  FROM dp_fix GROUP BY 1, 2, 3;
CREATE TABLE dp_fs WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT b, s, date_bin('1 hour', ts, '2000-01-01') AS hr, count(*) AS n, count(i) AS ni, sum(i) AS si,
         max(l) AS hl, min(ts) AS lo, max(length(nm)) AS mn
  FROM dp_fix GROUP BY 1, 2, 3;
CREATE VIEW dp_fg AS
  SELECT b, s, date_bin('1 hour', ts, '2000-01-01') AS hr, count(*) AS n, count(i) AS ni, sum(i) AS si,
         max(l) AS hl, min(ts) AS lo, max(length(nm)) AS mn
  FROM dp_fix GROUP BY 1, 2, 3;

-- variable-length columns before the ones read, NULLs anywhere
CREATE TABLE dp_var (t text, v numeric, k int, d date, w text)
  WITH (fillfactor = 60, autovacuum_enabled = off);
CREATE TABLE dp_vc WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, t, count(*) AS n, count(w) AS nw, sum(v) AS sv, max(v) AS hv, min(d) AS ld FROM dp_var GROUP BY 1, 2;
CREATE TABLE dp_vs WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, t, count(*) AS n, count(w) AS nw, sum(v) AS sv, max(v) AS hv, min(d) AS ld FROM dp_var GROUP BY 1, 2;
CREATE VIEW dp_vg AS
  SELECT k, t, count(*) AS n, count(w) AS nw, sum(v) AS sv, max(v) AS hv, min(d) AS ld FROM dp_var GROUP BY 1, 2;

-- dp_pair: a batch of each C twin (cq.delta_scan_in_c on), then of each
-- statement twin; read_in_c: the C twins made fewer cq.xid_new calls
CREATE FUNCTION dp_check() RETURNS TABLE (fix_c_vs_sql bigint, fix_c_vs_groupby bigint, var_c_vs_sql bigint,
                                          var_c_vs_groupby bigint, fix_rows bigint, var_rows bigint)
  LANGUAGE sql AS
  $$ SELECT ds_diff('dp_fc', 'TABLE dp_fs'), ds_diff('dp_fc', 'TABLE dp_fg'),
            ds_diff('dp_vc', 'TABLE dp_vs'), ds_diff('dp_vc', 'TABLE dp_vg'),
            (SELECT sum(n) FROM dp_fc)::bigint, (SELECT sum(n) FROM dp_vc)::bigint $$;
-- batch 0 of each (the source empty)
CALL cq.run('dp_fc');
CALL cq.run('dp_fs');
CALL cq.run('dp_vc');
CALL cq.run('dp_vs');

-- 1. many transactions a page: single-row INSERTs, every fifth rolled
-- back, NULLs in every column now and then (cq_xid no longer at a fixed
-- offset in those rows)
DO $$
BEGIN
  FOR g IN 1..300 LOOP
    INSERT INTO dp_fix VALUES (g % 2 = 0, (g % 3)::int2, 'n' || g % 4, CASE WHEN g % 7 = 0 THEN NULL ELSE g END,
                               g * 1000, '2026-01-01 00:00+00'::timestamptz + g * interval '7 minutes');
    INSERT INTO dp_var VALUES (CASE WHEN g % 9 = 0 THEN NULL ELSE 't' || g % 3 END, CASE WHEN g % 5 = 0 THEN NULL ELSE g / 7.0 END,
                               g % 4, DATE '2026-01-01' + g, CASE WHEN g % 2 = 0 THEN repeat('w', g) END);
    IF g % 5 = 0 THEN
      BEGIN
        INSERT INTO dp_fix VALUES (true, 9::int2, 'gone', 1, 1, now());
        INSERT INTO dp_var VALUES ('gone', 1, 9, DATE '2026-01-01', 'gone');
        RAISE EXCEPTION 'roll back';
      EXCEPTION WHEN raise_exception THEN NULL;
      END;
    END IF;
    COMMIT;
  END LOOP;
END $$;
\i sql/include/dp_pair.sql
SELECT * FROM dp_check();

-- 2. runs of 1000-row INSERTs (the live-ingest shape), one rolled back
-- whole, on pages shared with rows updated (HOT and not), deleted, locked,
-- and deleted by a rolled-back transaction before the batch
INSERT INTO dp_fix SELECT g % 2 = 0, (g % 3)::int2, 'r' || g % 5, g, g, '2026-01-02 00:00+00'::timestamptz + g * interval '1 minute'
  FROM generate_series(1, 1000) g;
INSERT INTO dp_var SELECT 'r' || g % 3, g / 3.0, g % 4, DATE '2026-02-01' + g % 30, NULL FROM generate_series(1, 1000) g;
BEGIN;
INSERT INTO dp_fix SELECT true, 5::int2, 'x', g, g, now() FROM generate_series(1, 1000) g;
INSERT INTO dp_var SELECT 'x', g, 5, DATE '2026-01-01', 'x' FROM generate_series(1, 1000) g;
ROLLBACK;
INSERT INTO dp_fix SELECT g % 2 = 1, (g % 3)::int2, 'q' || g % 5, g, -g, '2026-01-03 00:00+00'::timestamptz + g * interval '1 minute'
  FROM generate_series(1, 1000) g;
INSERT INTO dp_var SELECT 'q' || g % 3, -g / 3.0, g % 4, DATE '2026-03-01' + g % 30, 'q' FROM generate_series(1, 1000) g;
UPDATE dp_fix SET i = i + 1 WHERE l BETWEEN 100 AND 150;
UPDATE dp_var SET v = v + 1, w = repeat('u', 300) WHERE t = 'r1' AND k = 2;
DELETE FROM dp_fix WHERE l BETWEEN -300 AND -200;
DELETE FROM dp_var WHERE t = 'q2' AND k = 1;
BEGIN;
DELETE FROM dp_fix WHERE l BETWEEN 500 AND 600;
DELETE FROM dp_var WHERE t = 'r0';
ROLLBACK;
BEGIN;
SELECT count(*) FROM (SELECT 1 FROM dp_fix WHERE l BETWEEN 700 AND 710 FOR UPDATE) x;
SELECT count(*) FROM (SELECT 1 FROM dp_var WHERE t = 'q1' FOR SHARE) x;
COMMIT;
\i sql/include/dp_pair.sql
SELECT * FROM dp_check();

-- 3. rows already read (their xmin hinted) beside rows not yet read, on
-- the same pages
INSERT INTO dp_fix SELECT false, 1::int2, 'h', g, g, '2026-01-04 00:00+00' FROM generate_series(1, 500) g;
INSERT INTO dp_var SELECT 'h', g, 1, DATE '2026-04-01', 'h' FROM generate_series(1, 500) g;
SELECT count(*) FROM dp_fix WHERE nm = 'h';
SELECT count(*) FROM dp_var WHERE t = 'h';
INSERT INTO dp_fix SELECT true, 1::int2, 'h2', g, g, '2026-01-04 00:00+00' FROM generate_series(1, 500) g;
INSERT INTO dp_var SELECT 'h2', g, 1, DATE '2026-04-01', NULL FROM generate_series(1, 500) g;
\i sql/include/dp_pair.sql
SELECT * FROM dp_check();

-- 4. batches in the transaction that wrote rows (their xmin the current
-- transaction or one of its subtransactions: each row tested by heapam's
-- function), then after its commit
INSERT INTO dp_fix SELECT g % 2 = 0, 2::int2, 's', g, g, '2026-01-05 00:00+00' FROM generate_series(1, 700) g;
INSERT INTO dp_var SELECT 's', g, 2, DATE '2026-05-01', 's' FROM generate_series(1, 700) g;
BEGIN;
INSERT INTO dp_fix SELECT g % 2 = 0, 3::int2, 'own', g, g, '2026-01-06 00:00+00' FROM generate_series(1, 400) g;
SAVEPOINT a;
INSERT INTO dp_var SELECT 'own', g, 3, DATE '2026-06-01', NULL FROM generate_series(1, 400) g;
RELEASE SAVEPOINT a;
SAVEPOINT b;
INSERT INTO dp_fix SELECT true, 4::int2, 'gone', g, g, now() FROM generate_series(1, 100) g;
ROLLBACK TO SAVEPOINT b;
-- in a transaction its function calls show in pg_stat_xact_user_functions
CREATE FUNCTION dp_xcalls() RETURNS bigint LANGUAGE sql AS
  $$ SELECT coalesce((SELECT calls FROM pg_stat_xact_user_functions
                      WHERE schemaname = 'cq' AND funcname = 'xid_new'), 0) $$;
SELECT dp_xcalls() AS x0 \gset
SET cq.delta_scan_in_c = on;
CALL cq.run('dp_fc');
CALL cq.run('dp_vc');
SELECT dp_xcalls() AS x1 \gset
SET cq.delta_scan_in_c = off;
CALL cq.run('dp_fs');
CALL cq.run('dp_vs');
RESET cq.delta_scan_in_c;
SELECT dp_xcalls() AS x2 \gset
SELECT :x1 - :x0 < :x2 - :x1 AS read_in_c;
SELECT * FROM dp_check();
COMMIT;
\i sql/include/dp_pair.sql
SELECT * FROM dp_check();

-- 5. text keys of 0 to 10 bytes differing in one byte anywhere (deltagg.c
-- places and compares keys of up to 8 bytes by two words that cover them)
INSERT INTO dp_var (t, v, k)
  SELECT left(repeat('a', n), p) || c || substr(repeat('a', n), p + 2), n, p % 2
  FROM generate_series(0, 10) n, generate_series(0, greatest(n - 1, 0)) p, unnest(ARRAY['a', 'b', 'B', 'é']) c,
       generate_series(1, 3) r;
\i sql/include/dp_pair.sql
SELECT * FROM dp_check();
SELECT (SELECT count(*) FROM dp_vc WHERE t ~ '^[abBé]*$') AS c_groups,
       (SELECT count(*) FROM dp_vg WHERE t ~ '^[abBé]*$') AS groupby_groups;
