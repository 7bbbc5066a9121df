-- Issue 12 goal 2 / issue 15: the per-row predicate of a batch's new rows is
-- cheaper and still exact.  Incremental batches test cq_xid with one call,
-- cq.xid_new(cq_xid, S_cur, S_prev) = pg_visible_in_snapshot(cq_xid, S_cur)
-- AND NOT pg_visible_in_snapshot(cq_xid, S_prev) (the range [$1, $2) stays
-- for the BRIN index); batch 0 over history tests cq_xid IS NULL OR
-- pg_visible_in_snapshot(cq_xid, S_cur) without the range (implied).
-- Batch 0 on the shared-memory store builds the target's index after loading
-- the target, as the table path does.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

-- cq.xid_new against its definition over a grid: snapshots with no running
-- transaction, a few, more than 30 (PostgreSQL's own test switches to a
-- binary search there), in epoch 0 and in later epochs (xid8 beyond 2^32),
-- and transaction ids at and around every bound and running id
CREATE TABLE fp_snaps (s pg_snapshot);
INSERT INTO fp_snaps VALUES ('10:10:'), ('10:20:'), ('10:20:10,12,15,19'), ('3:5:3,4'),
  ((SELECT format('100:200:%s', string_agg(x::text, ',' ORDER BY x))
      FROM generate_series(100, 199, 3) x)::pg_snapshot),
  ('4294967290:4294967300:4294967290,4294967296,4294967299'),
  ('12884901893:12884901900:12884901895,12884901897'),
  ((SELECT format('8589934595:8589934700:%s', string_agg(x::text, ',' ORDER BY x))
      FROM generate_series(8589934595, 8589934699, 2) x)::pg_snapshot);
CREATE TABLE fp_xids AS
  SELECT DISTINCT x::text::xid8 AS x
    FROM fp_snaps, LATERAL (
      SELECT pg_snapshot_xmin(s)::text::int8 + d FROM generate_series(-2, 2) d
      UNION ALL SELECT pg_snapshot_xmax(s)::text::int8 + d FROM generate_series(-2, 2) d
      UNION ALL SELECT x::text::int8 + d FROM pg_snapshot_xip(s) x, generate_series(-1, 1) d) v(x)
   WHERE x > 2;
SELECT count(*) AS cases,
       count(*) FILTER (WHERE cq.xid_new(x.x, c.s, p.s)) AS new_in_batch,
       count(*) FILTER (WHERE cq.xid_new(x.x, c.s, p.s) IS DISTINCT FROM
                              (pg_visible_in_snapshot(x.x, c.s) AND NOT pg_visible_in_snapshot(x.x, p.s)))
         AS wrong
  FROM fp_xids x, fp_snaps c, fp_snaps p;
-- strict: NULL in, NULL out
SELECT cq.xid_new(NULL, '10:20:', '1:1:') IS NULL AS null_xid,
       cq.xid_new('15', NULL, '1:1:') IS NULL AS null_cur;

