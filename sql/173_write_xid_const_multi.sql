-- Issue 12 goal 1 (session 38): every INSERT that leaves cq_xid to its default, not only a
-- single-row one, is started with the default's pg_current_xact_id() replaced by its value
-- (src/stamp.c, xid_const_begin, may_stamp_early), which INSERT ... SELECT and multi-row
-- VALUES otherwise evaluated for every row.  Every row carries its top-level transaction's
-- id: for a generic plan reused by later transactions (the plan cache's plan gets its
-- expression back), in subtransactions, below a Sort; an INSERT that makes no row now has an
-- id assigned (and finds none in the table); a read-only transaction is refused before any
-- id is assigned; the rows are found through the BRIN index.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE TABLE wxm_src (k int, note text);
CREATE TABLE wxm_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n FROM wxm_src;
CREATE TABLE wxm_seen (k int, x xid8);
-- the rows of wxm_src whose cq_xid is not that of the transaction wxm_seen noted for them
CREATE FUNCTION wxm_wrong() RETURNS bigint LANGUAGE sql
  AS $$ SELECT count(*) FROM wxm_src s LEFT JOIN wxm_seen w USING (k)
        WHERE w.x IS NULL OR s.cq_xid IS DISTINCT FROM w.x $$;

SET plan_cache_mode = force_generic_plan;
PREPARE wxm_ins(int, int) AS
  INSERT INTO wxm_src (k, note) SELECT g, 'm' || g FROM generate_series($1, $2) g;
PREPARE wxm_vals(int) AS INSERT INTO wxm_src (k, note) VALUES ($1, 'v'), ($1 + 1, 'w');
BEGIN;
EXECUTE wxm_ins(1, 100);
INSERT INTO wxm_seen SELECT g, pg_current_xact_id() FROM generate_series(1, 100) g;
COMMIT;
BEGIN;
EXECUTE wxm_ins(101, 200);
EXECUTE wxm_vals(201);
INSERT INTO wxm_seen SELECT g, pg_current_xact_id() FROM generate_series(101, 202) g;
COMMIT;
SELECT count(DISTINCT cq_xid) AS distinct_xids, count(*) AS rows FROM wxm_src;
SELECT wxm_wrong() AS wrong;
-- the plan cache's plan still computes the default
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE wxm_ins(1, 2);

-- subtransactions: the top-level id, also after a failed and a rolled back one
BEGIN;
SAVEPOINT s1;
EXECUTE wxm_ins(301, 310);
RELEASE s1;
SAVEPOINT s2;
INSERT INTO wxm_src (k, note) SELECT g, (1 / (g - 315))::text FROM generate_series(311, 320) g;
ROLLBACK TO s2;
SAVEPOINT s3;
EXECUTE wxm_ins(321, 330);
ROLLBACK TO s3;
EXECUTE wxm_ins(331, 340);
INSERT INTO wxm_seen SELECT g, pg_current_xact_id() FROM generate_series(301, 340) g
  WHERE g <= 310 OR g > 330;
SELECT count(*) FILTER (WHERE cq_xid = pg_current_xact_id()) AS top_xid,
       count(*) FILTER (WHERE xmin::text::bigint <> pg_current_xact_id()::text::bigint % 4294967296) AS sub_xmin
  FROM wxm_src WHERE k > 300;
COMMIT;
SELECT wxm_wrong() AS wrong;

-- below a Sort (the default is computed under it), and with RETURNING
BEGIN;
INSERT INTO wxm_src (k, note) SELECT g, 's' FROM generate_series(401, 420) g ORDER BY g DESC;
INSERT INTO wxm_src (k, note) SELECT g, 'r' FROM generate_series(421, 422) g
  RETURNING k, cq_xid = pg_current_xact_id() AS stamped;
INSERT INTO wxm_seen SELECT g, pg_current_xact_id() FROM generate_series(401, 422) g;
COMMIT;
SELECT wxm_wrong() AS wrong;

-- an INSERT that makes no row: an id assigned, no row
BEGIN;
EXECUTE wxm_ins(2, 1);
SELECT pg_current_xact_id_if_assigned() IS NOT NULL AS has_xid,
       (SELECT count(*) FROM wxm_src WHERE cq_xid = pg_current_xact_id()) AS its_rows;
COMMIT;

-- a read-only transaction is refused as before, without a transaction id assigned
BEGIN READ ONLY;
SAVEPOINT s;
EXECUTE wxm_ins(501, 510);
ROLLBACK TO s;
SELECT pg_current_xact_id_if_assigned() IS NULL AS no_xid;
ROLLBACK;

-- the rows are found through the BRIN index, once their ranges are summarized
SELECT brin_summarize_new_values(i.indexrelid) >= 0 AS summarized FROM pg_index i
  WHERE i.indrelid = 'wxm_src'::regclass;
BEGIN;
EXECUTE wxm_ins(601, 700);
INSERT INTO wxm_seen SELECT g, pg_current_xact_id() FROM generate_series(601, 700) g;
COMMIT;
SET enable_seqscan = off;
SELECT count(*) AS by_index, (SELECT count(*) FROM wxm_src) AS all_rows
  FROM wxm_src WHERE cq_xid >= '1';
RESET enable_seqscan;
SELECT wxm_wrong() AS wrong;

DEALLOCATE wxm_ins;
DEALLOCATE wxm_vals;
RESET plan_cache_mode;
DROP TABLE wxm_q;
DROP TABLE wxm_src, wxm_seen;
DROP FUNCTION wxm_wrong();
