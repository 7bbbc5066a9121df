-- Outer joins of two streams (issue 11 part 3): Spark's StreamingOuterJoinSuite
-- "left outer / right outer with watermark range condition" batch by batch,
-- a full outer join, the shapes Spark rejects, and a randomized oracle: the
-- target equals the plain outer join of every row processed, minus the rows
-- dropped as late, once the watermark has passed every row.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET timezone = 'UTC';
\i sql/include/helpers.sql

-- run a query's batches, show the rows new in its target and the buffered rows
CREATE TABLE so_seen (q text, r text);
CREATE FUNCTION so_step(qname text) RETURNS TABLE (step text) LANGUAGE plpgsql AS $$
DECLARE
  shown text;
BEGIN
  CALL cq.run(qname);
  EXECUTE format('WITH n AS (SELECT t::text AS r FROM %I t EXCEPT ALL SELECT r FROM so_seen WHERE q = %L), '
                 'i AS (INSERT INTO so_seen SELECT %L, r FROM n RETURNING r) '
                 'SELECT string_agg(r, '' '' ORDER BY r) FROM i', qname, qname, qname) INTO shown;
  step := 'new: ' || coalesce(shown, 'none');
  RETURN NEXT;
  SELECT 'buffered after the last batch: ' || num_state_rows_per_source::text INTO step
    FROM cq.progress WHERE name = qname ORDER BY batch_id DESC LIMIT 1;
  RETURN NEXT;
END $$;

------------------------------------------------------------------------------
-- setupJoinWithRangeCondition: delays 10 s, leftKey = rightKey AND leftTime
-- BETWEEN rightTime - 5 s AND rightTime + 5 s; output (leftKey, rightKey,
-- leftTime, rightTime).  Left outer: (3, null, 5, null) once the watermark
-- reaches 20; right outer: (null, 2, null, 5).
------------------------------------------------------------------------------
CREATE TABLE so_l (k int, t timestamptz);
CREATE TABLE so_r (k int, t timestamptz);
CREATE TABLE so_left
  WITH (cq.source = 'so_l, so_r', cq.event_time = 'so_l.t, so_r.t', cq.watermark = '10 seconds',
        cq.trigger = 'available_now')
AS SELECT l.k AS lk, r.k AS rk, extract(epoch FROM l.t)::int AS lt, extract(epoch FROM r.t)::int AS rt
     FROM so_l l LEFT JOIN so_r r
       ON l.k = r.k AND l.t BETWEEN r.t - interval '5 seconds' AND r.t + interval '5 seconds';
CREATE TABLE so_right
  WITH (cq.source = 'so_l, so_r', cq.event_time = 'so_l.t, so_r.t', cq.watermark = '10 seconds',
        cq.trigger = 'available_now')
AS SELECT l.k AS lk, r.k AS rk, extract(epoch FROM l.t)::int AS lt, extract(epoch FROM r.t)::int AS rt
     FROM so_l l RIGHT JOIN so_r r
       ON l.k = r.k AND l.t BETWEEN r.t - interval '5 seconds' AND r.t + interval '5 seconds';
SELECT name, relpersistence FROM cq.queries q JOIN pg_class c ON c.oid = q.state_table
 WHERE name IN ('so_left', 'so_right') ORDER BY 1;     -- an outer join's buffers are logged
INSERT INTO so_l VALUES (1, to_timestamp(5)), (3, to_timestamp(5));
SELECT so_step('so_left'); SELECT so_step('so_right');
INSERT INTO so_r VALUES (1, to_timestamp(10)), (2, to_timestamp(5));
SELECT so_step('so_left'); SELECT so_step('so_right');    -- (1, 1, 5, 10)
INSERT INTO so_r VALUES (1, to_timestamp(11));
SELECT so_step('so_left'); SELECT so_step('so_right');    -- nothing: 5 < 11 - 5; 5 buffered
INSERT INTO so_l VALUES (1, to_timestamp(7)), (1, to_timestamp(30));
SELECT so_step('so_left'); SELECT so_step('so_right');    -- (1, 1, 7, 10) (1, 1, 7, 11); 7 buffered
INSERT INTO so_r VALUES (0, to_timestamp(30));
-- watermark 30 - 10 = 20: the no-data batch writes the unmatched rows; 2 buffered
SELECT so_step('so_left'); SELECT so_step('so_right');

-- cq.explain shows the statements an outer join adds
SELECT position('outer join: rows of so_l that matched' IN cq.explain('so_left')) > 0 AS marks_matches,
       position('its unmatched rows to evict are written with NULLs' IN cq.explain('so_left')) > 0 AS writes_unmatched;
------------------------------------------------------------------------------
-- a full outer join writes the unmatched rows of both sides
------------------------------------------------------------------------------
CREATE TABLE so_full
  WITH (cq.source = 'so_l, so_r', cq.event_time = 'so_l.t, so_r.t', cq.watermark = '10 seconds',
        cq.trigger = 'available_now')
AS SELECT l.k AS lk, r.k AS rk, extract(epoch FROM l.t)::int AS lt, extract(epoch FROM r.t)::int AS rt
     FROM so_l l FULL JOIN so_r r
       ON l.k = r.k AND l.t BETWEEN r.t - interval '5 seconds' AND r.t + interval '5 seconds';
SELECT so_step('so_full');                                 -- batch 0 read every row so far
INSERT INTO so_l VALUES (9, to_timestamp(100));
INSERT INTO so_r VALUES (9, to_timestamp(200));
SELECT so_step('so_full');                                 -- everything up to 190 is final

