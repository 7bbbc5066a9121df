-- Issue 12 goals 4-6: a batch reads its query's last offset (cq.offsets)
-- and the start of that batch (cq.progress) through their primary keys,
-- not a statement, and takes its end offset from pg_current_snapshot()
-- directly.  What those reads return must not change: batches in one
-- transaction see each other's offsets, the rate needs the previous
-- batch's start, watermarks of a timestamp column are read back exactly.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE TABLE cr_src (k int, v int, ts timestamp);
SELECT cq.create_query('cr_q', 'SELECT k, count(*) AS n, sum(v) AS s FROM cr_src GROUP BY k',
                       output_mode => 'update', max_rows_per_trigger => 3,
                       "trigger" => 'available_now');
-- 4 transactions of 3 rows: 4 batches of 3 rows
DO $$ BEGIN FOR i IN 1 .. 4 LOOP
  INSERT INTO cr_src SELECT j % 2, j, timestamp '2026-01-01' + j * interval '1 minute'
    FROM generate_series(3 * i - 2, 3 * i) j;
  COMMIT;
END LOOP; END $$;

-- all batches in one transaction: each must see the offset the one before wrote
BEGIN;
CALL cq.run('cr_q');
SELECT count(*) AS batches, min(batch_id), max(batch_id) FROM cq.offsets WHERE name = 'cr_q';
COMMIT;
SELECT sum(num_input_rows) AS rows_read, count(*) AS batches FROM cq.progress WHERE name = 'cr_q';
SELECT count(*) AS differences FROM
  ((TABLE cr_q EXCEPT ALL SELECT k, count(*), sum(v) FROM cr_src GROUP BY k)
   UNION ALL (SELECT k, count(*), sum(v) FROM cr_src GROUP BY k EXCEPT ALL TABLE cr_q)) d;

-- the input rate needs the previous batch's started_at: only batch 0 has none
INSERT INTO cr_src VALUES (1, 100, '2026-01-02');
CALL cq.run('cr_q');
SELECT batch_id, num_input_rows, input_rows_per_second IS NULL AS no_rate
FROM cq.progress WHERE name = 'cr_q' ORDER BY batch_id;

-- nothing new: no batch, the offset stays
CALL cq.run('cr_q');
SELECT count(*) AS batches FROM cq.offsets WHERE name = 'cr_q';

-- a timestamp (without time zone) event-time column: the watermark is read
-- back as the column's value (batch_watermark_ntz, watermark_ntz), and the
-- window it closes is emitted by the no-data batch
SET TimeZone = 'America/New_York';
CREATE TABLE cr_win WITH (cq.trigger = 'available_now', cq.output_mode = 'append',
                          cq.event_time = 'ts', cq.watermark = '0 seconds')
  AS SELECT date_bin('10 minutes', ts, timestamp '2000-01-01') AS w, count(*) AS n
     FROM cr_src GROUP BY 1;
SELECT * FROM cr_win ORDER BY w;
INSERT INTO cr_src VALUES (1, 1, '2026-01-02 00:25');
CALL cq.run('cr_win');
SELECT * FROM cr_win ORDER BY w;
SELECT batch_id, batch_watermark_ntz, watermark_ntz FROM cq.offsets WHERE name = 'cr_win' ORDER BY batch_id;
RESET TimeZone;

SELECT cq.drop_query('cr_win', drop_target => true);
SELECT cq.drop_query('cr_q', drop_target => true);
DROP TABLE cr_src;
