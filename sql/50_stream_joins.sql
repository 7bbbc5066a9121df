-- Joins of two streams (issue 11 part 2): Spark's StreamingJoinSuite worked
-- examples batch by batch (rows out per batch, buffered rows per stream after
-- eviction, rows dropped as late), the shapes Spark rejects, and a
-- randomized oracle: the target equals the plain join of every row
-- processed, minus the rows dropped as late.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET timezone = 'UTC';
\i sql/include/helpers.sql

-- sj_step(query, target): run the query's batches (cq.run), then show the
-- rows of the target not shown before, and for the last batch the buffered
-- rows and the rows dropped as late, per stream
CREATE TABLE sj_seen (q text, r text);
CREATE FUNCTION sj_step(qname text) RETURNS TABLE (step text) LANGUAGE plpgsql AS $$
DECLARE
  shown text;
BEGIN
  CALL cq.run(qname);
  EXECUTE format('WITH n AS (SELECT t::text AS r FROM %I t EXCEPT ALL SELECT r FROM sj_seen WHERE q = %L), '
                 'i AS (INSERT INTO sj_seen SELECT %L, r FROM n RETURNING r) '
                 'SELECT string_agg(r, '' '' ORDER BY r) FROM i', qname, qname, qname) INTO shown;
  step := 'new: ' || coalesce(shown, 'none');
  RETURN NEXT;
  SELECT format('last data batch: buffered %s, dropped as late %s', num_state_rows_per_source,
                num_rows_dropped_per_source)
    INTO step FROM cq.progress WHERE name = qname AND num_input_rows > 0 ORDER BY batch_id DESC LIMIT 1;
  RETURN NEXT;
END $$;
-- the buffered rows after the last batch (a no-data batch included)
CREATE FUNCTION sj_buffered(qname text) RETURNS text LANGUAGE sql AS $$
  SELECT num_state_rows_per_source::text FROM cq.progress WHERE name = qname
   ORDER BY batch_id DESC LIMIT 1 $$;

------------------------------------------------------------------------------
-- StreamingJoinSuite "stream stream inner join with time range - with
-- watermark - two side conditions": delays 20 s and 30 s, condition
-- leftTime BETWEEN rightTime - 10 s AND rightTime + 5 s.  Times are seconds.
------------------------------------------------------------------------------
CREATE TABLE sj_l (k int, t timestamptz);
CREATE TABLE sj_r (k int, t timestamptz);
CREATE TABLE sj_two
  WITH (cq.source = 'sj_l, sj_r', cq.event_time = 'sj_l.t, sj_r.t',
        cq.watermark = '20 seconds, 30 seconds', cq.trigger = 'available_now')
AS SELECT l.k, extract(epoch FROM l.t)::int AS lt, extract(epoch FROM r.t)::int AS rt
     FROM sj_l l JOIN sj_r r
       ON l.k = r.k AND l.t BETWEEN r.t - interval '10 seconds' AND r.t + interval '5 seconds';
SELECT name, source, event_time, watermark_delay, join_source, join_event_time, join_watermark_delay
  FROM cq.queries WHERE name = 'sj_two';
SELECT relname ~ '^jd_' AS late_rows, relpersistence FROM pg_class
 WHERE relnamespace = 'cq_state'::regnamespace AND relkind = 'r' AND relname ~ '^j[lrd]_'
   AND relname ~ (SELECT '_' || id || '$' FROM cq.queries WHERE name = 'sj_two') ORDER BY relname;

