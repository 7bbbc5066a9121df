-- docs/design-stamp.md step 2: sql/02_random_oracle's randomized check, on a source
-- tracked with a cq.xid48 cq_xid (cq.stamp_type = 'xid48'): after any sequence of batches,
-- update and complete targets equal the plain SELECT of the same query over the source,
-- with many batches of random size, rolled-back transactions, a row limit that splits the
-- work into several batches (offsets.c's limit_scan reads the 6-byte stamps), history
-- before the queries.  Every reader of the stamp (the stamp trigger, stamp.c's Const, the
-- BRIN insert gate, summarize.c, horizon.c, delta.c's quals, the count statements, the C
-- scan) meets a by-reference datum where xid8's was by value.
-- Then sql/180_delta_scan_c, sql/72_scan_horizon, sql/50_stream_joins and
-- sql/116_spark_ported_joins once more, unchanged but for the
-- setting, each in a schema of its own (x48_180, x48_72; cq on the search_path, where
-- users' own "cq_xid >= x" then finds cq.xid48's indexable operators): their output is the
-- originals' but for schema names, the default's name and OPERATOR(cq.x) in statements.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET cq.stamp_type = 'xid48';
SELECT setseed(0.42);

CREATE TABLE r48 (k1 int, k2 text, v numeric(12,3), i int, f float8, nx numeric, fx float8, bx int8);

-- the query under test, and its oracle: the same SELECT over the source
CREATE VIEW r48_oracle AS
  SELECT k1, k2, count(*) AS n, count(v) AS nv, sum(v) AS sv, avg(v) AS av, min(v) AS mn, max(k2) AS mx,
         sum(i) AS si, avg(i) AS ai, var_samp(v) AS vs, stddev_pop(i) AS sp,
         count(*) FILTER (WHERE v > 0) AS npos, sum(v) FILTER (WHERE i % 2 = 0) AS sveven,
         bool_or(v > 5) AS anybig, bit_or(i) AS bo,
         sum(nx) AS snx, avg(nx) AS anx, stddev_samp(nx) AS sdnx, var_pop(nx) AS vnx, max(nx) - min(nx) AS rnx,
         sum(fx) AS sfx, avg(fx) AS afx, max(fx) AS mfx, sum(bx) AS sbx, avg(bx) AS abx, stddev_pop(bx) AS sdbx
    FROM r48 GROUP BY k1, k2;

SELECT cq.create_query('r48_update', (SELECT pg_get_viewdef('r48_oracle')), output_mode => 'update',
                       "trigger" => 'available_now');
SELECT format_type(atttypid, NULL) AS stamp_type FROM pg_attribute
 WHERE attrelid = 'r48'::regclass AND attname = 'cq_xid';
SELECT opcname AS brin_opclass FROM pg_index i JOIN pg_opclass o ON o.oid = i.indclass[0]
 WHERE i.indrelid = 'r48'::regclass;
SELECT cq.create_query('r48_complete', (SELECT pg_get_viewdef('r48_oracle')), output_mode => 'complete',
                       complete_refresh => 'delete', "trigger" => 'available_now');
SELECT cq.create_query('r48_limited', (SELECT pg_get_viewdef('r48_oracle')), output_mode => 'update',
                       max_rows_per_trigger => 50, "trigger" => 'available_now');
SELECT cq.create_query('r48_global',
  'SELECT count(*) AS n, sum(v) AS sv, avg(v) AS av, avg(f) AS af, var_pop(f) AS vf, max(f) AS mf FROM r48',
  output_mode => 'update', "trigger" => 'available_now');
-- issue 10: generic combinable aggregates (regr_*, covar_*), DISTINCT
-- aggregates and HAVING together, in update and complete mode, and an
-- aggregation over rows a set-returning function expands
CREATE VIEW r48_ext_oracle AS
  SELECT k1, count(*) AS n, count(DISTINCT k2) AS dk2, sum(DISTINCT i) AS sdi, avg(DISTINCT v) AS adv,
         regr_count(f, i) AS rc, round(covar_pop(fx, i)::numeric, 3) AS cv,
         round(regr_slope(f, i)::numeric, 6) AS rs
    FROM r48 WHERE k1 NOT IN (1, 2, 3) OR k1 IS NULL
   GROUP BY k1 HAVING count(*) % 3 <> 1 AND (count(DISTINCT k2) > 1 OR max(i) < 100);
CREATE VIEW r48_srf_oracle AS
  SELECT u, count(*) AS n, count(DISTINCT k1) AS dk1, regr_count(v, i) AS rc
    FROM r48, unnest(ARRAY[k2, upper(k2), 'z']) AS u GROUP BY u HAVING count(*) > 2;
SELECT cq.create_query('r48_ext_u', (SELECT pg_get_viewdef('r48_ext_oracle')), output_mode => 'update',
                       "trigger" => 'available_now');
SELECT cq.create_query('r48_ext_c', (SELECT pg_get_viewdef('r48_ext_oracle')), output_mode => 'complete',
                       "trigger" => 'available_now');
SELECT cq.create_query('r48_srf_u', (SELECT pg_get_viewdef('r48_srf_oracle')), output_mode => 'update',
                       max_rows_per_trigger => 70, "trigger" => 'available_now');
SELECT cq.create_query('r48_rows', 'SELECT k1, k2, v FROM r48 WHERE v IS NOT NULL', output_mode => 'append', "trigger" => 'available_now');

-- nx, fx and bx are derived from the random columns (the random draws stay
-- those of the other columns): special values only in the groups of k1 = 1
-- (NaN), 2 (+Infinity) and 3 (both infinities), so that the other groups
-- keep finite results; numerics of 0 to 4 decimals; floats are multiples of
-- 1/4, whose sums are exact in any order; int8 values near its maximum
CREATE FUNCTION r48_rows(n int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO r48 (k1, k2, v, i, f, nx, fx, bx)
  SELECT k1, k2, v, i, f,
         CASE WHEN v IS NULL THEN NULL
              WHEN k1 IN (1, 2, 3) AND i % 7 = 0 THEN
                   (CASE k1 WHEN 1 THEN 'NaN' WHEN 2 THEN 'Infinity'
                            ELSE (ARRAY['Infinity', '-Infinity'])[1 + abs(i) % 2] END)::numeric
              ELSE round(v * 1.3, abs(coalesce(i, 0)) % 5) END,
         CASE WHEN f IS NULL THEN NULL
              WHEN k1 IN (1, 2, 3) AND i % 7 = 1 THEN
                   (CASE k1 WHEN 1 THEN 'NaN' WHEN 2 THEN 'Infinity'
                            ELSE (ARRAY['Infinity', '-Infinity'])[1 + abs(i) % 2] END)::float8
              ELSE floor(f * 40) / 4.0 - 500 END,
         CASE WHEN i IS NULL THEN NULL
              WHEN i % 5 = 0 THEN 9223372036854775807 - abs(i)
              ELSE i * 1000 END
    FROM (SELECT CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 8)::int END AS k1,
                 CASE WHEN random() < 0.1 THEN NULL ELSE chr(97 + (random() * 4)::int) END AS k2,
                 CASE WHEN random() < 0.15 THEN NULL ELSE round((random() * 20 - 5)::numeric, 3) END AS v,
                 CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 1000)::int - 200 END AS i,
                 CASE WHEN random() < 0.1 THEN NULL ELSE random() * 100 END AS f
            FROM generate_series(1, n)) r
