-- Issue 12 goal 1: a single-row INSERT that leaves cq_xid to its default is started with
-- the default's pg_current_xact_id() replaced by its value, a Const, in the plan (the
-- plan cache's plan gets its expression back after ExecutorStart: src/stamp.c,
-- xid_const_begin), and the BRIN index on cq_xid stays locked until the transaction ends
-- (keep_index_locks).  Every row carries its top-level transaction's id, for a plan reused
-- by later transactions, in subtransactions, with RETURNING; EXPLAIN shows the function;
-- a read-only transaction is refused as before; the index's lock is held until commit or
-- rollback, and released then.  (Since session 38 every INSERT is: sql/173_*.)
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE TABLE wxc_src (k int, note text);
CREATE TABLE wxc_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n FROM wxc_src;
CREATE TABLE wxc_seen (k int, x xid8);
-- the rows of wxc_src whose cq_xid is not that of the transaction wxc_seen noted for them
CREATE FUNCTION wxc_wrong() RETURNS bigint LANGUAGE sql
  AS $$ SELECT count(*) FROM wxc_src s LEFT JOIN wxc_seen w USING (k)
        WHERE w.x IS NULL OR s.cq_xid IS DISTINCT FROM w.x $$;
-- locks this session holds on the BRIN index of wxc_src
CREATE FUNCTION wxc_index_locks() RETURNS text LANGUAGE sql
  AS $$ SELECT coalesce(string_agg(l.mode, ',' ORDER BY l.mode), 'none') FROM pg_locks l
        JOIN pg_index i ON i.indexrelid = l.relation
        WHERE i.indrelid = 'wxc_src'::regclass AND l.pid = pg_backend_pid() AND l.granted $$;

-- one generic plan, executed by several transactions: each row gets its own transaction's id
SET plan_cache_mode = force_generic_plan;
PREPARE wxc_ins(int, text) AS INSERT INTO wxc_src (k, note) VALUES ($1, $2);
BEGIN;
EXECUTE wxc_ins(1, 'a');
INSERT INTO wxc_seen VALUES (1, pg_current_xact_id());
COMMIT;
BEGIN;
EXECUTE wxc_ins(2, 'b');
INSERT INTO wxc_seen VALUES (2, pg_current_xact_id());
COMMIT;
EXECUTE wxc_ins(3, 'c');
INSERT INTO wxc_seen SELECT 3, cq_xid FROM wxc_src WHERE k = 3;
SELECT count(DISTINCT cq_xid) AS distinct_xids FROM wxc_src;
SELECT wxc_wrong() AS wrong;

-- the plan cache's plan still computes the default: EXPLAIN ANALYZE after the executions
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE wxc_ins(4, 'd');
INSERT INTO wxc_seen SELECT 4, cq_xid FROM wxc_src WHERE k = 4;

-- subtransactions: the top-level id, also after a failed and a rolled back one
BEGIN;
SAVEPOINT s1;
EXECUTE wxc_ins(5, 'e');
RELEASE s1;
SAVEPOINT s2;
INSERT INTO wxc_src (k, note) VALUES (6, (1 / (random() * 0)::int)::text);
ROLLBACK TO s2;
SAVEPOINT s3;
EXECUTE wxc_ins(7, 'g');
ROLLBACK TO s3;
EXECUTE wxc_ins(8, 'h');
INSERT INTO wxc_seen SELECT k, pg_current_xact_id() FROM (VALUES (5), (8)) v(k);
-- xmin is the subtransaction's, cq_xid the transaction's
SELECT k, cq_xid = pg_current_xact_id() AS top_xid, xmin::text::bigint <> (pg_current_xact_id()::text::bigint % 4294967296) AS sub_xmin
  FROM wxc_src WHERE k IN (5, 8) ORDER BY k;
COMMIT;
SELECT wxc_wrong() AS wrong;

-- RETURNING sees the stamped value, in a transaction whose first write it is
BEGIN;
INSERT INTO wxc_src (k, note) VALUES (9, 'i') RETURNING k, cq_xid = pg_current_xact_id() AS stamped;
COMMIT;
INSERT INTO wxc_seen SELECT 9, cq_xid FROM wxc_src WHERE k = 9;

-- the other plans stamp as before: several rows, no row, explicit values (sql/173_*: many rows)
BEGIN;
INSERT INTO wxc_src (k, note) VALUES (10, 'j'), (11, 'k');
INSERT INTO wxc_src (k, note) SELECT 12, 'l' WHERE false;
INSERT INTO wxc_src (k, note, cq_xid) VALUES (13, 'm', '3');
INSERT INTO wxc_seen SELECT k, pg_current_xact_id() FROM (VALUES (10), (11), (13)) v(k);
COMMIT;
SELECT wxc_wrong() AS wrong, count(*) AS rows FROM wxc_src;

-- a read-only transaction is refused as before, without a transaction id assigned
BEGIN READ ONLY;
SAVEPOINT s;
EXECUTE wxc_ins(14, 'n');
ROLLBACK TO s;
SELECT pg_current_xact_id_if_assigned() IS NULL AS no_xid;
ROLLBACK;

-- a statement refused while it starts (no privilege) leaves the plan as it was
CREATE ROLE wxc_reader;
GRANT SELECT ON wxc_src TO wxc_reader;
SET ROLE wxc_reader;
EXECUTE wxc_ins(14, 'n');
RESET ROLE;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE wxc_ins(14, 'n');
EXECUTE wxc_ins(14, 'n');
INSERT INTO wxc_seen SELECT 14, cq_xid FROM wxc_src WHERE k = 14;
SELECT wxc_wrong() AS wrong;
REVOKE ALL ON wxc_src FROM wxc_reader;
DROP ROLE wxc_reader;

-- the index's lock: held after the statement until the transaction ends
BEGIN;
EXECUTE wxc_ins(15, 'o');
SELECT wxc_index_locks() AS after_insert;
EXECUTE wxc_ins(16, 'p');
INSERT INTO wxc_src (k, note) SELECT g, 'q' FROM generate_series(17, 20) g;
SELECT wxc_index_locks() AS after_more;
COMMIT;
SELECT wxc_index_locks() AS after_commit;
BEGIN;
SAVEPOINT s;
EXECUTE wxc_ins(21, 'r');
SELECT wxc_index_locks() AS in_savepoint;
ROLLBACK TO s;
SELECT wxc_index_locks() AS after_rollback_to;
ROLLBACK;
-- (an UPDATE keeps it too, as before: its planning locks the table's indexes until then)
BEGIN;
UPDATE wxc_src SET note = 'u' WHERE k = 1;
SELECT wxc_index_locks() AS after_update;
ROLLBACK;
-- a table with another index: the executor releases both at the statement's end
CREATE INDEX wxc_src_k ON wxc_src (k);
BEGIN;
EXECUTE wxc_ins(22, 's');
SELECT wxc_index_locks() AS two_indexes;
ROLLBACK;
DROP INDEX wxc_src_k;
-- rows still found through the BRIN index after summarizing (the index was written)
SELECT brin_summarize_new_values(i.indexrelid) >= 0 AS summarized FROM pg_index i
  WHERE i.indrelid = 'wxc_src'::regclass;
SET enable_seqscan = off;
SELECT count(*) AS by_index FROM wxc_src WHERE cq_xid >= '1';
RESET enable_seqscan;

DEALLOCATE wxc_ins;
RESET plan_cache_mode;
DROP TABLE wxc_q;
DROP TABLE wxc_src, wxc_seen;
DROP FUNCTION wxc_wrong(), wxc_index_locks();
