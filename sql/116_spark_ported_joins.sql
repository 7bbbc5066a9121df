-- Cases ported from Spark's stream-stream join suites, second round (session
-- 30): StreamingOuterJoinSuite, StreamingFullOuterJoinSuite,
-- StreamingLeftSemiJoinSuite and StreamingInnerJoinSuite cases that 50, 51
-- and 114 do not port.  Steps and conventions as in 114 and 115; Spark's
-- window(ts, "10 seconds") in the join keys is date_bin on both sides (114),
-- its self joins are two tables receiving the same rows (pg_cq refuses a
-- stream joined with itself), and MultiAddData is one transaction.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET timezone = 'UTC';
CREATE SCHEMA sp116;
SET search_path = sp116, public;

\i sql/include/spark_steps.sql

-- add rows to two streams in one transaction (Spark's MultiAddData)
CREATE PROCEDURE sp_multi(a regclass, b regclass, av int[], bv int[]) LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('INSERT INTO %s (value) SELECT unnest($1)', a) USING av;
  EXECUTE format('INSERT INTO %s (value) SELECT unnest($1)', b) USING bv;
END $$;

------------------------------------------------------------------------------
-- setupWindowedJoinWithRightCondition: key = value, time = value seconds,
-- leftValue = 2 value, rightValue = (3 value)::text, delays 10 s, ON key =
-- key AND window = window AND rightValue::int > 7; 10-second windows.
-- StreamingOuterJoinSuite "left outer early state exclusion on right":
--   3, 4, 5 | 1, 2, 3 -> (3,10,6,9); 20 | 21 (W 10) -> (4,10,8,) (5,10,10,);
--   | 20 -> (20,30,40,60)
-- "right outer early state exclusion on right" and StreamingFullOuterJoinSuite
-- "full outer early state exclusion on right": Spark writes the NULL rows of
-- the right rows that fail rightValue > 7 (1 and 2) in the first batch;
-- pg_cq when W evicts them (20 | 21), with the other NULL rows (deliberate
-- difference, semantics.md "How it maps to Spark").  Spark's steps, right:
--   (1,10,,3) (2,10,,6) (3,10,6,9); nothing; (20,30,40,60)
-- full (left key, end, value, right key, end, value):
--   (,,,1,10,3) (,,,2,10,6) (3,10,6,3,10,9); (4,10,8,,,) (5,10,10,,,);
--   (20,30,40,20,30,60)
------------------------------------------------------------------------------
CREATE TABLE wr_l (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE wr_r (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE wr_left
  WITH (cq.trigger = 'available_now', cq.source = 'wr_l, wr_r', cq.event_time = 'wr_l.ts, wr_r.ts', cq.watermark = '10 seconds')
  AS SELECT l.value AS key, extract(epoch FROM date_bin('10 seconds', l.ts, 'epoch') + interval '10 seconds')::int AS wend,
            l.value * 2 AS leftvalue, (r.value * 3)::text AS rightvalue
       FROM wr_l l LEFT JOIN wr_r r
         ON l.value = r.value AND date_bin('10 seconds', l.ts, 'epoch') = date_bin('10 seconds', r.ts, 'epoch')
        AND (r.value * 3)::text::int > 7 WITH NO DATA;
CREATE TABLE wr_right
  WITH (cq.trigger = 'available_now', cq.source = 'wr_l, wr_r', cq.event_time = 'wr_l.ts, wr_r.ts', cq.watermark = '10 seconds')
  AS SELECT r.value AS key, extract(epoch FROM date_bin('10 seconds', r.ts, 'epoch') + interval '10 seconds')::int AS wend,
            l.value * 2 AS leftvalue, (r.value * 3)::text AS rightvalue
       FROM wr_l l RIGHT JOIN wr_r r
         ON l.value = r.value AND date_bin('10 seconds', l.ts, 'epoch') = date_bin('10 seconds', r.ts, 'epoch')
        AND (r.value * 3)::text::int > 7 WITH NO DATA;
CREATE TABLE wr_full
  WITH (cq.trigger = 'available_now', cq.source = 'wr_l, wr_r', cq.event_time = 'wr_l.ts, wr_r.ts', cq.watermark = '10 seconds')
  AS SELECT l.value AS lkey, extract(epoch FROM date_bin('10 seconds', l.ts, 'epoch') + interval '10 seconds')::int AS lend,
            l.value * 2 AS leftvalue,
            r.value AS rkey, extract(epoch FROM date_bin('10 seconds', r.ts, 'epoch') + interval '10 seconds')::int AS rend,
            (r.value * 3)::text AS rightvalue
       FROM wr_l l FULL JOIN wr_r r
         ON l.value = r.value AND date_bin('10 seconds', l.ts, 'epoch') = date_bin('10 seconds', r.ts, 'epoch')
        AND (r.value * 3)::text::int > 7 WITH NO DATA;
CALL sp_multi('wr_l', 'wr_r', '{3,4,5}', '{1,2,3}');
SELECT sp_step('wr_left'), sp_step('wr_right'), sp_step('wr_full');
CALL sp_multi('wr_l', 'wr_r', '{20}', '{21}');
SELECT sp_step('wr_left'), sp_step('wr_right'), sp_step('wr_full');
CALL sp_multi('wr_l', 'wr_r', '{}', '{20}');
SELECT sp_step('wr_left'), sp_step('wr_right'), sp_step('wr_full');
SELECT name, batch_id, input, wm, output, total, removed FROM sp_batches WHERE name LIKE 'wr\_%' ORDER BY 1, 2;

------------------------------------------------------------------------------
-- setupWindowedJoinWithLeftCondition: the same with ON ... AND leftValue > 4.
-- StreamingOuterJoinSuite "right outer early state exclusion on left":
--   1, 2, 3 | 3, 4, 5 -> (3,10,6,9); 20 | 21 (W 10) -> (4,10,,12) (5,10,,15);
--   | 20 -> (20,30,40,60)
-- StreamingFullOuterJoinSuite "full outer early state exclusion on left"
-- (deliberate difference, as above: Spark writes (1,10,2,,,) (2,10,4,,,) in
-- the first batch): (1,10,2,,,) (2,10,4,,,) (3,10,6,3,10,9);
--   (,,,4,10,12) (,,,5,10,15); (20,30,40,20,30,60)
------------------------------------------------------------------------------
CREATE TABLE wl_l (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE wl_r (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE wl_right
  WITH (cq.trigger = 'available_now', cq.source = 'wl_l, wl_r', cq.event_time = 'wl_l.ts, wl_r.ts', cq.watermark = '10 seconds')
  AS SELECT r.value AS key, extract(epoch FROM date_bin('10 seconds', r.ts, 'epoch') + interval '10 seconds')::int AS wend,
            l.value * 2 AS leftvalue, (r.value * 3)::text AS rightvalue
       FROM wl_l l RIGHT JOIN wl_r r
         ON l.value = r.value AND date_bin('10 seconds', l.ts, 'epoch') = date_bin('10 seconds', r.ts, 'epoch')
        AND l.value * 2 > 4 WITH NO DATA;
CREATE TABLE wl_full
  WITH (cq.trigger = 'available_now', cq.source = 'wl_l, wl_r', cq.event_time = 'wl_l.ts, wl_r.ts', cq.watermark = '10 seconds')
  AS SELECT l.value AS lkey, extract(epoch FROM date_bin('10 seconds', l.ts, 'epoch') + interval '10 seconds')::int AS lend,
            l.value * 2 AS leftvalue,
            r.value AS rkey, extract(epoch FROM date_bin('10 seconds', r.ts, 'epoch') + interval '10 seconds')::int AS rend,
            (r.value * 3)::text AS rightvalue
       FROM wl_l l FULL JOIN wl_r r
         ON l.value = r.value AND date_bin('10 seconds', l.ts, 'epoch') = date_bin('10 seconds', r.ts, 'epoch')
        AND l.value * 2 > 4 WITH NO DATA;
CALL sp_multi('wl_l', 'wl_r', '{1,2,3}', '{3,4,5}');
SELECT sp_step('wl_right'), sp_step('wl_full');
CALL sp_multi('wl_l', 'wl_r', '{20}', '{21}');
SELECT sp_step('wl_right'), sp_step('wl_full');
CALL sp_multi('wl_l', 'wl_r', '{}', '{20}');
SELECT sp_step('wl_right'), sp_step('wl_full');

------------------------------------------------------------------------------
-- StreamingFullOuterJoinSuite "windowed full outer join": setupWindowedJoin
-- (ON key = key AND window = window), the key and window of Spark's USING
-- join are those of either side.
--   1..5 | 3..7 -> (3,10,6,9) (4,10,8,12) (5,10,10,15); 10 rows buffered
--   21 | 22 (W 11) -> (1,10,2,) (2,10,4,) (6,10,,18) (7,10,,21); 2 buffered
--   22 | -> (22,30,44,66); 3 buffered
--   1 | -> nothing (late: 1 <= W 12), 1 dropped; | 5 -> nothing, 1 dropped
------------------------------------------------------------------------------
CREATE TABLE wf_l (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE wf_r (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE wf_full
  WITH (cq.trigger = 'available_now', cq.source = 'wf_l, wf_r', cq.event_time = 'wf_l.ts, wf_r.ts', cq.watermark = '10 seconds')
  AS SELECT coalesce(l.value, r.value) AS key,
            extract(epoch FROM date_bin('10 seconds', coalesce(l.ts, r.ts), 'epoch') + interval '10 seconds')::int AS wend,
            l.value * 2 AS leftvalue, r.value * 3 AS rightvalue
       FROM wf_l l FULL JOIN wf_r r
         ON l.value = r.value AND date_bin('10 seconds', l.ts, 'epoch') = date_bin('10 seconds', r.ts, 'epoch')
     WITH NO DATA;
CALL sp_multi('wf_l', 'wf_r', '{1,2,3,4,5}', '{3,4,5,6,7}');
SELECT sp_step('wf_full');
CALL sp_multi('wf_l', 'wf_r', '{21}', '{22}');
SELECT sp_step('wf_full');
CALL sp_multi('wf_l', 'wf_r', '{22}', '{}');
SELECT sp_step('wf_full');
CALL sp_multi('wf_l', 'wf_r', '{1}', '{}');
SELECT sp_step('wf_full');
CALL sp_multi('wf_l', 'wf_r', '{}', '{5}');
SELECT sp_step('wf_full');
SELECT batch_id, input, wm, output, total, dropped FROM sp_batches WHERE name = 'wf_full' ORDER BY 1;

------------------------------------------------------------------------------
-- setupJoinWithRangeCondition: leftValue = 2 leftKey, rightValue = 3
-- rightKey, delays 10 s, leftKey = rightKey AND leftTime BETWEEN rightTime -
-- 5 s AND rightTime + 5 s; output (leftKey, rightKey, leftTime, rightTime).
-- StreamingFullOuterJoinSuite "full outer join with watermark range condition":
--   (1,5) (3,5) | -> nothing, 2 buffered; | (1,10) (2,5) -> (1,1,5,10), 4;
--   | (1,9) -> (1,1,5,9), 5; (1,7) (1,30) | -> (1,1,7,9) (1,1,7,10), 7;
--   | (0,30) (W 20) -> (3,,5,) (,2,,5), 2 buffered
------------------------------------------------------------------------------
CREATE TABLE rf_l (k int, t int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(t)) STORED);
CREATE TABLE rf_r (k int, t int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(t)) STORED);
CREATE TABLE rf_full
  WITH (cq.trigger = 'available_now', cq.source = 'rf_l, rf_r', cq.event_time = 'rf_l.ts, rf_r.ts', cq.watermark = '10 seconds')
  AS SELECT l.k AS leftkey, r.k AS rightkey, l.t AS lefttime, r.t AS righttime
       FROM rf_l l FULL JOIN rf_r r
         ON l.k = r.k AND l.ts BETWEEN r.ts - interval '5 seconds' AND r.ts + interval '5 seconds' WITH NO DATA;
INSERT INTO rf_l VALUES (1, 5), (3, 5);
SELECT sp_step('rf_full');
INSERT INTO rf_r VALUES (1, 10), (2, 5);
SELECT sp_step('rf_full');
INSERT INTO rf_r VALUES (1, 9);
SELECT sp_step('rf_full');
INSERT INTO rf_l VALUES (1, 7), (1, 30);
SELECT sp_step('rf_full');
INSERT INTO rf_r VALUES (0, 30);
SELECT sp_step('rf_full');
SELECT batch_id, input, wm, output, total FROM sp_batches WHERE name = 'rf_full' ORDER BY 1;

------------------------------------------------------------------------------
-- StreamingOuterJoinSuite "left outer with watermark range condition" and
-- "right outer ...", their second part: delays 10 minutes, bounds of 3 min
-- 30 s, spelled '3 minutes 30 seconds' and '3:30' MINUTE TO SECOND.
--   (1,210) (3,5) | -> nothing; | (1,300) (2,5) -> (1,1,210,300);
--   | (1,450) -> nothing, 5 buffered; (1,260) (1,1800) | -> (1,1,260,300)
--   (1,1,260,450), 7 buffered; | (0,1800) -> left (3,,5,), right (,2,,5),
--   2 buffered
------------------------------------------------------------------------------
CREATE TABLE rm_l (k int, t int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(t)) STORED);
CREATE TABLE rm_r (k int, t int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(t)) STORED);
CREATE TABLE rm_left
  WITH (cq.trigger = 'available_now', cq.source = 'rm_l, rm_r', cq.event_time = 'rm_l.ts, rm_r.ts', cq.watermark = '10 minutes')
  AS SELECT l.k AS leftkey, r.k AS rightkey, l.t AS lefttime, r.t AS righttime
       FROM rm_l l LEFT JOIN rm_r r
         ON l.k = r.k AND l.ts BETWEEN r.ts - interval '3 minutes 30 seconds' AND r.ts + interval '3 minutes 30 seconds'
     WITH NO DATA;
CREATE TABLE rm_right
  WITH (cq.trigger = 'available_now', cq.source = 'rm_l, rm_r', cq.event_time = 'rm_l.ts, rm_r.ts', cq.watermark = '10 minutes')
  AS SELECT l.k AS leftkey, r.k AS rightkey, l.t AS lefttime, r.t AS righttime
       FROM rm_l l RIGHT JOIN rm_r r
         ON l.k = r.k AND l.ts BETWEEN r.ts - interval '3:30' MINUTE TO SECOND AND r.ts + interval '3:30' MINUTE TO SECOND
     WITH NO DATA;
INSERT INTO rm_l VALUES (1, 210), (3, 5);
SELECT sp_step('rm_left'), sp_step('rm_right');
INSERT INTO rm_r VALUES (1, 300), (2, 5);
SELECT sp_step('rm_left'), sp_step('rm_right');
INSERT INTO rm_r VALUES (1, 450);
SELECT sp_step('rm_left'), sp_step('rm_right');
INSERT INTO rm_l VALUES (1, 260), (1, 1800);
SELECT sp_step('rm_left'), sp_step('rm_right');
INSERT INTO rm_r VALUES (0, 1800);
SELECT sp_step('rm_left'), sp_step('rm_right');
SELECT name, batch_id, input, output, total FROM sp_batches WHERE name IN ('rm_left', 'rm_right') ORDER BY 1, 2;

------------------------------------------------------------------------------
-- StreamingOuterJoinSuite "SPARK-26187 self left outer join should not return
-- outer nulls for already matched rows" and StreamingFullOuterJoinSuite "self
-- full outer join" (setupSelfJoin): one stream of (value, time), joined with
-- its even rows, delays 5 s, leftId = rightId AND rightTime >= leftTime AND
-- rightTime <= leftTime + 5 s; output (leftId, leftTime, rightId, rightTime).
--   1..5 -> (2,2,2,2) (4,4,4,4), 7 buffered;
--   6..10 -> (6,6,6,6) (8,8,8,8) (10,10,10,10), 13 buffered;
--   11..15 (W 9) -> (12,12,12,12) (14,14,14,14) (1,1,,) (3,3,,), 15 buffered
------------------------------------------------------------------------------
CREATE TABLE sf_l (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE sf_r (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE sf_left
  WITH (cq.trigger = 'available_now', cq.source = 'sf_l, sf_r', cq.event_time = 'sf_l.ts, sf_r.ts', cq.watermark = '5 seconds')
  AS SELECT l.value AS leftid, extract(epoch FROM l.ts)::int AS lefttime, r.value AS rightid, extract(epoch FROM r.ts)::int AS righttime
       FROM sf_l l LEFT JOIN sf_r r
         ON l.value = r.value AND r.ts >= l.ts AND r.ts <= l.ts + interval '5 seconds' WITH NO DATA;
CREATE TABLE sf_full
  WITH (cq.trigger = 'available_now', cq.source = 'sf_l, sf_r', cq.event_time = 'sf_l.ts, sf_r.ts', cq.watermark = '5 seconds')
  AS SELECT l.value AS leftid, extract(epoch FROM l.ts)::int AS lefttime, r.value AS rightid, extract(epoch FROM r.ts)::int AS righttime
       FROM sf_l l FULL JOIN sf_r r
         ON l.value = r.value AND r.ts >= l.ts AND r.ts <= l.ts + interval '5 seconds' WITH NO DATA;
CREATE PROCEDURE sf_add(lo int, hi int) LANGUAGE sql AS $$
  INSERT INTO sf_l SELECT generate_series(lo, hi);
  INSERT INTO sf_r SELECT v FROM generate_series(lo, hi) v WHERE v % 2 = 0 $$;
CALL sf_add(1, 5);
SELECT sp_step('sf_left'), sp_step('sf_full');
CALL sf_add(6, 10);
SELECT sp_step('sf_left'), sp_step('sf_full');
CALL sf_add(11, 15);
SELECT sp_step('sf_left'), sp_step('sf_full');
SELECT name, batch_id, input, wm, output, total FROM sp_batches WHERE name IN ('sf_left', 'sf_full') ORDER BY 1, 2;

------------------------------------------------------------------------------
-- StreamingOuterJoinSuite "SPARK-32148 stream-stream join regression on Spark
-- 3.0.0": left outer, delays 2 and 4 minutes, left.id = right.id AND
-- left.eventTime BETWEEN right.eventTime - 30 s AND right.eventTime + 30 s;
-- one batch of both streams writes the two matches and, with the no-data
-- batch of W 2020-01-02 00:58, the row without a partner.
------------------------------------------------------------------------------
CREATE TABLE rg_l (eventtime timestamptz, id text, comment text);
CREATE TABLE rg_r (eventtime timestamptz, id text, name text);
CREATE TABLE rg_left
  WITH (cq.trigger = 'available_now', cq.source = 'rg_l, rg_r', cq.event_time = 'rg_l.eventtime, rg_r.eventtime',
        cq.watermark = '2 minutes, 4 minutes')
  AS SELECT l.eventtime, l.id, l.comment, r.eventtime AS reventtime, r.id AS rid, r.name
       FROM rg_l l LEFT JOIN rg_r r
         ON l.id = r.id AND l.eventtime BETWEEN r.eventtime - interval '30 seconds' AND r.eventtime + interval '30 seconds'
     WITH NO DATA;
BEGIN;
INSERT INTO rg_l VALUES ('2020-01-01 00:00:00', 'abc', 'has no join partner'),
                        ('2020-01-02 00:00:00', 'abc', 'joined with A'),
                        ('2020-01-02 01:00:00', 'abc', 'joined with B');
INSERT INTO rg_r VALUES ('2020-01-02 00:00:10', 'abc', 'A'), ('2020-01-02 00:59:59', 'abc', 'B'),
                        ('2020-01-02 02:00:00', 'abc', 'C');
COMMIT;
CALL cq.run('rg_left');
SELECT * FROM rg_left ORDER BY eventtime;

------------------------------------------------------------------------------
-- MultiStatefulOperatorsSuite "join with range join on non-time intervals ->
-- window agg, append mode, shouldn't fail": delays 0, v1 >= start2 AND v1 <
-- end2 AND eventTime1 = start2, a count per 5-second window of eventTime1.
-- 1..4 | (1,2) (2,3) (3,4) (4,5) -> nothing (W 4: [0, 5) is open; Spark's
-- state: the window and no joined row, as pg_cq's after the no-data batch)
------------------------------------------------------------------------------
CREATE TABLE jr_a (value1 int, eventtime1 timestamptz GENERATED ALWAYS AS (to_timestamp(value1)) STORED);
CREATE TABLE jr_b (s int, e int, eventtime2start timestamptz GENERATED ALWAYS AS (to_timestamp(s)) STORED);
CREATE TABLE jr_agg
  WITH (cq.trigger = 'available_now', cq.source = 'jr_a, jr_b', cq.event_time = 'jr_a.eventtime1, jr_b.eventtime2start',
        cq.watermark = '0 seconds')
  AS SELECT extract(epoch FROM date_bin('5 seconds', a.eventtime1, 'epoch'))::int AS start, count(*) AS count
       FROM jr_a a JOIN jr_b b
         ON a.eventtime1 >= to_timestamp(b.s) AND a.eventtime1 < to_timestamp(b.e) AND a.eventtime1 = b.eventtime2start
      GROUP BY date_bin('5 seconds', a.eventtime1, 'epoch') WITH NO DATA;
INSERT INTO jr_a VALUES (1), (2), (3), (4);
INSERT INTO jr_b VALUES (1, 2), (2, 3), (3, 4), (4, 5);
SELECT sp_step('jr_agg');
SELECT b.batch_id, b.input, b.wm, b.output, b.total, p.num_state_rows_per_source AS buffered, b.dropped
  FROM sp_batches b JOIN cq.progress p USING (name, batch_id) WHERE name = 'jr_agg' ORDER BY 1;

------------------------------------------------------------------------------
-- What pg_cq refuses where Spark runs it (semantics.md, "Stream-stream joins"):
-- StreamingLeftSemiJoinSuite "windowed left semi join" (Spark: 1..5 | 3..7 ->
-- (3,10,6) (4,10,8) (5,10,10)): a semi join is an EXISTS or IN subquery;
-- StreamingInnerJoinSuite "stream stream self join" and "join between three
-- streams".
------------------------------------------------------------------------------
SET client_min_messages = notice;
CREATE TABLE ls_semi
  WITH (cq.trigger = 'available_now', cq.source = 'wf_l, wf_r', cq.event_time = 'wf_l.ts, wf_r.ts', cq.watermark = '10 seconds')
  AS SELECT l.value AS key, l.value * 2 AS leftvalue FROM wf_l l
      WHERE EXISTS (SELECT 1 FROM wf_r r WHERE r.value = l.value
                       AND date_bin('10 seconds', l.ts, 'epoch') = date_bin('10 seconds', r.ts, 'epoch'));
CREATE TABLE ls_semi
  WITH (cq.trigger = 'available_now', cq.source = 'wf_l, wf_r', cq.event_time = 'wf_l.ts, wf_r.ts', cq.watermark = '10 seconds')
  AS SELECT l.value AS key, l.value * 2 AS leftvalue FROM wf_l l WHERE l.value IN (SELECT r.value FROM wf_r r);
CREATE TABLE ls_self WITH (cq.trigger = 'available_now', cq.source = 'wf_l')
  AS SELECT a.value % 5 AS key, a.value AS v1, b.value AS v2 FROM wf_l a JOIN wf_l b ON a.value % 5 = b.value % 5;
CREATE TABLE ls_three WITH (cq.trigger = 'available_now', cq.source = 'wf_l, wf_r, rf_l')
  AS SELECT a.value FROM wf_l a JOIN wf_r b ON a.value = b.value JOIN rf_l c ON c.k = b.value;
SET client_min_messages = warning;

RESET search_path;
DROP SCHEMA sp116 CASCADE;
SELECT count(*) AS queries_left FROM cq.queries WHERE target::text LIKE 'sp116.%';