-- leftTime = 20 matches only rightTime in [15, 30]
INSERT INTO sj_l VALUES (1, to_timestamp(20));
SELECT sj_step('sj_two');
INSERT INTO sj_r SELECT 1, to_timestamp(x) FROM unnest(ARRAY[14, 15, 25, 26, 30, 31]) x;
SELECT sj_step('sj_two');                          -- (1,20,15) (1,20,25) (1,20,26) (1,20,30); 7 buffered
-- rightTime = 60 matches only leftTime in [50, 65]
INSERT INTO sj_r VALUES (1, to_timestamp(60));
SELECT sj_step('sj_two');                          -- nothing
INSERT INTO sj_l SELECT 1, to_timestamp(x) FROM unnest(ARRAY[49, 50, 65, 66]) x;
SELECT sj_step('sj_two');                          -- (1,50,60) (1,65,60)
-- watermark = min(66 - 20, 60 - 30) = 30: left keeps >= 20, right drops < 25 (14, 15)
SELECT sj_buffered('sj_two');                      -- {5,5}: 12 - 2
INSERT INTO sj_l SELECT 1, to_timestamp(x) FROM unnest(ARRAY[30, 31]) x;
SELECT sj_step('sj_two');                          -- 30 late; (1,31,26) (1,31,30) (1,31,31)
INSERT INTO sj_r VALUES (1, to_timestamp(80));
SELECT sj_step('sj_two');                          -- nothing
-- watermark = min(66 - 20, 80 - 30) = 46: left drops < 36 (20, 31), right < 41 (25, 26, 30, 31)
SELECT sj_buffered('sj_two');                      -- {4,2}: 6 in all
INSERT INTO sj_r SELECT 1, to_timestamp(x) FROM unnest(ARRAY[46, 50]) x;
SELECT sj_step('sj_two');                          -- 46 late; (1,49,50) (1,50,50); 7 buffered
SELECT batch_id, num_input_rows, num_output_rows, num_state_rows_total, num_state_rows_removed,
       num_rows_dropped_by_watermark, extract(epoch FROM watermark) AS watermark,
       num_state_rows_per_source, num_rows_dropped_per_source
  FROM cq.progress WHERE name = 'sj_two' ORDER BY batch_id;
SELECT batch_id, extract(epoch FROM watermark) AS watermark,
       (SELECT array_agg(extract(epoch FROM w)) FROM unnest(source_watermarks) w) AS per_stream
  FROM cq.offsets WHERE name = 'sj_two' ORDER BY batch_id;

-- the second stream is a source like the first: TRUNCATE is refused, DROP needs CASCADE
\set VERBOSITY terse
SET client_min_messages = notice;
TRUNCATE sj_r;
DROP TABLE sj_r;
ALTER TABLE sj_r DROP COLUMN t;
SET client_min_messages = warning;
\set VERBOSITY default

------------------------------------------------------------------------------
-- "... with time range - with watermark - one side condition": delays 10 s,
-- leftTime < rightTime - 5 s bounds the right side only; the left side is
-- never evicted (a WARNING says so at creation)
------------------------------------------------------------------------------
CREATE TABLE sj_l1 (k int, t timestamptz);
CREATE TABLE sj_r1 (k int, t timestamptz);
SET client_min_messages = warning;
CREATE TABLE sj_one
  WITH (cq.source = 'sj_l1, sj_r1', cq.event_time = 't, t',
        cq.watermark = '10 seconds', cq.trigger = 'available_now')
AS SELECT l.k, extract(epoch FROM l.t)::int AS lt, extract(epoch FROM r.t)::int AS rt
     FROM sj_l1 l, sj_r1 r
    WHERE l.k = r.k AND l.t < r.t - interval '5 seconds';
INSERT INTO sj_l1 VALUES (1, to_timestamp(5));
SELECT sj_step('sj_one');
INSERT INTO sj_r1 VALUES (1, to_timestamp(11));
SELECT sj_step('sj_one');                          -- (1,5,11)
INSERT INTO sj_r1 VALUES (1, to_timestamp(10));
SELECT sj_step('sj_one');                          -- nothing: 5 is not < 10 - 5; 3 buffered
INSERT INTO sj_l1 VALUES (1, to_timestamp(3)), (1, to_timestamp(30));
SELECT sj_step('sj_one');                          -- (1,3,10) (1,3,11); 5 buffered
INSERT INTO sj_r1 VALUES (0, to_timestamp(30));
SELECT sj_step('sj_one');                          -- nothing
-- watermark 20: right rows <= 25 evicted ((1,11), (1,10)); left kept
SELECT sj_buffered('sj_one');                      -- {3,1}
INSERT INTO sj_r1 VALUES (1, to_timestamp(20)), (1, to_timestamp(21)), (1, to_timestamp(28));
SELECT sj_step('sj_one');                          -- 20 late; (1,3,21) (1,5,21) (1,3,28) (1,5,28); 21 not kept
SELECT sj_buffered('sj_one');                      -- {3,2}
INSERT INTO sj_l1 VALUES (1, to_timestamp(20)), (1, to_timestamp(21));
SELECT sj_step('sj_one');                          -- 20 late; (1,21,28); 6 buffered

