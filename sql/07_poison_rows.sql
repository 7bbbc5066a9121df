-- Poison rows (issue 5): a batch that errors (division by zero, a failed cast, a CHECK
-- constraint on the target) changes nothing -- target, state, offsets and progress stay --
-- and the query goes 'failed' with the error in last_error, both when a worker runs it and
-- when CALL cq.run does; other queries over the same source go on.  Sources are append-only,
-- so the fix is a filter (cq.alter_query) or a change to the target; then cq.run or
-- cq.resume catches up exactly.  Every wait polls with a deadline.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
-- errors without the generated statement as context
\set VERBOSITY terse

-- shared helpers: wait_until, mismatches, fingerprint
\i sql/include/helpers.sql

CREATE TABLE p_src (id int, k text, v int, payload text);
INSERT INTO p_src SELECT g, 'k' || g % 3, g, g::text FROM generate_series(1, 30) g;
CREATE TABLE p_ratio WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, sum(100 / v) AS r, count(*) AS n FROM p_src GROUP BY k;
CREATE TABLE p_ints WITH (cq.trigger = 'available_now', cq.output_mode = 'append')
  AS SELECT id, payload::int AS n FROM p_src;
CREATE TABLE p_count WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM p_src GROUP BY k;
CREATE TABLE p_total WITH (cq.trigger = 'available_now', cq.output_mode = 'complete')
  AS SELECT k, sum(v) AS s FROM p_src GROUP BY k;

-- poison: v = 0 (division by zero in p_ratio), payload 'x' (a failed cast in p_ints)
INSERT INTO p_src VALUES (31, 'k1', 0, '31'), (32, 'k2', 32, 'x'), (33, 'k0', 33, '33');

-- 1. CALL cq.run: the batch fails, changes nothing, and the failure is recorded
SELECT fingerprint('p_ratio') AS fp_ratio, fingerprint('p_ints') AS fp_ints \gset
CALL cq.run('p_ratio');
CALL cq.run('p_ints');
SELECT name, state, last_error FROM cq.queries WHERE name IN ('p_ratio', 'p_ints') ORDER BY name;
SELECT fingerprint('p_ratio') = :'fp_ratio' AS ratio_unchanged,
       fingerprint('p_ints') = :'fp_ints' AS ints_unchanged;
-- a second run fails the same way: no partial progress
CALL cq.run('p_ratio');
SELECT fingerprint('p_ratio') = :'fp_ratio' AS ratio_unchanged;
-- the other queries over the same source go on
CALL cq.run('p_count');
CALL cq.run('p_total');
SELECT mismatches('p_count', 'SELECT k, count(*) FROM p_src GROUP BY k') AS count_mismatches,
       mismatches('p_total', 'SELECT k, sum(v) FROM p_src GROUP BY k') AS total_mismatches;

-- inside a transaction block nothing can be committed apart: the error just propagates
-- and the caller's transaction rolls back as a whole (nothing recorded)
SELECT cq.resume('p_ratio');
BEGIN;
CALL cq.run('p_ratio');
ROLLBACK;
SELECT state, last_error FROM cq.queries WHERE name = 'p_ratio';
SELECT fingerprint('p_ratio') = :'fp_ratio' AS ratio_unchanged;

-- the fix: a filter that excludes the poison row (the row stays: sources are append-only);
-- the next run catches up exactly and the query is active again
SELECT cq.alter_query('p_ratio', query => 'SELECT k, sum(100 / v) AS r, count(*) AS n FROM p_src WHERE v <> 0 GROUP BY k');
SELECT cq.alter_query('p_ints', query => $$SELECT id, payload::int AS n FROM p_src WHERE payload ~ '^[0-9]+$'$$);
CALL cq.run('p_ratio');
CALL cq.run('p_ints');
SELECT name, state, last_error FROM cq.queries WHERE name IN ('p_ratio', 'p_ints') ORDER BY name;
SELECT mismatches('p_ratio', 'SELECT k, sum(100 / v), count(*) FROM p_src WHERE v <> 0 GROUP BY k') AS ratio_mismatches,
       mismatches('p_ints', $$SELECT id, payload::int FROM p_src WHERE payload ~ '^[0-9]+$'$$) AS ints_mismatches;
SELECT count(*) AS rows, count(DISTINCT id) AS ids FROM p_ints;

-- a cancel (here statement_timeout) only rolls the batch back: the query is not failed
CREATE FUNCTION p_slow(x int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.2); RETURN x; END $$;
CREATE TABLE p_slow_rows WITH (cq.trigger = 'available_now', cq.output_mode = 'append')
  AS SELECT id, p_slow(v) AS v FROM p_src WITH NO DATA;
