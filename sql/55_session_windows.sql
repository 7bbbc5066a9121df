-- Issue 11 part 1: session windows (cq.session_window), batch by batch.
-- Spark's worked examples: StreamingSessionWindowSuite "complete mode - session
-- window" and "append mode - session window" (StructuredSessionization: the
-- words of a line are session ids, gap 10 s, watermark 30 s), "SPARK-36465:
-- dynamic gap duration", and
-- EventTimeWatermarkSuite "append mode - session" (spark-semantics.md §2:
-- gap 5 s, watermark 10 s, key value / 10).  Then update mode (a deliberate
-- difference: Spark rejects it), sessions that only touch, a row that
-- bridges two and three stored sessions, Spark's behaviour for a row that
-- touches an evicted session, generic aggregates, HAVING, and misuse.
CREATE EXTENSION IF NOT EXISTS pg_cq;

-- the function alone: a row's own session [ts, ts + gap); none for NULL or
-- infinite times, NULL or non-positive gaps, or an end out of range
SELECT * FROM cq.session_window(timestamptz '2026-01-01 00:00:00+00', interval '10 seconds');
SELECT * FROM cq.session_window(timestamp '2026-01-01 00:00:00', interval '1 day');
SELECT count(*) AS no_rows FROM (
  SELECT * FROM cq.session_window(NULL::timestamptz, interval '10 seconds')
  UNION ALL SELECT * FROM cq.session_window(timestamptz 'infinity', interval '10 seconds')
  UNION ALL SELECT * FROM cq.session_window(now(), NULL)
  UNION ALL SELECT * FROM cq.session_window(now(), interval '0 seconds')
  UNION ALL SELECT * FROM cq.session_window(now(), interval '-1 seconds')
  UNION ALL SELECT * FROM cq.session_window(timestamptz '294276-12-31 23:59:59+00', interval '1 day')) x;
SELECT * FROM cq.session_window(now(), interval '1 month');

-- StructuredSessionization: lines of words at an event time in seconds
CREATE TABLE sw_lines (value text, t int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(t)) STORED);
CREATE VIEW sw_words_q AS
  SELECT w.word AS session_id, s.session_start, s.session_end,
         extract(epoch FROM s.session_end - s.session_start)::int AS duration, count(*) AS num_events
    FROM sw_lines, LATERAL unnest(string_to_array(sw_lines.value, ' ')) AS w(word),
         LATERAL cq.session_window(sw_lines.ts, interval '10 seconds') AS s
   GROUP BY w.word, s.session_start, s.session_end;
SELECT cq.create_query('sw_words_complete', pg_get_viewdef('sw_words_q'), output_mode => 'complete',
                       event_time => 'ts', watermark => '30 seconds', "trigger" => 'available_now');
SELECT cq.create_query('sw_words_append', pg_get_viewdef('sw_words_q'), output_mode => 'append',
                       event_time => 'ts', watermark => '30 seconds', "trigger" => 'available_now');
SELECT cq.create_query('sw_words_update', pg_get_viewdef('sw_words_q'), output_mode => 'update',
                       event_time => 'ts', watermark => '30 seconds', "trigger" => 'available_now');
