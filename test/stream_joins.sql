-- Joins of two streams (issue 11 parts 2, 3): every rejected shape and bad
-- option, SQLSTATE and message.
BEGIN;
SET client_min_messages = warning;
SELECT plan(17);

CREATE TABLE sa (k int, t timestamptz, v text);
CREATE TABLE sb (k int, t timestamptz, w text);
CREATE TABLE sdim (k int, label text);

-- Spark's mode rule (UnsupportedOperationChecker)
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa, sb', cq.output_mode = 'update') AS SELECT sa.k FROM sa JOIN sb ON sa.k = sb.k$$,
  '0A000', 'join between two streams is not supported in update output mode, only in append output mode', 'update mode');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa, sb', cq.output_mode = 'complete') AS SELECT sa.k, count(*) FROM sa JOIN sb ON sa.k = sb.k GROUP BY 1$$,
  '0A000', 'join between two streams is not supported in complete output mode, only in append output mode', 'complete mode');
-- Spark: "Stream-stream join without equality predicate is not supported"
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa, sb') AS SELECT sa.k FROM sa JOIN sb ON sa.k < sb.k$$,
  '0A000', 'stream-stream join without equality predicate is not supported', 'no equality between the streams');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa, sb') AS SELECT sa.k FROM sa JOIN sb ON sa.k = sa.k + 0 AND sb.k = 1$$,
  '0A000', 'stream-stream join without equality predicate is not supported', 'an equality within one stream is not a join key');
-- not implemented
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa, sb') AS SELECT sa.k FROM sa LEFT JOIN sb ON sa.k = sb.k$$,
  '0A000', 'stream-stream LeftOuter join is not supported without a watermark in the join keys, or a watermark on the nullable side and an appropriate range condition',
  'left outer join without a time bound (Spark''s message)');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa, sb') AS SELECT sa.k FROM sa FULL JOIN sb ON sa.k = sb.k$$,
  '0A000', 'stream-stream FullOuter join is not supported without a watermark in the join keys, or a watermark on the nullable side and an appropriate range condition',
  'full outer join without a time bound');
-- an aggregation over the join: append mode, windowed on an event time (sql/65)
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa, sb') AS SELECT sa.k, count(*) FROM sa JOIN sb ON sa.k = sb.k GROUP BY 1$$,
  '0A000', 'append output mode is not supported for streaming aggregations without a watermark', 'aggregation over the join without a watermark');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa, sb') AS SELECT DISTINCT sa.k FROM sa JOIN sb ON sa.k = sb.k$$,
  '0A000', 'SELECT DISTINCT over a join of two streams is not supported', 'DISTINCT over the join');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa, sa') AS SELECT x.k FROM sa x JOIN sa y ON x.k = y.k$$,
  '0A000', 'a join of the stream "sa" with itself is not supported', 'self join');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa, sb') AS SELECT sa FROM sa JOIN sb ON sa.k = sb.k$$,
  '0A000', 'whole-row and system column references to a stream of a join are not supported', 'whole-row reference');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa, sb') AS SELECT sa.k FROM sa JOIN sb ON sa.k = sb.k JOIN (SELECT k FROM sdim) d ON d.k = sa.k$$,
  '0A000', 'subqueries in FROM of a join of two streams are not supported', 'subquery in FROM');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa, sb', cq.event_time = 't, t', cq.watermark = '1 minute') AS SELECT sa.k FROM sa LEFT JOIN sb ON sa.k = sb.k AND sb.t = sa.t JOIN sdim ON sdim.k = sa.k$$,
  '0A000', 'LEFT JOIN in a join of two streams is not supported here', 'outer join with a static table');
-- bad options
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa, sb, sdim') AS SELECT sa.k FROM sa JOIN sb ON sa.k = sb.k$$,
  '22023', 'invalid value for continuous query option "source": "sa, sb, sdim"', 'three streams');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa, sdim') AS SELECT sa.k FROM sa JOIN sb ON sa.k = sb.k$$,
  '22023', 'source table "sdim" is not in the FROM clause of the query', 'a stream not in FROM');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa, sb', cq.event_time = 't', cq.watermark = '1 minute') AS SELECT sa.k FROM sa JOIN sb ON sa.k = sb.k$$,
  '22023', 'invalid value for continuous query option "event_time": "t"', 'one event time for two streams');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa, sb', cq.event_time = 'sa.nope, sb.t') AS SELECT sa.k FROM sa JOIN sb ON sa.k = sb.k$$,
  '42703', 'event_time column "nope" does not exist in source "sa"', 'unknown event-time column');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'sa', cq.event_time = 't', cq.watermark = '1 minute, 2 minutes') AS SELECT k FROM sa$$,
  '22023', 'continuous query option "watermark" lists two delays but "t1" does not join two streams', 'two delays, one stream');

SELECT * FROM finish();
ROLLBACK;
