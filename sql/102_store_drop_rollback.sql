-- A query on the store dropped in a transaction that has its store open.
-- The drop frees the store only when it commits: until then the
-- transaction may still read it (a batch it ran attached the published
-- table), and a drop rolled back (savepoint or transaction) leaves it as
-- it was.  Before, the drop freed the store at once: (1) read the freed
-- shared memory (a segmentation fault of the backend), (2) and (3) lost
-- the store (rebuilt by the next batch).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
\i sql/include/helpers.sql
\set oracle 'SELECT k, count(*) AS n, sum(x) AS sx FROM dr_src GROUP BY k'

CREATE TABLE dr_src (k int, x int);
SELECT cq.create_query('dr_q', :'oracle', output_mode => 'update', "trigger" => 'available_now');
SELECT state_storage FROM cq.queries WHERE name = 'dr_q';
SELECT id AS qid FROM cq.queries WHERE name = 'dr_q' \gset
INSERT INTO dr_src SELECT g % 500, g FROM generate_series(1, 5000) g;
CALL cq.run('dr_q');

-- (1) a batch in the transaction, the drop in a savepoint rolled back, then
-- the state read in the same transaction
INSERT INTO dr_src SELECT g % 500, g FROM generate_series(1, 5000) g;
BEGIN;
CALL cq.run('dr_q');
SAVEPOINT s;
SELECT cq.drop_query('dr_q');
ROLLBACK TO s;
RELEASE s;
SELECT count(*) AS groups, sum(n) AS n FROM cq.state_rows(:qid, NULL::cq_state.s_:qid);
COMMIT;
SELECT count(*) AS groups, sum(n) AS n FROM cq.state_rows(:qid, NULL::cq_state.s_:qid);
SELECT batch_id, state_rows FROM cq.state_store_info('dr_q');
SELECT mismatches('dr_q', :'oracle');

-- (2) the drop rolled back with its transaction: the store stays
BEGIN;
SELECT cq.drop_query('dr_q');
ROLLBACK;
SELECT batch_id, state_rows FROM cq.state_store_info('dr_q');
INSERT INTO dr_src VALUES (2, 3);
CALL cq.run('dr_q');
SELECT batch_id, state_rows FROM cq.state_store_info('dr_q');
SELECT mismatches('dr_q', :'oracle');

-- (3) batch 0 (its own group table) and a drop rolled back in a savepoint
-- of the same transaction: the table is published at commit
CREATE TABLE dr_src0 (k int, x int);
INSERT INTO dr_src0 SELECT g % 300, g FROM generate_series(1, 3000) g;
SELECT cq.create_query('dr_q0', 'SELECT k, count(*) AS n FROM dr_src0 GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', starting => 'earliest');
BEGIN;
CALL cq.run('dr_q0');
SAVEPOINT s;
DROP TABLE dr_q0;
ROLLBACK TO s;
COMMIT;
SELECT batch_id, state_rows FROM cq.state_store_info('dr_q0');
SELECT mismatches('dr_q0', 'SELECT k, count(*) AS n FROM dr_src0 GROUP BY k');

-- (4) a batch and the drop committed together; a new query of the same
-- name starts with a store of its own
INSERT INTO dr_src0 VALUES (7, 7);
BEGIN;
CALL cq.run('dr_q0');
SELECT cq.drop_query('dr_q0', drop_target => true);
COMMIT;
SELECT cq.create_query('dr_q0', 'SELECT k, count(*) AS n FROM dr_src0 GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', starting => 'earliest');
SELECT batch_id, state_rows FROM cq.state_store_info('dr_q0');
CALL cq.run('dr_q0');
SELECT batch_id, state_rows FROM cq.state_store_info('dr_q0');
SELECT mismatches('dr_q0', 'SELECT k, count(*) AS n FROM dr_src0 GROUP BY k');

SELECT cq.drop_query(name, drop_target => true) FROM cq.queries WHERE name LIKE 'dr\_%' ORDER BY name;