$$;

-- mismatches between a target and the oracle (exact comparison, numeric
-- included), by value and as text (the display scale of numerics)
CREATE FUNCTION r48_diff(target regclass, oracle regclass DEFAULT 'r48_oracle') RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  d bigint;
  t bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL TABLE %s) UNION ALL
                                        (TABLE %s EXCEPT ALL TABLE %s)) x', oracle, target, target, oracle)
    INTO d;
  EXECUTE format('SELECT count(*) FROM ((SELECT format(''%%s'', o) FROM %s o EXCEPT ALL SELECT format(''%%s'', t) FROM %s t) UNION ALL
                                        (SELECT format(''%%s'', t) FROM %s t EXCEPT ALL SELECT format(''%%s'', o) FROM %s o)) x',
                 oracle, target, target, oracle)
    INTO t;
  RETURN d + t;
END $$;

-- history before the queries were defined is processed by batch 0
DO $$
DECLARE
  b int;
BEGIN
  FOR b IN 1..40 LOOP
    PERFORM r48_rows((random() * 60)::int);
    COMMIT;
    PERFORM r48_rows((random() * 20)::int);
    COMMIT;
    PERFORM r48_rows((random() * 40)::int);
    IF b % 7 = 0 THEN
      -- a transaction that rolls back is never counted
      BEGIN
        PERFORM r48_rows(50);
        RAISE EXCEPTION 'roll back';
      EXCEPTION WHEN raise_exception THEN NULL;
      END;
    END IF;
    COMMIT;
    IF b % 3 = 0 THEN
      CALL cq.run('r48_update');
      CALL cq.run('r48_complete');
      CALL cq.run('r48_limited');
      CALL cq.run('r48_global');
      CALL cq.run('r48_rows');
      CALL cq.run('r48_ext_u');
      CALL cq.run('r48_ext_c');
      CALL cq.run('r48_srf_u');
      IF r48_diff('r48_update') <> 0 OR r48_diff('r48_complete') <> 0 OR r48_diff('r48_limited') <> 0 THEN
        RAISE EXCEPTION 'target differs from the oracle after batch round %', b;
      END IF;
      IF r48_diff('r48_ext_u', 'r48_ext_oracle') <> 0 OR r48_diff('r48_ext_c', 'r48_ext_oracle') <> 0
         OR r48_diff('r48_srf_u', 'r48_srf_oracle') <> 0 THEN
        RAISE EXCEPTION 'issue 10 target differs from its oracle after batch round %', b;
      END IF;
    END IF;
  END LOOP;