------------------------------------------------------------------------------
-- What Spark rejects, and what pg_cq does not support over a join of two
-- streams yet, each with its own SQLSTATE
------------------------------------------------------------------------------
SET client_min_messages = notice;
CREATE TABLE sj_x (k int, t timestamptz);
CREATE TABLE sj_y (k int, t timestamptz);
\set VERBOSITY default
-- Spark: "Join between two streaming DataFrames/Datasets is not supported in Update output mode"
SELECT cq.create_query('sj_e1', 'SELECT x.k FROM sj_x x JOIN sj_y y ON x.k = y.k', output_mode => 'update',
                       source => 'sj_x, sj_y');
SELECT cq.create_query('sj_e1', 'SELECT x.k, count(*) FROM sj_x x JOIN sj_y y ON x.k = y.k GROUP BY x.k',
                       output_mode => 'complete', source => 'sj_x, sj_y');
SELECT cq.create_query('sj_e1', 'SELECT x.k, count(*) FROM sj_x x JOIN sj_y y ON x.k = y.k GROUP BY x.k',
                       source => 'sj_x, sj_y');
-- Spark: "Stream-stream join without equality predicate is not supported"
SELECT cq.create_query('sj_e1', 'SELECT x.k FROM sj_x x JOIN sj_y y ON x.k < y.k', source => 'sj_x, sj_y');
SELECT cq.create_query('sj_e1', 'SELECT x.k FROM sj_x x LEFT JOIN sj_y y ON x.k = y.k', source => 'sj_x, sj_y');
SELECT cq.create_query('sj_e1', 'SELECT DISTINCT x.k FROM sj_x x JOIN sj_y y ON x.k = y.k', source => 'sj_x, sj_y');
SELECT cq.create_query('sj_e1', 'SELECT x FROM sj_x x JOIN sj_y y ON x.k = y.k', source => 'sj_x, sj_y');
SELECT cq.create_query('sj_e1', 'SELECT x.k FROM sj_x x JOIN sj_x y ON x.k = y.k', source => 'sj_x, sj_x');
SELECT cq.create_query('sj_e1', 'SELECT x.k FROM sj_x x JOIN sj_y y ON x.k = y.k', source => 'sj_x, sj_y, sj_l');
SELECT cq.create_query('sj_e1', 'SELECT x.k FROM sj_x x JOIN sj_y y ON x.k = y.k', source => 'sj_x, sj_l');
SELECT cq.create_query('sj_e1', 'SELECT x.k FROM sj_x x JOIN sj_y y ON x.k = y.k', source => 'sj_x, sj_y',
                       event_time => 't', watermark => '1 minute');
SELECT cq.create_query('sj_e1', 'SELECT x.k FROM sj_x x JOIN sj_y y ON x.k = y.k', source => 'sj_x, sj_y',
                       event_time => 'sj_y.t, sj_x.t', watermark => '1 minute');
SELECT cq.create_query('sj_e1', 'SELECT x.k FROM sj_x x', source => 'sj_x', event_time => 't',
                       watermark => '1 minute, 2 minutes');
SELECT cq.create_query('sj_e1', 'SELECT x.k FROM sj_x x JOIN sj_y y ON x.k = y.k', source => 'sj_x, sj_y',
                       event_time => 'x.t, y.t', watermark => '1 minute, 2 minutes, 3 minutes');
