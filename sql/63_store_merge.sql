-- Issue 15, round 3: the store merges count, sum, min and max in C (the
-- merge statement only for other aggregates), skips the eviction scan
-- while no window can have closed (the smallest window end it holds is
-- after the watermark), and puts a new store's rows without lookups.
-- Every store query (_m) equals its state-table twin (_t) after every
-- batch, row for row as text, with the same per-batch metrics: values that
-- compare equal but print differently (NaN, 0 and -0, 1.0 and 1.00,
-- 'A' and 'a' under a case-insensitive collation, '1 day' and '24 hours')
-- show which one min and max keep, NULLs which one sum keeps.
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SET client_min_messages = warning;
SET timezone = 'UTC';
SELECT setseed(0.63);

CREATE COLLATION sm_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE sm_src (k int, f float8, r real, v numeric, b bigint, t text COLLATE sm_ci, d interval, ts timestamptz);
-- n random rows around event time t0 (a fifth late by up to 30 seconds)
CREATE FUNCTION sm_rows(n int, t0 timestamptz) RETURNS void LANGUAGE sql AS $$
  INSERT INTO sm_src
  SELECT (random() * 4)::int,
         (ARRAY['NaN', '0', '-0', '1.5', '-Infinity', NULL, 'Infinity'])[1 + (random() * 6)::int]::float8,
         (ARRAY['NaN', '0', '-0', '2.5', NULL])[1 + (random() * 4)::int]::real,
         (ARRAY['1.0', '1.00', '1.000', '-2', 'NaN', NULL])[1 + (random() * 5)::int]::numeric,
         CASE WHEN random() < 0.2 THEN NULL ELSE (random() * 1e12)::bigint END,
         (ARRAY['A', 'a', 'b', 'B', NULL])[1 + (random() * 4)::int],
         (ARRAY['1 day', '24 hours', '1 mon', '30 days', NULL])[1 + (random() * 4)::int]::interval,
         t0 - make_interval(secs => CASE WHEN random() < 0.2 THEN random() * 30 ELSE random() * 4 END)
    FROM generate_series(1, n)
$$;
CREATE TABLE sm_queries (name text PRIMARY KEY, sql text, mode text, wm boolean);
INSERT INTO sm_queries VALUES
  -- every part merged in C: count, sum (int8, numeric, float4, float8, interval), min/max
  ('sm_all', 'SELECT k, count(*) AS n, count(f) AS cf, min(f) AS mnf, max(f) AS mxf, sum(f) AS sf, '
             'min(r) AS mnr, max(r) AS mxr, sum(r) AS sr, min(v) AS mnv, max(v) AS mxv, sum(v) AS sv, '
             'avg(v) AS av, sum(b) AS sb, min(t) AS mnt, max(t) AS mxt, min(d) AS mnd, max(d) AS mxd, '
             'sum(d) AS sd FROM sm_src GROUP BY k', 'update', false),
  -- windows closed by the watermark: evicted (update) or written once (append)
  ('sm_upw', 'SELECT date_bin(''10 seconds'', ts, ''2024-01-01'') AS w, k, count(*) AS n, max(t) AS mxt, '
             'min(f) AS mnf, sum(v) AS sv FROM sm_src GROUP BY 1, 2', 'update', true),
  ('sm_app', 'SELECT date_bin(''10 seconds'', ts, ''2024-01-01'') AS w, count(*) AS n, min(v) AS mnv, '
             'max(d) AS mxd FROM sm_src GROUP BY 1', 'append', true),
  -- a part without a merge in C (bool_or): the merge statement, every column
  ('sm_stmt', 'SELECT k, count(*) AS n, max(t) AS mxt, min(v) AS mnv, bool_or(f > 1) AS big '
              'FROM sm_src GROUP BY k', 'update', false);
SELECT name || s.suffix AS query,
       cq.create_query(name || s.suffix, sql, output_mode => mode, "trigger" => 'available_now',
                       event_time => CASE WHEN wm THEN 'ts' END, watermark => CASE WHEN wm THEN '5 seconds' END,
                       state_storage => s.storage) IS NOT NULL AS created
  FROM sm_queries, (VALUES ('_m', 'memory'), ('_t', 'unlogged')) s(suffix, storage)
 ORDER BY 1;