END $$;

CALL cq.run('r48_update');
CALL cq.run('r48_complete');
CALL cq.run('r48_limited');
CALL cq.run('r48_global');
CALL cq.run('r48_rows');
CALL cq.run('r48_ext_u');
CALL cq.run('r48_ext_c');
CALL cq.run('r48_srf_u');

-- the final comparison: 0 mismatches each
SELECT (SELECT count(*) > 1000 FROM r48) AS enough_rows,
       r48_diff('r48_update') AS update_diff,
       r48_diff('r48_complete') AS complete_diff,
       r48_diff('r48_limited') AS limited_diff;
-- generic and DISTINCT aggregates with HAVING, and over unnested rows
SELECT r48_diff('r48_ext_u', 'r48_ext_oracle') AS ext_update_diff,
       r48_diff('r48_ext_c', 'r48_ext_oracle') AS ext_complete_diff,
       r48_diff('r48_srf_u', 'r48_srf_oracle') AS srf_update_diff,
       (SELECT count(*) FROM r48_ext_oracle) > 1 AS ext_has_groups,
       (SELECT count(*) FROM r48_ext_oracle) < (SELECT count(DISTINCT k1) + 1 FROM r48 WHERE k1 NOT IN (1, 2, 3) OR k1 IS NULL) AS having_filters,
       (SELECT count(*) FROM r48_srf_oracle) > 5 AS srf_has_groups;
-- NULL keys form their own groups
SELECT count(*) > 0 AS has_null_keys FROM r48_update WHERE k1 IS NULL OR k2 IS NULL;
-- the row limit split the work into batches of at most 50 rows; a
-- transaction is never split, so a larger one forms a batch alone
SELECT count(*) > 20 AS many_batches,
       sum(num_input_rows) = (SELECT count(*) FROM r48) AS every_row_once,
       bool_and(num_input_rows <= 50 OR
                (SELECT count(DISTINCT cq_xid) FROM r48
                  WHERE pg_visible_in_snapshot(cq_xid, end_offset)
                    AND NOT pg_visible_in_snapshot(cq_xid, start_offset)) = 1) AS limit_respected
  FROM cq.progress WHERE name = 'r48_limited';
-- the global aggregate: exact for numeric, float within rounding
SELECT g.n = o.n AND g.sv = o.sv AND g.av = o.av AND g.mf = o.mf
       AND abs(g.af - o.af) < 1e-9 AND abs(g.vf - o.vf) / o.vf < 1e-9 AS global_ok
  FROM r48_global g,
       (SELECT count(*) AS n, sum(v) AS sv, avg(v) AS av, avg(f) AS af, var_pop(f) AS vf, max(f) AS mf FROM r48) o;
-- append: every qualifying row exactly once
SELECT (SELECT count(*) FROM r48_rows) = (SELECT count(*) FROM r48 WHERE v IS NOT NULL) AS append_ok,
       (SELECT count(*) FROM (TABLE r48_rows EXCEPT ALL SELECT k1, k2, v FROM r48 WHERE v IS NOT NULL) x) AS extra_rows;

-- the stamps are cq.xid48 values of their transactions, the same as xid8's
SELECT count(*) FILTER (WHERE cq_xid IS NOT NULL) > 1000 AS stamped,
       count(*) FILTER (WHERE cq_xid::xid8::text <> cq_xid::text) AS text_differs
  FROM r48;
