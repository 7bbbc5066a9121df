-- Issues 12 and 15: batch 0 over history of a query on the shared-memory
-- store takes the table path up front when the estimate of its state (the
-- grouping keys' distinct values in the source's statistics, time buckets
-- counted from the column's range, bounded by the planner's estimate of the
-- batch's aggregation) exceeds cq.state_memory: it never folds into the store
-- first.  cq.queries.state_path and cq.status say so and why.  Results are
-- the plain query's either way; a key the statistics cannot estimate, or an
-- explicit state_storage = 'memory', keeps the store (which still moves to
-- the table if it really outgrows the budget).
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SET client_min_messages = warning;
SET timezone = 'UTC';
SET cq.state_memory = '64kB';

CREATE TABLE up_src (k int, ts timestamptz, c text, v int);
INSERT INTO up_src SELECT i, timestamptz '2024-01-01' + i * interval '1 second', 'c' || (i % 5), i % 100
  FROM generate_series(1, 20000) i;
CREATE FUNCTION up_paths() RETURNS TABLE (name text, state_storage text, state_path text, in_store boolean)
LANGUAGE sql AS $$
  SELECT q.name, q.state_storage,
         regexp_replace(q.state_path, 'groups of [0-9]+ bytes', 'groups of B bytes'),
         (SELECT state_rows FROM cq.state_store_info(q.name)) IS NOT NULL
    FROM cq.queries q WHERE q.name LIKE 'up\_%' ORDER BY q.name
$$;

-- each target against its plain query (0: equal)
CREATE FUNCTION up_mismatches(OUT big bigint, OUT bucket bigint, OUT small bigint, OUT hour bigint,
                              OUT expr bigint, OUT asked bigint)
LANGUAGE plpgsql AS $$
BEGIN
SELECT mismatches('up_big', 'SELECT k, count(*), sum(v) FROM up_src GROUP BY k'),
       mismatches('up_bucket', 'SELECT date_trunc(''minute'', ts), c, count(*), max(v) FROM up_src GROUP BY 1, 2'),
       mismatches('up_small', 'SELECT c, count(*), sum(v) FROM up_src GROUP BY c'),
       mismatches('up_hour', 'SELECT date_bin(''1 hour'', ts, ''2000-01-01''), c, count(*) FROM up_src GROUP BY 1, 2'),
       mismatches('up_expr', 'SELECT k % 7, count(*) FROM up_src GROUP BY 1'),
       mismatches('up_asked', 'SELECT k, count(*), sum(v) FROM up_src GROUP BY k')
  INTO big, bucket, small, hour, expr, asked;
END $$;

-- the rows of a query's state table and their counts' sum
CREATE FUNCTION up_state(name text, OUT state_rows bigint, OUT state_n numeric)
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('SELECT count(*), sum(n) FROM %s',
                 (SELECT state_table::regclass FROM cq.queries q WHERE q.name = up_state.name))
    INTO state_rows, state_n;
END $$;

-- up_big: 20,000 groups (k is unique), ~1 MB in the store: the table path up front
SELECT cq.create_query('up_big', 'SELECT k, count(*) AS n, sum(v) AS s FROM up_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
-- up_bucket: minutes x c, ~1,670 groups: the table path (the planner alone
-- would count ts's 20,000 distinct values, as for up_hour)
SELECT cq.create_query('up_bucket', 'SELECT date_trunc(''minute'', ts) AS m, c, count(*) AS n, max(v) AS mx FROM up_src GROUP BY 1, 2',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
-- up_small: 5 groups; up_hour: 6 hours x 5 = 30 groups (date_bin): the store
SELECT cq.create_query('up_small', 'SELECT c, count(*) AS n, sum(v) AS s FROM up_src GROUP BY c',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
SELECT cq.create_query('up_hour', 'SELECT date_bin(''1 hour'', ts, ''2000-01-01'') AS h, c, count(*) AS n FROM up_src GROUP BY 1, 2',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
-- up_expr: 7 groups of an expression the statistics do not describe: no
-- estimate, the store
SELECT cq.create_query('up_expr', 'SELECT k % 7 AS r, count(*) AS n FROM up_src GROUP BY 1',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
-- up_asked: as up_big, but the store was asked for: it stays in the store
-- for batch 0 and then moves, having outgrown the budget
SELECT cq.create_query('up_asked', 'SELECT k, count(*) AS n, sum(v) AS s FROM up_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now',
                       state_storage => 'memory') IS NOT NULL AS created;
ANALYZE up_src;
SELECT * FROM up_paths();

-- batch 0 of each (up_big and up_bucket say at notice level that they keep
-- their state in the table; up_asked warns that it moved)
CALL cq.run('up_big');
CALL cq.run('up_bucket');
CALL cq.run('up_small');
CALL cq.run('up_hour');
CALL cq.run('up_expr');
CALL cq.run('up_asked');
SELECT * FROM up_paths();
SELECT name, regexp_replace(state_path, 'groups of [0-9]+ bytes', 'groups of B bytes') AS state_path
  FROM cq.status WHERE name IN ('up_big', 'up_bucket') ORDER BY name;
-- the state table holds up_big's state: one row per group, counts summing to the source
SELECT * FROM up_state('up_big');
SELECT * FROM up_mismatches();

-- the next batches, on each query's path: still the plain query's results
INSERT INTO up_src SELECT i % 25000, timestamptz '2024-01-01' + i * interval '1 second', 'c' || (i % 7), i % 100
  FROM generate_series(19990, 25000) i;
CALL cq.run('up_big');
CALL cq.run('up_bucket');
CALL cq.run('up_small');
CALL cq.run('up_hour');
CALL cq.run('up_expr');
CALL cq.run('up_asked');
SELECT * FROM up_mismatches();
SELECT * FROM up_paths();

RESET cq.state_memory;
SELECT cq.drop_query(name, drop_target => true) FROM cq.queries WHERE name LIKE 'up\_%' ORDER BY name;
DROP TABLE up_src;
DROP FUNCTION up_paths(), up_mismatches(), up_state(text);
