-- Issue 15: the shared-memory state store (state_storage = 'memory').
-- Every query runs twice, on the store (_m) and on the state table (_t),
-- over many random batches (NULL keys, long text keys, fast-path and
-- generic aggregates, HAVING; update, complete, append and update with a
-- watermark): each _m target equals the plain query (where it is the
-- oracle) and, row for row as text, its table-path twin, and so do their
-- per-batch metrics.  An error after the merge leaves the store as it was.
-- A worker and CALL cq.run share a query's store.
CREATE EXTENSION IF NOT EXISTS pg_cq;
CREATE EXTENSION IF NOT EXISTS hll;
\i sql/include/helpers.sql
SET client_min_messages = warning;
SET timezone = 'UTC';
SELECT setseed(0.40);

CREATE TABLE ss_src (k1 int, k2 text, x int, v numeric(8,2), u text, ts timestamptz);
-- n random rows around event time t (some late by up to a minute)
CREATE FUNCTION ss_rows(n int, t timestamptz) RETURNS void LANGUAGE sql AS $$
  INSERT INTO ss_src
  SELECT CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 5)::int END,
         CASE WHEN r < 0.1 THEN NULL
              WHEN r < 0.2 THEN repeat('long key ', 400) || chr(97 + (random() * 2)::int)
              ELSE chr(97 + (random() * 3)::int) END,
         CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 100)::int END,
         CASE WHEN random() < 0.1 THEN NULL ELSE round((random() * 20 - 5)::numeric, 2) END,
         'u' || (random() * 40)::int,
         t - make_interval(secs => CASE WHEN random() < 0.2 THEN random() * 60 ELSE random() * 5 END)
    FROM (SELECT random() AS r FROM generate_series(1, n)) g
$$;

CREATE TABLE ss_queries (name text PRIMARY KEY, sql text, mode text, wm boolean, oracle boolean);
INSERT INTO ss_queries VALUES
  -- two keys, NULLs, long text keys (hashed); fast-path and generic (hll) aggregates
  ('ss_upd', 'SELECT k1, k2, count(*) AS n, sum(v) AS sv, avg(x) AS ax, min(u) AS mu, max(x) AS mx, '
             'count(x) AS cx, hll_cardinality(hll_add_agg(hll_hash_text(u))) AS card '
             'FROM ss_src GROUP BY k1, k2', 'update', false, true),
  ('ss_hav', 'SELECT k1, count(*) AS n, sum(x) AS sx FROM ss_src GROUP BY k1 '
             'HAVING count(*) % 3 <> 0 OR k1 IS NULL', 'update', false, true),
  ('ss_cmp', 'SELECT k2, k1, count(*) AS n, sum(v) AS sv, bool_or(x > 90) AS big, '
             'hll_cardinality(hll_add_agg(hll_hash_text(u))) AS card FROM ss_src GROUP BY k2, k1 '
             'HAVING count(*) > 1', 'complete', false, true),
  ('ss_glob', 'SELECT count(*) AS n, sum(v) AS sv, max(u) AS mu FROM ss_src', 'update', false, true),
  -- windows closed by the watermark: written once (append), evicted (update)
  ('ss_app', 'SELECT w.window_start, w.window_end, count(*) AS n, sum(x) AS sx, '
             'hll_cardinality(hll_add_agg(hll_hash_text(u))) AS card '
             'FROM ss_src, LATERAL cq.window(ts, ''10 seconds'') w GROUP BY 1, 2', 'append', true, false),
  ('ss_upw', 'SELECT date_bin(''10 seconds'', ts, ''2024-01-01'') AS w, k1, count(*) AS n, avg(v) AS av '
             'FROM ss_src GROUP BY 1, 2 HAVING count(*) > 1', 'update', true, false);
SELECT name || s.suffix AS query,
       cq.create_query(name || s.suffix, sql, output_mode => mode, "trigger" => 'available_now',
                       event_time => CASE WHEN wm THEN 'ts' END, watermark => CASE WHEN wm THEN '20 seconds' END,
                       state_storage => s.storage) IS NOT NULL AS created
  FROM ss_queries, (VALUES ('_m', 'memory'), ('_t', 'unlogged')) s(suffix, storage)
 ORDER BY 1;
