-- Aggregation over a join of two streams (issue 11 part 4): Spark 3.5+
-- aggregates the output of a stream-stream join in append mode, windowed
-- on an event time coming out of the join, with the join's output
-- watermark (min of the join's watermark and its sides' eviction bounds)
-- as the aggregation's watermark.  Spark's MultiStatefulOperatorsSuite
-- examples batch by batch, the watermark propagation, the shapes Spark
-- rejects, the state's persistence and cq.alter_query.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET timezone = 'UTC';
\i sql/include/helpers.sql

-- ja_step(query): run the query's batches (cq.run), then show the rows of
-- the target not shown before and, per batch run, its watermark, state
-- rows in all (buffers and groups), buffered rows per stream, rows out
CREATE TABLE ja_seen (q text, r text);
CREATE FUNCTION ja_step(qname text) RETURNS TABLE (step text) LANGUAGE plpgsql AS $$
DECLARE
  shown text;
  b0 bigint := (SELECT coalesce(max(batch_id), -1) FROM cq.progress WHERE name = qname);
BEGIN
  CALL cq.run(qname);
  EXECUTE format('WITH n AS (SELECT t::text AS r FROM %I t EXCEPT ALL SELECT r FROM ja_seen WHERE q = %L), '
                 'i AS (INSERT INTO ja_seen SELECT %L, r FROM n RETURNING r) '
                 'SELECT string_agg(r, '' '' ORDER BY r) FROM i', qname, qname, qname) INTO shown;
  step := 'new: ' || coalesce(shown, 'none');
  RETURN NEXT;
  FOR step IN
    SELECT format('batch %s: %s input rows, watermark %s, state rows %s (buffered %s), %s out, %s dropped',
                  batch_id, num_input_rows, coalesce(to_char(watermark, 'HH24:MI:SS.US'), '-'),
                  num_state_rows_total, num_state_rows_per_source, num_output_rows,
                  num_rows_dropped_by_watermark)
      FROM cq.progress WHERE name = qname AND batch_id > b0 ORDER BY batch_id
  LOOP
    RETURN NEXT;
  END LOOP;
END $$;

------------------------------------------------------------------------------
-- MultiStatefulOperatorsSuite "join -> window agg, append mode": two
-- streams of seconds joined on eventTime1 = eventTime2 (delays 0), count
-- per 5-second window of eventTime1.  Spark: nothing after 1..4 on both
-- (state: agg 1 row, join 0 after the no-data batch); after 5 on both,
-- (0, 4) (agg 1 row, join 0).
------------------------------------------------------------------------------
CREATE TABLE ja_in1 (value1 int, eventtime1 timestamptz);
CREATE TABLE ja_in2 (value2 int, eventtime2 timestamptz);
CREATE TABLE ja_win
  WITH (cq.source = 'ja_in1, ja_in2', cq.event_time = 'ja_in1.eventtime1, ja_in2.eventtime2',
        cq.watermark = '0 seconds', cq.trigger = 'available_now')
AS SELECT extract(epoch FROM date_bin('5 seconds', a.eventtime1, 'epoch'))::int AS window_start,
          count(*) AS count
     FROM ja_in1 a JOIN ja_in2 b ON a.eventtime1 = b.eventtime2
    GROUP BY date_bin('5 seconds', a.eventtime1, 'epoch');
-- the groups' state is logged (a crash rebuild could not refold them: the
-- buffers no longer hold every row of an open window); the buffers are not
SELECT left(relname, 2) AS kind, relpersistence FROM pg_class
 WHERE relnamespace = 'cq_state'::regnamespace AND relkind = 'r'
   AND relname ~ (SELECT '_' || id || '$' FROM cq.queries WHERE name = 'ja_win') ORDER BY relname;