-- the targets show start and end in seconds, as Spark's test casts them
CREATE FUNCTION sw_show(target regclass)
  RETURNS TABLE (session_id text, s int, e int, duration int, num_events bigint) LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format('SELECT session_id, extract(epoch FROM session_start)::int, extract(epoch FROM session_end)::int,
                                      duration, num_events FROM %s ORDER BY 2, 1, 3', target);
END $$;
CREATE PROCEDURE sw_batch() LANGUAGE sql AS $$
  CALL cq.run('sw_words_complete'); CALL cq.run('sw_words_append'); CALL cq.run('sw_words_update') $$;
SET client_min_messages = warning;

INSERT INTO sw_lines VALUES ('hello world spark streaming', 40), ('world hello structured streaming', 41);
CALL sw_batch();
SELECT * FROM sw_show('sw_words_complete');
SELECT count(*) AS appended FROM sw_words_append;
-- placing new sessions "before" previous sessions
INSERT INTO sw_lines VALUES ('spark streaming', 25);
CALL sw_batch();
SELECT * FROM sw_show('sw_words_complete');
SELECT count(*) AS appended FROM sw_words_append;
-- late: the rows' own sessions end at 10, not after the watermark 11; two rows dropped
INSERT INTO sw_lines VALUES ('spark streaming', 0);
CALL sw_batch();
SELECT name, batch_id, num_input_rows, num_rows_dropped_by_watermark FROM cq.progress
 WHERE name IN ('sw_words_append', 'sw_words_update') AND num_input_rows > 0 ORDER BY name, batch_id DESC LIMIT 1;
SELECT count(*) AS appended FROM sw_words_append;
-- concatenating multiple previous sessions into one
INSERT INTO sw_lines VALUES ('spark streaming', 30);
CALL sw_batch();
SELECT * FROM sw_show('sw_words_complete');
SELECT count(*) AS appended FROM sw_words_append;
-- placing new sessions after previous sessions
INSERT INTO sw_lines VALUES ('hello apache spark', 60);
CALL sw_batch();
SELECT * FROM sw_show('sw_words_complete');
SELECT count(*) AS appended FROM sw_words_append;
-- the watermark reaches 60: append writes the five sessions that ended
INSERT INTO sw_lines VALUES ('structured streaming', 90);
CALL sw_batch();
SELECT * FROM sw_show('sw_words_complete');
SELECT * FROM sw_show('sw_words_append');
-- update mode wrote every changed session and deleted those merged away:
-- it holds every session, closed or not (complete mode minus the ones
-- complete mode counted with the late rows it never drops)
SELECT * FROM sw_show('sw_words_update');
-- the state holds only the open sessions of append and update; complete keeps all
SELECT q.name, (SELECT count(*) FROM cq.progress p WHERE p.name = q.name) AS batches,
       (SELECT num_state_rows_total FROM cq.progress p WHERE p.name = q.name ORDER BY batch_id DESC LIMIT 1) AS state_rows
  FROM cq.queries q WHERE q.name LIKE 'sw\_words\_%' ORDER BY q.name;

-- StreamingSessionWindowSuite "SPARK-36465: dynamic gap duration": the gap
-- is an expression per row, 1 s for "hello", 10 s for other words; rows
-- whose gap is zero ("structured") or negative ("world") have no session
CREATE TABLE sw_dyn (value text, t int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(t)) STORED);
CREATE VIEW sw_dyn_q AS
  SELECT w.word AS session_id, s.session_start, s.session_end,
         extract(epoch FROM s.session_end - s.session_start)::int AS duration, count(*) AS num_events
    FROM sw_dyn, LATERAL unnest(string_to_array(sw_dyn.value, ' ')) AS w(word),
         LATERAL cq.session_window(sw_dyn.ts, CASE w.word WHEN 'hello' THEN interval '1 second'
                                                         WHEN 'structured' THEN interval '0 seconds'
                                                         WHEN 'world' THEN interval '-10 seconds'
                                                         ELSE interval '10 seconds' END) AS s
   GROUP BY w.word, s.session_start, s.session_end;
SELECT cq.create_query('sw_dyn_append', pg_get_viewdef('sw_dyn_q'), output_mode => 'append',
                       event_time => 'ts', watermark => '30 seconds', "trigger" => 'available_now');
SELECT cq.create_query('sw_dyn_update', pg_get_viewdef('sw_dyn_q'), output_mode => 'update',
                       event_time => 'ts', watermark => '30 seconds', "trigger" => 'available_now');
CREATE PROCEDURE sw_dyn_batch() LANGUAGE sql AS $$ CALL cq.run('sw_dyn_append'); CALL cq.run('sw_dyn_update') $$;
INSERT INTO sw_dyn VALUES ('hello world spark streaming', 40), ('world hello structured streaming', 41);
CALL sw_dyn_batch();
SELECT * FROM sw_show('sw_dyn_update');
INSERT INTO sw_dyn VALUES ('spark streaming', 25);
CALL sw_dyn_batch();
INSERT INTO sw_dyn VALUES ('spark streaming', 0);   -- late: two rows dropped
CALL sw_dyn_batch();
SELECT num_rows_dropped_by_watermark FROM cq.progress WHERE name = 'sw_dyn_append' AND num_input_rows > 0
 ORDER BY batch_id DESC LIMIT 1;
