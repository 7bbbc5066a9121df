-- Issue 11 part 1: randomized oracle for session windows.  Random batches
-- of rows for a few keys (NULL among them), at whole seconds (so that
-- sessions often only touch, and rows share a time), out of order by up to 35 s, so
-- that rows arrive before, after and between the stored sessions of their
-- key and bridge them; some rows late.  After every round each target must
-- equal the plain sessionization of the rows it processed (gaps and
-- islands with window functions over the source): update mode every
-- session, append mode the sessions the watermark closed, complete mode
-- and a query without watermark every session of every row.  A lost
-- (unlogged) state is rebuilt in the middle and the batches go on.
--
-- Late rows: a row is dropped when its own session [ts, ts + gap) ends at
-- or before the watermark of its batch.  The test knows that watermark (the
-- last one cq.offsets recorded) when it writes a round, and marks each
-- row's fate in column ok.  Rows are drawn late (ts <= W - gap) or after
-- the watermark (ts > W): none falls in (W - gap, W], where a kept row may
-- touch a session the watermark already evicted, which Spark (and pg_cq)
-- then keep apart, so that the plain sessionization is the oracle (that
-- case is shown in 55_session_windows.sql).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SELECT setseed(0.11);

-- ok: not late for sr_u and sr_a; bt: the round whose batches processed the row
CREATE TABLE sr (id serial, k int, v int, ts timestamptz, ok boolean, bt int);
CREATE VIEW sr_q AS
  SELECT k, s.session_start, s.session_end, count(*) AS n, count(v) AS nv, sum(v) AS sv, min(v) AS mn,
         max(v) AS mx, avg(v) AS av, stddev_samp(v) AS sd, bool_or(v > 90) AS big, bit_xor(v) AS bx,
         avg(v / 4.0::float8) AS af, round(var_pop(v::float8)::numeric, 6) AS vf, regr_count(v, v) AS rc,
         sum(v) FILTER (WHERE v % 2 = 0) AS sev
    FROM sr, LATERAL cq.session_window(sr.ts, interval '10 seconds') AS s
   GROUP BY k, s.session_start, s.session_end;
SELECT cq.create_query('sr_u', pg_get_viewdef('sr_q'), output_mode => 'update', event_time => 'ts',
                       watermark => '15 seconds', "trigger" => 'available_now');
SELECT cq.create_query('sr_a', pg_get_viewdef('sr_q'), output_mode => 'append', event_time => 'ts',
                       watermark => '15 seconds', "trigger" => 'available_now');
SELECT cq.create_query('sr_c', pg_get_viewdef('sr_q'), output_mode => 'complete', event_time => 'ts',
                       watermark => '15 seconds', "trigger" => 'available_now');
SELECT cq.create_query('sr_n', pg_get_viewdef('sr_q'), output_mode => 'update', "trigger" => 'available_now');
-- and in smaller batches: a row limit cuts the two transactions of a round
-- that runs no batch apart
SELECT cq.create_query('sr_l', pg_get_viewdef('sr_q'), output_mode => 'update', "trigger" => 'available_now',
                       max_rows_per_trigger => 4);

-- the oracle: the same aggregates over the islands of the rows (all, or ok)
CREATE FUNCTION sr_oracle(only_ok boolean) RETURNS SETOF sr_u LANGUAGE sql AS $$
  WITH r AS (SELECT * FROM sr WHERE ts IS NOT NULL AND (ok OR NOT only_ok)),
       b AS (SELECT r.*, CASE WHEN ts <= max(ts + interval '10 seconds') OVER (PARTITION BY k ORDER BY ts
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) THEN 0 ELSE 1 END AS brk FROM r),
       c AS (SELECT b.*, sum(brk) OVER (PARTITION BY k ORDER BY ts ROWS UNBOUNDED PRECEDING) AS isl FROM b)
  SELECT k, min(ts), max(ts) + interval '10 seconds', count(*), count(v), sum(v), min(v), max(v), avg(v),
         stddev_samp(v), bool_or(v > 90), bit_xor(v), avg(v / 4.0::float8), round(var_pop(v::float8)::numeric, 6),
         regr_count(v, v), sum(v) FILTER (WHERE v % 2 = 0)
    FROM c GROUP BY k, isl $$;
-- rows of a target that differ from the oracle, both ways, by value and as text
CREATE FUNCTION sr_diff(target regclass, oracle text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE d bigint;
BEGIN
  EXECUTE format('SELECT (SELECT count(*) FROM ((SELECT * FROM (%1$s) o EXCEPT ALL SELECT * FROM %2$s)
                    UNION ALL (SELECT * FROM %2$s EXCEPT ALL SELECT * FROM (%1$s) o)) x)
                  + (SELECT count(*) FROM ((SELECT format(''%%s'', o) FROM (%1$s) o EXCEPT ALL SELECT format(''%%s'', t) FROM %2$s t)
                    UNION ALL (SELECT format(''%%s'', t) FROM %2$s t EXCEPT ALL SELECT format(''%%s'', o) FROM (%1$s) o)) y)',
                 oracle, target) INTO d;
  RETURN d;
END $$;
CREATE FUNCTION sr_wm(q text, col text DEFAULT 'watermark') RETURNS timestamptz LANGUAGE plpgsql AS $$
DECLARE w timestamptz;
BEGIN
  EXECUTE format('SELECT %I FROM cq.offsets WHERE name = $1 ORDER BY batch_id DESC LIMIT 1', col) INTO w USING q;
  RETURN w;
