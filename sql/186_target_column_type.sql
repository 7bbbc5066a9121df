-- Session 39 review: a column of an update target whose type was changed
-- after creation (ALTER TABLE ... ALTER COLUMN ... TYPE: a domain, a wider
-- type).  The C writer leaves such a target to the statement (its columns
-- must have the outputs' types), and the statements that update a row
-- (the upsert's ou, MERGE) compare it with the outputs by binary image,
-- which fails on columns of different types: "cannot compare dissimilar
-- column types ..." in a batch that changed an existing group, while a
-- batch of new groups wrote.  The batch now fails every time with the
-- error creation gives (target does not match the query) and a hint; the
-- first failure also no longer lets the next batch take the analysis
-- cached before the change (the plan cache entry stays stale when its
-- rebuild fails).  Changed back, the query resumes with nothing lost.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET cq.run_in_worker = off;
\set VERBOSITY default
CREATE DOMAIN tc_small AS bigint CHECK (VALUE < 10);
CREATE TABLE tc_src (k int NOT NULL, v int);
INSERT INTO tc_src VALUES (1, 1), (2, 2);
-- on the store (the C writer, then MERGE) and on the table path (MERGE)
CREATE TABLE tc_store WITH (cq.output_mode = 'update', cq.trigger = 'available_now',
                            cq.state_storage = 'memory') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM tc_src GROUP BY k;
CREATE TABLE tc_table WITH (cq.output_mode = 'update', cq.trigger = 'available_now',
                            cq.state_storage = 'unlogged') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM tc_src GROUP BY k;
ALTER TABLE tc_store ALTER n TYPE tc_small;
ALTER TABLE tc_table ALTER s TYPE numeric;
-- a new group only, then an existing one: the same error both times
INSERT INTO tc_src VALUES (3, 3);
CALL cq.run('tc_store');
CALL cq.run('tc_table');
INSERT INTO tc_src VALUES (1, 1);
CALL cq.run('tc_store');
CALL cq.run('tc_table');
SET cq.target_update_in_c = off;
SET cq.merge_max_groups = 0;
CALL cq.run('tc_store');
RESET cq.target_update_in_c;
RESET cq.merge_max_groups;
SELECT name, state, last_error FROM cq.queries WHERE name LIKE 'tc\_%' ORDER BY name;
-- a key column's type may change where its equality still holds
ALTER TABLE tc_store ALTER n TYPE bigint, ALTER k TYPE bigint;
ALTER TABLE tc_table ALTER s TYPE bigint;
SELECT cq.resume('tc_store'), cq.resume('tc_table');
CALL cq.run('tc_store');
CALL cq.run('tc_table');
SELECT * FROM tc_store ORDER BY k;
SELECT count(*) AS mismatches FROM (
  (SELECT k, n, s FROM tc_store EXCEPT SELECT k, count(*), sum(v) FROM tc_src GROUP BY k)
  UNION ALL
  (SELECT k, n, s FROM tc_table EXCEPT SELECT k, count(*), sum(v) FROM tc_src GROUP BY k)) x;
SELECT name, state, last_error FROM cq.queries WHERE name LIKE 'tc\_%' ORDER BY name;
DROP TABLE tc_store, tc_table, tc_src;
DROP DOMAIN tc_small;
