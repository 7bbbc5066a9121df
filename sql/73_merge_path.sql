-- Issue 12 goal 7: update mode writes its target by MERGE when every key is
-- provably NOT NULL and the batch is small (cq.merge_max_groups), else by
-- the upsert.  Each query runs as four twins: on the store (_m, with
-- cq.target_update_in_c off: the C writer, which the store takes first
-- where the target qualifies, sql/171_merge_path.sql, would take every
-- batch) and on a state table (_t), each also forced off MERGE (_mu: the C
-- writer, _tu: the upsert; cq.merge_max_groups = 0 for their batches).  Over random batches (rows
-- entering and leaving HAVING, rows deleted from the targets by hand,
-- windows closed by the watermark, a join with a static table) every twin
-- equals the others row for row as text, with the same metrics, and the
-- plain query where it is the oracle; with cq.merge_max_groups = 8 the
-- batches took MERGE exactly when they were small enough, and both paths.
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SET client_min_messages = warning;
-- mp_path reads which path this session's last batch took (cq.explain): the
-- batches run here, not in a pool worker (cq.run_in_worker, sql/91_run_handoff.sql)
SET cq.run_in_worker = off;
SET timezone = 'UTC';
SELECT setseed(0.73);

CREATE TABLE mp_src (k int NOT NULL, g int, v int, t text, ts timestamptz NOT NULL);
CREATE TABLE mp_dim (id int PRIMARY KEY, name text NOT NULL);
INSERT INTO mp_dim SELECT i, 'd' || (i % 5) FROM generate_series(0, 19) i;
-- n random rows around event time t0 (some late by up to 30 seconds)
CREATE FUNCTION mp_rows(n int, t0 timestamptz) RETURNS void LANGUAGE sql AS $$
  INSERT INTO mp_src
  SELECT (random() * 19)::int,
         CASE WHEN random() < 0.2 THEN NULL ELSE (random() * 6)::int END,
         (random() * 20)::int - 8,
         (ARRAY['a', 'b', 'c', NULL])[1 + (random() * 3)::int],
         t0 - make_interval(secs => CASE WHEN random() < 0.2 THEN random() * 30 ELSE random() * 4 END)
    FROM generate_series(1, n)
$$;
-- the path of a query's last batch in this session, as cq.explain says
CREATE FUNCTION mp_path(qname text) RETURNS text LANGUAGE sql AS $$
  SELECT (regexp_match(cq.explain(qname), '-- last batch in this session: (MERGE|the upsert statement|the C writer)'))[1]
$$;
-- the metrics of a query's batches
CREATE FUNCTION mp_metrics(qname text) RETURNS TABLE (batch_id bigint, i bigint, t bigint, u bigint, r bigint,
                                                      d bigint, o bigint, w timestamptz)
LANGUAGE sql AS $$
  SELECT batch_id, num_input_rows, num_state_rows_total, num_state_rows_updated, num_state_rows_removed,
         num_rows_dropped_by_watermark, num_output_rows, watermark
    FROM cq.progress WHERE name = qname
$$;

CREATE TABLE mp_queries (name text PRIMARY KEY, sql text, wm boolean, oracle boolean);
INSERT INTO mp_queries VALUES
  -- key NOT NULL in the source; HAVING: groups enter and leave it
  ('mp_k', 'SELECT k, count(*) AS n, sum(v) AS s, max(t) AS mx FROM mp_src GROUP BY k HAVING sum(v) > 0',
   false, true),
  -- windows of a NOT NULL time and a NOT NULL key, closed by the watermark
  ('mp_w', 'SELECT date_bin(''10 seconds'', ts, ''2024-01-01'') AS w, k, count(*) AS n, sum(v) AS s '
           'FROM mp_src GROUP BY 1, 2 HAVING count(*) > 1', true, false),
  -- a join with a static table: NOT NULL columns of both
  ('mp_j', 'SELECT s.k, d.name, count(*) AS n, sum(s.v) AS s FROM mp_src s JOIN mp_dim d ON d.id = s.k '
           'GROUP BY s.k, d.name HAVING sum(s.v) > 0', false, true),
  -- a key that may be NULL: the upsert
  ('mp_g', 'SELECT g, count(*) AS n, sum(v) AS s FROM mp_src GROUP BY g HAVING sum(v) > 0', false, true);
SELECT name || s.suffix AS query,
       cq.create_query(name || s.suffix, sql, output_mode => 'update', "trigger" => 'available_now',
                       event_time => CASE WHEN wm THEN 'ts' END, watermark => CASE WHEN wm THEN '5 seconds' END,
                       state_storage => s.storage, source => 'mp_src') IS NOT NULL AS created
  FROM mp_queries, (VALUES ('_m', 'memory'), ('_mu', 'memory'), ('_t', 'unlogged'), ('_tu', 'unlogged')) s(suffix, storage)
 ORDER BY 1;