SELECT state_table::text ~ '^cq_state\.s_' AS state_table_is_the_groups FROM cq.queries WHERE name = 'ja_win';
-- MultiAddData(input1, 1 to 4)(input2, 1 to 4): one batch, then the no-data
-- batch of watermark 4 empties the buffers; window [0, 5) stays open
INSERT INTO ja_in1 SELECT x, to_timestamp(x) FROM generate_series(1, 4) x;
INSERT INTO ja_in2 SELECT x, to_timestamp(x) FROM generate_series(1, 4) x;
SELECT ja_step('ja_win');
-- MultiAddData(input1, 5)(input2, 5): watermark 5 closes [0, 5) -> (0, 4)
INSERT INTO ja_in1 VALUES (5, to_timestamp(5));
INSERT INTO ja_in2 VALUES (5, to_timestamp(5));
SELECT ja_step('ja_win');
-- a late row on both sides: dropped by the join, nothing reaches [0, 5)
INSERT INTO ja_in1 VALUES (3, to_timestamp(3));
INSERT INTO ja_in2 VALUES (3, to_timestamp(3));
SELECT ja_step('ja_win');

------------------------------------------------------------------------------
-- MultiStatefulOperatorsSuite "stream-stream time interval left outer join
-- -> aggregation, append mode", as the inner join pg_cq aggregates: id1 =
-- id2 AND timestamp1 BETWEEN timestamp2 - 1 hour AND timestamp2 + 1 hour,
-- delays 0, count per 10-minute window of timestamp1.  The join evicts a
-- side's rows at the watermark - 1 hour - 1 ms (Spark's millisecond for
-- BETWEEN), so the aggregation's watermark is W - 1:00:00.001 (Spark's
-- assertions: eviction watermark 00:00:19.999, 00:14:59.999, 01:15:59.999).
-- Window [01:00, 01:10) is written only once W passes 02:10:00.001, not at
-- W = 01:15 when a stream's watermark alone would close it.
------------------------------------------------------------------------------
CREATE TABLE ja_s1 (id1 text, timestamp1 timestamptz);
CREATE TABLE ja_s2 (id2 text, timestamp2 timestamptz);
CREATE TABLE ja_range
  WITH (cq.source = 'ja_s1, ja_s2', cq.event_time = 'timestamp1, timestamp2',
        cq.watermark = '0 seconds', cq.trigger = 'available_now')
AS SELECT date_bin('10 minutes', s1.timestamp1, 'epoch') AS window_start,
          date_bin('10 minutes', s1.timestamp1, 'epoch') + interval '10 minutes' AS window_end,
          count(*) AS cnt
     FROM ja_s1 s1 JOIN ja_s2 s2
       ON s1.id1 = s2.id2
      AND s1.timestamp1 BETWEEN s2.timestamp2 - interval '1 hour' AND s2.timestamp2 + interval '1 hour'
    GROUP BY date_bin('10 minutes', s1.timestamp1, 'epoch');
INSERT INTO ja_s1 VALUES ('1', '2023-01-01 01:00:10'), ('2', '2023-01-01 01:00:30');
INSERT INTO ja_s2 VALUES ('1', '2023-01-01 01:00:20');
SELECT ja_step('ja_range');                        -- a match in [01:00, 01:10); W 01:00:20
INSERT INTO ja_s1 VALUES ('5', '2023-01-01 01:15:00'), ('7', '2023-01-01 01:40:00');
INSERT INTO ja_s2 VALUES ('6', '2023-01-01 01:15:00');
SELECT ja_step('ja_range');                        -- nothing: W 01:15, the aggregation's 00:14:59.999
INSERT INTO ja_s1 VALUES ('5', '2023-01-01 02:16:00');
INSERT INTO ja_s2 VALUES ('6', '2023-01-01 02:16:00');
SELECT ja_step('ja_range');                        -- W 02:16, the aggregation's 01:15:59.999 closes [01:00, 01:10)
-- a new row (02:30 > W) matches the buffered ('7', 01:40): its window
-- [01:40, 01:50) ended before W but not before the aggregation's watermark,
-- so the match counts (an aggregation judged by W would drop it as late)
INSERT INTO ja_s2 VALUES ('7', '2023-01-01 02:30:00');
SELECT ja_step('ja_range');
INSERT INTO ja_s1 VALUES ('9', '2023-01-01 03:00:00');
INSERT INTO ja_s2 VALUES ('9', '2023-01-01 03:00:00');
SELECT ja_step('ja_range');                        -- W 03:00, the aggregation's 01:59:59.999 closes [01:40, 01:50)