SET statement_timeout = '100ms';
CALL cq.run('p_slow_rows');
RESET statement_timeout;
SELECT state, last_error, (SELECT count(*) FROM p_slow_rows) AS target_rows,
       (SELECT count(*) FROM cq.offsets o WHERE o.name = q.name) AS batches
  FROM cq.queries q WHERE name = 'p_slow_rows';
DROP TABLE p_slow_rows;
DROP FUNCTION p_slow(int);

-- 2. a CHECK constraint on the target
ALTER TABLE p_count ADD CONSTRAINT p_count_small CHECK (n <= 12);
INSERT INTO p_src SELECT g, 'k' || g % 3, g, g::text FROM generate_series(34, 45) g;
SELECT fingerprint('p_count') AS fp_count \gset
CALL cq.run('p_count');
SELECT state, last_error FROM cq.queries WHERE name = 'p_count';
SELECT fingerprint('p_count') = :'fp_count' AS count_unchanged;
-- fixed by dropping the constraint; cq.resume clears the error, cq.run catches up
ALTER TABLE p_count DROP CONSTRAINT p_count_small;
SELECT cq.resume('p_count');
CALL cq.run('p_count');
SELECT state, last_error FROM cq.queries WHERE name = 'p_count';
SELECT mismatches('p_count', 'SELECT k, count(*) FROM p_src GROUP BY k') AS count_mismatches;

-- 3. in the background: a worker's batch fails, the query goes 'failed' and is retried
-- with backoff (failing again, changing nothing); the other queries go on
CREATE TABLE b_src (k int, v int);
INSERT INTO b_src SELECT g % 4, g FROM generate_series(1, 20) g;
CREATE TABLE b_ratio WITH (cq.output_mode = 'update') AS SELECT k, sum(1000 / v) AS r FROM b_src GROUP BY k;
CREATE TABLE b_whole WITH (cq.output_mode = 'complete') AS SELECT k, min(1000 / v) AS m FROM b_src GROUP BY k;
CREATE TABLE b_rows WITH (cq.output_mode = 'append') AS SELECT k, v FROM b_src;
CREATE TABLE b_sum WITH (cq.output_mode = 'update') AS SELECT k, sum(v) AS s, count(*) AS n FROM b_src GROUP BY k;
SELECT fingerprint('b_ratio') AS fp_b_ratio, fingerprint('b_whole') AS fp_b_whole \gset
INSERT INTO b_src VALUES (1, 100), (2, 0), (3, 300);
SELECT wait_until($$(SELECT count(*) FROM cq.queries WHERE name IN ('b_ratio', 'b_whole') AND state = 'failed') = 2$$);
SELECT name, state, last_error FROM cq.queries WHERE name LIKE 'b\_%' ORDER BY name;
SELECT wait_until($$(SELECT count(*) FROM b_rows) = 23 AND (SELECT sum(n) FROM b_sum) = 23$$);
SELECT mismatches('b_rows', 'SELECT k, v FROM b_src') AS rows_mismatches,
       mismatches('b_sum', 'SELECT k, sum(v), count(*) FROM b_src GROUP BY k') AS sum_mismatches;
SELECT fingerprint('b_ratio') = :'fp_b_ratio' AS ratio_unchanged,
       fingerprint('b_whole') = :'fp_b_whole' AS whole_unchanged;
-- fixed by filters; cq.resume runs them at once and they catch up exactly
SELECT cq.alter_query('b_ratio', query => 'SELECT k, sum(1000 / v) AS r FROM b_src WHERE v > 0 GROUP BY k');
SELECT cq.alter_query('b_whole', query => 'SELECT k, min(1000 / v) AS m FROM b_src WHERE v > 0 GROUP BY k');
SELECT count(*) AS whole_batches FROM cq.offsets WHERE name = 'b_whole' \gset
SELECT cq.resume('b_ratio'), cq.resume('b_whole');
-- b_whole's batch truncates its target: wait on the catalog, not on the target (wait_until
-- holds its locks until it returns, and the TRUNCATE would time out behind them)
SELECT wait_until(format($$mismatches('b_ratio', 'SELECT k, sum(1000 / v) FROM b_src WHERE v > 0 GROUP BY k') = 0
                 AND (SELECT count(*) FROM cq.offsets WHERE name = 'b_whole') > %s$$, :whole_batches));
SELECT mismatches('b_whole', 'SELECT k, min(1000 / v) FROM b_src WHERE v > 0 GROUP BY k') AS whole_mismatches;
SELECT name, state, last_error FROM cq.queries WHERE name LIKE 'b\_%' ORDER BY name;

DROP TABLE p_ratio, p_ints, p_count, p_total, b_ratio, b_whole, b_rows, b_sum;
DROP TABLE p_src, b_src;
