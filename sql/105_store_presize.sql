-- Session 29: batch 0 over history of a query on the shared-memory store
-- makes its group table with slots for the groups the estimate expects
-- (store_estimate.c, cq_store_expect) instead of doubling it from 256
-- slots, within cq.state_memory: no more groups than the budget holds at
-- the estimated bytes a group, a slot array of at most a quarter of the
-- budget (t/047 checks the sizes in the server log).  What the store
-- holds and counts does not depend on it: a query over the same rows
-- without statistics (no estimate: the table doubles) holds the same rows
-- and bytes, before and after a later batch that adds groups past the
-- estimate (the pre-sized table then doubles too); a query that asked for
-- the store, with an estimate far past a small budget, still folds and
-- moves to the table path when it outgrows it, and every target equals
-- the plain query.
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SET client_min_messages = warning;

-- the same 30,000 rows in 12,000 groups, with and without statistics
CREATE TABLE ps_a (k int NOT NULL, v int NOT NULL) WITH (autovacuum_enabled = off);
CREATE TABLE ps_b (k int NOT NULL, v int NOT NULL) WITH (autovacuum_enabled = off);
INSERT INTO ps_a SELECT (i * 7919) % 12000, i % 1000 FROM generate_series(1, 30000) i;
INSERT INTO ps_b SELECT * FROM ps_a;
ANALYZE ps_a;
SELECT count(*) AS no_statistics FROM pg_stats WHERE tablename = 'ps_b';
\set oracle_a 'SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m FROM ps_a GROUP BY k'
\set oracle_b 'SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m FROM ps_b GROUP BY k'
SELECT cq.create_query('ps_qa', :'oracle_a', output_mode => 'update', "trigger" => 'available_now',
                       state_storage => 'memory') IS NOT NULL AS created;
SELECT cq.create_query('ps_qb', :'oracle_b', output_mode => 'update', "trigger" => 'available_now',
                       state_storage => 'memory') IS NOT NULL AS created;
CALL cq.run('ps_qa');
CALL cq.run('ps_qb');
SELECT mismatches('ps_qa', :'oracle_a') AS qa_mismatches, mismatches('ps_qb', :'oracle_b') AS qb_mismatches;
SELECT a.batch_id, a.state_rows, a.state_rows = b.state_rows AS same_rows, a.state_bytes = b.state_bytes AS same_bytes
  FROM cq.state_store_info('ps_qa') a, cq.state_store_info('ps_qb') b;
SELECT count(DISTINCT p.state_bytes) AS progress_bytes_agree
  FROM cq.progress p WHERE p.name IN ('ps_qa', 'ps_qb') AND p.batch_id = 0;

-- a later batch: 20,000 new groups (past the estimate) and 12,000 old ones
INSERT INTO ps_a SELECT 12000 + i % 20000, i FROM generate_series(1, 32000) i;
INSERT INTO ps_b SELECT 12000 + i % 20000, i FROM generate_series(1, 32000) i;
INSERT INTO ps_a SELECT i % 12000, 7 FROM generate_series(1, 12000) i;
INSERT INTO ps_b SELECT i % 12000, 7 FROM generate_series(1, 12000) i;
CALL cq.run('ps_qa');
CALL cq.run('ps_qb');
SELECT mismatches('ps_qa', :'oracle_a') AS qa_mismatches, mismatches('ps_qb', :'oracle_b') AS qb_mismatches;
SELECT a.batch_id, a.state_rows, a.state_rows = b.state_rows AS same_rows, a.state_bytes = b.state_bytes AS same_bytes
  FROM cq.state_store_info('ps_qa') a, cq.state_store_info('ps_qb') b;
-- the bytes: what the rows and their nodes take, as before (the slots are not counted)
SELECT state_bytes = (SELECT state_bytes FROM cq.state_store_info('ps_qb')) AS bytes_as_without_estimate
  FROM cq.state_store_info('ps_qa');

-- an estimate far past a small budget (44,000 groups, ~2MB, in 256kB), the
-- store asked for: batch 0 folds, outgrows the budget and moves to the table
ANALYZE ps_a;
SELECT cq.create_query('ps_qc', :'oracle_a', output_mode => 'update', "trigger" => 'available_now',
                       state_storage => 'memory') IS NOT NULL AS created;
SET cq.state_memory = '256kB';
CALL cq.run('ps_qc');
RESET cq.state_memory;
SELECT state_storage, state_path LIKE 'table: moved%' AS moved FROM cq.queries WHERE name = 'ps_qc';
SELECT * FROM cq.state_store_info('ps_qc');
SELECT mismatches('ps_qc', :'oracle_a') AS qc_mismatches;
INSERT INTO ps_a SELECT i % 50000, 3 FROM generate_series(1, 5000) i;
CALL cq.run('ps_qc');
SELECT mismatches('ps_qc', :'oracle_a') AS qc_mismatches;

SELECT cq.drop_query(n, drop_target => true) FROM unnest(ARRAY['ps_qa', 'ps_qb', 'ps_qc']) n;
DROP TABLE ps_a, ps_b;