INSERT INTO sw_dyn VALUES ('spark streaming', 30);
CALL sw_dyn_batch();
SELECT * FROM sw_show('sw_dyn_update');
INSERT INTO sw_dyn VALUES ('hello apache spark', 60);
CALL sw_dyn_batch();
SELECT count(*) AS appended FROM sw_dyn_append;
INSERT INTO sw_dyn VALUES ('structured streaming', 90);
CALL sw_dyn_batch();
SELECT * FROM sw_show('sw_dyn_append');
SELECT * FROM sw_show('sw_dyn_update');

-- EventTimeWatermarkSuite "append mode - session": gap 5 s, watermark 10 s, key value / 10
CREATE TABLE sw_ev (value int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(value)) STORED);
CREATE TABLE sw_ev_append WITH (cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '10 seconds',
                                cq.trigger = 'available_now')
  AS SELECT value / 10 AS k, s.session_start, s.session_end, count(*) AS cnt, sum(value) AS total
       FROM sw_ev, LATERAL cq.session_window(ts, interval '5 seconds') AS s
      GROUP BY value / 10, s.session_start, s.session_end;
CREATE VIEW sw_ev_show AS
  SELECT k, extract(epoch FROM session_start)::int AS s, extract(epoch FROM session_end)::int AS e, cnt, total
    FROM sw_ev_append ORDER BY k, s;
INSERT INTO sw_ev VALUES (10), (11);
CALL cq.run('sw_ev_append');
INSERT INTO sw_ev VALUES (17);
CALL cq.run('sw_ev_append');
INSERT INTO sw_ev VALUES (25);
CALL cq.run('sw_ev_append');
SELECT * FROM sw_ev_show;
INSERT INTO sw_ev VALUES (35);
CALL cq.run('sw_ev_append');
SELECT * FROM sw_ev_show;
INSERT INTO sw_ev VALUES (10);
CALL cq.run('sw_ev_append');
SELECT * FROM sw_ev_show;
INSERT INTO sw_ev VALUES (40);
CALL cq.run('sw_ev_append');
SELECT * FROM sw_ev_show;
SELECT batch_id, num_input_rows, num_rows_dropped_by_watermark, num_output_rows
  FROM cq.progress WHERE name = 'sw_ev_append' ORDER BY batch_id;

-- update mode, batch by batch (gap 10 s, no watermark): sessions that only
-- touch merge (Spark: start <= end); a row bridging sessions makes them one
-- row, and the rows of the sessions merged away leave the target
CREATE TABLE sw_b (u text, t int, v int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(t)) STORED);
CREATE TABLE sw_b_update WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT u, s.session_start, s.session_end, count(*) AS n, sum(v) AS sv, min(v) AS mn, max(v) AS mx,
            avg(v) AS av, bool_and(v > 0) AS allpos, bit_or(v) AS bo, stddev_samp(v) AS sd,
            var_pop(v::float8) AS vf, regr_count(v, t) AS rc
       FROM sw_b, LATERAL cq.session_window(ts, interval '10 seconds') AS s
      GROUP BY u, s.session_start, s.session_end;
CREATE VIEW sw_b_show AS
  SELECT u, extract(epoch FROM session_start)::int AS s, extract(epoch FROM session_end)::int AS e,
         n, sv, mn, mx, round(av, 3) AS av, allpos, bo, round(sd, 3) AS sd, round(vf::numeric, 3) AS vf, rc
    FROM sw_b_update ORDER BY u NULLS FIRST, s;
