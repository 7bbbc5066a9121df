-- Issue 15, round 2: the store reads published rows in place (no copy per
-- lookup or scan) and copies a row only when it leaves the store.  Windows
-- keyed by long text keys (by-reference values read from shared memory)
-- are merged over several batches, then closed by the watermark: the
-- evicted rows (published ones, and ones changed in the same batch) are
-- written by the append query and left out of the update query's state.
-- Each store query (_m) equals its state-table twin (_t) after every
-- batch, row for row as text, with the same per-batch metrics.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET timezone = 'UTC';
SELECT setseed(0.41);

CREATE TABLE si_src (k text, x int, ts timestamptz);
CREATE FUNCTION si_rows(n int, t timestamptz) RETURNS void LANGUAGE sql AS $$
  INSERT INTO si_src
  SELECT CASE WHEN r < 0.1 THEN NULL
              WHEN r < 0.5 THEN repeat('in place ', 300) || chr(97 + (random() * 3)::int)
              ELSE chr(97 + (random() * 3)::int) END,
         CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 100)::int - 50 END,
         t - make_interval(secs => random() * 8)
    FROM (SELECT random() AS r FROM generate_series(1, n)) g
$$;
\i sql/include/helpers.sql
CREATE TABLE si_queries (name text PRIMARY KEY, sql text, mode text);
INSERT INTO si_queries VALUES
  ('si_app', 'SELECT w.window_start, w.window_end, k, count(*) AS n, sum(x) AS sx, min(x) AS mn, max(k) AS mk '
             'FROM si_src, LATERAL cq.window(ts, ''10 seconds'') w GROUP BY 1, 2, 3', 'append'),
  ('si_upd', 'SELECT date_bin(''10 seconds'', ts, ''2024-01-01'') AS w, k, count(*) AS n, max(x) AS mx, '
             'min(k) AS mk FROM si_src GROUP BY 1, 2', 'update');
SELECT name || s.suffix AS query,
       cq.create_query(name || s.suffix, sql, output_mode => mode, "trigger" => 'available_now',
                       event_time => 'ts', watermark => '5 seconds', state_storage => s.storage) IS NOT NULL AS created
  FROM si_queries, (VALUES ('_m', 'memory'), ('_t', 'unlogged')) s(suffix, storage)
 ORDER BY 1;
SELECT name, state_storage FROM cq.queries WHERE name LIKE 'si\___%' ORDER BY name;

CREATE TABLE si_log (batch int, name text, twin_bad bigint, metrics_equal boolean, removed bigint, rows bigint);
DO $$
DECLARE
  q record;
  t timestamptz := '2024-01-01 00:00:00+00';
  n bigint;
BEGIN
  FOR b IN 1 .. 20 LOOP
    t := t + interval '4 seconds';
    PERFORM si_rows((random() * 30)::int + 1, t);
    COMMIT;
    FOR q IN SELECT * FROM si_queries ORDER BY name LOOP
      CALL cq.run(q.name || '_m');
      CALL cq.run(q.name || '_t');
      EXECUTE format('SELECT count(*) FROM %I', q.name || '_m') INTO n;
      INSERT INTO si_log
      SELECT b, q.name, twin_bad((q.name || '_m')::regclass, (q.name || '_t')::regclass),
             NOT EXISTS (SELECT num_input_rows, num_state_rows_total, num_state_rows_updated, num_state_rows_removed,
                                num_rows_dropped_by_watermark, num_output_rows, batch_id, watermark
                           FROM cq.progress WHERE name = q.name || '_m'
                         EXCEPT
                         SELECT num_input_rows, num_state_rows_total, num_state_rows_updated, num_state_rows_removed,
                                num_rows_dropped_by_watermark, num_output_rows, batch_id, watermark
                           FROM cq.progress WHERE name = q.name || '_t'),
             (SELECT num_state_rows_removed FROM cq.progress WHERE name = q.name || '_m' ORDER BY batch_id DESC LIMIT 1),
             n;
    END LOOP;
    COMMIT;
  END LOOP;
END $$;
-- equal to the twin after every batch; windows were evicted; long keys written
SELECT name, sum(twin_bad) AS twin_mismatches, bool_and(metrics_equal) AS metrics_equal,
       count(*) AS batches, sum(removed) > 0 AS evicted, max(rows) > 0 AS has_rows
  FROM si_log GROUP BY name ORDER BY name;
SELECT count(*) > 0 AS long_keys_appended FROM si_app_m WHERE length(k) > 2000;
-- the store holds only the open windows, as the state table does
SELECT m.state_rows > 0 AS has_open_windows,
       m.state_rows = (SELECT num_state_rows_total FROM cq.progress WHERE name = 'si_upd_t'
                        ORDER BY batch_id DESC LIMIT 1) AS same_as_table
  FROM cq.state_store_info('si_upd_m') m;

SELECT cq.drop_query(name || s.suffix, drop_target => true) IS NOT NULL AS dropped
  FROM si_queries, (VALUES ('_m'), ('_t')) s(suffix) ORDER BY name, suffix;
DROP TABLE si_src, si_queries, si_log;
DROP FUNCTION si_rows(int, timestamptz), twin_bad(regclass, regclass);
