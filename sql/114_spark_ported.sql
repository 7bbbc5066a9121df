-- Cases ported from Spark's own streaming test suites (session 29), each named
-- by its suite and test.  Spark's AddData + CheckNewAnswer / CheckLastBatch steps
-- map to INSERT + CALL cq.run (which also runs the no-data batch Spark runs when
-- the watermark advanced); the expected rows are Spark's.  Where pg_cq differs
-- on purpose (SPEC.md wins), the case says so and docs/semantics.md, "How it
-- maps to Spark", lists the difference.  Not repeated here: what 01, 03, 17,
-- 24, 50, 51, 55 and 65 port already.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET timezone = 'UTC';
-- its own schema: the names are those of the Spark tests, other files use some
CREATE SCHEMA sp114;
SET search_path = sp114, public;

\i sql/include/spark_steps.sql

------------------------------------------------------------------------------
-- StreamingAggregationSuite "multiple keys": groupBy(value, value + 1).count,
-- update: 1, 2 -> (1,2,1) (2,3,1); 1, 2 -> (1,2,2) (2,3,2)
------------------------------------------------------------------------------
CREATE TABLE sa_mk (value int);
CREATE TABLE sa_mk_u WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT value, value + 1 AS value1, count(*) AS count FROM sa_mk GROUP BY value, value + 1 WITH NO DATA;
INSERT INTO sa_mk VALUES (1), (2);
SELECT sp_step('sa_mk_u');
INSERT INTO sa_mk VALUES (1), (2);
SELECT sp_step('sa_mk_u');

------------------------------------------------------------------------------
-- StreamingAggregationSuite "state metrics - update/complete mode":
-- flatMap(x => Seq(x, x + 1)).groupBy(value).count.  Update: 1 -> (1,1) (2,1),
-- output 2, updated 2, total 2; 2, 3 -> (2,2) (3,2) (4,1), output 3, updated 3,
-- total 4.  Complete: the same, but batch 1 outputs all 4 rows.
------------------------------------------------------------------------------
CREATE TABLE sa_sm (x int);
CREATE TABLE sa_sm_u WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT value, count(*) AS count FROM sa_sm, LATERAL unnest(ARRAY[x, x + 1]) AS value GROUP BY value WITH NO DATA;
CREATE TABLE sa_sm_c WITH (cq.output_mode = 'complete', cq.trigger = 'available_now')
  AS SELECT value, count(*) AS count FROM sa_sm, LATERAL unnest(ARRAY[x, x + 1]) AS value GROUP BY value WITH NO DATA;
INSERT INTO sa_sm VALUES (1);
SELECT sp_step('sa_sm_u'), sp_step('sa_sm_c');
INSERT INTO sa_sm VALUES (2), (3);
SELECT sp_step('sa_sm_u'), sp_step('sa_sm_c');
SELECT * FROM sa_sm_c ORDER BY value;
SELECT name, batch_id, input, output, total, updated FROM sp_batches WHERE name LIKE 'sa_sm%' ORDER BY 1, 2;