-- end to end: history rows (cq_xid NULL), rows of an aborted transaction and
-- of a rolled-back subtransaction, and rows of the batch's own transaction
-- (in progress in its end offset: read by the first batch after it commits)
CREATE TABLE fp_src (k int, v int);
INSERT INTO fp_src SELECT g % 7, g FROM generate_series(1, 300) g;
CREATE VIEW fp_oracle AS SELECT k, count(*) AS n, sum(v) AS s FROM fp_src GROUP BY k;
SELECT cq.create_query('fp_mem', 'SELECT k, count(*) AS n, sum(v) AS s FROM fp_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory');
SELECT cq.create_query('fp_tab', 'SELECT k, count(*) AS n, sum(v) AS s FROM fp_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'unlogged');
SELECT name, state_path FROM cq.queries WHERE name LIKE 'fp\_%' ORDER BY 1;
-- the statements: batch 0 over history without the range, later batches with cq.xid_new
SELECT strpos(e, 'cq.xid_new(cq_xid, $3, $4)') > 0 AS incremental_one_call,
       strpos(e, 'NOT pg_visible_in_snapshot') = 0 AS no_second_call
  FROM (SELECT string_agg(line, E'\n') AS e FROM cq.explain('fp_mem') line) x;

CREATE FUNCTION fp_target(q text) RETURNS TABLE (k int, n bigint, s bigint) LANGUAGE sql AS $$
  SELECT k, n, s FROM fp_mem WHERE q = 'fp_mem' UNION ALL SELECT k, n, s FROM fp_tab WHERE q = 'fp_tab' $$;
CREATE FUNCTION fp_check(label text) RETURNS TABLE (label text, query text, differing bigint) LANGUAGE sql AS $$
  SELECT label, q, (SELECT count(*) FROM (
           (SELECT * FROM fp_oracle EXCEPT ALL SELECT k, n, s FROM fp_target(q))
           UNION ALL (SELECT k, n, s FROM fp_target(q) EXCEPT ALL SELECT * FROM fp_oracle)) d)
    FROM unnest('{fp_mem,fp_tab}'::text[]) q $$;

-- an aborted transaction's rows and a rolled-back subtransaction's
BEGIN;
INSERT INTO fp_src SELECT 100, g FROM generate_series(1, 5) g;
ROLLBACK;
BEGIN;
INSERT INTO fp_src VALUES (1, 1000);
SAVEPOINT a;
INSERT INTO fp_src SELECT 101, g FROM generate_series(1, 5) g;
ROLLBACK TO SAVEPOINT a;
COMMIT;

-- batch 0 in a transaction that added rows first: they are not in it
BEGIN;
INSERT INTO fp_src SELECT 8, g FROM generate_series(1, 10) g;
CALL cq.run('fp_mem');
CALL cq.run('fp_tab');
SELECT q, count(*) FILTER (WHERE k = 8) AS own_rows_read, sum(n) AS rows_read
  FROM (SELECT 'fp_mem' AS q, * FROM fp_mem UNION ALL SELECT 'fp_tab', * FROM fp_tab) t GROUP BY q ORDER BY q;
COMMIT;
SELECT (SELECT count(*) FROM fp_src) - 10 AS committed_before_the_batch;
-- the next batch reads them (running in S_prev, finished in S_cur)
CALL cq.run('fp_mem');
CALL cq.run('fp_tab');
SELECT * FROM fp_check('after batch 1');

-- an incremental batch in a transaction that added rows, then one after it
INSERT INTO fp_src SELECT g % 5, g FROM generate_series(1, 40) g;
BEGIN;
INSERT INTO fp_src SELECT 9, g FROM generate_series(1, 3) g;
CALL cq.run('fp_mem');
CALL cq.run('fp_tab');
SELECT q, count(*) FILTER (WHERE k = 9) AS own_rows_read
  FROM (SELECT 'fp_mem' AS q, * FROM fp_mem UNION ALL SELECT 'fp_tab', * FROM fp_tab) t GROUP BY q ORDER BY q;
COMMIT;
CALL cq.run('fp_mem');
CALL cq.run('fp_tab');
SELECT * FROM fp_check('after batch 3');

-- batch 0 on the store builds the target's index after the load, from the
-- key hashes it wrote (rowload.c): same index, a new file; later batches
-- find the groups through it
SELECT cq.drop_query('fp_mem', drop_target => true);
SELECT cq.create_query('fp_mem', 'SELECT k, count(*) AS n, sum(v) AS s FROM fp_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory');
CREATE TABLE fp_before AS
  SELECT indexrelid AS oid, pg_relation_filenode(indexrelid) AS filenode,
         regexp_replace(pg_get_indexdef(indexrelid), '_[0-9]+', '_N', 'g') AS def
    FROM pg_index WHERE indrelid = 'fp_mem'::regclass;
SELECT def FROM fp_before;
CALL cq.run('fp_mem');
SELECT regexp_replace(pg_get_indexdef(i.indexrelid), '_[0-9]+', '_N', 'g') AS def,
       i.indexrelid = b.oid AS same_index, pg_relation_filenode(i.indexrelid) <> b.filenode AS rebuilt
  FROM pg_index i, fp_before b WHERE i.indrelid = 'fp_mem'::regclass;
INSERT INTO fp_src SELECT g % 11, g FROM generate_series(1, 50) g;
CALL cq.run('fp_mem');
CALL cq.run('fp_tab');
SELECT * FROM fp_check('after the store''s new batch 0');

SELECT cq.drop_query('fp_mem', drop_target => true);
SELECT cq.drop_query('fp_tab', drop_target => true);
DROP FUNCTION fp_check(text);
DROP FUNCTION fp_target(text);
DROP VIEW fp_oracle;
DROP TABLE fp_src, fp_snaps, fp_xids, fp_before;
