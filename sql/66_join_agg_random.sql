-- Aggregation over a join of two streams (issue 11 part 4), randomized
-- oracle: random out-of-order batches to both streams; after every round
-- the target equals the plain aggregation over the plain join of every row
-- processed (minus the rows the join dropped as late, which the test works
-- out from the watermark in effect), for the windows the aggregation's
-- watermark closed, and the state holds exactly the others; also over a
-- left outer join.  Midway the
-- buffers are lost as after a crash (unlogged tables emptied, sentinel
-- gone): the next batch rebuilds them from the sources, the groups' logged
-- state is kept, and the results stay exact.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET timezone = 'UTC';
\i sql/include/helpers.sql

SELECT setseed(0.66);
CREATE TABLE jr_imp (id serial, ad int, ts timestamptz);
CREATE TABLE jr_clk (id serial, ad int, ts timestamptz, cost int);
CREATE TABLE jr_late (side int, id int);
-- a window of the first stream's event time, grouped with a key
CREATE TABLE jr_agg
  WITH (cq.source = 'jr_imp, jr_clk', cq.event_time = 'jr_imp.ts, jr_clk.ts',
        cq.watermark = '30 seconds, 1 minute', cq.trigger = 'available_now')
AS SELECT date_bin('30 seconds', i.ts, 'epoch') AS win, i.ad, count(*) AS n, sum(c.cost) AS cost,
          min(c.ts) AS first_click, max(i.id) AS last_imp
     FROM jr_imp i JOIN jr_clk c
       ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '1 minute'
    GROUP BY date_bin('30 seconds', i.ts, 'epoch'), i.ad;
-- a window of the second stream's event time, no other key
CREATE TABLE jr_agg2
  WITH (cq.source = 'jr_imp, jr_clk', cq.event_time = 'jr_imp.ts, jr_clk.ts',
        cq.watermark = '30 seconds, 1 minute', cq.trigger = 'available_now')
AS SELECT date_bin('20 seconds', c.ts, 'epoch') AS win, count(*) AS n, sum(i.ad) AS ads
     FROM jr_imp i JOIN jr_clk c
       ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '1 minute'
    GROUP BY 1;
-- a left outer join: impressions without a click count too, once evicted
CREATE TABLE jr_left
  WITH (cq.source = 'jr_imp, jr_clk', cq.event_time = 'jr_imp.ts, jr_clk.ts',
        cq.watermark = '30 seconds, 1 minute', cq.trigger = 'available_now')
AS SELECT date_bin('30 seconds', i.ts, 'epoch') AS win, count(*) AS n, count(c.ts) AS clicks,
          sum(c.cost) AS cost
     FROM jr_imp i LEFT JOIN jr_clk c
       ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '1 minute'
    GROUP BY 1;

CREATE FUNCTION jr_round(base timestamptz) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  w timestamptz;
  lo int := (SELECT coalesce(max(id), 0) FROM jr_imp);
  lc int := (SELECT coalesce(max(id), 0) FROM jr_clk);
BEGIN
  -- the join's watermark in effect for the next batch (both queries see the same rows)
  SELECT watermark INTO w FROM cq.offsets WHERE name = 'jr_agg' ORDER BY batch_id DESC LIMIT 1;
  INSERT INTO jr_imp (ad, ts) SELECT (random() * 4)::int, base + (random() * 90 - 60) * interval '1 second'
    FROM generate_series(1, (random() * 12)::int);
  INSERT INTO jr_clk (ad, ts, cost) SELECT (random() * 4)::int, base + (random() * 120 - 80) * interval '1 second',
         (random() * 100)::int
    FROM generate_series(1, (random() * 12)::int);
  INSERT INTO jr_late SELECT 0, id FROM jr_imp WHERE id > lo AND ts <= w;
  INSERT INTO jr_late SELECT 1, id FROM jr_clk WHERE id > lc AND ts <= w;
END $$;
-- the plain join of every row processed that the join did not drop as late
CREATE VIEW jr_join AS
  SELECT i.id AS iid, i.ad, i.ts AS its, c.ts AS cts, c.cost
    FROM jr_imp i JOIN jr_clk c ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '1 minute'
   WHERE NOT EXISTS (SELECT 1 FROM jr_late l WHERE l.side = 0 AND l.id = i.id)
     AND NOT EXISTS (SELECT 1 FROM jr_late l WHERE l.side = 1 AND l.id = c.id);
-- the aggregation's watermark of a query's last batch: the join's minus the
-- largest eviction lag (impressions are kept 1 minute + 1 ms below it)
CREATE FUNCTION jr_agg_wm(qname text) RETURNS timestamptz LANGUAGE sql AS $$
  SELECT coalesce(watermark - interval '1 minute 0.001 seconds', '-infinity') FROM cq.progress
   WHERE name = qname ORDER BY batch_id DESC LIMIT 1 $$;
CREATE VIEW jr_oracle AS
  SELECT date_bin('30 seconds', its, 'epoch') AS win, ad, count(*) AS n, sum(cost) AS cost,
         min(cts) AS first_click, max(iid) AS last_imp, date_bin('30 seconds', its, 'epoch') + interval '30 seconds' AS e
    FROM jr_join GROUP BY 1, 2;
CREATE VIEW jr_oracle2 AS
  SELECT date_bin('20 seconds', cts, 'epoch') AS win, count(*) AS n, sum(ad) AS ads,
         date_bin('20 seconds', cts, 'epoch') + interval '20 seconds' AS e
    FROM jr_join GROUP BY 1;
