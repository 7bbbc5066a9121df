-- Issue 9 items 8 and 13: CALL cq.run.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

-- item 8: 400 one-row transactions with max_rows_per_trigger = 1 run as 400
-- batches in one CALL, exactly, and the backend's memory does not grow with
-- them.  The query itself records the backend's memory at each of its rows.
CREATE TABLE xr_src (id int);
CREATE FUNCTION xr_mem(int) RETURNS bigint LANGUAGE sql VOLATILE
  AS $$ SELECT sum(total_bytes)::bigint FROM pg_catalog.pg_backend_memory_contexts $$;
SELECT cq.create_query('xr_rows', 'SELECT id, xr_mem(id) AS mem FROM xr_src',
                       output_mode => 'append', "trigger" => 'available_now',
                       max_rows_per_trigger => 1);
DO $$ BEGIN FOR i IN 1 .. 400 LOOP INSERT INTO xr_src VALUES (i); COMMIT; END LOOP; END $$;
CALL cq.run('xr_rows');
SELECT count(*) AS target_rows, count(DISTINCT id) AS distinct_ids FROM xr_rows;
SELECT max(batch_id) + 1 AS batches FROM cq.offsets WHERE name = 'xr_rows';
SELECT max(num_input_rows) AS max_rows_per_batch FROM cq.progress WHERE name = 'xr_rows';
-- memory at batch 400 against batch 100: flat (it grew by about 0.3 MB per
-- batch while every batch's SPI results stayed until the end of the CALL)
SELECT (SELECT mem FROM xr_rows WHERE id = 400) - (SELECT mem FROM xr_rows WHERE id = 100) < 256 * 1024
       AS memory_flat;

-- a backlog of 50 transactions of 100 rows: batches of 1000 rows (the cut
-- reads only the transactions it takes, no longer the whole backlog)
DO $$ BEGIN
  FOR t IN 0 .. 49 LOOP
    INSERT INTO xr_src SELECT 401 + t * 100 + i FROM generate_series(0, 99) i;
    COMMIT;
  END LOOP;
END $$;
ALTER TABLE xr_rows SET (cq.max_rows_per_trigger = 1000);
CALL cq.run('xr_rows');
SELECT count(*) AS target_rows, count(DISTINCT id) AS distinct_ids FROM xr_rows;
SELECT num_input_rows FROM cq.progress WHERE name = 'xr_rows' AND batch_id >= 400 ORDER BY batch_id;
SELECT cq.drop_query('xr_rows', drop_target => true);
DROP TABLE xr_src;
DROP FUNCTION xr_mem(int);

-- item 13: under a transaction snapshot a batch could miss a batch committed
-- while it waited for the query's lock and process its rows again: refused
CREATE TABLE xr_iso (k int);
SELECT cq.create_query('xr_iso_q', 'SELECT k, count(*) AS n FROM xr_iso GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now');
INSERT INTO xr_iso VALUES (1), (1), (2);
BEGIN ISOLATION LEVEL REPEATABLE READ;
CALL cq.run('xr_iso_q');
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
CALL cq.run('xr_iso_q');
ROLLBACK;
SET default_transaction_isolation = 'repeatable read';
CALL cq.run('xr_iso_q');
RESET default_transaction_isolation;
SELECT count(*) AS batches FROM cq.offsets WHERE name = 'xr_iso_q';
BEGIN ISOLATION LEVEL READ COMMITTED;
CALL cq.run('xr_iso_q');
COMMIT;
SELECT k, n FROM xr_iso_q ORDER BY k;
SELECT cq.drop_query('xr_iso_q', drop_target => true);
DROP TABLE xr_iso;
