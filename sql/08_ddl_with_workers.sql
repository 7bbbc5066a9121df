-- DDL on sources and targets while workers run their queries (issue 5; docs/guarantees.md):
-- DROP and type changes of a source are refused as for a view; TRUNCATE of a source is refused
-- unless cq.allow_source_truncate is on (targets keep the results of the removed rows);
-- renames keep queries working; a target column the query writes that is renamed makes the
-- query fail with a clear error until it is renamed back.  Every wait polls with a deadline.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

-- shared helpers: wait_until, mismatches, fingerprint
\i sql/include/helpers.sql

CREATE TABLE d_src (k int, v int);
INSERT INTO d_src SELECT g % 3, g FROM generate_series(1, 30) g;
CREATE TABLE d_sum WITH (cq.output_mode = 'update') AS SELECT k, sum(v) AS s, count(*) AS n FROM d_src GROUP BY k;
CREATE TABLE d_rows WITH (cq.output_mode = 'append') AS SELECT k, v FROM d_src;
-- (delete refresh: wait_until's transaction keeps reading the target, and truncate-and-reload
-- would time out on its lock)
CREATE TABLE d_all WITH (cq.output_mode = 'complete', cq.complete_refresh = 'delete') AS SELECT k, max(v) AS m FROM d_src GROUP BY k;
CREATE FUNCTION d_exact() RETURNS boolean LANGUAGE sql AS $$
  SELECT NOT EXISTS ((SELECT k, sum(v), count(*) FROM d_src GROUP BY k) EXCEPT ALL TABLE d_sum)
     AND NOT EXISTS (TABLE d_sum EXCEPT ALL (SELECT k, sum(v), count(*) FROM d_src GROUP BY k))
     AND NOT EXISTS ((SELECT k, v FROM d_src) EXCEPT ALL TABLE d_rows)
     AND NOT EXISTS (TABLE d_rows EXCEPT ALL (SELECT k, v FROM d_src))
     AND NOT EXISTS ((SELECT k, max(v) FROM d_src GROUP BY k) EXCEPT ALL TABLE d_all)
     AND NOT EXISTS (TABLE d_all EXCEPT ALL (SELECT k, max(v) FROM d_src GROUP BY k)) $$;
INSERT INTO d_src VALUES (1, 100);
SELECT wait_until('d_exact()');

-- refused, as for a view (nothing changes, the workers go on); terse: the details name
-- internal views whose ids depend on the tests before
\set VERBOSITY terse
DROP TABLE d_src;
ALTER TABLE d_src ALTER COLUMN v TYPE bigint;
ALTER TABLE d_src DROP COLUMN cq_xid;
\set VERBOSITY default
-- TRUNCATE of a source is refused: its queries' targets would keep results of removed rows
TRUNCATE d_src;
TRUNCATE d_src, d_rows;
SELECT count(*) FROM d_src;
INSERT INTO d_src VALUES (2, 200);
SELECT wait_until('d_exact()');

-- renames with workers running: the queries go on
ALTER TABLE d_src RENAME TO d_source;
ALTER TABLE d_source RENAME COLUMN v TO amount;
ALTER TABLE d_sum RENAME TO d_sum2;
INSERT INTO d_source VALUES (0, 5), (1, 7);
SELECT wait_until($$(SELECT count(*) FROM d_rows) = 34 AND (SELECT sum(n) FROM d_sum2) = 34$$);
ALTER TABLE d_sum2 RENAME TO d_sum;
ALTER TABLE d_source RENAME COLUMN amount TO v;
ALTER TABLE d_source RENAME TO d_src;
SELECT wait_until('d_exact()');

-- a target column the query writes, renamed: the query fails with a clear error, the
-- others go on; renamed back, cq.resume catches up exactly
ALTER TABLE d_sum RENAME COLUMN n TO cnt;
INSERT INTO d_src VALUES (0, 1000);
SELECT wait_until($$(SELECT state FROM cq.queries WHERE name = 'd_sum') = 'failed'$$);
SELECT name, state, last_error FROM cq.queries WHERE name LIKE 'd\_%' ORDER BY name;
SELECT wait_until($$(SELECT count(*) FROM d_rows) = 35 AND (SELECT max(m) FROM d_all) = 1000$$);
ALTER TABLE d_sum RENAME COLUMN cnt TO n;
SELECT cq.resume('d_sum');
SELECT wait_until('d_exact()');

-- a complete target emptied by hand is whole again after the next batch
TRUNCATE d_all;
INSERT INTO d_src VALUES (2, 1);
SELECT wait_until('d_exact()');

-- a partition of a partitioned source is part of the source
CREATE TABLE d_part (k int, v int) PARTITION BY RANGE (k);
CREATE TABLE d_part_0 PARTITION OF d_part FOR VALUES FROM (0) TO (10);
CREATE TABLE d_part_n WITH (cq.trigger = 'available_now') AS SELECT k, v FROM d_part;
TRUNCATE d_part_0;
TRUNCATE d_part;
-- a table that is not a source, or no longer one, may be truncated
TRUNCATE d_rows;
DROP TABLE d_part_n;
TRUNCATE d_part;

-- cq.allow_source_truncate = on: the targets keep the results of the truncated rows, the
-- queries go on with the rows inserted afterwards; cq.reset starts one over from what is left
SET cq.allow_source_truncate = on;
TRUNCATE d_src;
RESET cq.allow_source_truncate;
INSERT INTO d_src VALUES (7, 1), (7, 2);
SELECT wait_until($$(SELECT count(*) FROM d_rows) = 2$$);
SELECT wait_until($$(SELECT n FROM d_sum WHERE k = 7) = 2$$);
SELECT k, s, n FROM d_sum ORDER BY k;
SELECT cq.reset('d_sum');
SELECT wait_until($$(SELECT count(*) FROM d_sum) = 1$$);
SELECT k, s, n FROM d_sum ORDER BY k;

DROP TABLE d_sum, d_rows, d_all;
DROP TABLE d_src, d_part;
DROP FUNCTION d_exact();