CREATE FUNCTION sw_state_rows(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM %s', (SELECT state_table FROM cq.queries WHERE name = q)) INTO n;
  RETURN n;
END $$;
-- batch 1: a at 0 and 30, b at 5 and 6 (one session), NULL key at 0
INSERT INTO sw_b (u, t, v) VALUES ('a', 0, 1), ('a', 30, 2), ('b', 5, 3), ('b', 6, 4), (NULL, 0, 5);
CALL cq.run('sw_b_update');
SELECT * FROM sw_b_show;
-- batch 2: a at 15 (between, touching neither: [15, 25)); a at 40 touches [30, 40): one session
INSERT INTO sw_b (u, t, v) VALUES ('a', 15, 3), ('a', 40, 4);
CALL cq.run('sw_b_update');
SELECT * FROM sw_b_show;
SELECT sw_state_rows('sw_b_update') AS state_rows;
-- batch 3: a at 8 bridges [0, 10) and [15, 25), a at 22 bridges [15, 25) and [30, 50):
-- the three stored sessions and the two rows become one session [0, 50)
INSERT INTO sw_b (u, t, v) VALUES ('a', 22, -6), ('a', 8, 5);
CALL cq.run('sw_b_update');
SELECT * FROM sw_b_show;
SELECT sw_state_rows('sw_b_update') AS state_rows;
-- batch 4: a row inside a session changes it in place; b extends to the left
INSERT INTO sw_b (u, t, v) VALUES ('a', 20, 7), ('b', -4, 8), (NULL, 10, 9);
CALL cq.run('sw_b_update');
SELECT * FROM sw_b_show;
-- the oracle: gaps and islands over the source with window functions
CREATE VIEW sw_b_oracle AS
  WITH b AS (SELECT sw_b.*, CASE WHEN ts <= max(ts + interval '10 seconds') OVER (PARTITION BY u ORDER BY ts
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) THEN 0 ELSE 1 END AS brk FROM sw_b),
       c AS (SELECT b.*, sum(brk) OVER (PARTITION BY u ORDER BY ts ROWS UNBOUNDED PRECEDING) AS isl FROM b)
  SELECT u, min(ts) AS session_start, max(ts) + interval '10 seconds' AS session_end, count(*) AS n, sum(v) AS sv,
         min(v) AS mn, max(v) AS mx, avg(v) AS av, bool_and(v > 0) AS allpos, bit_or(v) AS bo, stddev_samp(v) AS sd,
         var_pop(v::float8) AS vf, regr_count(v, t) AS rc
    FROM c GROUP BY u, isl;
SELECT count(*) AS mismatches FROM (
  (SELECT u, session_start, session_end, n, sv, mn, mx, av, allpos, bo, sd, round(vf::numeric, 9), rc FROM sw_b_oracle
   EXCEPT ALL SELECT u, session_start, session_end, n, sv, mn, mx, av, allpos, bo, sd, round(vf::numeric, 9), rc FROM sw_b_update)
  UNION ALL
  (SELECT u, session_start, session_end, n, sv, mn, mx, av, allpos, bo, sd, round(vf::numeric, 9), rc FROM sw_b_update
   EXCEPT ALL SELECT u, session_start, session_end, n, sv, mn, mx, av, allpos, bo, sd, round(vf::numeric, 9), rc FROM sw_b_oracle)) x;

-- Spark's rule for a late row: its own session [ts, ts + gap) against the
-- watermark, before merging.  A row whose own session ends after the
-- watermark is kept even when it touches a session the watermark already
-- closed and evicted: it starts a new session (as in Spark, whose evicted
-- state is gone too), so the result is not the sessionization of all rows
-- kept.  Gap 10 s, watermark 13 s.
CREATE TABLE sw_late (u text, t int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(t)) STORED);
CREATE TABLE sw_late_u WITH (cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '13 seconds',
                             cq.trigger = 'available_now')
  AS SELECT u, s.session_start, s.session_end, count(*) AS n
       FROM sw_late, LATERAL cq.session_window(ts, interval '10 seconds') AS s
      GROUP BY u, s.session_start, s.session_end;
INSERT INTO sw_late VALUES ('a', 0), ('b', 25);   -- a: [0, 10); watermark 12 after the batch
CALL cq.run('sw_late_u');                          -- and a no-data batch evicts [0, 10)
INSERT INTO sw_late VALUES ('a', 1), ('a', 5);    -- 1: [1, 11) ends before 12, late; 5: [5, 15) kept
CALL cq.run('sw_late_u');
SELECT u, extract(epoch FROM session_start)::int AS s, extract(epoch FROM session_end)::int AS e, n
  FROM sw_late_u ORDER BY u, s;
