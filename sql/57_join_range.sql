-- issue 11: a join of two streams restricts each stream's buffer rows to the
-- event-time range the join condition allows for a row of the other stream
-- (the bound eviction uses), in both directions, so that a batch with many
-- new rows on both sides scans a range of the other buffer per row, not the
-- whole buffer, and indexes each buffer on the equi-join key and the event
-- time, so that the range holds one key's rows.  The 10-minute soak
-- (t/052_join_soak.pl) fell behind for ever without it: "c.ts <= i.ts + 3 s"
-- gives the planner no lower end for i.ts.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
CREATE TABLE jr_imp (id int, ad int, ts timestamptz);
CREATE TABLE jr_clk (id int, ad int, ts timestamptz);
CREATE TABLE jr_j WITH (cq.source = 'jr_imp, jr_clk', cq.event_time = 'jr_imp.ts, jr_clk.ts',
                        cq.watermark = '1 hour', cq.trigger = 'available_now')
AS SELECT i.id AS imp, c.id AS clk FROM jr_imp i JOIN jr_clk c
     ON c.ad = i.ad AND c.ts > i.ts AND c.ts <= i.ts + interval '1 hour';
-- the matches statement carries both derived ranges: impressions from
-- c.ts - 1 hour - 1 ms (c.ts <= i.ts + 1 hour), clicks from i.ts (c.ts > i.ts)
SELECT s.l FROM regexp_split_to_table(cq.explain('jr_j'), '\n') AS s(l)
 WHERE s.l LIKE '%>= (%+ %::interval)%' ORDER BY 1;
-- each buffer has an index on its event time (eviction) and one on the join
-- key and the event time (matches: a key's rows in the range)
SELECT c.relname ~ '^jl_' AS impressions, pg_get_indexdef(x.indexrelid) ~ '\(a2, a3\)$' AS key_then_time
  FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid
 WHERE x.indrelid IN (SELECT format('cq_state.j%s_%s', s, id)::regclass FROM cq.queries, unnest(ARRAY['l', 'r']) s
                       WHERE name = 'jr_j')
   AND x.indnatts = 2 ORDER BY 1;
-- boundaries: a click exactly 1 hour after, 1 us after, at the same time, and
-- 1 hour 1 us after its impression; new rows on both sides in one batch, then
-- new clicks against buffered impressions and the other way round
INSERT INTO jr_imp VALUES (1, 1, '2026-01-01 10:00'), (2, 2, '2026-01-01 10:00'), (3, 3, '2026-01-01 10:00');
INSERT INTO jr_clk VALUES (11, 1, '2026-01-01 11:00'), (12, 1, '2026-01-01 10:00:00.000001'),
                          (13, 2, '2026-01-01 10:00'), (14, 3, '2026-01-01 11:00:00.000001');
CALL cq.run('jr_j');
INSERT INTO jr_clk VALUES (15, 1, '2026-01-01 10:30'), (16, 2, '2026-01-01 10:59:59.999999');
INSERT INTO jr_imp VALUES (4, 1, '2026-01-01 10:15'), (5, 2, '2026-01-01 09:59:59.999999');
CALL cq.run('jr_j');
SELECT * FROM jr_j ORDER BY 1, 2;
SELECT count(*) AS mismatches FROM (
  (SELECT i.id, c.id FROM jr_imp i JOIN jr_clk c ON c.ad = i.ad AND c.ts > i.ts AND c.ts <= i.ts + interval '1 hour'
   EXCEPT ALL TABLE jr_j)
  UNION ALL
  (TABLE jr_j EXCEPT ALL
   SELECT i.id, c.id FROM jr_imp i JOIN jr_clk c ON c.ad = i.ad AND c.ts > i.ts AND c.ts <= i.ts + interval '1 hour')) x;
-- a batch of 5,000 new rows on each side, over rows buffered before
INSERT INTO jr_imp SELECT g, g % 50, timestamptz '2026-01-02' + g * interval '1 second' FROM generate_series(100, 5099) g;
INSERT INTO jr_clk SELECT g, g % 50, timestamptz '2026-01-02' + g * interval '1 second' + interval '5 minutes' FROM generate_series(100, 5099) g;
CALL cq.run('jr_j');
SELECT count(*) AS mismatches FROM (
  (SELECT i.id, c.id FROM jr_imp i JOIN jr_clk c ON c.ad = i.ad AND c.ts > i.ts AND c.ts <= i.ts + interval '1 hour'
   EXCEPT ALL TABLE jr_j)
  UNION ALL
  (TABLE jr_j EXCEPT ALL
   SELECT i.id, c.id FROM jr_imp i JOIN jr_clk c ON c.ad = i.ad AND c.ts > i.ts AND c.ts <= i.ts + interval '1 hour')) x;
SELECT cq.drop_query('jr_j', drop_target => true);
DROP TABLE jr_imp, jr_clk;