------------------------------------------------------------------------------
-- The same test as Spark wrote it: "stream-stream time interval left outer
-- join -> aggregation, append mode".  The unmatched ('2', 01:00:30) is
-- written with NULLs when the join evicts it (W 02:16, bound 01:15:59.999)
-- and counts in [01:00, 01:10), which closes in that same batch: the
-- aggregation drops a group as late only by its watermark of the previous
-- batch (00:14:59.999), and closes windows by this batch's (01:15:59.999).
-- Spark: (01:00, 01:10, 2).  Then "... right outer join -> aggregation":
-- the same with the streams swapped, windows of the preserved timestamp2.
------------------------------------------------------------------------------
CREATE TABLE ja_o1 (id1 text, timestamp1 timestamptz);
CREATE TABLE ja_o2 (id2 text, timestamp2 timestamptz);
CREATE TABLE ja_left
  WITH (cq.source = 'ja_o1, ja_o2', cq.event_time = 'timestamp1, timestamp2',
        cq.watermark = '0 seconds', cq.trigger = 'available_now')
AS SELECT date_bin('10 minutes', s1.timestamp1, 'epoch') AS window_start,
          date_bin('10 minutes', s1.timestamp1, 'epoch') + interval '10 minutes' AS window_end,
          count(*) AS cnt
     FROM ja_o1 s1 LEFT JOIN ja_o2 s2
       ON s1.id1 = s2.id2
      AND s1.timestamp1 BETWEEN s2.timestamp2 - interval '1 hour' AND s2.timestamp2 + interval '1 hour'
    GROUP BY date_bin('10 minutes', s1.timestamp1, 'epoch');
CREATE TABLE ja_right
  WITH (cq.source = 'ja_o1, ja_o2', cq.event_time = 'timestamp1, timestamp2',
        cq.watermark = '0 seconds', cq.trigger = 'available_now')
AS SELECT date_bin('10 minutes', s2.timestamp2, 'epoch') AS window_start,
          date_bin('10 minutes', s2.timestamp2, 'epoch') + interval '10 minutes' AS window_end,
          count(*) AS cnt
     FROM ja_o1 s1 RIGHT JOIN ja_o2 s2
       ON s1.id1 = s2.id2
      AND s1.timestamp1 BETWEEN s2.timestamp2 - interval '1 hour' AND s2.timestamp2 + interval '1 hour'
    GROUP BY date_bin('10 minutes', s2.timestamp2, 'epoch');
INSERT INTO ja_o1 VALUES ('1', '2023-01-01 01:00:10'), ('2', '2023-01-01 01:00:30');
INSERT INTO ja_o2 VALUES ('1', '2023-01-01 01:00:20');
SELECT ja_step('ja_left');
INSERT INTO ja_o1 VALUES ('5', '2023-01-01 01:15:00');
INSERT INTO ja_o2 VALUES ('6', '2023-01-01 01:15:00');
SELECT ja_step('ja_left');
INSERT INTO ja_o1 VALUES ('5', '2023-01-01 02:16:00');
INSERT INTO ja_o2 VALUES ('6', '2023-01-01 02:16:00');
SELECT ja_step('ja_left');                         -- (01:00, 01:10, 2)
-- the right outer join over the same rows, windows of the preserved
-- timestamp2: ('1', 01:00:20) matched -> (01:00, 01:10, 1); the unmatched
-- ('6', 01:15) is written with NULLs at W 02:16 and waits in [01:10, 01:20)
SELECT ja_step('ja_right');
-- its own test: the streams' rows swapped
CREATE TABLE ja_o3 (id1 text, timestamp1 timestamptz);
CREATE TABLE ja_o4 (id2 text, timestamp2 timestamptz);
CREATE TABLE ja_right2
  WITH (cq.source = 'ja_o3, ja_o4', cq.event_time = 'timestamp1, timestamp2',
        cq.watermark = '0 seconds', cq.trigger = 'available_now')
AS SELECT date_bin('10 minutes', s2.timestamp2, 'epoch') AS window_start,
          date_bin('10 minutes', s2.timestamp2, 'epoch') + interval '10 minutes' AS window_end,
          count(*) AS cnt
     FROM ja_o3 s1 RIGHT JOIN ja_o4 s2
       ON s1.id1 = s2.id2
      AND s1.timestamp1 BETWEEN s2.timestamp2 - interval '1 hour' AND s2.timestamp2 + interval '1 hour'
    GROUP BY date_bin('10 minutes', s2.timestamp2, 'epoch');