------------------------------------------------------------------------------
-- StreamingAggregationSuite "SPARK-21977: coalesce(1) with 0 partition RDD
-- should be repartitioned to 1": groupBy().count() in complete mode: 1 -> 1;
-- an empty trigger -> 1 (pg_cq runs no batch: the target keeps 1); 2, 3 -> 3.
-- Over no rows at all the count is 0 (the plain query's answer).
------------------------------------------------------------------------------
CREATE TABLE sa_ga (v int);
CREATE TABLE sa_ga_c WITH (cq.output_mode = 'complete', cq.trigger = 'available_now')
  AS SELECT count(*) AS count FROM sa_ga WITH NO DATA;
CREATE TABLE sa_ga_u WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT count(*) AS count FROM sa_ga WITH NO DATA;
CALL cq.run('sa_ga_c');
SELECT * FROM sa_ga_c;
INSERT INTO sa_ga VALUES (1);
CALL cq.run('sa_ga_c');
CALL cq.run('sa_ga_u');
SELECT c.count AS complete, u.count AS update FROM sa_ga_c c, sa_ga_u u;
CALL cq.run('sa_ga_c');
SELECT * FROM sa_ga_c;
INSERT INTO sa_ga VALUES (2), (3);
CALL cq.run('sa_ga_c');
CALL cq.run('sa_ga_u');
SELECT c.count AS complete, u.count AS update FROM sa_ga_c c, sa_ga_u u;
SELECT name, batch_id, input, output FROM sp_batches WHERE name LIKE 'sa_ga%' ORDER BY 1, 2;

------------------------------------------------------------------------------
-- StreamingAggregationSuite "SPARK-19690: do not convert batch aggregation in
-- streaming query to streaming": the stream joined with an aggregation of a
-- static table; each batch 0, 1, 2, 3 -> (0,0,2) (1,1,3)
------------------------------------------------------------------------------
CREATE TABLE sa_19690 (value int);
CREATE TABLE sa_19690_static (value int);
INSERT INTO sa_19690_static VALUES (1), (2), (3), (4), (5);
CREATE TABLE sa_19690_j WITH (cq.source = 'sa_19690', cq.trigger = 'available_now')
  AS SELECT s.value, b.parity, b.joinvalue
       FROM sa_19690 s
       JOIN (SELECT value % 2 AS parity, count(*) AS joinvalue FROM sa_19690_static GROUP BY 1) b
         ON s.value = b.parity WITH NO DATA;
INSERT INTO sa_19690 VALUES (0), (1), (2), (3);
SELECT sp_step('sa_19690_j');
INSERT INTO sa_19690 VALUES (0), (1), (2), (3);
SELECT sp_step('sa_19690_j');

------------------------------------------------------------------------------
-- StreamingAggregationSuite "state metrics - append mode" and
-- EventTimeWatermarkSuite "event time and watermark metrics": 5-second windows,
-- 10-second delay, output (window start, count).
--   batch 0: 15            -> nothing; updated 1, total 1; event time 15/15/15
--   batch 1: no data (W 5) -> nothing; updated 0, total 1
--   batch 2: 10, 12, 14    -> nothing; updated 1, total 2; 10/14/12, W 5
--   batch 3: 25            -> nothing; updated 1, total 3; 25/25/25, W 5
--   batch 4: no data (W 15)-> (10, 3); output 1, updated 0, total 2
-- then 10, 12, 14 again: late ([10, 15) ended at 15 <= W), dropped as one
-- partial aggregate (Spark counts after the partial aggregation).
-- Spark shows the watermark of batch 0 as 1970-01-01 (its initial value 0);
-- pg_cq's starts at -infinity (SPEC §4) and shows NULL until there is one.
------------------------------------------------------------------------------
CREATE TABLE ew_m (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE ew_m_a
  WITH (cq.output_mode = 'append', cq.trigger = 'available_now', cq.event_time = 'ts', cq.watermark = '10 seconds')
  AS SELECT extract(epoch FROM w.window_start)::int AS start, count(*) AS count
       FROM ew_m, LATERAL cq.window(ts, '5 seconds') AS w
      GROUP BY w.window_start, w.window_end WITH NO DATA;
INSERT INTO ew_m VALUES (15);
SELECT sp_step('ew_m_a');
INSERT INTO ew_m VALUES (10), (12), (14);
SELECT sp_step('ew_m_a');
INSERT INTO ew_m VALUES (25);
SELECT sp_step('ew_m_a');
INSERT INTO ew_m VALUES (10), (12), (14);
SELECT sp_step('ew_m_a');
SELECT b.batch_id, b.input, b.wm, b.output, b.total, b.updated, b.removed, b.dropped,
       extract(epoch FROM p.event_time_min)::int AS min, extract(epoch FROM p.event_time_max)::int AS max,
       extract(epoch FROM p.event_time_avg)::int AS avg
  FROM sp_batches b JOIN cq.progress p USING (name, batch_id)
 WHERE name = 'ew_m_a' ORDER BY 1;

------------------------------------------------------------------------------
-- EventTimeWatermarkSuite "complete mode": no eviction, no late rows.
-- 10, 11, 12 -> (10,3); 25 -> (10,3) (25,1); 25 -> (10,3) (25,2);
-- 10 -> (10,4) (25,2); 25 -> (10,4) (25,3)
------------------------------------------------------------------------------
CREATE TABLE ew_c (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE ew_c_c
  WITH (cq.output_mode = 'complete', cq.trigger = 'available_now', cq.event_time = 'ts', cq.watermark = '10 seconds')
  AS SELECT extract(epoch FROM w.window_start)::int AS start, count(*) AS count
       FROM ew_c, LATERAL cq.window(ts, '5 seconds') AS w
      GROUP BY w.window_start WITH NO DATA;
CREATE PROCEDURE ew_c_add(VARIADIC vs int[]) LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ew_c SELECT unnest(vs);
  COMMIT;
  CALL cq.run('ew_c_c');
END $$;
CALL ew_c_add(10, 11, 12);
SELECT string_agg(format('(%s,%s)', start, count), ' ' ORDER BY start) FROM ew_c_c;
CALL ew_c_add(25);
SELECT string_agg(format('(%s,%s)', start, count), ' ' ORDER BY start) FROM ew_c_c;
CALL ew_c_add(25);
SELECT string_agg(format('(%s,%s)', start, count), ' ' ORDER BY start) FROM ew_c_c;
CALL ew_c_add(10);
SELECT string_agg(format('(%s,%s)', start, count), ' ' ORDER BY start) FROM ew_c_c;
CALL ew_c_add(25);
SELECT string_agg(format('(%s,%s)', start, count), ' ' ORDER BY start) FROM ew_c_c;
SELECT batch_id, input, wm, output, dropped FROM sp_batches WHERE name = 'ew_c_c' ORDER BY 1;

------------------------------------------------------------------------------
-- EventTimeWatermarkSuite "delay threshold should not be negative."
------------------------------------------------------------------------------
CREATE TABLE ew_neg WITH (cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '-1 seconds')
  AS SELECT ts, count(*) FROM ew_c GROUP BY ts;
CREATE TABLE ew_neg WITH (cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '1 month -40 days')
  AS SELECT ts, count(*) FROM ew_c GROUP BY ts;
CREATE TABLE ew_neg WITH (cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '1 year -13 months')
  AS SELECT ts, count(*) FROM ew_c GROUP BY ts;
CREATE TABLE ew_neg WITH (cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '-1 year')
  AS SELECT ts, count(*) FROM ew_c GROUP BY ts;

------------------------------------------------------------------------------
-- EventTimeWatermarkSuite "event time and watermark metrics with Trigger.Once
-- (SPARK-24699)": CALL cq.run(..., once => true) runs one batch and no
-- no-data batch, so a watermark closes windows one run later.
--   15 -> nothing (W -); 10, 12, 14 -> nothing (W 5); 25 -> nothing (W 5);
--   50 -> (10,3) (W 15); 50 -> (15,1) (25,1) (W 40)
------------------------------------------------------------------------------
CREATE TABLE ew_o (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE ew_o_a
  WITH (cq.output_mode = 'append', cq.trigger = 'available_now', cq.event_time = 'ts', cq.watermark = '10 seconds')
  AS SELECT extract(epoch FROM w.window_start)::int AS start, count(*) AS count
       FROM ew_o, LATERAL cq.window(ts, '5 seconds') AS w
      GROUP BY w.window_start, w.window_end WITH NO DATA;
CREATE PROCEDURE ew_o_once(VARIADIC vs int[]) LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ew_o SELECT unnest(vs);
  COMMIT;
  CALL cq.run('ew_o_a', once => true);
END $$;
CALL ew_o_once(15);
CALL ew_o_once(10, 12, 14);
CALL ew_o_once(25);
SELECT sp_step('ew_o_a', run => false);
CALL ew_o_once(50);
SELECT sp_step('ew_o_a', run => false);
CALL ew_o_once(50);
SELECT sp_step('ew_o_a', run => false);
SELECT b.batch_id, b.input, b.wm, b.output, extract(epoch FROM p.event_time_max)::int AS max
  FROM sp_batches b JOIN cq.progress p USING (name, batch_id) WHERE name = 'ew_o_a' ORDER BY 1;

------------------------------------------------------------------------------
-- The watermark's equality cases (SPEC §4: late and final at <= W), with a
-- zero delay (spark-semantics.md §9.6: a zero delay drops a row with the
-- timestamp of the last batch's maximum) and grouping by the event time
-- itself (EventTimeWatermarkSuite "group by on raw timestamp").
-- 10, 10 -> (10,2), W 10; 10, 11 -> 10 is late (10 <= 10), (11,1), W 11
------------------------------------------------------------------------------
CREATE TABLE ew_z (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE ew_z_u
  WITH (cq.output_mode = 'update', cq.trigger = 'available_now', cq.event_time = 'ts', cq.watermark = '0 seconds')
  AS SELECT ts, count(*) AS count FROM ew_z GROUP BY ts WITH NO DATA;
CREATE TABLE ew_z_a
  WITH (cq.output_mode = 'append', cq.trigger = 'available_now', cq.event_time = 'ts', cq.watermark = '0 seconds')
  AS SELECT ts, count(*) AS count FROM ew_z GROUP BY ts WITH NO DATA;
INSERT INTO ew_z VALUES (10), (10);
SELECT sp_step('ew_z_u'), sp_step('ew_z_a');
INSERT INTO ew_z VALUES (10), (11);
SELECT sp_step('ew_z_u'), sp_step('ew_z_a');
SELECT name, batch_id, input, wm, output, dropped FROM sp_batches WHERE name LIKE 'ew_z%' ORDER BY 1, 2;

------------------------------------------------------------------------------
-- Sliding windows with an offset (Spark's window(ts, "10 seconds", "5 seconds",
-- "2 seconds")), append, delay 5 s: windows start at 2 + 5k; a window is written
-- once W reaches its end, a row whose window ended at or before W is late
-- for that window only (12 is late for [2, 12) at W 12, and counts in [7, 17)).
------------------------------------------------------------------------------
CREATE TABLE ew_s (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE ew_s_a
  WITH (cq.output_mode = 'append', cq.trigger = 'available_now', cq.event_time = 'ts', cq.watermark = '5 seconds')
  AS SELECT extract(epoch FROM w.window_start)::int AS s, extract(epoch FROM w.window_end)::int AS e, count(*) AS n
       FROM ew_s, LATERAL cq.window(ts, '10 seconds', '5 seconds', to_timestamp(2)) AS w
      GROUP BY w.window_start, w.window_end WITH NO DATA;
INSERT INTO ew_s VALUES (3), (7), (12);
SELECT sp_step('ew_s_a');
INSERT INTO ew_s VALUES (17);
SELECT sp_step('ew_s_a');
INSERT INTO ew_s VALUES (11), (12), (30);
SELECT sp_step('ew_s_a');
SELECT batch_id, input, wm, output, dropped FROM sp_batches WHERE name = 'ew_s_a' ORDER BY 1;

------------------------------------------------------------------------------
-- Session windows at the watermark's equality (Spark's
-- SessionWindowStateStoreRestoreExec filters a row on its own session's end,
-- late at <= W): gap 10 s, delay 5 s.  a@20 -> W 15; then b@5 (session
-- [5, 15), ends at W: late, dropped) and c@6 ([6, 16): kept).
------------------------------------------------------------------------------
CREATE TABLE ss_in (k text, value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE ss_u
  WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '5 seconds')
  AS SELECT k, s.session_start, s.session_end, count(*) AS n
       FROM ss_in, LATERAL cq.session_window(ts, interval '10 seconds') AS s
      GROUP BY k, s.session_start, s.session_end WITH NO DATA;
INSERT INTO ss_in VALUES ('a', 20);
CALL cq.run('ss_u');
INSERT INTO ss_in VALUES ('b', 5), ('c', 6);
CALL cq.run('ss_u');
SELECT k, extract(epoch FROM session_start)::int AS s, extract(epoch FROM session_end)::int AS e, n FROM ss_u ORDER BY k;
SELECT batch_id, input, wm, output, dropped FROM sp_batches WHERE name = 'ss_u' ORDER BY 1;

------------------------------------------------------------------------------
-- StreamingDeduplicationSuite "deduplicate with all columns": a -> a (total 1,
-- updated 1); a -> nothing (1, 0); a, b -> b (2, 1).  NULL is a value like any
-- other (two NULLs -> one row).
------------------------------------------------------------------------------
CREATE TABLE dd_all (value text);
CREATE TABLE dd_all_a WITH (cq.trigger = 'available_now') AS SELECT DISTINCT value FROM dd_all WITH NO DATA;
INSERT INTO dd_all VALUES ('a');
SELECT sp_step('dd_all_a');
INSERT INTO dd_all VALUES ('a');
SELECT sp_step('dd_all_a');
INSERT INTO dd_all VALUES ('a'), ('b');
SELECT sp_step('dd_all_a');
INSERT INTO dd_all VALUES (NULL), (NULL);
SELECT sp_step('dd_all_a');
INSERT INTO dd_all VALUES (NULL);
SELECT sp_step('dd_all_a');
SELECT batch_id, input, output, total, updated FROM sp_batches WHERE name = 'dd_all_a' ORDER BY 1;

------------------------------------------------------------------------------
-- StreamingDeduplicationSuite "deduplicate with some columns": dropDuplicates("_1"):
-- (a,1) -> (a,1); (a,2) -> nothing; (b,1) -> (b,1)
------------------------------------------------------------------------------
CREATE TABLE dd_some (_1 text, _2 int);
CREATE TABLE dd_some_a WITH (cq.trigger = 'available_now') AS SELECT DISTINCT ON (_1) _1, _2 FROM dd_some WITH NO DATA;
INSERT INTO dd_some VALUES ('a', 1);
SELECT sp_step('dd_some_a');
INSERT INTO dd_some VALUES ('a', 2);
SELECT sp_step('dd_some_a');
INSERT INTO dd_some VALUES ('b', 1);
SELECT sp_step('dd_some_a');
SELECT batch_id, input, output, total, updated FROM sp_batches WHERE name = 'dd_some_a' ORDER BY 1;

------------------------------------------------------------------------------
-- StreamingDeduplicationSuite "deduplicate with watermark": the event time is
-- the key, delay 10 s.  (10..15) x 5 -> 10..15; 25 -> 25; 10 -> nothing (late,
-- dropped 1); 45 -> 45.  Outputs as Spark's.  Deliberate difference: pg_cq's
-- deduplication with a watermark is dropDuplicatesWithinWatermark (SPEC §2), a
-- key leaves the state when W reaches its event time + the delay, so the state
-- holds 7 keys where Spark's dropDuplicates holds 1 after W 15 (a duplicate
-- of an evicted key is late either way: the outputs are the same).
------------------------------------------------------------------------------
CREATE TABLE dd_wm (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE dd_wm_a WITH (cq.trigger = 'available_now', cq.event_time = 'ts', cq.watermark = '10 seconds')
  AS SELECT DISTINCT value FROM dd_wm WITH NO DATA;
INSERT INTO dd_wm SELECT v FROM generate_series(1, 5), generate_series(10, 15) AS v;
SELECT sp_step('dd_wm_a');
INSERT INTO dd_wm VALUES (25);
SELECT sp_step('dd_wm_a');
INSERT INTO dd_wm VALUES (10);
SELECT sp_step('dd_wm_a');
INSERT INTO dd_wm VALUES (45);
SELECT sp_step('dd_wm_a');
SELECT batch_id, input, wm, output, total, updated, removed, dropped FROM sp_batches WHERE name = 'dd_wm_a' ORDER BY 1;

------------------------------------------------------------------------------
-- StreamingDeduplicationSuite "SPARK-19841: watermarkPredicate should filter
-- based on keys": dropDuplicates("id", "time"), delay 1 s, output id.
-- (1,1) (1,1) (1,2) -> 1, 2; (1,1) (2,3) (2,4) -> 3, 4;
-- (1,0) (1,1) (3,5) (3,6) -> 5, 6 (the rows at 1 are late); (1,0) (4,7) -> 7
------------------------------------------------------------------------------
CREATE TABLE dd_19841 (time int, id int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(time)) STORED);
CREATE TABLE dd_19841_a WITH (cq.trigger = 'available_now', cq.event_time = 'ts', cq.watermark = '1 second')
  AS SELECT DISTINCT ON (id, ts) id FROM dd_19841 WITH NO DATA;
INSERT INTO dd_19841 VALUES (1, 1), (1, 1), (1, 2);
SELECT sp_step('dd_19841_a');
INSERT INTO dd_19841 VALUES (1, 1), (2, 3), (2, 4);
SELECT sp_step('dd_19841_a');
INSERT INTO dd_19841 VALUES (1, 0), (1, 1), (3, 5), (3, 6);
SELECT sp_step('dd_19841_a');
INSERT INTO dd_19841 VALUES (1, 0), (4, 7);
SELECT sp_step('dd_19841_a');

------------------------------------------------------------------------------
-- StreamingDeduplicationSuite "SPARK-21546: dropDuplicates should ignore
-- watermark when it's not a key": dropDuplicates("id"), delay 1 s:
-- (1,1) (1,2) (2,2) -> (1,1) (2,2)
------------------------------------------------------------------------------
CREATE TABLE dd_21546 (id int, time int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(time)) STORED);
CREATE TABLE dd_21546_a WITH (cq.trigger = 'available_now', cq.event_time = 'ts', cq.watermark = '1 second')
  AS SELECT DISTINCT ON (id) id, time FROM dd_21546 WITH NO DATA;
INSERT INTO dd_21546 VALUES (1, 1), (1, 2), (2, 2);
SELECT sp_step('dd_21546_a');

------------------------------------------------------------------------------
-- StreamingJoinSuite "stream stream inner join on non-time column": no
-- watermark (a WARNING: state grows without bound), every row kept.
-- 1 | -> nothing; | 1, 10 -> (1,2,3); 10 | -> (10,20,30); | 1 -> (1,2,3);
-- 1 | -> (1,2,3) (1,2,3); 100 | 100 -> (100,200,300)
------------------------------------------------------------------------------
CREATE TABLE sj_l (value int);
CREATE TABLE sj_r (value int);
CREATE TABLE sj_nt WITH (cq.trigger = 'available_now', cq.source = 'sj_l, sj_r')
  AS SELECT l.value AS key, l.value * 2 AS leftvalue, r.value * 3 AS rightvalue
       FROM sj_l l JOIN sj_r r ON l.value = r.value WITH NO DATA;
INSERT INTO sj_l VALUES (1);
SELECT sp_step('sj_nt');
INSERT INTO sj_r VALUES (1), (10);
SELECT sp_step('sj_nt');
INSERT INTO sj_l VALUES (10);
SELECT sp_step('sj_nt');
INSERT INTO sj_r VALUES (1);
SELECT sp_step('sj_nt');
INSERT INTO sj_l VALUES (1);
SELECT sp_step('sj_nt');
INSERT INTO sj_l VALUES (100);
INSERT INTO sj_r VALUES (100);
SELECT sp_step('sj_nt');

------------------------------------------------------------------------------
-- StreamingJoinSuite "stream stream inner join on windows - without watermark":
-- key and 10-second window equal (date_bin), output (key, window end, 2v, 3v).
-- 1 | -> nothing; | 1 -> (1,10,2,3); | 25 -> nothing; 25 | -> (25,30,50,75);
-- 1 | -> (1,10,2,3) (no watermark: the old rows stay); 5 | -> nothing;
-- | 5 -> (5,10,10,15)
------------------------------------------------------------------------------
CREATE TABLE sj_wl (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE sj_wr (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE sj_w WITH (cq.trigger = 'available_now', cq.source = 'sj_wl, sj_wr')
  AS SELECT l.value AS key, extract(epoch FROM date_bin('10 seconds', l.ts, 'epoch') + interval '10 seconds')::int AS wend,
            l.value * 2 AS leftvalue, r.value * 3 AS rightvalue
       FROM sj_wl l JOIN sj_wr r
         ON l.value = r.value AND date_bin('10 seconds', l.ts, 'epoch') = date_bin('10 seconds', r.ts, 'epoch')
     WITH NO DATA;
INSERT INTO sj_wl VALUES (1);
SELECT sp_step('sj_w');
INSERT INTO sj_wr VALUES (1);
SELECT sp_step('sj_w');
INSERT INTO sj_wr VALUES (25);
SELECT sp_step('sj_w');
INSERT INTO sj_wl VALUES (25);
SELECT sp_step('sj_w');
INSERT INTO sj_wl VALUES (1);
SELECT sp_step('sj_w');
INSERT INTO sj_wl VALUES (5);
SELECT sp_step('sj_w');
INSERT INTO sj_wr VALUES (5);
SELECT sp_step('sj_w');

------------------------------------------------------------------------------
-- StreamingOuterJoinSuite "left outer early state exclusion on left", with the
-- windows replaced by a range condition (pg_cq needs one to bound an outer
-- join): leftKey = rightKey AND leftValue > 4 AND rightTime within 5 s of
-- leftTime, delays 10 s.  1, 2, 3 | 3, 4, 5 -> (3,3,6,'9');  left rows 1 and 2
-- fail the left-only condition and can never match.  Deliberate difference:
-- Spark writes their NULL-extended rows at once; pg_cq writes a preserved
-- row's NULL row when the watermark evicts it (semantics.md, "Outer joins"),
-- here with the no-data batch of W 10.  20 | 21 -> nothing more; | 20 -> (20,...)
------------------------------------------------------------------------------
CREATE TABLE so_l (key int, t int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(t)) STORED);
CREATE TABLE so_r (key int, t int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(t)) STORED);
CREATE TABLE so_ex
  WITH (cq.trigger = 'available_now', cq.source = 'so_l, so_r', cq.event_time = 'so_l.ts, so_r.ts', cq.watermark = '10 seconds')
  AS SELECT l.key, l.t AS lt, l.key * 2 AS leftvalue, (r.key * 3)::text AS rightvalue
       FROM so_l l LEFT JOIN so_r r
         ON l.key = r.key AND l.key * 2 > 4
        AND r.ts BETWEEN l.ts - interval '5 seconds' AND l.ts + interval '5 seconds' WITH NO DATA;
INSERT INTO so_l (key, t) VALUES (1, 1), (2, 2), (3, 3);
INSERT INTO so_r (key, t) VALUES (3, 3), (4, 4), (5, 5);
SELECT sp_step('so_ex');
INSERT INTO so_l (key, t) VALUES (20, 20);
INSERT INTO so_r (key, t) VALUES (21, 21);
SELECT sp_step('so_ex');
INSERT INTO so_r (key, t) VALUES (20, 20);
SELECT sp_step('so_ex');
SELECT batch_id, input, wm, output, total, dropped FROM sp_batches WHERE name = 'so_ex' ORDER BY 1;

------------------------------------------------------------------------------
-- Aggregates over NULLs (the plain query's answers; Spark's are the same):
-- count(*) counts rows, count(v) non-NULL values; sum, avg, min and max of no
-- non-NULL value are NULL, also when a FILTER empties the group; NULL is a key.
------------------------------------------------------------------------------
CREATE TABLE ag_n (k int, v int);
CREATE TABLE ag_n_u WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT k, count(*) AS c_all, count(v) AS c_v, sum(v) AS s, avg(v) AS a,
            avg(v) FILTER (WHERE v > 100) AS a_f, min(v) AS mn, max(v) AS mx
       FROM ag_n GROUP BY k WITH NO DATA;
INSERT INTO ag_n VALUES (1, NULL), (NULL, NULL), (NULL, 2);
SELECT sp_step('ag_n_u');
INSERT INTO ag_n VALUES (1, 4), (NULL, NULL);
SELECT sp_step('ag_n_u');

------------------------------------------------------------------------------
-- Update mode writes the rows whose value changed (SPEC §3), not every key a
-- batch touched: (a,5) (b,1) -> both; (a,3) -> max(a) stays 5: no row written
-- (Spark's update mode would write (a,5) again; num_output_rows 0 here, 1 in
-- Spark), while the state row was updated.
------------------------------------------------------------------------------
CREATE TABLE up_c (k text, v int);
CREATE TABLE up_c_u WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT k, max(v) AS m FROM up_c GROUP BY k WITH NO DATA;
INSERT INTO up_c VALUES ('a', 5), ('b', 1);
SELECT sp_step('up_c_u');
INSERT INTO up_c VALUES ('a', 3);
SELECT sp_step('up_c_u');
SELECT batch_id, input, output, total, updated FROM sp_batches WHERE name = 'up_c_u' ORDER BY 1;

------------------------------------------------------------------------------
-- Spark's window in the join keys of two streams: ON key = key AND
-- date_bin(s, l.ts, o) = date_bin(s, r.ts, o) (Spark's window(ts, s) equal on
-- both sides) bounds both buffers: a row whose bin ends at or before W can
-- match no future row; it is evicted, and an outer join's unmatched row is
-- written with NULLs then.  setupWindowedJoin: key = value, time = value
-- seconds, leftValue = 2 value, rightValue = 3 value, delays 10 s, 10-second
-- windows; output (key, window end, leftValue, rightValue).
-- StreamingOuterJoinSuite "windowed left outer join":
--   1..5 | 3..7 -> (3,10,6,9) (4,10,8,12) (5,10,10,15)
--   21 | 22 (W 11: [0, 10) ends before) -> (1,10,2,) (2,10,4,); 2 rows buffered
--   22 | -> (22,30,44,66); 3 rows buffered
-- "windowed right outer join": the same with (6,10,,18) (7,10,,21).
------------------------------------------------------------------------------
CREATE TABLE sw_l (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE sw_r (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE sw_left
  WITH (cq.trigger = 'available_now', cq.source = 'sw_l, sw_r', cq.event_time = 'sw_l.ts, sw_r.ts', cq.watermark = '10 seconds')
  AS SELECT l.value AS key, extract(epoch FROM date_bin('10 seconds', l.ts, 'epoch') + interval '10 seconds')::int AS wend,
            l.value * 2 AS leftvalue, r.value * 3 AS rightvalue
       FROM sw_l l LEFT JOIN sw_r r
         ON l.value = r.value AND date_bin('10 seconds', l.ts, 'epoch') = date_bin('10 seconds', r.ts, 'epoch')
     WITH NO DATA;
CREATE TABLE sw_right
  WITH (cq.trigger = 'available_now', cq.source = 'sw_l, sw_r', cq.event_time = 'sw_l.ts, sw_r.ts', cq.watermark = '10 seconds')
  AS SELECT r.value AS key, extract(epoch FROM date_bin('10 seconds', r.ts, 'epoch') + interval '10 seconds')::int AS wend,
            l.value * 2 AS leftvalue, r.value * 3 AS rightvalue
       FROM sw_l l RIGHT JOIN sw_r r
         ON l.value = r.value AND date_bin('10 seconds', l.ts, 'epoch') = date_bin('10 seconds', r.ts, 'epoch')
     WITH NO DATA;
INSERT INTO sw_l VALUES (1), (2), (3), (4), (5);
INSERT INTO sw_r VALUES (3), (4), (5), (6), (7);
SELECT sp_step('sw_left'), sp_step('sw_right');
INSERT INTO sw_l VALUES (21);
INSERT INTO sw_r VALUES (22);
SELECT sp_step('sw_left'), sp_step('sw_right');
INSERT INTO sw_l VALUES (22);
SELECT sp_step('sw_left'), sp_step('sw_right');
SELECT name, batch_id, input, wm, output, total, removed FROM sp_batches WHERE name IN ('sw_left', 'sw_right') ORDER BY 1, 2;
-- the inner join with the same condition evicts by the bins too (no WARNING):
-- after W 11 only the rows of [20, 30) stay; a late row (<= W) is dropped
CREATE TABLE sw_inner
  WITH (cq.trigger = 'available_now', cq.source = 'sw_l, sw_r', cq.event_time = 'sw_l.ts, sw_r.ts', cq.watermark = '10 seconds')
  AS SELECT l.value AS key, l.value * 2 AS leftvalue, r.value * 3 AS rightvalue
       FROM sw_l l JOIN sw_r r
         ON l.value = r.value AND date_bin('10 seconds', l.ts, 'epoch') = date_bin('10 seconds', r.ts, 'epoch');
SELECT * FROM sw_inner ORDER BY key;
SELECT num_state_rows_per_source FROM cq.progress WHERE name = 'sw_inner' ORDER BY batch_id DESC LIMIT 1;
INSERT INTO sw_r VALUES (5), (21);
SELECT sp_step('sw_inner');
SELECT batch_id, input, wm, output, total, dropped FROM sp_batches WHERE name = 'sw_inner' ORDER BY 1;
-- bins of different strides or origins bound nothing: refused for an outer join
CREATE TABLE sw_bad
  WITH (cq.trigger = 'available_now', cq.source = 'sw_l, sw_r', cq.event_time = 'sw_l.ts, sw_r.ts', cq.watermark = '10 seconds')
  AS SELECT l.value FROM sw_l l LEFT JOIN sw_r r
         ON l.value = r.value AND date_bin('10 seconds', l.ts, 'epoch') = date_bin('10 seconds', r.ts, to_timestamp(5));

------------------------------------------------------------------------------
-- StreamingOuterJoinSuite "left outer join with non-key condition violated":
-- windows as above, delays 10 s, ON key = key AND window = window AND
-- leftValue > 10 AND (rightValue < 300 OR rightValue > 1000).
-- Deliberate difference in timing: Spark writes the NULL rows of left rows
-- that fail the left-only condition (1, 2, 3) at once; pg_cq writes a
-- preserved row's NULL row when the watermark evicts it (here W 10 after
-- 20 | 21), one step later.  Every other step is Spark's:
--   20 | -> (20,30,40,60); 40, 41 | 40, 41 -> (40,50,80,120) (41,50,82,123);
--   70 | 71 -> nothing; | 70 -> (70,80,140,210); 101..103 | 101..103 ->
--   nothing; 1000 | 1001 -> (101,110,202,) (102,110,204,) (103,110,206,)
------------------------------------------------------------------------------
CREATE TABLE sn_l (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE sn_r (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE sn_left
  WITH (cq.trigger = 'available_now', cq.source = 'sn_l, sn_r', cq.event_time = 'sn_l.ts, sn_r.ts', cq.watermark = '10 seconds')
  AS SELECT l.value AS key, extract(epoch FROM date_bin('10 seconds', l.ts, 'epoch') + interval '10 seconds')::int AS wend,
            l.value * 2 AS leftvalue, r.value * 3 AS rightvalue
       FROM sn_l l LEFT JOIN sn_r r
         ON l.value = r.value AND date_bin('10 seconds', l.ts, 'epoch') = date_bin('10 seconds', r.ts, 'epoch')
        AND l.value * 2 > 10 AND (r.value * 3 < 300 OR r.value * 3 > 1000)
     WITH NO DATA;
CREATE PROCEDURE sn_add(l int[], r int[]) LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO sn_l SELECT unnest(l);
  INSERT INTO sn_r SELECT unnest(r);
  COMMIT;
END $$;
CALL sn_add('{1,2,3}', '{1,2,3}');
SELECT sp_step('sn_left');
CALL sn_add('{20}', '{21}');
SELECT sp_step('sn_left');
CALL sn_add('{}', '{20}');
SELECT sp_step('sn_left');
CALL sn_add('{40,41}', '{40,41}');
SELECT sp_step('sn_left');
CALL sn_add('{70}', '{71}');
SELECT sp_step('sn_left');
CALL sn_add('{}', '{70}');
SELECT sp_step('sn_left');
CALL sn_add('{101,102,103}', '{101,102,103}');
SELECT sp_step('sn_left');
CALL sn_add('{1000}', '{1001}');
SELECT sp_step('sn_left');
SELECT batch_id, input, wm, output, total, removed FROM sp_batches WHERE name = 'sn_left' ORDER BY 1;

------------------------------------------------------------------------------
-- An aggregation over a join on equal windows (MultiStatefulOperatorsSuite's
-- rule, StreamingSymmetricHashJoinExec.produceOutputWatermark: with the
-- window in the join keys the join's output watermark is W itself, so a
-- window of the same grid closes as soon as W reaches its end).  Count per
-- key and 10-second window, delays 10 s:
--   a 1, 2 | b 3 (key 1) -> nothing; 30 | 30 (key 2), W 20 -> (1,0,2);
--   50 | 50, W 40 -> (2,30,1) at once (before: only at W 50)
------------------------------------------------------------------------------
CREATE TABLE wa_a (k int, ts timestamptz);
CREATE TABLE wa_b (k int, ts timestamptz);
CREATE TABLE wa_agg
  WITH (cq.trigger = 'available_now', cq.source = 'wa_a, wa_b', cq.event_time = 'wa_a.ts, wa_b.ts', cq.watermark = '10 seconds')
  AS SELECT a.k, extract(epoch FROM date_bin('10 seconds', a.ts, 'epoch'))::int AS wstart, count(*) AS n
       FROM wa_a a JOIN wa_b b
         ON a.k = b.k AND date_bin('10 seconds', a.ts, 'epoch') = date_bin('10 seconds', b.ts, 'epoch')
      GROUP BY a.k, date_bin('10 seconds', a.ts, 'epoch') WITH NO DATA;
INSERT INTO wa_a VALUES (1, to_timestamp(1)), (1, to_timestamp(2));
INSERT INTO wa_b VALUES (1, to_timestamp(3));
SELECT sp_step('wa_agg');
INSERT INTO wa_a VALUES (2, to_timestamp(30));
INSERT INTO wa_b VALUES (2, to_timestamp(30));
SELECT sp_step('wa_agg');
INSERT INTO wa_a VALUES (3, to_timestamp(50));
INSERT INTO wa_b VALUES (3, to_timestamp(50));
SELECT sp_step('wa_agg');
SELECT batch_id, input, wm, output, total, dropped FROM sp_batches WHERE name = 'wa_agg' ORDER BY 1;

RESET search_path;
DROP SCHEMA sp114 CASCADE;
SELECT count(*) AS queries_left FROM cq.queries WHERE target::text LIKE 'sp114.%';
