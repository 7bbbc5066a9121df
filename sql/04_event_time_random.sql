-- Randomized event-time check: tumbling and sliding windows (cq.window and
-- date_bin) in update mode equal the plain SELECT oracle when no row is late;
-- append emits every closed window exactly once and nothing else; state stays
-- bounded while the stream crosses many windows.  Values include numeric NaN
-- and infinities and numerics of mixed scale (issue 16); targets are compared
-- by value and as text.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET timezone = 'UTC';
SELECT setseed(0.17);

CREATE TABLE ev (ts timestamptz, k int, v numeric(10,2), x numeric);

CREATE VIEW tumble_oracle AS
  SELECT w.window_start, w.window_end, k, count(*) AS n, sum(v) AS s, avg(v) AS a,
         sum(x) AS sx, avg(x) AS ax, stddev_samp(x) AS sdx
    FROM ev, LATERAL cq.window(ts, '10 seconds') w GROUP BY 1, 2, 3;
CREATE VIEW slide_oracle AS
  SELECT w.window_start, w.window_end, k, count(*) AS n, max(v) AS mx
    FROM ev, LATERAL cq.window(ts, '10 seconds', '4 seconds') w GROUP BY 1, 2, 3;
CREATE VIEW bin_oracle AS
  SELECT date_bin('7 seconds', ts, '2024-01-01') AS b, k, count(*) AS n, sum(v) AS s,
         var_pop(x) AS vx, max(x) AS mx
    FROM ev GROUP BY 1, 2;

SELECT cq.create_query('tumble_u', pg_get_viewdef('tumble_oracle'), output_mode => 'update', "trigger" => 'available_now',
                       event_time => 'ts', watermark => '30 seconds');
SELECT cq.create_query('slide_u', pg_get_viewdef('slide_oracle'), output_mode => 'update', "trigger" => 'available_now',
                       event_time => 'ts', watermark => '30 seconds');
SELECT cq.create_query('bin_u', pg_get_viewdef('bin_oracle'), output_mode => 'update', "trigger" => 'available_now',
                       event_time => 'ts', watermark => '30 seconds');
SELECT cq.create_query('slide_a', pg_get_viewdef('slide_oracle'), output_mode => 'append', "trigger" => 'available_now',
                       event_time => 'ts', watermark => '30 seconds');
SELECT cq.create_query('bin_a', pg_get_viewdef('bin_oracle'), output_mode => 'append', "trigger" => 'available_now',
                       event_time => 'ts', watermark => '30 seconds', max_rows_per_trigger => 40);

-- mismatches, by value and as text (the display scale of numerics)
CREATE FUNCTION diff(oracle text, target text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  d bigint;
  t bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((SELECT * FROM %s o EXCEPT ALL SELECT * FROM %s t) UNION ALL
                                        (SELECT * FROM %s t EXCEPT ALL SELECT * FROM %s o)) x',
                 oracle, target, target, oracle) INTO d;
  EXECUTE format('SELECT count(*) FROM ((SELECT format(''%%s'', o) FROM %s o EXCEPT ALL SELECT format(''%%s'', t) FROM %s t) UNION ALL
                                        (SELECT format(''%%s'', t) FROM %s t EXCEPT ALL SELECT format(''%%s'', o) FROM %s o)) x',
                 oracle, target, target, oracle) INTO t;
  RETURN d + t;
END $$;

-- event time advances by 0-15 s per round; rows arrive up to 20 s out of
-- order, less than the 30 s delay, so no row is ever late; x is NaN now and
-- then for k = 1, an infinity for k = 2, else numerics of 0 to 4 decimals
DO $$
DECLARE
  t timestamptz := '2024-01-01 00:00:00+00';
  r int;
BEGIN
  FOR r IN 1..60 LOOP
    t := t + random() * interval '15 seconds';
    INSERT INTO ev (ts, k, v, x)
    SELECT ts, k, v,
           CASE WHEN random() < 0.1 THEN NULL
                WHEN k = 1 AND random() < 0.05 THEN 'NaN'
                WHEN k = 2 AND random() < 0.05 THEN (ARRAY['Infinity', '-Infinity'])[1 + (random() < 0.5)::int]::numeric
                ELSE round((random() * 100)::numeric, (random() * 4)::int) END
      FROM (SELECT t - random() * interval '20 seconds' AS ts,
                   CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 3)::int END AS k,
                   CASE WHEN random() < 0.1 THEN NULL ELSE round((random() * 100)::numeric, 2) END AS v
              FROM generate_series(1, (random() * 30)::int)) r;
    COMMIT;
    IF r % 4 = 0 THEN
      CALL cq.run('tumble_u'); CALL cq.run('slide_u'); CALL cq.run('bin_u');
      CALL cq.run('slide_a'); CALL cq.run('bin_a');
    END IF;
  END LOOP;
END $$;
CALL cq.run('tumble_u');
CALL cq.run('slide_u');
CALL cq.run('bin_u');
CALL cq.run('slide_a');
CALL cq.run('bin_a');

-- no row was late, so update targets equal the oracle exactly
SELECT (SELECT sum(num_rows_dropped_by_watermark) FROM cq.progress) AS dropped,
       diff('tumble_oracle', 'tumble_u') AS tumble_diff,
       diff('slide_oracle', 'slide_u') AS slide_diff,
       diff('bin_oracle', 'bin_u') AS bin_diff;

-- append: exactly the windows closed by the last watermark, each once
SELECT diff(format('(SELECT * FROM slide_oracle WHERE window_end <= %L)', w), 'slide_a') AS slide_append_diff,
       diff(format('(SELECT * FROM bin_oracle WHERE b + interval ''7 seconds'' <= %L)', w2), 'bin_a') AS bin_append_diff,
       (SELECT count(*) FROM slide_a) > 100 AS many_windows
  FROM (SELECT watermark AS w FROM cq.offsets WHERE name = 'slide_a' ORDER BY batch_id DESC LIMIT 1) a,
       (SELECT watermark AS w2 FROM cq.offsets WHERE name = 'bin_a' ORDER BY batch_id DESC LIMIT 1) b;

-- state stays bounded: a few windows per key, whatever the length of the
-- stream (every target holds all windows, the state only the open ones)
SELECT p.name, max(num_state_rows_total) * 3 < t.windows AS state_bounded,
       count(*) FILTER (WHERE num_state_rows_removed > 0) > 5 AS evicted
  FROM cq.progress p
  JOIN (SELECT 'tumble_u' AS name, count(*) AS windows FROM tumble_u
        UNION ALL SELECT 'slide_u', count(*) FROM slide_u
        UNION ALL SELECT 'slide_a', count(*) FROM slide_oracle) t USING (name)
 GROUP BY p.name, t.windows ORDER BY p.name;