-- which path each query may take, and why
SELECT name, line
  FROM cq.queries, regexp_split_to_table(cq.explain(name), E'\n') AS line
 WHERE name ~ '^mp_[a-z]_(m|t)$' AND line ~ '^-- (target write|MERGE \(statement|the upsert statement|It compares)'
 ORDER BY name, line;

CREATE TABLE mp_log (batch int, name text, suffix text, path text, input bigint, updated bigint, all_new boolean);
CREATE TABLE mp_bad (batch int, name text, twin text, bad bigint);
DO $$
DECLARE
  q record;
  s text;
  t timestamptz := '2024-01-01 00:00:00+00';
  kk int;
BEGIN
  FOR b IN 1 .. 30 LOOP
    t := t + interval '3 seconds';
    PERFORM mp_rows((random() * 20)::int + 1, t);
    -- now and then a row deleted by hand: the next change of its group writes it again
    IF b % 6 = 0 THEN
      kk := b % 19;
      FOREACH s IN ARRAY ARRAY['_m', '_mu', '_t', '_tu'] LOOP
        EXECUTE format('DELETE FROM %I WHERE k = $1', 'mp_k' || s) USING kk;
      END LOOP;
      INSERT INTO mp_src VALUES (kk, 1, 50, 'z', t);
    END IF;
    COMMIT;
    FOR q IN SELECT * FROM mp_queries ORDER BY name LOOP
      FOREACH s IN ARRAY ARRAY['_m', '_mu', '_t', '_tu'] LOOP
        PERFORM set_config('cq.merge_max_groups', CASE WHEN s LIKE '%u' THEN '0' ELSE '8' END, false);
        PERFORM set_config('cq.target_update_in_c', CASE WHEN s = '_m' THEN 'off' ELSE 'on' END, false);
        CALL cq.run(q.name || s);
        -- the last batch that ran a target statement (on the store: one
        -- that changed or evicted groups), which cq.explain's path is of
        INSERT INTO mp_log
        SELECT b, q.name, s, mp_path(q.name || s), m.i, m.u, m.u > 0 AND m.r = 0 AND m.u = m.new
          FROM (SELECT x.*, x.t - coalesce(lag(x.t) OVER (ORDER BY x.batch_id), 0) + x.r AS new
                  FROM mp_metrics(q.name || s) x) m
         WHERE s LIKE '\_t%' OR m.u > 0 OR m.r > 0
         ORDER BY m.batch_id DESC LIMIT 1;
      END LOOP;
      PERFORM set_config('cq.merge_max_groups', '10000', false);
      PERFORM set_config('cq.target_update_in_c', 'on', false);
      INSERT INTO mp_bad
      SELECT b, q.name, x.twin, twin_bad((q.name || '_m')::regclass, (q.name || x.twin)::regclass)
        FROM (VALUES ('_mu'), ('_t'), ('_tu')) x(twin);
    END LOOP;
    COMMIT;
  END LOOP;
END $$;
-- every target equal to its twins after every batch
SELECT name, twin, sum(bad) AS mismatches, count(*) AS batches FROM mp_bad GROUP BY 1, 2 ORDER BY 1, 2;
-- with the same metrics in every batch
SELECT q.name, x.twin,
       NOT EXISTS ((SELECT * FROM mp_metrics(q.name || '_m') EXCEPT SELECT * FROM mp_metrics(q.name || x.twin))
                   UNION ALL
                   (SELECT * FROM mp_metrics(q.name || x.twin) EXCEPT SELECT * FROM mp_metrics(q.name || '_m')))
         AS metrics_equal
  FROM mp_queries q, (VALUES ('_mu'), ('_t'), ('_tu')) x(twin) ORDER BY 1, 2;
-- and equal to the plain query where it is the oracle (no windows evicted)
SELECT name, mismatches((name || '_m')::regclass, sql) AS m, mismatches((name || '_t')::regclass, sql) AS t
  FROM mp_queries WHERE oracle ORDER BY name;
-- rows left HAVING (deleted) and windows were evicted
SELECT (SELECT count(*) FROM (SELECT k FROM mp_src GROUP BY k HAVING sum(v) <= 0) x) > 0 AS groups_outside_having,
       (SELECT sum(r) FROM mp_metrics('mp_w_m')) > 0 AS windows_evicted,
       (SELECT sum(d) FROM mp_metrics('mp_w_m')) > 0 AS late_rows_dropped;