-- (5) a new query that gets the internal id of a query dropped in the same
-- transaction (DROP EXTENSION and CREATE EXTENSION start the ids over):
-- its state is not the dropped query's store, and a batch of it waits for
-- the commit (it ran with the dropped query's store, one row per group of
-- both, before)
SELECT current_database() AS dr_db \gset
CREATE DATABASE dr_ids;
\c dr_ids
SET client_min_messages = warning;
CREATE EXTENSION pg_cq;
CREATE TABLE dr_a (k int, x int);
CREATE TABLE dr_b (a text, c int);
INSERT INTO dr_a SELECT g % 50, g FROM generate_series(1, 500) g;
INSERT INTO dr_b SELECT 'a' || (g % 7), g FROM generate_series(1, 100) g;
SELECT cq.create_query('dr_qa', 'SELECT k, count(*) AS n, sum(x) AS sx FROM dr_a GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', starting => 'earliest');
CALL cq.run('dr_qa');
INSERT INTO dr_a VALUES (1, 1);
BEGIN;
CALL cq.run('dr_qa');
DROP EXTENSION pg_cq CASCADE;
CREATE EXTENSION pg_cq;
SELECT cq.create_query('dr_qb', 'SELECT a, max(c) AS m, count(*) AS n FROM dr_b GROUP BY a',
                       output_mode => 'update', "trigger" => 'available_now', starting => 'earliest');
SELECT id FROM cq.queries;
SELECT count(*) AS state_rows FROM cq.state_rows(1, NULL::cq_state.s_1);
\set VERBOSITY terse
CALL cq.run('dr_qb');
\set VERBOSITY default
ROLLBACK;
BEGIN;
DROP EXTENSION pg_cq CASCADE;
CREATE EXTENSION pg_cq;
SELECT cq.create_query('dr_qb', 'SELECT a, max(c) AS m, count(*) AS n FROM dr_b GROUP BY a',
                       output_mode => 'update', "trigger" => 'available_now', starting => 'earliest');
COMMIT;
CALL cq.run('dr_qb');
INSERT INTO dr_b VALUES ('a1', 1000);
CALL cq.run('dr_qb');
SELECT batch_id, state_rows FROM cq.state_store_info('dr_qb');
SELECT count(*) AS mismatches FROM
  ((SELECT a, max(c) AS m, count(*) AS n FROM dr_b GROUP BY a EXCEPT ALL TABLE dr_qb)
   UNION ALL (TABLE dr_qb EXCEPT ALL SELECT a, max(c) AS m, count(*) AS n FROM dr_b GROUP BY a)) x;

-- (6) the same across transactions: a new query that gets one's id,
-- before its first batch, has no state (its readers took the old rows
-- before, read as rows of the new state table; DROP EXTENSION left the
-- dropped queries' stores in shared memory until session 29, it frees
-- them at commit now: sql/111)
DROP EXTENSION pg_cq CASCADE;
CREATE EXTENSION pg_cq;
SELECT cq.create_query('dr_qc', 'SELECT k, count(*) AS n, sum(x) AS sx FROM dr_a GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', starting => 'earliest');
CALL cq.run('dr_qc');
SELECT id, (SELECT count(*) FROM cq.state_rows(1, NULL::cq_state.s_1)) AS state_rows FROM cq.queries;
DROP EXTENSION pg_cq CASCADE;
CREATE EXTENSION pg_cq;
SELECT cq.create_query('dr_qd', 'SELECT a, max(c) AS m, count(*) AS n FROM dr_b GROUP BY a',
                       output_mode => 'update', "trigger" => 'available_now', starting => 'earliest');
SELECT id, (SELECT count(*) FROM cq.state_rows(1, NULL::cq_state.s_1)) AS state_rows FROM cq.queries;
CALL cq.run('dr_qd');
SELECT count(*) AS state_rows, sum(n) AS n FROM cq.state_rows(1, NULL::cq_state.s_1);
SELECT count(*) AS mismatches FROM
  ((SELECT a, max(c) AS m, count(*) AS n FROM dr_b GROUP BY a EXCEPT ALL TABLE dr_qd)
   UNION ALL (TABLE dr_qd EXCEPT ALL SELECT a, max(c) AS m, count(*) AS n FROM dr_b GROUP BY a)) x;
\c :dr_db
DROP DATABASE dr_ids WITH (FORCE);
