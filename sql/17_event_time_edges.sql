-- Event time at the edges (issue 9, items 14, 19, 21, 26, 29): infinite and
-- NULL event times, the rows the watermark is computed from, a renamed
-- event-time column, overflows (trigger, watermark delay, windows at the
-- ends of the timestamp range), timestamp columns in any TimeZone, and
-- watermark delays in months and years (a month counts 31 days, as in Spark).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET timezone = 'UTC';

-- shared helpers: wait_until, mismatches, fingerprint
\i sql/include/helpers.sql

CREATE VIEW ete_batches AS
  SELECT name, batch_id, num_input_rows AS input,
         to_char(watermark, 'YYYY-MM-DD HH24:MI') AS wm,
         to_char(event_time_min, 'YYYY-MM-DD HH24:MI') AS et_min,
         to_char(event_time_max, 'YYYY-MM-DD HH24:MI') AS et_max,
         to_char(event_time_avg, 'YYYY-MM-DD HH24:MI') AS et_avg,
         num_rows_dropped_by_watermark AS dropped, num_output_rows AS output
    FROM cq.progress WHERE name LIKE 'ete%';

----------------------------------------------------------------------------
-- item 14: 'infinity', '-infinity' and NULL event times never move the
-- watermark, and the watermark comes from the rows the query reads (those
-- its WHERE clause keeps): a bad row excluded by the WHERE clause, or
-- included, does not hold the watermark at infinity.
----------------------------------------------------------------------------
CREATE TABLE ete_src (ts timestamptz, v int);
-- update, WHERE, date_bin (count statement, one scan)
CREATE TABLE ete_upd
  WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT date_bin('10 minutes', ts, '2000-01-01') AS w, count(*) AS n FROM ete_src WHERE v > 0 GROUP BY 1
  WITH NO DATA;
-- update, no WHERE (event-time statistics from the batch statement itself)
CREATE TABLE ete_upd_all
  WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT date_bin('10 minutes', ts, '2000-01-01') AS w, count(*) AS n FROM ete_src GROUP BY 1
  WITH NO DATA;