-- the paths taken (batch 0 loads the target: no path): MERGE exactly when
-- the batch changed at most 8 groups (store) or had at most 8 new rows
-- (table), the C writer (store) or the upsert (table) when forced, the
-- upsert statement or the C writer on the store with a key that may be
-- NULL, no path noted (no MERGE possible) with a key that may be NULL or a
-- join on the table path, and on the store a batch whose changed groups
-- are all new, none evicted, loaded from C (cq.bulk_load) whatever the
-- writer; both statements taken
-- where MERGE may be (but by the window query on the table path, whose
-- last batch in each run is the no-data batch that closes windows: no new
-- rows, MERGE)
SELECT name, suffix,
       count(*) FILTER (WHERE path = 'MERGE') > 0 AS took_merge,
       count(*) FILTER (WHERE path = 'the upsert statement') > 0 AS took_upsert,
       bool_and(path IS NOT DISTINCT FROM
                CASE WHEN suffix = '_mu' OR (suffix = '_m' AND all_new) THEN 'the C writer'
                     WHEN (name = 'mp_g' OR name = 'mp_j') AND suffix IN ('_t', '_tu') THEN NULL
                     WHEN name = 'mp_g' OR suffix LIKE '%u' THEN 'the upsert statement'
                     WHEN (CASE WHEN suffix = '_m' THEN updated ELSE input END) <= 8 THEN 'MERGE'
                     ELSE 'the upsert statement' END) AS as_sized
  FROM mp_log WHERE batch > 1 GROUP BY 1, 2 ORDER BY 1, 2;

-- rows whose values did not change are not rewritten (as by the upsert)
CREATE TABLE mp_src2 (k int NOT NULL, v int);
SELECT cq.create_query('mp_x' || s, 'SELECT k, max(v) AS mx FROM mp_src2 GROUP BY k', output_mode => 'update',
                       "trigger" => 'available_now', state_storage => st) IS NOT NULL AS created
  FROM (VALUES ('_m', 'memory'), ('_t', 'unlogged')) x(s, st) ORDER BY s;
INSERT INTO mp_src2 VALUES (1, 10), (2, 10);
CALL cq.run('mp_x_m'); CALL cq.run('mp_x_t');
INSERT INTO mp_src2 VALUES (1, 1), (2, 1);
CALL cq.run('mp_x_m'); CALL cq.run('mp_x_t');
CREATE TABLE mp_xmin AS SELECT '_m' AS s, k, xmin::text AS x FROM mp_x_m UNION ALL SELECT '_t', k, xmin::text FROM mp_x_t;
INSERT INTO mp_src2 VALUES (1, 5), (2, 20);
CALL cq.run('mp_x_m'); CALL cq.run('mp_x_t');
SELECT x.s, x.k, x.x = (CASE x.s WHEN '_m' THEN (SELECT xmin::text FROM mp_x_m WHERE k = x.k)
                                 ELSE (SELECT xmin::text FROM mp_x_t WHERE k = x.k) END) AS row_kept,
       mp_path('mp_x' || x.s) AS path
  FROM mp_xmin x ORDER BY 1, 2;
SELECT mismatches('mp_x_m', 'SELECT k, max(v) AS mx FROM mp_src2 GROUP BY k') AS m,
       mismatches('mp_x_t', 'SELECT k, max(v) AS mx FROM mp_src2 GROUP BY k') AS t;

-- a key proven NOT NULL by its target column: an expression that could be
-- NULL takes the upsert until the target's column carries NOT NULL
CREATE TABLE mp_src3 (a int, v int);
SELECT cq.create_query('mp_n', 'SELECT a + 0 AS a, count(*) AS n FROM mp_src3 GROUP BY a + 0', output_mode => 'update',
                       "trigger" => 'available_now') IS NOT NULL AS created;
SELECT line FROM regexp_split_to_table(cq.explain('mp_n'), E'\n') AS line
 WHERE line ~ '^-- (target write|MERGE \(statement|the upsert statement|It compares)';
ALTER TABLE mp_n ALTER COLUMN a SET NOT NULL;
SELECT line FROM regexp_split_to_table(cq.explain('mp_n'), E'\n') AS line
 WHERE line ~ '^-- (target write|MERGE \(statement|the upsert statement|It compares)';
-- (with the C writer off: on the store it comes first where it applies)
SET cq.target_update_in_c = off;
INSERT INTO mp_src3 SELECT i % 3, i FROM generate_series(1, 10) i;
CALL cq.run('mp_n');
INSERT INTO mp_src3 SELECT i % 4, i FROM generate_series(1, 10) i;
CALL cq.run('mp_n');
SELECT mp_path('mp_n') AS path, mismatches('mp_n', 'SELECT a + 0 AS a, count(*) AS n FROM mp_src3 GROUP BY a + 0') AS m;
RESET cq.target_update_in_c;

SELECT cq.drop_query(name, drop_target => true) IS NOT NULL AS dropped
  FROM cq.queries WHERE name LIKE 'mp\_%' ORDER BY name;
DROP TABLE mp_src, mp_src2, mp_src3, mp_dim, mp_queries, mp_log, mp_bad, mp_xmin;
DROP FUNCTION mp_rows(int, timestamptz), mp_path(text), mp_metrics(text);