SELECT name, state_storage FROM cq.queries WHERE name LIKE 'ss\___%' ORDER BY name;

CREATE TABLE ss_log (batch int, name text, oracle_bad bigint, twin_bad bigint, metrics_equal boolean, rows bigint);
-- an image every 12 batches of a store (the first by its 12th batch, not its first)
SET cq.state_image_batches = 12;
DO $$
DECLARE
  q record;
  t timestamptz := '2024-01-01 00:00:00+00';
  bad bigint;
  n bigint;
BEGIN
  FOR b IN 1 .. 30 LOOP
    t := t + interval '7 seconds';
    PERFORM ss_rows((random() * 40)::int + (CASE WHEN b % 9 = 0 THEN 0 ELSE 1 END), t);
    COMMIT;
    FOR q IN SELECT * FROM ss_queries ORDER BY name LOOP
      CALL cq.run(q.name || '_m');
      CALL cq.run(q.name || '_t');
      bad := CASE WHEN q.oracle THEN mismatches((q.name || '_m')::regclass, q.sql) END;
      EXECUTE format('SELECT count(*) FROM %I', q.name || '_m') INTO n;
      INSERT INTO ss_log
      SELECT b, q.name, bad, twin_bad((q.name || '_m')::regclass, (q.name || '_t')::regclass),
             NOT EXISTS (SELECT num_input_rows, num_state_rows_total, num_state_rows_updated, num_state_rows_removed,
                                num_rows_dropped_by_watermark, num_output_rows, batch_id, watermark
                           FROM cq.progress WHERE name = q.name || '_m'
                         EXCEPT
                         SELECT num_input_rows, num_state_rows_total, num_state_rows_updated, num_state_rows_removed,
                                num_rows_dropped_by_watermark, num_output_rows, batch_id, watermark
                           FROM cq.progress WHERE name = q.name || '_t'),
             n;
    END LOOP;
    COMMIT;
  END LOOP;
END $$;
RESET cq.state_image_batches;
-- every target equal to the plain query and to its twin after every batch
SELECT name, sum(oracle_bad) AS oracle_mismatches, sum(twin_bad) AS twin_mismatches,
       bool_and(metrics_equal) AS metrics_equal, count(*) AS batches, max(rows) > 0 AS has_rows
  FROM ss_log GROUP BY name ORDER BY name;
-- the watermark did its work: rows dropped as late, windows evicted, windows appended
SELECT name, sum(num_rows_dropped_by_watermark) > 0 AS dropped_late, sum(num_state_rows_removed) > 0 AS evicted,
       count(*) FILTER (WHERE num_output_rows > 0) > 0 AS wrote
  FROM cq.progress WHERE name IN ('ss_app_m', 'ss_upw_m') GROUP BY name ORDER BY name;
-- the final view of a store query reads the store
SELECT mismatches(format('cq_state.f_%s', id)::regclass,
                  'SELECT k1, count(*), sum(x) FROM ss_src GROUP BY k1 HAVING count(*) % 3 <> 0 OR k1 IS NULL')
       AS final_view_mismatches
  FROM cq.queries WHERE name = 'ss_hav_m';
-- its size: rows as the progress says, bytes counted against cq.state_memory
SELECT i.batch_id = (SELECT max(batch_id) FROM cq.offsets WHERE name = 'ss_upd_m') AS current_batch,
       i.state_rows = (SELECT num_state_rows_total FROM cq.progress WHERE name = 'ss_upd_m'
                        ORDER BY batch_id DESC LIMIT 1) AS rows_match,
       i.state_bytes > i.state_rows * 16 AS has_bytes
  FROM cq.state_store_info('ss_upd_m') i;