CREATE TABLE sm_log (batch int, name text, twin_bad bigint, metrics_equal boolean, removed bigint, rows bigint);
DO $$
DECLARE
  q record;
  t timestamptz := '2024-01-01 00:00:00+00';
  n bigint;
BEGIN
  FOR b IN 1 .. 25 LOOP
    t := t + interval '3 seconds';
    PERFORM sm_rows((random() * 30)::int + 1, t);
    COMMIT;
    FOR q IN SELECT * FROM sm_queries ORDER BY name LOOP
      CALL cq.run(q.name || '_m');
      CALL cq.run(q.name || '_t');
      EXECUTE format('SELECT count(*) FROM %I', q.name || '_m') INTO n;
      INSERT INTO sm_log
      SELECT b, q.name, twin_bad((q.name || '_m')::regclass, (q.name || '_t')::regclass),
             NOT EXISTS (SELECT num_input_rows, num_state_rows_total, num_state_rows_updated, num_state_rows_removed,
                                num_rows_dropped_by_watermark, num_output_rows, batch_id, watermark,
                                event_time_min, event_time_max, event_time_avg
                           FROM cq.progress WHERE name = q.name || '_m'
                         EXCEPT
                         SELECT num_input_rows, num_state_rows_total, num_state_rows_updated, num_state_rows_removed,
                                num_rows_dropped_by_watermark, num_output_rows, batch_id, watermark,
                                event_time_min, event_time_max, event_time_avg
                           FROM cq.progress WHERE name = q.name || '_t'),
             (SELECT num_state_rows_removed FROM cq.progress WHERE name = q.name || '_m' ORDER BY batch_id DESC LIMIT 1),
             n;
    END LOOP;
    COMMIT;
  END LOOP;
END $$;
-- every store target equal to its twin after every batch, with the same metrics
SELECT name, sum(twin_bad) AS twin_mismatches, bool_and(metrics_equal) AS metrics_equal, count(*) AS batches,
       max(rows) > 0 AS has_rows
  FROM sm_log GROUP BY name ORDER BY name;
-- and to the plain query where it is the oracle
SELECT mismatches('sm_all_m', (SELECT sql FROM sm_queries WHERE name = 'sm_all')) AS all_mismatches,
       mismatches('sm_stmt_m', (SELECT sql FROM sm_queries WHERE name = 'sm_stmt')) AS stmt_mismatches;
-- the ties were there: values equal to min/max that print differently
SELECT count(DISTINCT f::text) FILTER (WHERE f = 0) = 2 AS zeros, count(DISTINCT v::text) FILTER (WHERE v = 1) = 3 AS ones,
       count(DISTINCT t) FILTER (WHERE lower(t) = 'a') = 1 AND count(*) FILTER (WHERE t = 'A' COLLATE "C") > 0
         AND count(*) FILTER (WHERE t = 'a' COLLATE "C") > 0 AS cases,
       count(DISTINCT d::text) FILTER (WHERE d = '1 day') = 2 AS days,
       count(*) FILTER (WHERE f = 'NaN') > 0 AS nan
  FROM sm_src;
-- windows closed in some batches and not in others (eviction scans skipped
-- while the watermark closed none): the same removals as the table path
SELECT count(*) FILTER (WHERE removed > 0) > 0 AS batches_evicting,
       count(*) FILTER (WHERE removed = 0) > 0 AS batches_not_evicting
  FROM sm_log WHERE name = 'sm_upw';
SELECT sum(num_rows_dropped_by_watermark) > 0 AS dropped_late
  FROM cq.progress WHERE name = 'sm_upw_m';

SELECT cq.drop_query(name || s.suffix, drop_target => true) IS NOT NULL AS dropped
  FROM sm_queries, (VALUES ('_m'), ('_t')) s(suffix) ORDER BY name, s.suffix;