-- the plain left join of the rows processed that the join did not drop as
-- late: in a closed window every impression has left its buffer, so its
-- row with NULLs (if it matched nothing) has been written
CREATE VIEW jr_oracle_left AS
  SELECT date_bin('30 seconds', i.ts, 'epoch') AS win, count(*) AS n, count(c.ts) AS clicks,
         sum(c.cost) AS cost, date_bin('30 seconds', i.ts, 'epoch') + interval '30 seconds' AS e
    FROM (SELECT * FROM jr_imp i WHERE NOT EXISTS (SELECT 1 FROM jr_late l WHERE l.side = 0 AND l.id = i.id)) i
    LEFT JOIN (SELECT * FROM jr_clk c WHERE NOT EXISTS (SELECT 1 FROM jr_late l WHERE l.side = 1 AND l.id = c.id)) c
      ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '1 minute'
   GROUP BY 1;
-- every group of the oracle is written (closed) or in the state (open)
CREATE FUNCTION jr_check(r int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  w1 timestamptz := jr_agg_wm('jr_agg');
  w2 timestamptz := jr_agg_wm('jr_agg2');
  f1 text := (SELECT 'cq_state.f_' || id FROM cq.queries WHERE name = 'jr_agg');
  f2 text := (SELECT 'cq_state.f_' || id FROM cq.queries WHERE name = 'jr_agg2');
BEGIN
  IF mismatches('jr_agg', format('SELECT win, ad, n, cost, first_click, last_imp FROM jr_oracle WHERE e <= %L', w1)) <> 0 THEN
    RAISE EXCEPTION 'round %: jr_agg differs from the oracle', r;
  END IF;
  IF mismatches(f1::regclass, format('SELECT win, ad, n, cost, first_click, last_imp FROM jr_oracle WHERE e > %L', w1)) <> 0 THEN
    RAISE EXCEPTION 'round %: the state of jr_agg differs from the oracle', r;
  END IF;
  IF mismatches('jr_agg2', format('SELECT win, n, ads FROM jr_oracle2 WHERE e <= %L', w2)) <> 0 THEN
    RAISE EXCEPTION 'round %: jr_agg2 differs from the oracle', r;
  END IF;
  IF mismatches(f2::regclass, format('SELECT win, n, ads FROM jr_oracle2 WHERE e > %L', w2)) <> 0 THEN
    RAISE EXCEPTION 'round %: the state of jr_agg2 differs from the oracle', r;
  END IF;
  IF mismatches('jr_left', format('SELECT win, n, clicks, cost FROM jr_oracle_left WHERE e <= %L', jr_agg_wm('jr_left'))) <> 0 THEN
    RAISE EXCEPTION 'round %: jr_left differs from the oracle', r;
  END IF;
END $$;
-- the final views list the keys and the aggregates as the query does
SELECT name, (SELECT string_agg(attname, ', ' ORDER BY attnum) FROM pg_attribute
               WHERE attrelid = ('cq_state.f_' || id)::regclass AND attnum > 0) AS final_view
  FROM cq.queries WHERE name IN ('jr_agg', 'jr_agg2') ORDER BY name;

-- the buffers lost as in a crash: unlogged tables emptied, the sentinel gone
CREATE FUNCTION jr_lose_buffers(q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  qid int := (SELECT id FROM cq.queries WHERE name = q);
BEGIN
  DELETE FROM cq.state_sentinel WHERE query_id = qid;
  EXECUTE format('TRUNCATE cq_state.jl_%s, cq_state.jr_%s', qid, qid);
END $$;

DO $$
BEGIN
  FOR r IN 1..40 LOOP
    PERFORM jr_round(timestamptz '2026-01-01' + r * interval '20 seconds');
    IF r = 20 THEN
      PERFORM jr_lose_buffers('jr_agg');
      PERFORM jr_lose_buffers('jr_agg2');
    END IF;
    COMMIT;                    -- the batch reads committed rows only
    CALL cq.run('jr_agg');
    CALL cq.run('jr_agg2');
    CALL cq.run('jr_left');
    PERFORM jr_check(r);
  END LOOP;
END $$;
SELECT (SELECT count(*) FROM jr_agg) > 30 AS many_windows, (SELECT sum(n) FROM jr_agg) > 100 AS many_matches,
       (SELECT count(*) FROM jr_agg2) > 20 AS many_windows2,
       (SELECT sum(n - clicks) FROM jr_left) > 5 AS many_unmatched,
       (SELECT count(*) FROM jr_late) > 0 AS some_late;
-- both rebuilt their buffers once, and the groups were kept
SELECT name, state_rebuilt_at IS NOT NULL AS rebuilt FROM cq.queries WHERE name IN ('jr_agg', 'jr_agg2') ORDER BY name;
-- late rows are counted per stream by the join; the aggregation dropped none
SELECT (SELECT sum(num_rows_dropped_by_watermark) FROM cq.progress WHERE name = 'jr_agg')
         = (SELECT count(*) FROM jr_late) AS late_counted;
-- bounded state: buffers and open windows are a small part of all rows
SELECT num_state_rows_total < (SELECT count(*) FROM jr_imp) / 2 AS state_bounded
  FROM cq.progress WHERE name = 'jr_agg' ORDER BY batch_id DESC LIMIT 1;
