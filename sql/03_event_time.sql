-- Event time: windows, watermarks, late rows, append for windowed aggregations
-- (SPEC §4; reference/spark-semantics.md §8.3 Variant N and EventTimeWatermarkSuite).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET timezone = 'UTC';

-- cq.window: [start, end) windows containing ts
SELECT * FROM cq.window('2024-01-01 12:07', '10 minutes');
SELECT * FROM cq.window('2024-01-01 12:07', '10 minutes', '5 minutes');
SELECT * FROM cq.window('2024-01-01 12:10'::timestamp, '10 minutes', '5 minutes');
SELECT count(*) FROM cq.window('2024-01-01 12:07', '10 minutes', '3 minutes');  -- ceil(10/3) = 4
SELECT * FROM cq.window('2024-01-01 12:07', '1 hour', origin => '2024-01-01 00:15');
SELECT count(*) FROM cq.window(NULL::timestamptz, '10 minutes');
SELECT * FROM cq.window('2024-01-01 12:07', '0 minutes');
SELECT * FROM cq.window('2024-01-01 12:07', '10 minutes', '11 minutes');
SELECT * FROM cq.window('2024-01-01 12:07', '1 month');

-- §8.3: 10-minute windows, 10-minute watermark, the guide's dog/owl events
CREATE TABLE words (ts timestamptz, word text);
CREATE TABLE words_append
  WITH (cq.trigger = 'available_now', cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT w.window_start, w.window_end, word, count(*) AS count
       FROM words, LATERAL cq.window(ts, '10 minutes') AS w
      GROUP BY w.window_start, w.window_end, word
  WITH NO DATA;
CREATE TABLE words_update
  WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT w.window_start, w.window_end, word, count(*) AS count
       FROM words, LATERAL cq.window(ts, '10 minutes') AS w
      GROUP BY w.window_start, w.window_end, word
  WITH NO DATA;
CREATE TABLE words_complete
  WITH (cq.trigger = 'available_now', cq.output_mode = 'complete', cq.event_time = 'ts', cq.watermark = '10 minutes')
  AS SELECT w.window_start, w.window_end, word, count(*) AS count
       FROM words, LATERAL cq.window(ts, '10 minutes') AS w
      GROUP BY w.window_start, w.window_end, word
  WITH NO DATA;

CREATE PROCEDURE run_words() LANGUAGE plpgsql AS $$
BEGIN
  CALL cq.run('words_append');
  CALL cq.run('words_update');
  CALL cq.run('words_complete');
END $$;
CREATE VIEW words_batches AS
  SELECT name, batch_id, num_input_rows AS input, to_char(watermark, 'HH24:MI') AS wm,
         num_rows_dropped_by_watermark AS dropped, num_output_rows AS output,
         num_state_rows_total AS state, num_state_rows_removed AS removed
    FROM cq.progress WHERE name LIKE 'words%';

-- B0 (trigger 12:10)
INSERT INTO words (ts, word) VALUES ('2024-01-01 12:07', 'dog'), ('2024-01-01 12:08', 'owl');
CALL run_words();
-- B1 (12:15)
INSERT INTO words (ts, word) VALUES ('2024-01-01 12:14', 'dog'), ('2024-01-01 12:09', 'cat');
CALL run_words();
-- B2 (12:20)
INSERT INTO words (ts, word) VALUES ('2024-01-01 12:15', 'cat'), ('2024-01-01 12:08', 'dog'),
                                    ('2024-01-01 12:13', 'owl'), ('2024-01-01 12:21', 'owl');
CALL run_words();
-- after B2 the no-data batch with W = 12:11 closed [12:00, 12:10): append wrote it
SELECT to_char(window_start, 'HH24:MI') AS ws, to_char(window_end, 'HH24:MI') AS we, word, count
  FROM words_append ORDER BY 1, 3;
-- B3 (12:25): donkey (12:04) is late for [12:00, 12:10) and dropped
INSERT INTO words (ts, word) VALUES ('2024-01-01 12:04', 'donkey'), ('2024-01-01 12:17', 'owl'),
                                    ('2024-01-01 12:26', 'owl');
CALL run_words();
-- B4 (12:30): (12:09, cat) is late (W = 12:16)
INSERT INTO words (ts, word) VALUES ('2024-01-01 12:09', 'cat');
CALL run_words();

-- every batch, data and no-data, of each mode
SELECT * FROM words_batches WHERE name = 'words_append' ORDER BY batch_id;
SELECT * FROM words_batches WHERE name = 'words_update' ORDER BY batch_id;
SELECT * FROM words_batches WHERE name = 'words_complete' ORDER BY batch_id;

-- targets: append holds only closed windows, each once; update holds every
-- window with late rows left out; complete counts the late rows too
SELECT to_char(window_start, 'HH24:MI') AS ws, word, count FROM words_append ORDER BY 1, 2;
SELECT to_char(window_start, 'HH24:MI') AS ws, word, count FROM words_update ORDER BY 1, 2;
SELECT to_char(window_start, 'HH24:MI') AS ws, word, count FROM words_complete ORDER BY 1, 2;
-- the watermark after the last batch and the state left in update mode (W2, W3 only)
SELECT name, to_char(watermark, 'HH24:MI') AS watermark FROM cq.offsets o
 WHERE name LIKE 'words%' AND batch_id = (SELECT max(batch_id) FROM cq.offsets WHERE name = o.name)
 ORDER BY name;

-- EventTimeWatermarkSuite, append: 5-second windows, 10-second delay; output (start second, count)
CREATE TABLE ticks (ts timestamptz);
CREATE TABLE ticks_append
  WITH (cq.trigger = 'available_now', cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '10 seconds')
  AS SELECT extract(epoch FROM date_bin('5 seconds', ts, '1970-01-01')) AS start, count(*) AS count
       FROM ticks GROUP BY date_bin('5 seconds', ts, '1970-01-01') WITH NO DATA;
CREATE TABLE ticks_update
  WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '10 seconds')
  AS SELECT date_bin('5 seconds', ts, '1970-01-01') AS w, count(*) AS count
       FROM ticks GROUP BY 1 WITH NO DATA;