INSERT INTO sw_late VALUES ('a', 2);              -- [2, 12): ends at the watermark 12, late
CALL cq.run('sw_late_u');
SELECT u, extract(epoch FROM session_start)::int AS s, extract(epoch FROM session_end)::int AS e, n
  FROM sw_late_u ORDER BY u, s;
SELECT sum(num_rows_dropped_by_watermark) AS dropped FROM cq.progress WHERE name = 'sw_late_u';

-- A stored session that the batch's watermark closes is still merged with
-- a kept row that touches it (Spark merges before it evicts): one batch at
-- a time (once => true runs no no-data batch), gap 10 s, watermark 13 s
CREATE TABLE sw_close (u text, t int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(t)) STORED);
CREATE VIEW sw_close_q AS
  SELECT u, s.session_start, s.session_end, count(*) AS n
    FROM sw_close, LATERAL cq.session_window(ts, interval '10 seconds') AS s
   GROUP BY u, s.session_start, s.session_end;
SELECT cq.create_query('sw_close_a', pg_get_viewdef('sw_close_q'), output_mode => 'append',
                       event_time => 'ts', watermark => '13 seconds', "trigger" => 'available_now');
SELECT cq.create_query('sw_close_u', pg_get_viewdef('sw_close_q'), output_mode => 'update',
                       event_time => 'ts', watermark => '13 seconds', "trigger" => 'available_now');
INSERT INTO sw_close VALUES ('a', 0);           -- a: [0, 10)
CALL cq.run('sw_close_a', once => true); CALL cq.run('sw_close_u', once => true);
INSERT INTO sw_close VALUES ('b', 23);          -- the watermark becomes 10
CALL cq.run('sw_close_a', once => true); CALL cq.run('sw_close_u', once => true);
INSERT INTO sw_close VALUES ('a', 5);           -- [5, 15) is kept and touches [0, 10), which W = 10 closes
CALL cq.run('sw_close_a', once => true); CALL cq.run('sw_close_u', once => true);
SELECT name, batch_id, extract(epoch FROM batch_watermark)::int AS w, num_input_rows, num_state_rows_removed, num_output_rows
  FROM cq.progress p JOIN (SELECT name, batch_id, batch_watermark FROM cq.offsets) o USING (name, batch_id)
 WHERE name LIKE 'sw\_close\_%' ORDER BY name, batch_id;
SELECT count(*) AS appended FROM sw_close_a;
SELECT u, extract(epoch FROM session_start)::int AS s, extract(epoch FROM session_end)::int AS e, n
  FROM sw_close_u ORDER BY u, s;
-- the watermark passes 15: append writes [0, 15) with both rows
INSERT INTO sw_close VALUES ('b', 40);
CALL cq.run('sw_close_a'); CALL cq.run('sw_close_u');
SELECT u, extract(epoch FROM session_start)::int AS s, extract(epoch FROM session_end)::int AS e, n
  FROM sw_close_a ORDER BY u, s;

-- Ties: of equal values that print differently, min and max keep the one
-- read last, as the binary merges of other queries do (aggregates.c,
-- MERGE_LEAST): a merged session takes the new row's 1.00 over the stored 1.0
CREATE TABLE sw_tie (u text, t int, x numeric, ts timestamptz GENERATED ALWAYS AS (to_timestamp(t)) STORED);
CREATE TABLE sw_tie_u WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT u, s.session_start, s.session_end, min(x) AS mn, max(x) AS mx, sum(x) AS sx
       FROM sw_tie, LATERAL cq.session_window(ts, interval '10 seconds') AS s
      GROUP BY u, s.session_start, s.session_end;
INSERT INTO sw_tie VALUES ('a', 0, 1.0), ('a', 30, 2.0);
CALL cq.run('sw_tie_u');
INSERT INTO sw_tie VALUES ('a', 5, 1.00), ('a', 35, 2.000);
CALL cq.run('sw_tie_u');
SELECT u, extract(epoch FROM session_start)::int AS s, mn, mx, sx FROM sw_tie_u ORDER BY u, s;

