-- issue 9 item 26: a timestamp (without time zone) event-time column.
-- cq.progress, cq.offsets and cq.status show its event times and
-- watermarks as the column's values read in the creator's TimeZone (the
-- query's cq.queries.timezone), not shifted by the creator's UTC offset;
-- cq.offsets.*_ntz keep the exact values batches compare.  Batches compare
-- the values at UTC, as before: late rows, windows and watermarks are those
-- of the same query over a timestamptz column holding the same values at
-- UTC (the oracle), across daylight-saving changes too.
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SET datestyle = 'ISO, YMD';

----------------------------------------------------------------------------
-- A creator in Asia/Kolkata (+05:30): the naive query and its oracle
----------------------------------------------------------------------------
SET timezone = 'Asia/Kolkata';
CREATE TABLE ne_src (ts timestamp, v int);
CREATE TABLE ne_win
  WITH (cq.trigger = 'available_now', cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT w.window_start, count(*) AS n, sum(v) AS s
       FROM ne_src, LATERAL cq.window(ts, '30 minutes') AS w GROUP BY 1 WITH NO DATA;
CREATE TABLE ne_hour
  WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT date_trunc('hour', ts) AS h, count(*) AS n FROM ne_src WHERE v > 0 GROUP BY 1 WITH NO DATA;
SET timezone = 'UTC';
CREATE TABLE ne_osrc (ts timestamptz, v int);
CREATE TABLE ne_owin
  WITH (cq.trigger = 'available_now', cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT w.window_start, count(*) AS n, sum(v) AS s
       FROM ne_osrc, LATERAL cq.window(ts, '30 minutes') AS w GROUP BY 1 WITH NO DATA;
CREATE TABLE ne_ohour
  WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT date_trunc('hour', ts) AS h, count(*) AS n FROM ne_osrc WHERE v > 0 GROUP BY 1 WITH NO DATA;
SELECT name, timezone FROM cq.queries WHERE name LIKE 'ne\_%' ORDER BY name;

-- the same rows into both sources (the oracle's at UTC), batch by batch,
-- late rows included; readers and writers in a third zone
SET timezone = 'America/New_York';
CREATE PROCEDURE ne_step(rows text) LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('INSERT INTO ne_src SELECT ts::timestamp, v FROM (VALUES %s) r(ts, v)', rows);
  EXECUTE format('INSERT INTO ne_osrc SELECT (ts || ''+00'')::timestamptz, v FROM (VALUES %s) r(ts, v)', rows);
  COMMIT;
  CALL cq.run('ne_win');
  CALL cq.run('ne_hour');
  CALL cq.run('ne_owin');
  CALL cq.run('ne_ohour');
END $$;
SET client_min_messages = warning;
CALL ne_step($$('2026-06-01 12:00', 1), ('2026-06-01 12:10', 2), ('2026-06-01 12:40', 0)$$);
CALL ne_step($$('2026-06-01 11:50', 4), ('2026-06-01 12:20', 8), ('2026-06-01 13:05', 16)$$);
CALL ne_step($$('2026-06-01 12:25', 32), ('2026-06-01 12:55', 64), ('2026-06-01 13:59', 128)$$);
CALL ne_step($$('2026-06-01 13:10', 256), ('2026-06-01 13:40', 512)$$);
RESET client_min_messages;

-- a row at 12:00 (naive) shows as 12:00 in the creator's zone: batch 0 of
-- ne_win read 12:00..12:40, its watermark is 12:30
SET timezone = 'Asia/Kolkata';
SELECT batch_id, event_time_min, event_time_max, event_time_avg, watermark
  FROM cq.progress WHERE name = 'ne_win' AND batch_id = 0;
SELECT batch_id, batch_watermark, watermark, batch_watermark_ntz, watermark_ntz
  FROM cq.offsets WHERE name = 'ne_win' AND batch_id <= 1 ORDER BY batch_id;
-- the same instants, for a reader in New York (12:00 in Kolkata is 02:30 there)
SET timezone = 'America/New_York';
SELECT batch_id, event_time_min, event_time_max, watermark
  FROM cq.progress WHERE name = 'ne_win' AND batch_id = 0;

-- every batch: the metrics are the oracle's, the statistics and watermarks
-- read in the creator's zone are the oracle's at UTC, the exact ones too
SELECT count(*) AS batches,
       count(*) FILTER (WHERE p.num_input_rows = o.num_input_rows
                          AND p.num_rows_dropped_by_watermark = o.num_rows_dropped_by_watermark
                          AND p.num_output_rows = o.num_output_rows
                          AND p.num_state_rows_total = o.num_state_rows_total
                          AND p.num_state_rows_updated = o.num_state_rows_updated
                          AND p.num_state_rows_removed = o.num_state_rows_removed) AS same_metrics,
       count(*) FILTER (WHERE (p.event_time_min AT TIME ZONE 'Asia/Kolkata') IS NOT DISTINCT FROM (o.event_time_min AT TIME ZONE 'UTC')
                          AND (p.event_time_max AT TIME ZONE 'Asia/Kolkata') IS NOT DISTINCT FROM (o.event_time_max AT TIME ZONE 'UTC')
                          AND (p.event_time_avg AT TIME ZONE 'Asia/Kolkata') IS NOT DISTINCT FROM (o.event_time_avg AT TIME ZONE 'UTC')
                          AND (p.watermark AT TIME ZONE 'Asia/Kolkata') IS NOT DISTINCT FROM (o.watermark AT TIME ZONE 'UTC')) AS same_times,
       sum(p.num_rows_dropped_by_watermark) AS dropped
  FROM cq.progress p JOIN cq.progress o ON o.batch_id = p.batch_id
 WHERE (p.name, o.name) IN (('ne_win', 'ne_owin'), ('ne_hour', 'ne_ohour'));
SELECT count(*) AS offsets,
       count(*) FILTER (WHERE (p.batch_watermark AT TIME ZONE 'Asia/Kolkata') IS NOT DISTINCT FROM (o.batch_watermark AT TIME ZONE 'UTC')
                          AND (p.watermark AT TIME ZONE 'Asia/Kolkata') IS NOT DISTINCT FROM (o.watermark AT TIME ZONE 'UTC')
                          AND p.batch_watermark_ntz IS NOT DISTINCT FROM (o.batch_watermark AT TIME ZONE 'UTC')
                          AND p.watermark_ntz IS NOT DISTINCT FROM (o.watermark AT TIME ZONE 'UTC')
                          AND o.batch_watermark_ntz IS NULL AND o.watermark_ntz IS NULL) AS same_watermarks
  FROM cq.offsets p JOIN cq.offsets o ON o.batch_id = p.batch_id
 WHERE (p.name, o.name) IN (('ne_win', 'ne_owin'), ('ne_hour', 'ne_ohour'));
-- cq.status: the last watermark, 13:49 in the creator's zone
SELECT name, watermark AT TIME ZONE 'Asia/Kolkata' AS wm_kolkata, watermark AS wm_new_york
  FROM cq.status WHERE name IN ('ne_win', 'ne_hour') ORDER BY name;
SELECT (SELECT max(event_time_max AT TIME ZONE 'Asia/Kolkata') FROM cq.progress WHERE name = 'ne_win')
       = (SELECT max(ts) FROM ne_src) AS max_is_the_column_value;
-- the targets: the oracle's, late rows dropped alike
SELECT window_start, n, s FROM ne_win ORDER BY 1;
SELECT mismatches('ne_win', 'SELECT window_start AT TIME ZONE ''UTC'', n, s FROM ne_owin') AS win_mismatches,
       mismatches('ne_hour', 'SELECT h AT TIME ZONE ''UTC'', n FROM ne_ohour') AS hour_mismatches;
-- cq.explain says what the watermark is (the batch compares values at UTC)
SELECT line FROM regexp_split_to_table(cq.explain('ne_win'), E'\n') AS line WHERE line ~ '^--  ( |\$5)';

----------------------------------------------------------------------------
-- A creator in America/New_York, across both daylight-saving changes of
-- 2026: 03-08 02:00 -> 03:00 (02:00-02:59 do not exist there) and 11-01
-- 02:00 -> 01:00 (01:00-01:59 happen twice).  Naive values in those hours
-- are neither lost nor counted twice, and the watermark is the oracle's.
----------------------------------------------------------------------------
SET timezone = 'America/New_York';
CREATE TABLE ne_dst_src (ts timestamp, v int);
CREATE TABLE ne_dst
  WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '0 seconds')
  AS SELECT w.window_start, count(*) AS n FROM ne_dst_src, LATERAL cq.window(ts, '20 minutes') AS w GROUP BY 1 WITH NO DATA;
SET timezone = 'UTC';
CREATE TABLE ne_dst_osrc (ts timestamptz, v int);
CREATE TABLE ne_odst
  WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '0 seconds')
  AS SELECT w.window_start, count(*) AS n FROM ne_dst_osrc, LATERAL cq.window(ts, '20 minutes') AS w GROUP BY 1 WITH NO DATA;
CREATE PROCEDURE ne_dst_step(rows text) LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('INSERT INTO ne_dst_src SELECT ts::timestamp, 1 FROM (VALUES %s) r(ts)', rows);
  EXECUTE format('INSERT INTO ne_dst_osrc SELECT (ts || ''+00'')::timestamptz, 1 FROM (VALUES %s) r(ts)', rows);
  COMMIT;
  CALL cq.run('ne_dst');
  CALL cq.run('ne_odst');
END $$;
SET client_min_messages = warning;
-- spring forward: 02:30 would read as 03:30 in New York, yet it is older
-- than 03:10: the 03:10 row comes first and 02:30 is late (its window ended
-- at 02:40 <= 03:10), as in the oracle
CALL ne_dst_step($$('2026-03-08 01:50'), ('2026-03-08 02:10')$$);
CALL ne_dst_step($$('2026-03-08 02:45'), ('2026-03-08 03:10')$$);
CALL ne_dst_step($$('2026-03-08 02:30'), ('2026-03-08 03:30')$$);
-- fall back: 01:10, 01:30, 01:50 once each, then 02:05
CALL ne_dst_step($$('2026-11-01 00:50'), ('2026-11-01 01:10')$$);
CALL ne_dst_step($$('2026-11-01 01:30'), ('2026-11-01 01:50')$$);
CALL ne_dst_step($$('2026-11-01 02:05')$$);
RESET client_min_messages;
SELECT window_start, n FROM ne_dst ORDER BY 1;
SELECT mismatches('ne_dst', 'SELECT window_start AT TIME ZONE ''UTC'', n FROM ne_odst') AS dst_mismatches,
       (SELECT sum(n) FROM ne_dst) + (SELECT sum(num_rows_dropped_by_watermark) FROM cq.progress WHERE name = 'ne_dst')
         = (SELECT count(*) FROM ne_dst_src) AS every_row_once;
-- the watermarks batches used are the oracle's, exactly; the ones shown
-- are the column's values read in New York.  The display caveat of a
-- spring-forward gap: 02:10 (batch 0's max, in the gap) shows as 03:10 EDT,
-- as 03:10 (batch 2's max) does, and batch 2's min 02:45 shows as 03:45,
-- after its max; watermark_ntz tells them apart.  01:10 and
-- 01:50 of the fall-back show with the offset after it (EST).
SET timezone = 'America/New_York';
SELECT p.batch_id, p.num_input_rows AS rows, p.num_rows_dropped_by_watermark AS late,
       p.event_time_min, p.event_time_max, p.watermark, x.watermark_ntz,
       x.watermark_ntz IS NOT DISTINCT FROM (ox.watermark AT TIME ZONE 'UTC') AS ntz_is_oracle,
       (p.num_input_rows, p.num_rows_dropped_by_watermark, p.num_output_rows)
         = (o.num_input_rows, o.num_rows_dropped_by_watermark, o.num_output_rows) AS same_metrics
  FROM cq.progress p JOIN cq.offsets x USING (name, batch_id)
  JOIN cq.progress o ON o.name = 'ne_odst' AND o.batch_id = p.batch_id
  JOIN cq.offsets ox ON ox.name = 'ne_odst' AND ox.batch_id = p.batch_id
 WHERE p.name = 'ne_dst' ORDER BY p.batch_id;

----------------------------------------------------------------------------
-- A background query (trigger '0'): cq.status shows what the worker
-- recorded, in the creator's zone; and values whose instant in the creator's
-- zone lies outside the timestamptz range show as -infinity / infinity
-- (the batches do not fail)
----------------------------------------------------------------------------
SET timezone = 'Asia/Kolkata';
CREATE TABLE ne_bg_src (ts timestamp, v int);
CREATE TABLE ne_bg WITH (cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '5 minutes')
  AS SELECT date_trunc('hour', ts) AS h, count(*) AS n FROM ne_bg_src GROUP BY 1 WITH NO DATA;
SET timezone = 'America/New_York';
INSERT INTO ne_bg_src VALUES ('2026-06-01 12:00', 1), ('2026-06-01 12:20', 1);
SELECT wait_until($$(SELECT watermark FROM cq.status WHERE name = 'ne_bg') IS NOT NULL$$);
SELECT watermark AT TIME ZONE 'Asia/Kolkata' AS wm_kolkata, watermark AS wm_new_york
  FROM cq.status WHERE name = 'ne_bg';
SELECT cq.drop_query('ne_bg');
SET timezone = 'Asia/Kolkata';
CREATE TABLE ne_end_src (ts timestamp, v int);
CREATE TABLE ne_first WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '0 seconds')
  AS SELECT v, count(*) AS n FROM ne_end_src GROUP BY 1 WITH NO DATA;
SET timezone = 'America/New_York';
CREATE TABLE ne_last WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '0 seconds')
  AS SELECT v, count(*) AS n FROM ne_end_src GROUP BY 1 WITH NO DATA;
INSERT INTO ne_end_src VALUES ('4714-11-24 01:00 BC', 1), ('294276-12-31 22:00', 1);
SET client_min_messages = warning;
CALL cq.run('ne_first');
CALL cq.run('ne_last');
RESET client_min_messages;
SET timezone = 'UTC';
SELECT name, batch_id, event_time_min, event_time_max, watermark
  FROM cq.progress WHERE name IN ('ne_first', 'ne_last') ORDER BY name, batch_id;
SELECT name, batch_id, watermark, watermark_ntz
  FROM cq.offsets WHERE name IN ('ne_first', 'ne_last') ORDER BY name, batch_id;
SELECT * FROM ne_first;

RESET timezone;
RESET datestyle;