-- the state of a store query is in shared memory
CREATE FUNCTION ss_state_rows(qname text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM %s', (SELECT state_table FROM cq.queries WHERE name = qname)) INTO n;
  RETURN n;
END $$;
-- (its state table holds the image written by batch 23, the second: cq.state_image_batches = 12)
SELECT ss_state_rows('ss_upd_m') > 0 AS image_has_rows, i.batch_id AS image_batch,
       (SELECT max(batch_id) FROM cq.offsets WHERE name = 'ss_upd_m') AS last_batch
  FROM cq.state_images i JOIN cq.queries q ON q.id = i.query_id WHERE q.name = 'ss_upd_m';
SELECT ss_state_rows('ss_upd_t') > 0 AS twin_table_has_rows;

-- 2. An error after the merge (the target refuses a row) leaves the store
-- as it was: the next batch is right.  Once in a subtransaction (an
-- exception block), once failing the query (CALL at top level).
SELECT ss_rows(30, '2024-01-01 01:00:00+00');
ALTER TABLE ss_upd_m ADD CONSTRAINT ss_no_rows CHECK (n < 0) NOT VALID;
DO $$
BEGIN
  BEGIN
    CALL cq.run('ss_upd_m');
  EXCEPTION WHEN check_violation THEN
    RAISE WARNING 'batch failed';
  END;
  -- the same transaction: a second batch sees the store as before the failed one
  BEGIN
    CALL cq.run('ss_upd_m');
  EXCEPTION WHEN check_violation THEN
    RAISE WARNING 'batch failed';
  END;
END $$;
\set VERBOSITY terse
CALL cq.run('ss_upd_m');
\set VERBOSITY default
SELECT state, last_error IS NOT NULL AS has_error FROM cq.queries WHERE name = 'ss_upd_m';
ALTER TABLE ss_upd_m DROP CONSTRAINT ss_no_rows;
SELECT cq.resume('ss_upd_m');
CALL cq.run('ss_upd_m');
SELECT mismatches('ss_upd_m', (SELECT sql FROM ss_queries WHERE name = 'ss_upd')) AS mismatches_after_errors;
SELECT ss_rows(30, '2024-01-01 01:00:10+00');
CALL cq.run('ss_upd_m');
SELECT mismatches('ss_upd_m', (SELECT sql FROM ss_queries WHERE name = 'ss_upd')) AS mismatches_next_batch;
-- a rolled-back transaction that ran a batch changes nothing either
SELECT ss_rows(10, '2024-01-01 01:00:20+00');
BEGIN;
CALL cq.run('ss_cmp_m');
ROLLBACK;
CALL cq.run('ss_cmp_m');
SELECT mismatches('ss_cmp_m', (SELECT sql FROM ss_queries WHERE name = 'ss_cmp')) AS mismatches_after_rollback;

-- 3. cq.reset starts over from an empty store
SELECT cq.reset('ss_hav_m');
CALL cq.run('ss_hav_m');
SELECT mismatches('ss_hav_m', (SELECT sql FROM ss_queries WHERE name = 'ss_hav')) AS mismatches_after_reset;

-- 4. A worker and CALL cq.run on the same query: batches in different
-- backends see each other's store
CREATE TABLE ss_w (k int, x int);
SELECT cq.create_query('ss_wq', 'SELECT k, count(*) AS n, sum(x) AS sx FROM ss_w GROUP BY k',
                       output_mode => 'update', state_storage => 'memory') IS NOT NULL AS created;
DO $$
BEGIN
  FOR i IN 1 .. 10 LOOP
    INSERT INTO ss_w SELECT (random() * 8)::int, (random() * 100)::int FROM generate_series(1, 20);
    COMMIT;
    IF i % 2 = 0 THEN
      CALL cq.run('ss_wq');
    END IF;
  END LOOP;
END $$;
SELECT wait_until($$mismatches('ss_wq', 'SELECT k, count(*) AS n, sum(x) AS sx FROM ss_w GROUP BY k') = 0$$);
SELECT count(DISTINCT batch_id) > 1 AS several_batches FROM cq.progress WHERE name = 'ss_wq';
SELECT cq.drop_query('ss_wq', drop_target => true);

-- 5. What the store does not keep: the query says why
CREATE TABLE ss_d (k int, x int);
SELECT cq.create_query('ss_bad', 'SELECT k, count(DISTINCT x) FROM ss_d GROUP BY k',
                       output_mode => 'update', state_storage => 'memory');
SELECT cq.create_query('ss_bad', 'SELECT DISTINCT k FROM ss_d', state_storage => 'memory');
CREATE TABLE ss_d2 (k int, x int, ts timestamptz);
CREATE TABLE ss_d3 (k int, x int, ts timestamptz);
SELECT cq.create_query('ss_bad', 'SELECT k, s.session_start, s.session_end, count(*) FROM ss_d2, LATERAL cq.session_window(ts, ''1 minute'') s GROUP BY 1, 2, 3',
                       output_mode => 'update', state_storage => 'memory');
SELECT cq.create_query('ss_bad', 'SELECT a.k, a.x, b.x AS y FROM ss_d2 a JOIN ss_d3 b ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + interval ''1 minute''',
                       source => 'ss_d2, ss_d3', event_time => 'ss_d2.ts, ss_d3.ts', watermark => '1 minute',
                       state_storage => 'memory');
SELECT cq.create_query('ss_bad', 'SELECT k FROM ss_d', state_storage => 'disk');
-- HAVING changes: the target is rewritten from the store as the table
-- twin's is from its state table (update mode; ss_cmp: complete mode),
-- both caught up first
CALL cq.run('ss_hav_m'); CALL cq.run('ss_hav_t'); CALL cq.run('ss_cmp_m'); CALL cq.run('ss_cmp_t');
SELECT cq.alter_query(name, query => 'SELECT k1, count(*) AS n, sum(x) AS sx FROM ss_src GROUP BY k1 HAVING count(*) > 2')
  FROM (VALUES ('ss_hav_m'), ('ss_hav_t')) v(name);
SELECT cq.alter_query(name, query => 'SELECT k2, k1, count(*) AS n, sum(v) AS sv, bool_or(x > 90) AS big, '
                                     'hll_cardinality(hll_add_agg(hll_hash_text(u))) AS card FROM ss_src GROUP BY k2, k1 '
                                     'HAVING count(*) > 3')
  FROM (VALUES ('ss_cmp_m'), ('ss_cmp_t')) v(name);
SELECT mismatches('ss_hav_m', 'SELECT k1, count(*), sum(x) FROM ss_src GROUP BY k1 HAVING count(*) > 2') AS hav_mismatches,
       twin_bad('ss_hav_m', 'ss_hav_t') AS hav_twin_mismatches,
       mismatches('ss_cmp_m', 'SELECT k2, k1, count(*), sum(v), bool_or(x > 90), '
                              'hll_cardinality(hll_add_agg(hll_hash_text(u))) FROM ss_src GROUP BY k2, k1 HAVING count(*) > 3')
         AS cmp_mismatches,
       twin_bad('ss_cmp_m', 'ss_cmp_t') AS cmp_twin_mismatches,
       (SELECT count(*) FROM ss_hav_m) AS hav_rows, (SELECT count(*) FROM ss_cmp_m) AS cmp_rows;

-- 6. Beyond cq.state_memory, a query moves its state to its state table
-- (the table path) in the batch that outgrows it, says so, and stays right
SET cq.state_memory = '64kB';
CREATE TABLE ss_big (k int, x int);
SELECT cq.create_query('ss_bigq', 'SELECT k, count(*) AS n, sum(x) AS sx FROM ss_big GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory') IS NOT NULL AS created;
INSERT INTO ss_big SELECT i % 100, i FROM generate_series(1, 300) i;
CALL cq.run('ss_bigq');
SELECT state_storage FROM cq.queries WHERE name = 'ss_bigq';
INSERT INTO ss_big SELECT i, i FROM generate_series(1, 3000) i;
CALL cq.run('ss_bigq');
SELECT state_storage, state_path FROM cq.queries WHERE name = 'ss_bigq';
SELECT mismatches('ss_bigq', 'SELECT k, count(*), sum(x) FROM ss_big GROUP BY k') AS mismatches_after_move,
       ss_state_rows('ss_bigq') AS state_table_rows;
INSERT INTO ss_big SELECT i % 5000, i FROM generate_series(1, 500) i;
CALL cq.run('ss_bigq');
SELECT mismatches('ss_bigq', 'SELECT k, count(*), sum(x) FROM ss_big GROUP BY k') AS mismatches_on_table_path,
       mismatches(format('cq_state.f_%s', id)::regclass, 'SELECT k, count(*), sum(x) FROM ss_big GROUP BY k') AS final_view_mismatches
  FROM cq.queries WHERE name = 'ss_bigq';
RESET cq.state_memory;