-- HAVING in update mode: a session that stops satisfying it leaves the target
CREATE TABLE sw_h (u int, t int, ts timestamptz GENERATED ALWAYS AS (to_timestamp(t)) STORED);
CREATE TABLE sw_h_u WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT u, s.session_start, s.session_end, count(*) AS n, max(t) - min(t) AS span
       FROM sw_h, LATERAL cq.session_window(ts, interval '10 seconds') AS s
      GROUP BY u, s.session_start, s.session_end HAVING count(*) <> 2;
INSERT INTO sw_h VALUES (1, 0), (1, 20);
CALL cq.run('sw_h_u');
SELECT u, extract(epoch FROM session_start)::int AS s, n, span FROM sw_h_u ORDER BY u, s;
INSERT INTO sw_h VALUES (1, 5);     -- [0, 15): 2 rows, not written
CALL cq.run('sw_h_u');
SELECT u, extract(epoch FROM session_start)::int AS s, n, span FROM sw_h_u ORDER BY u, s;
INSERT INTO sw_h VALUES (1, 12);    -- bridges: [0, 30) with 4 rows
CALL cq.run('sw_h_u');
SELECT u, extract(epoch FROM session_start)::int AS s, n, span FROM sw_h_u ORDER BY u, s;

-- misuse
CREATE TABLE sw_bad (u int, ts timestamptz, g interval);
SELECT cq.create_query('sw_bad_q', 'SELECT s.session_start, s.session_end, count(*) FROM sw_bad, LATERAL cq.session_window(ts, interval ''1 minute'') s GROUP BY 1, 2', output_mode => 'update');
SELECT cq.create_query('sw_bad_q', 'SELECT u, s.session_start, count(*) FROM sw_bad, LATERAL cq.session_window(ts, interval ''1 minute'') s GROUP BY 1, 2', output_mode => 'update');
SELECT cq.create_query('sw_bad_q', 'SELECT u, s.session_start, s.session_end, count(*) FROM sw_bad, LATERAL cq.session_window(ts, interval ''0 minutes'') s GROUP BY 1, 2, 3', output_mode => 'update');
SELECT cq.create_query('sw_bad_q', 'SELECT u, s.session_start, s.session_end, count(*) FROM sw_bad, LATERAL cq.session_window(ts, NULL) s GROUP BY 1, 2, 3', output_mode => 'update');
SELECT cq.create_query('sw_bad_q', 'SELECT u, s.session_start, s.session_end, count(*) FROM sw_bad, LATERAL cq.session_window(ts, interval ''1 month'') s GROUP BY 1, 2, 3', output_mode => 'update');
SELECT cq.create_query('sw_bad_q', 'SELECT u, s.session_start, s.session_end, count(*) FROM sw_bad, LATERAL cq.session_window(ts, g * random()) s GROUP BY 1, 2, 3', output_mode => 'update');
SELECT cq.create_query('sw_bad_q', 'SELECT u, s.session_start, s.session_end, w.window_start, count(*) FROM sw_bad, LATERAL cq.session_window(ts, interval ''1 minute'') s, LATERAL cq.window(ts, interval ''1 hour'') w GROUP BY 1, 2, 3, 4', output_mode => 'update');
SELECT cq.create_query('sw_bad_q', 'SELECT u, s.session_start FROM sw_bad, LATERAL cq.session_window(ts, interval ''1 minute'') s', output_mode => 'update');
SELECT cq.create_query('sw_bad_q', 'SELECT u, s.session_start, s.session_end, count(*) FROM sw_bad, LATERAL cq.session_window(ts, interval ''1 minute'') s WHERE s.session_end > now() GROUP BY 1, 2, 3', output_mode => 'update');
SELECT cq.create_query('sw_bad_q', 'SELECT u, s.session_start, s.session_end, max(s.session_end) FROM sw_bad, LATERAL cq.session_window(ts, interval ''1 minute'') s GROUP BY 1, 2, 3', output_mode => 'update');
SELECT cq.create_query('sw_bad_q', 'SELECT u, s.session_start, s.session_end, date_trunc(''hour'', s.session_start), count(*) FROM sw_bad, LATERAL cq.session_window(ts, interval ''1 minute'') s GROUP BY 1, 2, 3, 4', output_mode => 'update');
SELECT cq.create_query('sw_bad_q', 'SELECT u, s.session_start, s.session_end, count(DISTINCT ts) FROM sw_bad, LATERAL cq.session_window(ts, interval ''1 minute'') s GROUP BY 1, 2, 3', output_mode => 'update');
SELECT cq.create_query('sw_bad_q', 'SELECT u, s.session_start, s.session_end, count(*) FROM sw_bad, LATERAL cq.session_window(ts, interval ''1 minute'') s, LATERAL cq.session_window(ts, interval ''2 minutes'') s2 GROUP BY 1, 2, 3', output_mode => 'update');
-- append needs a watermark on the session's time column
SELECT cq.create_query('sw_bad_q', 'SELECT u, s.session_start, s.session_end, count(*) FROM sw_bad, LATERAL cq.session_window(ts, interval ''1 minute'') s GROUP BY 1, 2, 3', output_mode => 'append');
-- update mode must select the session's columns (it writes by key)
SELECT cq.create_query('sw_bad_q', 'SELECT u, s.session_end, count(*) FROM sw_bad, LATERAL cq.session_window(ts, interval ''1 minute'') s GROUP BY u, s.session_start, s.session_end', output_mode => 'update');
-- but complete mode may leave them out, and the select list may compute on them
SELECT cq.create_query('sw_ok_q', 'SELECT u, s.session_end - s.session_start AS len, count(*) FROM sw_bad, LATERAL cq.session_window(ts, interval ''1 minute'') s GROUP BY u, s.session_start, s.session_end', output_mode => 'complete');
SELECT cq.drop_query('sw_ok_q', drop_target => true);
\set VERBOSITY sqlstate
SELECT cq.create_query('sw_bad_q', 'SELECT s.session_start, s.session_end, count(*) FROM sw_bad, LATERAL cq.session_window(ts, interval ''1 minute'') s GROUP BY 1, 2', output_mode => 'update');
\set VERBOSITY default