CREATE PROCEDURE tick(VARIADIC secs int[]) LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ticks (ts) SELECT to_timestamp(s) FROM unnest(secs) s;
  COMMIT;
  CALL cq.run('ticks_append');
  CALL cq.run('ticks_update');
END $$;
CREATE VIEW ticks_batches AS
  SELECT name, batch_id, num_input_rows AS input, extract(epoch FROM watermark) AS wm,
         num_rows_dropped_by_watermark AS dropped, num_output_rows AS output, num_state_rows_total AS state
    FROM cq.progress WHERE name LIKE 'ticks%';

CALL tick(10, 11, 12, 13, 14, 15);
SELECT * FROM ticks_append ORDER BY start;           -- nothing yet
CALL tick(25);                                       -- watermark 15: (10, 5)
SELECT * FROM ticks_append ORDER BY start;
CALL tick(10);                                       -- late: nothing
SELECT * FROM ticks_append ORDER BY start;
SELECT * FROM ticks_batches WHERE name = 'ticks_append' ORDER BY batch_id;

-- EventTimeWatermarkSuite, update: 10..15 -> (10,5),(15,1); 25 -> (25,1);
-- 10, 25 -> (25,2) (10 is late); 10 -> nothing
SELECT extract(epoch FROM w) AS start, count FROM ticks_update ORDER BY 1;
CALL tick(10, 25);
SELECT extract(epoch FROM w) AS start, count FROM ticks_update ORDER BY 1;
CALL tick(10);
SELECT * FROM ticks_batches WHERE name = 'ticks_update' ORDER BY batch_id;

-- the grouping key can be the event-time column itself; date_trunc is a tumbling window
CREATE TABLE per_second WITH (cq.trigger = 'available_now', cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '2 seconds')
  AS SELECT ts, count(*) AS n FROM ticks GROUP BY ts;
CREATE TABLE per_minute WITH (cq.trigger = 'available_now', cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '0 seconds')
  AS SELECT date_trunc('minute', ts) AS minute, count(*) AS n FROM ticks GROUP BY 1;
INSERT INTO ticks (ts) VALUES (to_timestamp(70)), (to_timestamp(130));
CALL cq.run('per_second');
CALL cq.run('per_minute');
SELECT extract(epoch FROM ts) AS ts, n FROM per_second ORDER BY 1;
SELECT minute, n FROM per_minute ORDER BY 1;

-- rejected: append aggregation whose watermark is on no grouping key; bad window sizes
CREATE TABLE bad1 WITH (cq.trigger = 'available_now', cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '1 minute')
  AS SELECT count(*) FROM ticks;
CREATE TABLE bad2 WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT w.window_start, count(*) FROM ticks, LATERAL cq.window(ts, '-1 minute') w GROUP BY 1;
CREATE TABLE bad3 WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT w.window_start, count(*) FROM ticks, LATERAL cq.window(ts, '1 month') w GROUP BY 1;
CREATE TABLE bad4 WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT date_bin('0 seconds', ts, '2000-01-01'), count(*) FROM ticks GROUP BY 1;

