-- Issue 12 goal 5: every 100th batch sweeps its query's old rows of
-- cq.offsets and cq.progress in full (the other batches delete the one row
-- that leaves the window).  The sweep is a direct range delete like the
-- trim: no statement and no foreign-key check (each check read cq.queries),
-- so the batch that sweeps costs what the others cost; and it still
-- removes every row older than the window, also rows left behind.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
-- the reads are counted in this session's statistics: the batches run here,
-- not in a pool worker (cq.run_in_worker, sql/91_run_handoff.sql)
SET cq.run_in_worker = off;

CREATE TABLE sw_src (k int, v int);
SELECT cq.create_query('sw_q', 'SELECT k, count(*) AS n, sum(v) AS s FROM sw_src GROUP BY k',
                       output_mode => 'update', max_rows_per_trigger => 1,
                       "trigger" => 'available_now');
CREATE FUNCTION sw_queries_scans() RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(pg_catalog.pg_stat_get_xact_numscans(c.oid))::bigint
    FROM pg_catalog.pg_class c
   WHERE c.oid = 'cq.queries'::regclass
      OR c.oid IN (SELECT indexrelid FROM pg_catalog.pg_index WHERE indrelid = 'cq.queries'::regclass)
$$;
-- sw_batches(n): n more batches of one row each, in one CALL; returns
-- the reads of cq.queries it made
CREATE PROCEDURE sw_batches(n int, INOUT scans bigint DEFAULT NULL) LANGUAGE plpgsql AS $$
DECLARE before bigint;
BEGIN
  FOR i IN 1 .. n LOOP
    INSERT INTO sw_src VALUES (i % 3, i);
    COMMIT;
  END LOOP;
  before := sw_queries_scans();
  CALL cq.run('sw_q');
  scans := sw_queries_scans() - before;
END $$;

-- batches 0 .. 94: about one read of cq.queries per batch (an ANALYZE of
-- cq.queries by autovacuum invalidates its relation cache entry and can
-- add a read, so the figure is a range, not an exact count)
CALL sw_batches(95) \gset first_
SELECT :first_scans BETWEEN 95 AND 100 AS one_read_per_batch;
SELECT max(batch_id) FROM cq.offsets WHERE name = 'sw_q';

-- rows left behind, far below the window (as a trim that found a row
-- changed by another transaction leaves it)
CREATE TEMP TABLE sw_old_o AS SELECT * FROM cq.offsets WHERE name = 'sw_q' AND batch_id = 3;
CREATE TEMP TABLE sw_old_p AS SELECT * FROM cq.progress WHERE name = 'sw_q' AND batch_id = 3;
UPDATE sw_old_o SET batch_id = -20;
INSERT INTO cq.offsets SELECT * FROM sw_old_o;
UPDATE sw_old_o SET batch_id = -10;
INSERT INTO cq.offsets SELECT * FROM sw_old_o;
UPDATE sw_old_p SET batch_id = -10;
INSERT INTO cq.progress SELECT * FROM sw_old_p;
SELECT count(*) FROM cq.offsets WHERE name = 'sw_q' AND batch_id < 0;
SELECT count(*) FROM cq.progress WHERE name = 'sw_q' AND batch_id < 0;

-- batches 95 .. 99 (no sweep), then 100 .. 104 (batch 100 sweeps): the
-- same reads of cq.queries for the same number of batches
CALL sw_batches(5) \gset nosweep_
CALL sw_batches(5) \gset sweep_
SELECT :nosweep_scans BETWEEN 5 AND 8 AS one_read_per_batch,
       -- the old sweep's foreign-key checks read cq.queries once per
       -- deleted row (100 here); one read of slack for an invalidation
       :sweep_scans <= :nosweep_scans + 1 AS sweep_adds_no_reads;

-- the window is the last 100 batches again, and the rows left behind are gone
SELECT count(*), min(batch_id), max(batch_id) FROM cq.offsets WHERE name = 'sw_q';
SELECT count(*), min(batch_id), max(batch_id) FROM cq.progress WHERE name = 'sw_q';
SELECT count(*) AS differences FROM
  ((TABLE sw_q EXCEPT ALL SELECT k, count(*), sum(v) FROM sw_src GROUP BY k)
   UNION ALL (SELECT k, count(*), sum(v) FROM sw_src GROUP BY k EXCEPT ALL TABLE sw_q)) d;

SELECT cq.drop_query('sw_q', drop_target => true);
DROP TABLE sw_src;
DROP PROCEDURE sw_batches(int, bigint);
DROP FUNCTION sw_queries_scans();