INSERT INTO ja_o4 VALUES ('1', '2023-01-01 01:00:10'), ('2', '2023-01-01 01:00:30');
INSERT INTO ja_o3 VALUES ('1', '2023-01-01 01:00:20');
SELECT ja_step('ja_right2');
INSERT INTO ja_o4 VALUES ('5', '2023-01-01 01:15:00');
INSERT INTO ja_o3 VALUES ('6', '2023-01-01 01:15:00');
SELECT ja_step('ja_right2');
INSERT INTO ja_o4 VALUES ('5', '2023-01-01 02:16:00');
INSERT INTO ja_o3 VALUES ('6', '2023-01-01 02:16:00');
SELECT ja_step('ja_right2');                       -- (01:00, 01:10, 2)
-- outer joins keep their buffers logged (matched flags) and so their groups
SELECT left(relname, 2) AS kind, relpersistence FROM pg_class
 WHERE relnamespace = 'cq_state'::regnamespace AND relkind = 'r'
   AND relname ~ (SELECT '_' || id || '$' FROM cq.queries WHERE name = 'ja_left') ORDER BY relname;

------------------------------------------------------------------------------
-- The window may be over the second stream's event time too (Spark keeps
-- both), a timestamp without time zone, with other keys and HAVING
------------------------------------------------------------------------------
CREATE TABLE ja_imp (ad int, ts timestamp);
CREATE TABLE ja_clk (ad int, ts timestamp, cost numeric);
CREATE TABLE ja_clicks
  WITH (cq.source = 'ja_imp, ja_clk', cq.event_time = 'ja_imp.ts, ja_clk.ts',
        cq.watermark = '1 minute, 2 minutes', cq.trigger = 'available_now')
AS SELECT c.ad, date_trunc('hour', c.ts) AS hour, count(*) AS clicks, sum(c.cost) AS cost
     FROM ja_imp i JOIN ja_clk c
       ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '30 minutes'
    GROUP BY c.ad, date_trunc('hour', c.ts)
   HAVING count(*) > 1;
INSERT INTO ja_imp SELECT ad, timestamp '2026-01-01 10:00' + n * interval '5 minutes'
  FROM generate_series(1, 3) ad, generate_series(0, 11) n;
INSERT INTO ja_clk SELECT ad, timestamp '2026-01-01 10:03' + n * interval '7 minutes', ad * 1.5
  FROM generate_series(1, 3) ad, generate_series(0, 8) n;
SELECT ja_step('ja_clicks');
-- W = min(11:55 - 1 min, 10:59 - 2 min) = 10:57: nothing closed; then clicks at 12:40
INSERT INTO ja_clk VALUES (1, '2026-01-01 12:40', 9), (2, '2026-01-01 11:02', 1);
SELECT ja_step('ja_clicks');
INSERT INTO ja_imp VALUES (3, '2026-01-01 13:00');
SELECT ja_step('ja_clicks');
SELECT * FROM ja_clicks ORDER BY ad, hour;
-- the same as the plain query over every row (none was late), for the
-- windows closed by the aggregation's watermark (W - 30 minutes - 1 ms)
SELECT mismatches('ja_clicks', $$
  SELECT c.ad, date_trunc('hour', c.ts) AS hour, count(*) AS clicks, sum(c.cost) AS cost
    FROM ja_imp i JOIN ja_clk c ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '30 minutes'
   GROUP BY 1, 2
  HAVING count(*) > 1 AND date_trunc('hour', c.ts) + interval '1 hour' <=
         (SELECT (watermark - interval '30 minutes 0.001 seconds') AT TIME ZONE 'UTC' FROM cq.progress
           WHERE name = 'ja_clicks' ORDER BY batch_id DESC LIMIT 1)$$) AS mismatches;