-- the state of a query whose watermark drops rows is logged (it cannot be
-- refolded from the source); without a watermark it is unlogged, as state_storage says
SELECT q.name, c.relpersistence FROM cq.queries q JOIN pg_class c ON c.oid = q.state_table
 WHERE q.name IN ('sw_words_append', 'sw_words_update', 'sw_words_complete', 'sw_b_update') ORDER BY q.name;

-- on a 0.1 catalog (before ALTER EXTENSION pg_cq UPDATE) session windows are
-- refused, even with a function of that name in schema cq
SELECT current_database() AS sw_db \gset
CREATE DATABASE sw_old;
\c sw_old
SET client_min_messages = warning;
CREATE EXTENSION pg_cq VERSION '0.1';
CREATE TABLE sw_o (u int, ts timestamptz);
CREATE FUNCTION cq.session_window(ts timestamptz, gap interval, OUT session_start timestamptz, OUT session_end timestamptz)
  RETURNS SETOF record LANGUAGE sql AS 'SELECT ts, ts + gap';
SELECT cq.create_query('sw_o_q', 'SELECT u, s.session_start, s.session_end, count(*) FROM sw_o, LATERAL cq.session_window(ts, interval ''1 minute'') s GROUP BY 1, 2, 3', output_mode => 'update');
DROP FUNCTION cq.session_window(timestamptz, interval);
ALTER EXTENSION pg_cq UPDATE;
SELECT cq.create_query('sw_o_q', 'SELECT u, s.session_start, s.session_end, count(*) FROM sw_o, LATERAL cq.session_window(ts, interval ''1 minute'') s GROUP BY 1, 2, 3', output_mode => 'update', "trigger" => 'available_now');
INSERT INTO sw_o VALUES (1, '2026-01-01 00:00:00+00'), (1, '2026-01-01 00:00:30+00');
CALL cq.run('sw_o_q');
SELECT * FROM sw_o_q;
\c :sw_db
DROP DATABASE sw_old WITH (FORCE);

DROP VIEW sw_b_show, sw_b_oracle, sw_ev_show, sw_dyn_q, sw_close_q;
SELECT cq.drop_query(name, drop_target => true) FROM cq.queries WHERE name LIKE 'sw\_%' ORDER BY name;