RESET cq.stamp_type;

-- ---- sql/180_delta_scan_c.sql once more, on cq.xid48 sources: the new rows read in C (delta_scan.c: the scan keys of the column's type against xid8, the row test on 6 bytes) and by the statement, the same ----
\set port x48_180
\i sql/include/xid48_port_begin.sql
\i sql/180_delta_scan_c.sql
\i sql/include/xid48_port_end.sql

-- ---- sql/72_scan_horizon.sql once more, on cq.xid48 sources: horizon.c's scan keys (cq.xid48's cross-type functions) and summaries ----
\set port x48_72
\i sql/include/xid48_port_begin.sql
-- Issue 12 goals 5-6: the scan of a batch's new rows leaves out the pages
-- of the source that cannot hold them: a heap page whose LSN is not after
-- a WAL position L holds no row version created after L, and rows whose
-- cq_xid is at least X were created after L when L was read before X was
-- the next transaction id (tracking.c).  The source's last page range stays
-- unsummarized while it fills, so without this every batch reads all of
-- it.  Rows that land on old pages (free space left by DELETE and VACUUM)
-- make those pages' LSN new: they are still read.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

-- (no autovacuum: its ANALYZE's snapshot would keep VACUUM below from
-- freeing the deleted rows' space)
CREATE TABLE hz_src (id int, g int, v int) WITH (autovacuum_enabled = off);
SELECT cq.create_query('hz_q', 'SELECT g, count(*) AS n, sum(v) AS s FROM hz_src GROUP BY g',
                       output_mode => 'update', "trigger" => 'available_now');
-- every row ever inserted (the target keeps the rows deleted later)
CREATE TABLE hz_all (id int, g int, v int) WITH (autovacuum_enabled = off);
CREATE FUNCTION hz_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO x48_72.hz_all VALUES (NEW.id, NEW.g, NEW.v); RETURN NULL; END $$;
CREATE TRIGGER hz_log AFTER INSERT ON hz_src FOR EACH ROW EXECUTE FUNCTION hz_log();
CREATE FUNCTION hz_differences() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM
    ((TABLE hz_q EXCEPT ALL SELECT g, count(*), sum(v) FROM hz_all GROUP BY g)
     UNION ALL (SELECT g, count(*), sum(v) FROM hz_all GROUP BY g EXCEPT ALL TABLE hz_q)) d
$$;

-- 3000 rows: about 16 pages, all in the first (unsummarized) range of 32
INSERT INTO hz_src SELECT i, i % 7, i FROM generate_series(1, 3000) i;
CALL cq.run('hz_q');
SELECT pg_relation_size('hz_src') / current_setting('block_size')::int < 32 AS one_range;
-- a few batches of one row each (each batch samples (L, X))
INSERT INTO hz_src VALUES (3001, 1, 1);
CALL cq.run('hz_q');
INSERT INTO hz_src VALUES (3002, 2, 2);
CALL cq.run('hz_q');
INSERT INTO hz_src VALUES (3003, 3, 3);
CALL cq.run('hz_q');
INSERT INTO hz_src VALUES (3004, 4, 4);
-- one new row: the batch reads the rows of the page(s) written since, not
-- the 3000 older rows of the range (it read them all before)
BEGIN;
SELECT pg_stat_get_xact_tuples_fetched('hz_src'::regclass) AS fetched \gset
CALL cq.run('hz_q');
SELECT pg_stat_get_xact_tuples_fetched('hz_src'::regclass) - :fetched < 1000 AS few_rows_read;
COMMIT;
SELECT hz_differences() AS differences;

-- free space in the first pages: new rows go there
-- (VACUUM frees the deleted rows' space only once no other backend of
-- the database runs a transaction older than the DELETE or holds a
-- snapshot that predates it: a batch of another test's query, or
-- autovacuum's ANALYZE, may for a moment; waited for, with a deadline.
-- Autovacuum's plain VACUUM does not hold VACUUM back.  The activity view
-- is read afresh at each try: within a transaction it is read once.)
CREATE FUNCTION hz_wait_horizon(del xid8) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  deadline timestamptz := clock_timestamp() + interval '60 seconds';
BEGIN
  LOOP
    PERFORM pg_stat_clear_snapshot();
    IF NOT EXISTS (SELECT 1 FROM pg_stat_activity
                    WHERE pid <> pg_backend_pid()
                      AND (datid IS NULL OR datid = (SELECT oid FROM pg_database WHERE datname = current_database()))
                      AND (backend_xmin::text::bigint <= (del::text::bigint % 4294967296)
                           OR backend_xid::text::bigint <= (del::text::bigint % 4294967296))
                      AND NOT (backend_type = 'autovacuum worker' AND query LIKE 'autovacuum: VACUUM%'
                               AND query NOT LIKE '%ANALYZE%')) THEN
      RETURN true;
    END IF;
    IF clock_timestamp() > deadline THEN
      RETURN false;
    END IF;
    PERFORM pg_sleep(0.02);
  END LOOP;
END $$;
BEGIN;
DELETE FROM hz_src WHERE id <= 1000;
SELECT pg_current_xact_id() AS hz_del \gset
COMMIT;
CALL cq.run('hz_q');
SELECT hz_wait_horizon(:'hz_del') AS horizon_passed;
VACUUM hz_src;
INSERT INTO hz_src SELECT i, i % 5, i FROM generate_series(5001, 5300) i;
SELECT min((ctid::text::point)[0]) < 5 AS on_old_pages FROM hz_src WHERE id > 5000;
INSERT INTO hz_src VALUES (5301, 1, 1);
CALL cq.run('hz_q');
SELECT hz_differences() AS differences;
-- and again, some in the old pages and some at the end, in several transactions
BEGIN;
DELETE FROM hz_src WHERE id BETWEEN 1001 AND 1500;
SELECT pg_current_xact_id() AS hz_del \gset
COMMIT;
SELECT hz_wait_horizon(:'hz_del') IS NOT NULL AS waited;
VACUUM hz_src;
INSERT INTO hz_src SELECT i, i % 3, i FROM generate_series(6001, 6100) i;
CALL cq.run('hz_q');
INSERT INTO hz_src SELECT i, i % 3, i FROM generate_series(6101, 6400) i;
INSERT INTO hz_src SELECT i, i % 3, i FROM generate_series(6401, 9000) i;
CALL cq.run('hz_q');
SELECT hz_differences() AS differences;

-- the catalog version is read once, not by every batch (a relation cache
-- invalidation, such as an ANALYZE's, makes the next batch read it again):
-- ten batches in ten transactions, each read it (and the cluster id's
-- extension OID) three times before
CREATE FUNCTION hz_ext_scans() RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(pg_catalog.pg_stat_get_xact_numscans(c.oid))::bigint
    FROM pg_catalog.pg_class c
   WHERE c.oid = 'pg_catalog.pg_extension'::regclass
      OR c.oid IN (SELECT indexrelid FROM pg_catalog.pg_index WHERE indrelid = 'pg_catalog.pg_extension'::regclass)
$$;
CREATE TABLE hz_scans (n bigint);
DO $$
DECLARE
  b bigint;
BEGIN
  INSERT INTO hz_src VALUES (9001, 1, 1);
  COMMIT;
  CALL cq.run('hz_q');
  b := hz_ext_scans();
  FOR i IN 1 .. 10 LOOP
    INSERT INTO hz_src VALUES (9001 + i, i % 2, i);
    COMMIT;
    CALL cq.run('hz_q');
  END LOOP;
  INSERT INTO hz_scans VALUES (hz_ext_scans() - b);
END $$;
SELECT n < 10 AS version_read_once FROM hz_scans;
SELECT hz_differences() AS differences;

SELECT cq.drop_query('hz_q', drop_target => true);
DROP TABLE hz_src, hz_all, hz_scans;
DROP FUNCTION hz_differences();
DROP FUNCTION hz_ext_scans();
DROP FUNCTION hz_log();
\i sql/include/xid48_port_end.sql

-- ---- sql/50_stream_joins.sql once more, on cq.xid48 sources: joins of two streams (join_sql.c's range with OPERATOR(cq.x), the buffers' xid8 column filled from cq.xid48, the row limit's union of both sides' stamps), by CALL cq.run and by background workers ----
\set port x48_50
\i sql/include/xid48_port_begin.sql
\i sql/50_stream_joins.sql
\i sql/include/xid48_port_end.sql

-- ---- sql/116_spark_ported_joins.sql once more, on cq.xid48 sources: Spark's stream-stream join cases ----
\set port x48_116
\i sql/include/xid48_port_begin.sql
\i sql/116_spark_ported_joins.sql
\i sql/include/xid48_port_end.sql