------------------------------------------------------------------------------
-- cq.alter_query: filters and the select list over the columns the
-- buffers keep may change, not the keys, aggregates or HAVING of the state
------------------------------------------------------------------------------
\set VERBOSITY terse
SELECT cq.alter_query('ja_win', query => $$SELECT extract(epoch FROM date_bin('5 seconds', a.eventtime1, 'epoch'))::int AS window_start, count(*) AS count
     FROM ja_in1 a JOIN ja_in2 b ON a.eventtime1 = b.eventtime2 WHERE a.eventtime1 <> to_timestamp(7)
    GROUP BY date_bin('5 seconds', a.eventtime1, 'epoch')$$);
SELECT cq.alter_query('ja_win', query => $$SELECT extract(epoch FROM date_bin('5 seconds', a.eventtime1, 'epoch'))::int AS window_start, count(b.eventtime2) AS count
     FROM ja_in1 a JOIN ja_in2 b ON a.eventtime1 = b.eventtime2
    GROUP BY date_bin('5 seconds', a.eventtime1, 'epoch')$$);
SELECT cq.alter_query('ja_win', query => $$SELECT extract(epoch FROM date_bin('5 seconds', a.eventtime1, 'epoch'))::int AS window_start, count(*) AS count
     FROM ja_in1 a JOIN ja_in2 b ON a.eventtime1 = b.eventtime2
    GROUP BY date_bin('5 seconds', a.eventtime1, 'epoch') HAVING count(*) > 2$$);
-- the filter applies from the next batch: 7 no longer counts
INSERT INTO ja_in1 VALUES (0, to_timestamp(7)), (8, to_timestamp(8)), (20, to_timestamp(20));
INSERT INTO ja_in2 VALUES (7, to_timestamp(7)), (8, to_timestamp(8)), (20, to_timestamp(20));
SELECT ja_step('ja_win');                          -- [5, 10): 5 and 8, not 7 -> (5, 2)

