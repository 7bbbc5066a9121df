-- Session 28: batch 0's estimate of its state in the shared-memory store
-- lays a state row out as the store stores it, with the widths ANALYZE
-- measured: a grouping key that is a column, the partial of min or max of
-- a column, of sum of a numeric column (2 bytes more); other variable-width
-- columns the planner's width for their type (32 bytes for a numeric).
-- Before, every column took the planner's width, and a state row with
-- numeric partials was estimated at half again what the store counts.  An
-- estimate within the budget keeps the query in the store; one that is too
-- low (a min of long values among short ones) still moves it to the table
-- when it outgrows the budget, with the plain query's results either way.
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SET client_min_messages = warning;

CREATE TABLE est_src (k int, v numeric(10,2), c text);
-- 5,000 groups of 4 rows; one row of each has a 64-byte c, which min(c) keeps
INSERT INTO est_src
  SELECT (i - 1) / 4, ((i * 37) % 100000) / 100.0,
         CASE WHEN i % 4 = 0 THEN repeat('a', 60) || lpad((i % 10000)::text, 4, '0') ELSE 'b' || (i % 10) END
    FROM generate_series(1, 20000) i;
-- the same rows in a partitioned table (whose statistics are its tree's)
CREATE TABLE est_psrc (k int, v numeric(10,2), c text) PARTITION BY RANGE (k);
CREATE TABLE est_psrc1 PARTITION OF est_psrc FOR VALUES FROM (0) TO (2500);
CREATE TABLE est_psrc2 PARTITION OF est_psrc FOR VALUES FROM (2500) TO (MAXVALUE);
INSERT INTO est_psrc SELECT * FROM est_src;
-- and with an event time (d's four event-time statistics are not stored)
CREATE TABLE est_ets (ts timestamptz, v numeric(10,2), c text);
INSERT INTO est_ets SELECT timestamptz '2024-01-01 00:00+00' + k * interval '4 seconds', v, c FROM est_src;
ANALYZE est_src, est_psrc, est_ets;

CREATE FUNCTION est_create(name text, query text, storage text DEFAULT NULL) RETURNS boolean
LANGUAGE sql AS $$
  SELECT cq.create_query(name, query, output_mode => 'update', "trigger" => 'available_now',
                         state_storage => storage,
                         event_time => CASE WHEN name = 'est_et' THEN 'ts' END) IS NOT NULL
$$;
CREATE FUNCTION est_names() RETURNS SETOF text LANGUAGE sql AS $$
  SELECT unnest(ARRAY['est_num', 'est_min', 'est_expr', 'est_part', 'est_et'])
$$;
CREATE FUNCTION est_query(name text) RETURNS text LANGUAGE sql AS $$
  SELECT CASE name
    WHEN 'est_num' THEN 'SELECT k, count(*) AS n, sum(v) AS s, max(v) AS mx, avg(v) AS a FROM est_src GROUP BY k'
    WHEN 'est_min' THEN 'SELECT k, min(c) AS mc FROM est_src GROUP BY k'
    WHEN 'est_expr' THEN 'SELECT k, sum(v * 1) AS s FROM est_src GROUP BY k'
    WHEN 'est_part' THEN 'SELECT k, count(*) AS n, sum(v) AS s, max(v) AS mx, avg(v) AS a FROM est_psrc GROUP BY k'
    WHEN 'est_et' THEN 'SELECT date_bin(''1 second'', ts, ''2000-01-01'') AS t, count(*) AS n, sum(v) AS s FROM est_ets GROUP BY 1' END
$$;

-- 1. What each query's state really takes in the store (bytes per group)
SET cq.state_memory = '100MB';
SELECT est_create(n, est_query(n), 'memory') FROM est_names() n;
SELECT format('CALL cq.run(%L)', n) FROM est_names() n \gexec
CREATE TABLE est_real AS
  SELECT n AS name, i.state_rows AS groups, i.state_bytes::numeric / i.state_rows AS per_group
    FROM est_names() n, cq.state_store_info(n) i;
SELECT name, groups FROM est_real ORDER BY name;
SELECT cq.drop_query(n, drop_target => true) FROM est_names() n;

-- 2. The estimates, read from the state path of the table path taken up front
-- under a budget below them all: est_num within a few bytes of the store's
-- figure (est_part too: the statistics of the partitioned table's tree; est_et),
-- est_min below it (the column's average width, not the minimum's),
-- est_expr above it (a numeric expression: the planner's 32 bytes)
SET cq.state_memory = '64kB';
SELECT est_create(n, est_query(n)) FROM est_names() n;
SELECT format('CALL cq.run(%L)', n) FROM est_names() n \gexec
CREATE TABLE est_est AS
  SELECT q.name, substring(q.state_path FROM 'estimated ([0-9]+) groups')::int AS groups,
         substring(q.state_path FROM 'groups of ([0-9]+) bytes')::numeric AS per_group
    FROM cq.queries q WHERE q.name LIKE 'est\_%';
SELECT e.name, e.groups, e.per_group BETWEEN r.per_group - 4 AND r.per_group + 4 AS close,
       e.per_group < r.per_group - 20 AS below, e.per_group > r.per_group + 20 AS above
  FROM est_est e JOIN est_real r USING (name) ORDER BY e.name;
SELECT name, mismatches(name::regclass, est_query(name)) FROM est_est ORDER BY name;
SELECT cq.drop_query(n, drop_target => true) FROM est_names() n;

-- 3. A budget a tenth above est_num's state: its estimate fits, the store
-- holds it (before session 28 the estimate took it to the table)
SELECT set_config('cq.state_memory', ceil(groups * per_group * 1.1 / 1024)::text || 'kB', false) IS NOT NULL AS set
  FROM est_real WHERE name = 'est_num';
SELECT est_create('est_num', est_query('est_num'));
CALL cq.run('est_num');
SELECT state_storage, state_path FROM cq.queries WHERE name = 'est_num';
SELECT state_rows FROM cq.state_store_info('est_num');
SELECT mismatches('est_num', est_query('est_num'));

-- 4. A budget between est_min's estimate and its state: the store is
-- chosen, batch 0 outgrows it and moves the query to its table (a WARNING)
SELECT set_config('cq.state_memory',
                  ceil(r.groups * (r.per_group + e.per_group) / 2 / 1024)::text || 'kB', false) IS NOT NULL AS set
  FROM est_real r JOIN est_est e USING (name) WHERE name = 'est_min';
SELECT est_create('est_min', est_query('est_min'));
SET client_min_messages = error;
CALL cq.run('est_min');
SET client_min_messages = warning;
SELECT state_storage, state_path ~ '^table: moved after exceeding cq.state_memory \(\d+ kB\) at batch 0$' AS moved
  FROM cq.queries WHERE name = 'est_min';
SELECT mismatches('est_min', est_query('est_min'));

-- the next batch, on each query's path (a budget that holds est_num's)
SET cq.state_memory = '100MB';
INSERT INTO est_src SELECT i % 6000, i % 1000, 'a' || i FROM generate_series(20001, 24000) i;
CALL cq.run('est_num');
CALL cq.run('est_min');
SELECT mismatches('est_num', est_query('est_num')) AS num, mismatches('est_min', est_query('est_min')) AS min;
SELECT name, state_storage FROM cq.queries WHERE name LIKE 'est\_%' ORDER BY name;

RESET cq.state_memory;
SELECT cq.drop_query(name, drop_target => true) FROM cq.queries WHERE name LIKE 'est\_%' ORDER BY name;
DROP TABLE est_src, est_psrc, est_ets, est_real, est_est;
DROP FUNCTION est_create(text, text, text), est_names(), est_query(text);