-- append, WHERE, cq.window
CREATE TABLE ete_app
  WITH (cq.trigger = 'available_now', cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT w.window_start, count(*) AS n FROM ete_src, LATERAL cq.window(ts, '10 minutes') AS w
      WHERE v > 0 GROUP BY 1
  WITH NO DATA;
-- append, no WHERE: an infinite event time belongs to no window
CREATE TABLE ete_app_all
  WITH (cq.trigger = 'available_now', cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT w.window_start, count(*) AS n FROM ete_src, LATERAL cq.window(ts, '10 minutes') AS w GROUP BY 1
  WITH NO DATA;
-- append, sliding windows and a WHERE clause on them: a row counts once
-- in the event-time statistics, however many of its windows pass (batch 0:
-- avg(12:00, 12:05) = 12:02:30, not 12:03:20)
CREATE TABLE ete_app_slide
  WITH (cq.trigger = 'available_now', cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT w.window_start, count(*) AS n FROM ete_src, LATERAL cq.window(ts, '10 minutes', '5 minutes') AS w
      WHERE w.window_start >= '2024-01-01 12:00' GROUP BY 1
  WITH NO DATA;
CREATE PROCEDURE ete_run() LANGUAGE plpgsql AS $$
BEGIN
  CALL cq.run('ete_upd');
  CALL cq.run('ete_upd_all');
  CALL cq.run('ete_app');
  CALL cq.run('ete_app_all');
  CALL cq.run('ete_app_slide');
END $$;

-- 'infinity' excluded by the WHERE clause (v <= 0), and included
INSERT INTO ete_src VALUES ('infinity', -1), ('infinity', 1), ('-infinity', 1), (NULL, 1),
                           ('2024-01-01 12:00', 1), ('2024-01-01 12:05', 1);
CALL ete_run();
-- later rows are on time: the watermark is 12:05 - 10 min, not infinity
INSERT INTO ete_src VALUES ('2024-01-01 12:06', 1), ('2024-01-01 12:25', 1), ('2024-01-01 12:31', 1);
CALL ete_run();
-- a late row (window [12:00, 12:10) closed at W = 12:21) is still dropped
INSERT INTO ete_src VALUES ('2024-01-01 12:09', 1), ('infinity', 1), ('-infinity', -1);
CALL ete_run();
SELECT * FROM ete_batches WHERE name IN ('ete_upd', 'ete_upd_all', 'ete_app', 'ete_app_all', 'ete_app_slide')
 ORDER BY name, batch_id;
SELECT w, n FROM ete_upd ORDER BY w;
SELECT w, n FROM ete_upd_all ORDER BY w;
SELECT window_start, n FROM ete_app ORDER BY 1;
SELECT window_start, n FROM ete_app_all ORDER BY 1;
SELECT window_start, n FROM ete_app_slide ORDER BY 1;

----------------------------------------------------------------------------
-- item 19: renaming the event-time column keeps the query working, and
-- cq.queries shows the new name; the column is protected like the columns
-- the query reads, even when the query does not mention it.
----------------------------------------------------------------------------
CREATE TABLE ete_ren_src (ts timestamptz, v int);
CREATE TABLE ete_ren
  WITH (cq.trigger = 'available_now', cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT w.window_start, count(*) AS n FROM ete_ren_src, LATERAL cq.window(ts, '10 minutes') AS w GROUP BY 1
  WITH NO DATA;
-- the query does not read ts: only the event_time option names it
CREATE TABLE ete_ren_v
  WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT v, count(*) AS n FROM ete_ren_src GROUP BY v
  WITH NO DATA;
INSERT INTO ete_ren_src VALUES ('2024-01-01 12:00', 1), ('2024-01-01 12:05', 2);
CALL cq.run('ete_ren');
CALL cq.run('ete_ren_v');
ALTER TABLE ete_ren_src RENAME COLUMN ts TO ts2;
SELECT name, event_time FROM cq.queries WHERE name LIKE 'ete_ren%' ORDER BY name;
INSERT INTO ete_ren_src VALUES ('2024-01-01 12:07', 1), ('2024-01-01 12:30', 2);
CALL cq.run('ete_ren');
CALL cq.run('ete_ren_v');
SELECT * FROM ete_batches WHERE name LIKE 'ete_ren%' ORDER BY name, batch_id;
SELECT window_start, n FROM ete_ren ORDER BY 1;
SELECT v, n FROM ete_ren_v ORDER BY v;
-- a rename rolled back leaves the name as it was
BEGIN;
ALTER TABLE ete_ren_src RENAME ts2 TO ts3;
SELECT name, event_time FROM cq.queries WHERE name LIKE 'ete_ren%' ORDER BY name;
ROLLBACK;
SELECT name, event_time FROM cq.queries WHERE name LIKE 'ete_ren%' ORDER BY name;
-- dropping the column or changing its type is refused, as for a view
-- (the messages name the query views: only the primary message is shown)
CREATE PROCEDURE ete_try(sql text) LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE sql;
  RAISE NOTICE 'done: %', sql;
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE 'refused (%): %', SQLSTATE, SQLERRM;
END $$;
CALL ete_try('ALTER TABLE ete_ren_src DROP COLUMN ts2');
CALL ete_try('ALTER TABLE ete_ren_src ALTER COLUMN ts2 TYPE timestamp');
DROP TABLE ete_ren;
-- ete_ren_v does not read ts2, and still depends on it
CALL ete_try('ALTER TABLE ete_ren_src ALTER COLUMN ts2 TYPE timestamp');
CALL ete_try('ALTER TABLE ete_ren_src DROP COLUMN ts2');
-- a partitioned source renamed through its parent
CREATE TABLE ete_part (ts timestamptz, v int) PARTITION BY RANGE (ts);
CREATE TABLE ete_part_2024 PARTITION OF ete_part FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
CREATE TABLE ete_part_q
  WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT date_trunc('hour', ts) AS h, count(*) AS n FROM ete_part GROUP BY 1
  WITH NO DATA;
INSERT INTO ete_part VALUES ('2024-01-01 12:00', 1);
CALL cq.run('ete_part_q');
ALTER TABLE ete_part RENAME COLUMN ts TO event_ts;
INSERT INTO ete_part VALUES ('2024-01-01 13:30', 1);
CALL cq.run('ete_part_q');
SELECT name, event_time FROM cq.queries WHERE name = 'ete_part_q';
SELECT h, n FROM ete_part_q ORDER BY h;
SELECT * FROM ete_batches WHERE name = 'ete_part_q' ORDER BY batch_id;

----------------------------------------------------------------------------
-- item 21: overflows are refused at creation or cannot happen
----------------------------------------------------------------------------
CREATE TABLE ete_ovf_src (ts timestamptz, v int);
-- a trigger interval beyond a year is refused (200000000 days used to wrap to '0')
CREATE TABLE ete_ovf WITH (cq.trigger = '200000000 days') AS SELECT v FROM ete_ovf_src WITH NO DATA;
CREATE TABLE ete_ovf WITH (cq.trigger = '366 days') AS SELECT v FROM ete_ovf_src WITH NO DATA;
SELECT cq.create_query('ete_ovf', 'SELECT v FROM ete_ovf_src', "trigger" => '9999999 hours');
CREATE TABLE ete_ovf WITH (cq.trigger = '365 days') AS SELECT v FROM ete_ovf_src WITH NO DATA;
ALTER TABLE ete_ovf SET (cq.trigger = '200000000 days');
SELECT cq.alter_query('ete_ovf', "trigger" => '200000000 days');
SELECT name, "trigger" FROM cq.queries WHERE name = 'ete_ovf';
-- a stored trigger that would wrap (accepted by 0.1) runs as the longest interval, not as '0'
ALTER TABLE ete_ovf SET (cq.trigger = '0');
SELECT wait_until($$(SELECT message FROM cq.status WHERE name = 'ete_ovf') = 'Waiting for data to arrive'$$);
UPDATE cq.queries SET "trigger" = '200000000 days' WHERE name = 'ete_ovf';
ALTER TABLE ete_ovf SET (cq.max_rows_per_trigger = 0);  -- the scheduler rereads the catalog
SELECT wait_until($$(SELECT message FROM cq.status WHERE name = 'ete_ovf') = 'Waiting for next trigger'$$);
SELECT cq.drop_query('ete_ovf');
-- a watermark delay longer than the timestamp range is refused
CREATE TABLE ete_ovf_wm
  WITH (cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '1000000 years')
  AS SELECT v, count(*) AS n FROM ete_ovf_src GROUP BY v WITH NO DATA;
SELECT cq.create_query('ete_ovf_wm', 'SELECT v, count(*) AS n FROM ete_ovf_src GROUP BY v',
                       output_mode => 'update', event_time => 'ts', watermark => '106751992 days');
-- the longest delay is accepted and works with events at both ends of the range
CREATE TABLE ete_ovf_wm
  WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '106751991 days')
  AS SELECT v, count(*) AS n FROM ete_ovf_src GROUP BY v WITH NO DATA;
INSERT INTO ete_ovf_src VALUES ('4713-01-01 BC', 1), ('2024-01-01', 1);
CALL cq.run('ete_ovf_wm');
-- the last microsecond: its average must not round past the range either
INSERT INTO ete_ovf_src VALUES ('294276-12-31 23:59:59.999999', 2);
CALL cq.run('ete_ovf_wm');
SELECT batch_id, watermark FROM cq.offsets WHERE name = 'ete_ovf_wm' ORDER BY batch_id;
SELECT batch_id, event_time_max, to_char(event_time_avg, 'YYYY-MM-DD HH24:MI') AS avg FROM cq.progress
 WHERE name = 'ete_ovf_wm' ORDER BY batch_id;
SELECT v, n FROM ete_ovf_wm ORDER BY v;
-- a window end beyond the last timestamp is infinity: the window never closes
CREATE TABLE ete_ovf_day
  WITH (cq.trigger = 'available_now', cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '1 hour')
  AS SELECT date_bin('1 day', ts, '2000-01-01') AS d, count(*) AS n FROM ete_ovf_src WHERE v > 0 GROUP BY 1
  WITH NO DATA;
CALL cq.run('ete_ovf_day');
INSERT INTO ete_ovf_src VALUES ('294276-12-31 23:59:59.999999', 3);
CALL cq.run('ete_ovf_day');
SELECT d, n FROM ete_ovf_day ORDER BY d;
SELECT * FROM ete_batches WHERE name = 'ete_ovf_day' ORDER BY batch_id;
-- cq.window: only windows inside the timestamp range, on the grid
SELECT * FROM cq.window('294276-12-30 12:00', '1 day');
SELECT * FROM cq.window('294276-12-31 12:00', '1 day');
SELECT * FROM cq.window('294276-12-29 12:00'::timestamp, '2 days', '1 day');
SELECT * FROM cq.window('4713-01-01 06:00 BC', '3 days', '1 day');
SELECT * FROM cq.window('294276-12-30 06:00', '1 day', origin => '4713-01-01 12:00 BC');
SELECT * FROM cq.window('4713-01-01 01:00 BC', '1 day', origin => '294276-12-31 12:00');
-- infinite ts: no window; infinite origin: an error, also at creation
SELECT count(*) FROM cq.window('infinity'::timestamptz, '10 minutes');
SELECT count(*) FROM cq.window('-infinity'::timestamp, '10 minutes', '5 minutes');
SELECT * FROM cq.window('2024-01-01', '1 day', origin => 'infinity');
SELECT * FROM cq.window(NULL::timestamptz, '1 day', origin => '-infinity');
CREATE TABLE ete_ovf_origin
  WITH (cq.output_mode = 'update')
  AS SELECT w.window_start, count(*) AS n
       FROM ete_ovf_src, LATERAL cq.window(ts, '1 day', origin => 'infinity') AS w GROUP BY 1 WITH NO DATA;
CREATE TABLE ete_ovf_size
  WITH (cq.output_mode = 'update')
  AS SELECT w.window_start, count(*) AS n
       FROM ete_ovf_src, LATERAL cq.window(ts, '200000000 days') AS w GROUP BY 1 WITH NO DATA;

----------------------------------------------------------------------------
-- item 26: a timestamp (without time zone) event-time column: statistics
-- and watermarks are its values read in the creator's TimeZone, whatever
-- TimeZone the reader uses (read them AT TIME ZONE 'Asia/Tokyo'; more in
-- 26_naive_event_time)
----------------------------------------------------------------------------
SET timezone = 'Asia/Tokyo';
CREATE TABLE ete_tz_src (ts timestamp, v int);
CREATE TABLE ete_tz
  WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT date_trunc('hour', ts) AS h, count(*) AS n FROM ete_tz_src GROUP BY 1 WITH NO DATA;
CREATE TABLE ete_tz_where
  WITH (cq.trigger = 'available_now', cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT w.window_start, count(*) AS n FROM ete_tz_src, LATERAL cq.window(ts, '10 minutes') AS w
      WHERE v > 0 GROUP BY 1 WITH NO DATA;
SET timezone = 'America/New_York';
INSERT INTO ete_tz_src VALUES ('2024-01-01 12:00', 1), ('2024-01-01 12:30', 1), ('2024-01-01 13:00', 0);
-- the watermark in the notice is the column's value: 12:20
CALL cq.run('ete_tz');
CALL cq.run('ete_tz_where');
SELECT name, batch_id,
       event_time_min AT TIME ZONE 'Asia/Tokyo' AS et_min, event_time_max AT TIME ZONE 'Asia/Tokyo' AS et_max,
       event_time_avg AT TIME ZONE 'Asia/Tokyo' AS et_avg, watermark AT TIME ZONE 'Asia/Tokyo' AS wm
  FROM cq.progress WHERE name LIKE 'ete_tz%' ORDER BY name, batch_id;
SELECT name, watermark AT TIME ZONE 'Asia/Tokyo' AS wm FROM cq.status WHERE name LIKE 'ete_tz%' ORDER BY name;
SELECT name, batch_id, watermark AT TIME ZONE 'Asia/Tokyo' AS wm FROM cq.offsets WHERE name LIKE 'ete_tz%' ORDER BY name, batch_id;
SELECT (SELECT event_time_max AT TIME ZONE 'Asia/Tokyo' FROM cq.progress WHERE name = 'ete_tz' AND batch_id = 0)
       = (SELECT max(ts) FROM ete_tz_src) AS max_is_exact;
SELECT window_start, n FROM ete_tz_where ORDER BY 1;
SET timezone = 'UTC';

----------------------------------------------------------------------------
-- item 29: watermark delays are fixed lengths as in Spark: a month is 31
-- days, a year 12 of them, a day 24 hours whatever the TimeZone
----------------------------------------------------------------------------
CREATE TABLE ete_m_src (ts timestamptz, v int);
CREATE TABLE ete_month
  WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '1 month')
  AS SELECT date_trunc('day', ts) AS d, count(*) AS n FROM ete_m_src GROUP BY 1 WITH NO DATA;
CREATE TABLE ete_year
  WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '1 year 1 month 1 day 1 hour')
  AS SELECT date_trunc('day', ts) AS d, count(*) AS n FROM ete_m_src GROUP BY 1 WITH NO DATA;
CREATE TABLE ete_d_src (ts timestamptz, v int);
SET timezone = 'Europe/Paris';
CREATE TABLE ete_day
  WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '1 day')
  AS SELECT date_trunc('day', ts) AS d, count(*) AS n FROM ete_d_src GROUP BY 1 WITH NO DATA;
SET timezone = 'UTC';
INSERT INTO ete_m_src VALUES ('2024-03-01 10:00+00', 1);
-- 2024-03-31 12:00 in Paris, where summer time began at 02:00 that day
INSERT INTO ete_d_src VALUES ('2024-03-31 10:00+00', 1);
CALL cq.run('ete_month');
CALL cq.run('ete_year');
CALL cq.run('ete_day');
-- 31 days (not back to 02-01), 12 * 31 + 31 + 1 days and 1 hour (not back
-- to 2023-01-31), 24 hours (not a 23-hour calendar day in Paris)
SELECT name, watermark FROM cq.offsets WHERE name IN ('ete_month', 'ete_year', 'ete_day') AND batch_id = 0
 ORDER BY name;
SELECT '2024-03-01 10:00+00'::timestamptz - interval '31 days' AS month,
       '2024-03-01 10:00+00'::timestamptz - interval '404 days 1 hour' AS year,
       '2024-03-31 10:00+00'::timestamptz - interval '24 hours' AS day;