------------------------------------------------------------------------------
-- max_rows_per_trigger (Spark's maxOffsetsPerTrigger) over both streams: a
-- batch ends after the first transactions whose rows of both streams reach
-- the limit, never splitting one (also for a join without aggregation)
------------------------------------------------------------------------------
CREATE TABLE ja_m1 (value1 int, eventtime1 timestamptz);
CREATE TABLE ja_m2 (value2 int, eventtime2 timestamptz);
CREATE TABLE ja_lim
  WITH (cq.source = 'ja_m1, ja_m2', cq.event_time = 'ja_m1.eventtime1, ja_m2.eventtime2',
        cq.watermark = '0 seconds', cq.trigger = 'available_now', cq.max_rows_per_trigger = 3)
AS SELECT extract(epoch FROM date_bin('5 seconds', a.eventtime1, 'epoch'))::int AS window_start,
          count(*) AS count
     FROM ja_m1 a JOIN ja_m2 b ON a.eventtime1 = b.eventtime2
    GROUP BY date_bin('5 seconds', a.eventtime1, 'epoch');
CREATE TABLE ja_lim_rows
  WITH (cq.source = 'ja_m1, ja_m2', cq.event_time = 'ja_m1.eventtime1, ja_m2.eventtime2',
        cq.watermark = '0 seconds', cq.trigger = 'available_now', cq.max_rows_per_trigger = 3)
AS SELECT a.value1, b.value2 FROM ja_m1 a JOIN ja_m2 b ON a.eventtime1 = b.eventtime2;
INSERT INTO ja_m1 SELECT x, to_timestamp(x) FROM generate_series(1, 2) x;
INSERT INTO ja_m2 SELECT x, to_timestamp(x) FROM generate_series(1, 2) x;
INSERT INTO ja_m1 VALUES (3, to_timestamp(3));
INSERT INTO ja_m2 VALUES (3, to_timestamp(3));
INSERT INTO ja_m1 SELECT x, to_timestamp(x) FROM generate_series(4, 7) x;
INSERT INTO ja_m2 SELECT x, to_timestamp(x) FROM generate_series(4, 7) x;
SELECT ja_step('ja_lim');                          -- 2, 2 + 1, 1, 4, 4 rows: [0, 5) closes at W 7
SELECT ja_step('ja_lim_rows');
-- cq.run(once => true) ignores the limit
INSERT INTO ja_m1 SELECT x, to_timestamp(x) FROM generate_series(8, 11) x;
INSERT INTO ja_m2 SELECT x, to_timestamp(x) FROM generate_series(8, 11) x;
CALL cq.run('ja_lim', once => true);
SELECT batch_id, num_input_rows FROM cq.progress WHERE name = 'ja_lim' ORDER BY batch_id DESC LIMIT 1;

------------------------------------------------------------------------------
-- What Spark rejects, and what pg_cq does not aggregate
------------------------------------------------------------------------------
CREATE TABLE ja_a (k int, t timestamptz, v int);
CREATE TABLE ja_b (k int, t timestamptz, w int);
-- Spark: "Join between two streaming DataFrames/Datasets is not supported in
-- Update output mode, only in Append output mode" (with an aggregation too)
CREATE TABLE ja_t WITH (cq.source = 'ja_a, ja_b', cq.event_time = 't, t', cq.watermark = '1 minute',
                        cq.output_mode = 'update')
AS SELECT date_bin('1 minute', a.t, 'epoch') AS m, count(*) FROM ja_a a JOIN ja_b b ON a.k = b.k AND a.t = b.t GROUP BY 1;
CREATE TABLE ja_t WITH (cq.source = 'ja_a, ja_b', cq.event_time = 't, t', cq.watermark = '1 minute',
                        cq.output_mode = 'complete')
AS SELECT date_bin('1 minute', a.t, 'epoch') AS m, count(*) FROM ja_a a JOIN ja_b b ON a.k = b.k AND a.t = b.t GROUP BY 1;
-- Spark: "Append output mode not supported when there are streaming
-- aggregations on streaming DataFrames/DataSets without watermark"
CREATE TABLE ja_t WITH (cq.source = 'ja_a, ja_b')
AS SELECT a.k, count(*) FROM ja_a a JOIN ja_b b ON a.k = b.k GROUP BY 1;
CREATE TABLE ja_t WITH (cq.source = 'ja_a, ja_b', cq.event_time = 't, t', cq.watermark = '1 minute')
AS SELECT a.k, count(*) FROM ja_a a JOIN ja_b b ON a.k = b.k AND a.t = b.t GROUP BY 1;
-- a window over something else than an event time
CREATE TABLE ja_t WITH (cq.source = 'ja_a, ja_b', cq.event_time = 't, t', cq.watermark = '1 minute')
AS SELECT date_bin('1 minute', a.t + interval '1 second', 'epoch') AS m, count(*) FROM ja_a a JOIN ja_b b ON a.k = b.k AND a.t = b.t GROUP BY 1;
-- Spark: "Distinct aggregations are not supported on streaming DataFrames/Datasets"
CREATE TABLE ja_t WITH (cq.source = 'ja_a, ja_b', cq.event_time = 't, t', cq.watermark = '1 minute')
AS SELECT date_bin('1 minute', a.t, 'epoch') AS m, count(DISTINCT b.w) FROM ja_a a JOIN ja_b b ON a.k = b.k AND a.t = b.t GROUP BY 1;
-- an outer join without the time bound Spark asks for, aggregated or not
CREATE TABLE ja_t WITH (cq.source = 'ja_a, ja_b', cq.event_time = 't, t', cq.watermark = '1 minute')
AS SELECT date_bin('1 minute', a.t, 'epoch') AS m, count(*) FROM ja_a a LEFT JOIN ja_b b ON a.k = b.k GROUP BY 1;
-- its state is in tables
CREATE TABLE ja_t WITH (cq.source = 'ja_a, ja_b', cq.event_time = 't, t', cq.watermark = '1 minute',
                        cq.state_storage = 'memory')
AS SELECT date_bin('1 minute', a.t, 'epoch') AS m, count(*) FROM ja_a a JOIN ja_b b ON a.k = b.k AND a.t = b.t GROUP BY 1;
-- SELECT DISTINCT over the groups changes nothing and is dropped, as over one stream
CREATE TABLE ja_t WITH (cq.source = 'ja_a, ja_b', cq.event_time = 't, t', cq.watermark = '1 minute')
AS SELECT DISTINCT date_bin('1 minute', a.t, 'epoch') AS m, count(*) FROM ja_a a JOIN ja_b b ON a.k = b.k AND a.t = b.t GROUP BY 1;
SELECT cq.drop_query('ja_t');
\set VERBOSITY default