------------------------------------------------------------------------------
-- Rejected as Spark rejects them: an outer join whose preserved side the
-- condition does not bound by the other side's event time
------------------------------------------------------------------------------
SET client_min_messages = notice;
SELECT cq.create_query('so_e', 'SELECT l.k FROM so_l l LEFT JOIN so_r r ON l.k = r.k',
                       source => 'so_l, so_r');
SELECT cq.create_query('so_e', 'SELECT l.k FROM so_l l LEFT JOIN so_r r ON l.k = r.k AND l.t < r.t',
                       source => 'so_l, so_r', event_time => 't, t', watermark => '1 minute');
SELECT cq.create_query('so_e', 'SELECT l.k FROM so_l l FULL JOIN so_r r ON l.k = r.k AND r.t >= l.t',
                       source => 'so_l, so_r', event_time => 't, t', watermark => '1 minute');
-- the outer join must be the only item in FROM
SELECT cq.create_query('so_e', 'SELECT l.k FROM so_l l LEFT JOIN so_r r ON l.k = r.k AND r.t = l.t, so_seen',
                       source => 'so_l, so_r', event_time => 't, t', watermark => '1 minute');
-- its keys are in ON: an equality in WHERE filters the result
SELECT cq.create_query('so_e', 'SELECT l.k FROM so_l l LEFT JOIN so_r r
                         ON r.t >= l.t AND r.t <= l.t + interval ''1 minute'' WHERE l.k = r.k',
                       source => 'so_l, so_r', event_time => 't, t', watermark => '1 minute');
SET client_min_messages = warning;

------------------------------------------------------------------------------
-- Randomized oracle: a left outer join with a WHERE clause on the result,
-- random batches with out-of-order and late rows; once every row is below
-- the watermark, the target equals the plain LEFT JOIN over the rows not
-- dropped as late.  Before that, it holds every matched row and the
-- unmatched rows already evicted (at or below W - 1 minute - 1 ms).
------------------------------------------------------------------------------
SELECT setseed(0.21);
CREATE TABLE so_imp (id serial, ad int, ts timestamptz);
CREATE TABLE so_clk (id serial, ad int, ts timestamptz);
CREATE TABLE so_late (side int, id int);
CREATE TABLE so_ic
  WITH (cq.source = 'so_imp, so_clk', cq.event_time = 'so_imp.ts, so_clk.ts',
        cq.watermark = '30 seconds, 1 minute', cq.trigger = 'available_now')
AS SELECT i.id AS imp, c.id AS clk, i.ad
     FROM so_imp i LEFT JOIN so_clk c
       ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '1 minute'
    WHERE c.id IS NULL OR c.id % 7 <> 0;
CREATE FUNCTION so_round(base timestamptz) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  w timestamptz := (SELECT watermark FROM cq.offsets WHERE name = 'so_ic' ORDER BY batch_id DESC LIMIT 1);
  lo int := (SELECT coalesce(max(id), 0) FROM so_imp);
  lc int := (SELECT coalesce(max(id), 0) FROM so_clk);
BEGIN
  INSERT INTO so_imp (ad, ts) SELECT (random() * 5)::int, base + (random() * 90 - 60) * interval '1 second'
    FROM generate_series(1, (random() * 12)::int);
  INSERT INTO so_clk (ad, ts) SELECT (random() * 5)::int, base + (random() * 120 - 80) * interval '1 second'
    FROM generate_series(1, (random() * 12)::int);
  INSERT INTO so_late SELECT 0, id FROM so_imp WHERE id > lo AND ts <= w;
  INSERT INTO so_late SELECT 1, id FROM so_clk WHERE id > lc AND ts <= w;
END $$;
-- the plain query over the rows not dropped as late; evicted_by: only the
-- unmatched impressions at or below that bound (NULL: all)
CREATE FUNCTION so_oracle(evicted_by timestamptz) RETURNS TABLE (imp int, clk int, ad int) LANGUAGE sql AS $$
  SELECT i.id, c.id, i.ad
    FROM (SELECT * FROM so_imp WHERE id NOT IN (SELECT id FROM so_late WHERE side = 0)) i
    LEFT JOIN (SELECT * FROM so_clk WHERE id NOT IN (SELECT id FROM so_late WHERE side = 1)) c
      ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '1 minute'
   WHERE (c.id IS NULL OR c.id % 7 <> 0)
     AND (c.id IS NOT NULL OR evicted_by IS NULL OR i.ts <= evicted_by) $$;
DO $$
DECLARE
  w timestamptz;
BEGIN
  FOR r IN 1..40 LOOP
    PERFORM so_round(timestamptz '2026-01-01' + r * interval '20 seconds');
    COMMIT;
    CALL cq.run('so_ic');
    -- the eviction bound of the last batch: W - 1 minute - 1 ms
    w := (SELECT batch_watermark FROM cq.offsets WHERE name = 'so_ic' ORDER BY batch_id DESC LIMIT 1);
    IF mismatches('so_ic', format('SELECT * FROM so_oracle(%L)',
                                  coalesce(w - interval '1 minute' - interval '1 millisecond', '-infinity'))) <> 0 THEN
      RAISE EXCEPTION 'round %: target differs from the oracle', r;
    END IF;
  END LOOP;
END $$;
-- far-future rows on both streams move the watermark past every row
INSERT INTO so_imp (ad, ts) VALUES (99, '2026-02-01');
INSERT INTO so_clk (ad, ts) VALUES (99, '2026-02-01');
CALL cq.run('so_ic');
SELECT count(*) > 50 AS many_rows, count(*) FILTER (WHERE clk IS NULL) > 10 AS many_unmatched,
       mismatches('so_ic', 'SELECT * FROM so_oracle(''2026-01-31'')') AS mismatches,
       (SELECT count(*) FROM so_late) > 0 AS some_late
  FROM so_ic;