-- accepted with a WARNING: no time bound, the buffers keep every row (Spark's guide)
SELECT cq.create_query('sj_nobound', 'SELECT x.k, y.t FROM sj_x x JOIN sj_y y ON x.k = y.k',
                       source => 'sj_x, sj_y', "trigger" => 'available_now') IS NOT NULL AS created;
SELECT cq.create_query('sj_halfbound', 'SELECT x.k, y.t FROM sj_x x JOIN sj_y y ON x.k = y.k AND y.t >= x.t',
                       source => 'sj_x, sj_y', event_time => 'x.t, y.t', watermark => '1 minute',
                       "trigger" => 'available_now') IS NOT NULL AS created;
-- JOIN ... USING: the join's key column stands for a column of a stream
SELECT cq.create_query('sj_using', 'SELECT k, x.t AS xt, y.t AS yt FROM sj_x x JOIN sj_y y USING (k)',
                       source => 'sj_x, sj_y', "trigger" => 'available_now') IS NOT NULL AS created;
INSERT INTO sj_x VALUES (1, '2026-01-01'), (2, '2026-01-02');
INSERT INTO sj_y VALUES (2, '2026-01-03'), (3, '2026-01-04');
CALL cq.run('sj_using');
INSERT INTO sj_y VALUES (1, '2026-01-05');
CALL cq.run('sj_using');
TABLE sj_using ORDER BY k;
SELECT cq.drop_query('sj_using', true);
-- dropping a query drops its buffers
SELECT cq.drop_query('sj_nobound', true);
SELECT cq.drop_query('sj_halfbound', true);
SELECT count(*) AS leftover_buffers FROM pg_class c
 WHERE relnamespace = 'cq_state'::regnamespace AND relkind = 'r' AND relname ~ '^j[lrd]_'
   AND NOT EXISTS (SELECT 1 FROM cq.queries q WHERE c.relname ~ ('_' || q.id || '$'));
SET client_min_messages = warning;

------------------------------------------------------------------------------
-- Randomized oracle: impressions and clicks with out-of-order event times,
-- random batches to both streams; the target must equal the plain join of
-- every row processed minus the rows dropped as late, which the test works
-- out from the watermark in effect for each batch.  Also cq.reset.
------------------------------------------------------------------------------
SELECT setseed(0.11);
CREATE TABLE sj_imp (id serial, ad int, ts timestamptz);
CREATE TABLE sj_clk (id serial, ad int, ts timestamptz);
CREATE TABLE sj_late (side int, id int);
CREATE TABLE sj_ic
  WITH (cq.source = 'sj_imp, sj_clk', cq.event_time = 'sj_imp.ts, sj_clk.ts',
        cq.watermark = '30 seconds, 1 minute', cq.trigger = 'available_now')
AS SELECT i.id AS imp, c.id AS clk, i.ad
     FROM sj_imp i JOIN sj_clk c
       ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '1 minute';
CREATE FUNCTION sj_round(base timestamptz) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  w timestamptz;
  lo int := (SELECT coalesce(max(id), 0) FROM sj_imp);
  lc int := (SELECT coalesce(max(id), 0) FROM sj_clk);
BEGIN
  -- the watermark in effect for the next batch
  SELECT watermark INTO w FROM cq.offsets WHERE name = 'sj_ic' ORDER BY batch_id DESC LIMIT 1;
  INSERT INTO sj_imp (ad, ts) SELECT (random() * 5)::int, base + (random() * 90 - 60) * interval '1 second'
    FROM generate_series(1, (random() * 12)::int);
  INSERT INTO sj_clk (ad, ts) SELECT (random() * 5)::int, base + (random() * 120 - 80) * interval '1 second'
    FROM generate_series(1, (random() * 12)::int);
  INSERT INTO sj_late SELECT 0, id FROM sj_imp WHERE id > lo AND ts <= w;
  INSERT INTO sj_late SELECT 1, id FROM sj_clk WHERE id > lc AND ts <= w;
END $$;
CREATE VIEW sj_oracle AS
  SELECT i.id AS imp, c.id AS clk, i.ad
    FROM sj_imp i JOIN sj_clk c ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '1 minute'
   WHERE NOT EXISTS (SELECT 1 FROM sj_late l WHERE l.side = 0 AND l.id = i.id)
     AND NOT EXISTS (SELECT 1 FROM sj_late l WHERE l.side = 1 AND l.id = c.id);
DO $$
BEGIN
  FOR r IN 1..40 LOOP
    PERFORM sj_round(timestamptz '2026-01-01' + r * interval '20 seconds');
    COMMIT;                    -- the batch reads committed rows only
    CALL cq.run('sj_ic');
    IF mismatches('sj_ic', 'SELECT * FROM sj_oracle') <> 0 THEN
      RAISE EXCEPTION 'round %: target differs from the oracle', r;
    END IF;
  END LOOP;
END $$;
SELECT count(*) > 50 AS many_matches, mismatches('sj_ic', 'SELECT * FROM sj_oracle') AS mismatches FROM sj_ic;
SELECT (SELECT count(*) FROM sj_late) > 0 AS some_late,
       (SELECT sum(num_rows_dropped_by_watermark) FROM cq.progress WHERE name = 'sj_ic')
         = (SELECT count(*) FROM sj_late) AS late_counted;
-- bounded state: buffered rows are those within the bound of the watermark
SELECT s[1] < (SELECT count(*) FROM sj_imp) / 2 AS imp_buffer_bounded,
       s[2] < (SELECT count(*) FROM sj_clk) / 2 AS clk_buffer_bounded
  FROM (SELECT num_state_rows_per_source AS s FROM cq.progress WHERE name = 'sj_ic'
         ORDER BY batch_id DESC LIMIT 1) p;
-- cq.reset starts over from the earliest rows: nothing is late then
SELECT cq.reset('sj_ic');
TRUNCATE sj_late;
CALL cq.run('sj_ic');
SELECT mismatches('sj_ic', 'SELECT * FROM sj_oracle') AS mismatches_after_reset;

------------------------------------------------------------------------------
-- Changing a running join (Spark: the join type and keys may not change):
-- filters and the select list over the same columns may; keys, time bounds,
-- streams and the columns read may not
------------------------------------------------------------------------------
SET client_min_messages = notice;
SELECT cq.alter_query('sj_ic', query => 'SELECT i.id AS imp, c.id AS clk, i.ad FROM sj_imp i JOIN sj_clk c
    ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval ''1 minute'' WHERE i.ad <> 3');
INSERT INTO sj_imp (ad, ts) VALUES (3, '2026-01-01 00:20:00'), (4, '2026-01-01 00:20:00');
INSERT INTO sj_clk (ad, ts) VALUES (3, '2026-01-01 00:20:30'), (4, '2026-01-01 00:20:30');
CALL cq.run('sj_ic');
SELECT s.ad, count(*) FROM sj_ic s JOIN sj_imp i ON i.id = s.imp WHERE i.ts = '2026-01-01 00:20:00' GROUP BY 1;
SELECT cq.alter_query('sj_ic', query => 'SELECT i.id AS imp, c.id AS clk, i.ad FROM sj_imp i JOIN sj_clk c
    ON c.id = i.id AND c.ts BETWEEN i.ts AND i.ts + interval ''1 minute''');
SELECT cq.alter_query('sj_ic', query => 'SELECT i.id AS imp, c.id AS clk, i.ad FROM sj_imp i JOIN sj_clk c
    ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval ''2 minutes''');
-- options that the buffers depend on cannot change either
SELECT cq.alter_query('sj_ic', event_time => 'ts, ts', watermark => '1 hour');

------------------------------------------------------------------------------
-- timestamp (without time zone) event times, a static table joined too,
-- cq.explain, a renamed event-time column of the second stream, and the
-- background worker woken by commits to either stream
------------------------------------------------------------------------------
SET client_min_messages = warning;
CREATE TABLE sj_orders (id int, cust int, placed timestamp);
CREATE TABLE sj_ships (order_id int, shipped timestamp);
CREATE TABLE sj_custs (cust int, name text);
INSERT INTO sj_custs VALUES (1, 'ann'), (2, 'bob');
CREATE TABLE sj_os
  WITH (cq.source = 'sj_orders, sj_ships', cq.event_time = 'placed, shipped',
        cq.watermark = '1 hour', cq.trigger = '0')
AS SELECT o.id, c.name, s.shipped - o.placed AS took
     FROM sj_orders o JOIN sj_ships s ON s.order_id = o.id
     JOIN sj_custs c ON c.cust = o.cust
    WHERE s.shipped >= o.placed AND s.shipped < o.placed + interval '1 day';
SELECT position('-- 3.2 eviction from the buffer of sj_ships' IN cq.explain('sj_os')) > 0 AS explains_eviction,
       position('UNION ALL' IN cq.explain('sj_os')) > 0 AS explains_both_halves;
INSERT INTO sj_orders VALUES (1, 1, '2026-03-01 10:00'), (2, 2, '2026-03-01 11:00');
SELECT wait_until('SELECT count(*) = 1 FROM cq.progress WHERE name = ''sj_os'' AND num_input_rows = 2');
INSERT INTO sj_ships VALUES (2, '2026-03-01 12:30');
SELECT wait_until('SELECT count(*) = 1 FROM sj_os');
ALTER TABLE sj_ships RENAME COLUMN shipped TO sent;
SELECT join_event_time FROM cq.queries WHERE name = 'sj_os';
INSERT INTO sj_ships VALUES (1, '2026-03-01 10:05');
SELECT wait_until('SELECT count(*) = 2 FROM sj_os');
TABLE sj_os ORDER BY id;
SELECT cq.drop_query('sj_os');