END $$;
CREATE TABLE sr_log (round int, what text, bad bigint);
CREATE FUNCTION sr_lose_state(q text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM cq.state_sentinel WHERE query_id = (SELECT id FROM cq.queries WHERE name = q);
  EXECUTE format('TRUNCATE %s', (SELECT state_table FROM cq.queries WHERE name = q));
END $$;

DO $$
DECLARE
  w timestamptz;
  base timestamptz := '2026-03-01 00:00:00+00';
  r int;
BEGIN
  FOR r IN 1..45 LOOP
    -- the watermark the next batch of sr_u and sr_a applies (the same for both)
    w := sr_wm('sr_u');
    IF w IS DISTINCT FROM sr_wm('sr_a') THEN
      RAISE EXCEPTION 'round %: watermarks differ', r;
    END IF;
    INSERT INTO sr (k, v, ts, ok, bt)
    SELECT k, v, ts, w IS NULL OR ts > w, CASE WHEN r % 3 = 0 THEN r + 1 ELSE r END
      FROM (SELECT CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 3)::int END AS k,
                   CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 100)::int END AS v,
                   CASE WHEN random() < 0.03 THEN NULL
                        WHEN w IS NULL THEN base + floor(random() * 35) * interval '1 second'
                        WHEN random() < 0.1 THEN w - (10 + floor(random() * 30)) * interval '1 second'
                        ELSE w + (1 + floor(random() * 35)) * interval '1 second' END AS ts
              FROM generate_series(1, (random() * 12)::int)) x;
    COMMIT;
    IF r = 25 THEN
      -- a crash-restart empties the unlogged state (sr_n's; sr_u and sr_a keep
      -- their logged state, sr_c's is unlogged too) and the sentinel rows
      PERFORM sr_lose_state('sr_n'), sr_lose_state('sr_c');
      DELETE FROM cq.state_sentinel WHERE query_id IN (SELECT id FROM cq.queries WHERE name IN ('sr_u', 'sr_a'));
      COMMIT;
    END IF;
    IF r % 3 <> 0 THEN
      CALL cq.run('sr_u'); CALL cq.run('sr_a'); CALL cq.run('sr_c'); CALL cq.run('sr_n'); CALL cq.run('sr_l');
      INSERT INTO sr_log
      VALUES (r, 'update', sr_diff('sr_u', 'SELECT * FROM sr_oracle(true)')),
             (r, 'append', sr_diff('sr_a', format('SELECT * FROM sr_oracle(true) WHERE session_end <= %L',
                                                  sr_wm('sr_a', 'batch_watermark')))),
             (r, 'complete', sr_diff('sr_c', 'SELECT * FROM sr_oracle(false)')),
             (r, 'no watermark', sr_diff('sr_n', 'SELECT * FROM sr_oracle(false)')),
             (r, 'row limit', sr_diff('sr_l', 'SELECT * FROM sr_oracle(false)'));
      COMMIT;
    END IF;
  END LOOP;
END $$;

-- every round, every target equals its oracle
SELECT what, count(*) AS rounds, sum(bad) AS mismatches FROM sr_log GROUP BY what ORDER BY what;
-- the test did what it meant to: rows dropped as late, sessions that grew
-- over several batches and merged, sessions closed, the state rebuilt
SELECT (SELECT count(*) FROM sr WHERE NOT ok) > 5 AS some_late,
       (SELECT sum(num_rows_dropped_by_watermark) FROM cq.progress WHERE name = 'sr_u') > 5 AS counted_late,
       (SELECT sum(num_rows_dropped_by_watermark) FROM cq.progress WHERE name IN ('sr_c', 'sr_n')) AS late_without_watermark,
       (SELECT count(*) FROM sr_a) > 10 AS closed_sessions,
       (SELECT count(*) FROM sr_u WHERE n > 3) > 10 AS long_sessions,
       (SELECT count(*) FROM cq.progress WHERE name = 'sr_n' AND durations ? 'stateRebuild') AS sr_n_rebuilt,
       (SELECT count(*) FROM cq.progress WHERE name = 'sr_c' AND durations ? 'stateRebuild') AS sr_c_rebuilt,
       (SELECT max(batch_id) FROM cq.offsets WHERE name = 'sr_l') > (SELECT max(batch_id) FROM cq.offsets WHERE name = 'sr_n') + 10 AS limited;
-- rows that bridged two sessions of their key stored by earlier batches
-- (rows b and c more than the gap apart with nothing between them, a row a
-- within the gap of both)
SELECT count(*) > 3 AS bridged FROM (
  SELECT a.id FROM sr a JOIN sr b ON a.k = b.k AND b.bt < a.bt AND b.ok AND a.ok
   JOIN sr c ON c.k = a.k AND c.bt < a.bt AND c.ok
  WHERE b.ts < a.ts AND c.ts > a.ts AND c.ts - b.ts > interval '10 seconds'
    AND a.ts - b.ts <= interval '10 seconds' AND c.ts - a.ts <= interval '10 seconds'
    AND NOT EXISTS (SELECT FROM sr m WHERE m.k = a.k AND m.bt < a.bt AND m.ok AND m.ts > b.ts AND m.ts < c.ts)
  GROUP BY a.id) x;
-- the state holds the open sessions only
SELECT name, max(num_state_rows_total) * 3 < (SELECT count(*) FROM sr_u) AS state_bounded
  FROM cq.progress WHERE name = 'sr_u' GROUP BY name;

DROP FUNCTION sr_oracle(boolean);
SELECT cq.drop_query(name, drop_target => true) FROM cq.queries WHERE name LIKE 'sr\_%' ORDER BY name;
