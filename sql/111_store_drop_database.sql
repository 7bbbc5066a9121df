-- The shared-memory stores of a dropped database, or of a database where
-- pg_cq was dropped, are freed when the drop commits (session 29).
-- Before, they stayed in shared memory for good, and a database made
-- again with the dropped one's OID from the same template (its queries'
-- ids and state tables' row types the same as the dropped copy's) took
-- the dropped copy's stores as its own: (1) cq.state_store_info showed
-- the dropped copy's store and the next batch folded into it (wrong
-- target rows).  (2) a query that got the id of a query dropped with
-- DROP EXTENSION showed the old store in cq.state_store_info before its
-- first batch (its readers and batches already took the old one as
-- empty: the state table's row type differs); a DROP EXTENSION rolled
-- back, to a savepoint or with its transaction, leaves the stores.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SELECT current_database() AS lc_db \gset
\set oracle 'SELECT k, count(*) AS n, sum(x) AS sx FROM lc_src GROUP BY k'

-- (1) a template database with one query on the store, batch 0 run
CREATE DATABASE lc_t;
\c lc_t
SET client_min_messages = warning;
CREATE EXTENSION pg_cq;
\i sql/include/helpers.sql
CREATE TABLE lc_src (k int, x int);
INSERT INTO lc_src SELECT g % 20, g FROM generate_series(1, 200) g;
SELECT cq.create_query('lc_q', :'oracle', output_mode => 'update', "trigger" => 'available_now',
                       starting => 'earliest');
SELECT state_path FROM cq.queries;
CALL cq.run('lc_q');
\c :lc_db
-- a copy runs batch 1 (25 groups), then is dropped
CREATE DATABASE lc_a TEMPLATE lc_t;
\c lc_a
INSERT INTO lc_src SELECT g % 25, 1000 + g FROM generate_series(1, 50) g;
CALL cq.run('lc_q');
SELECT batch_id, state_rows FROM cq.state_store_info('lc_q');
\c :lc_db
SELECT oid AS lc_a_oid FROM pg_database WHERE datname = 'lc_a' \gset
DROP DATABASE lc_a;
-- the template runs its own batch 1 (20 groups)
\c lc_t
INSERT INTO lc_src SELECT g % 20, 5000 + g FROM generate_series(1, 30) g;
CALL cq.run('lc_q');
SELECT batch_id, state_rows FROM cq.state_store_info('lc_q');
\c :lc_db
-- a new copy with the dropped one's OID: no store in memory, the next
-- batch rebuilds it from the source
CREATE DATABASE lc_a OID = :lc_a_oid TEMPLATE lc_t;
\c lc_a
SET client_min_messages = warning;
SELECT oid = :lc_a_oid AS same_oid FROM pg_database WHERE datname = current_database();
SELECT batch_id, state_rows FROM cq.state_store_info('lc_q');
SELECT count(*) AS state_rows FROM cq.state_rows(1, NULL::cq_state.s_1);
INSERT INTO lc_src SELECT g % 22, 9000 + g FROM generate_series(1, 44) g;
CALL cq.run('lc_q');
SELECT batch_id, state_rows FROM cq.state_store_info('lc_q');
SELECT mismatches('lc_q', :'oracle');
SELECT (SELECT count(*) FROM cq.state_rows(1, NULL::cq_state.s_1)) = (SELECT count(DISTINCT k) FROM lc_src) AS groups_ok,
       (SELECT sum(n) FROM cq.state_rows(1, NULL::cq_state.s_1)) = (SELECT count(*) FROM lc_src) AS rows_ok;

-- (2) DROP EXTENSION rolled back (with its transaction, to a savepoint)
-- leaves the store; committed, frees it: a new query with the same id
-- has none before its first batch
BEGIN;
DROP EXTENSION pg_cq CASCADE;
ROLLBACK;
SELECT batch_id, state_rows FROM cq.state_store_info('lc_q');
BEGIN;
SAVEPOINT s;
DROP EXTENSION pg_cq CASCADE;
ROLLBACK TO s;
COMMIT;
SELECT batch_id, state_rows FROM cq.state_store_info('lc_q');
INSERT INTO lc_src VALUES (3, 3);
CALL cq.run('lc_q');
SELECT batch_id, state_rows FROM cq.state_store_info('lc_q');
SELECT mismatches('lc_q', :'oracle');
DROP EXTENSION pg_cq CASCADE;
CREATE EXTENSION pg_cq;
\i sql/include/helpers.sql
SELECT cq.create_query('lc_q2', :'oracle', output_mode => 'update', "trigger" => 'available_now',
                       starting => 'earliest');
SELECT id FROM cq.queries;
SELECT batch_id, state_rows FROM cq.state_store_info('lc_q2');
SELECT count(*) AS state_rows FROM cq.state_rows(1, NULL::cq_state.s_1);
CALL cq.run('lc_q2');
SELECT batch_id, state_rows FROM cq.state_store_info('lc_q2');
SELECT mismatches('lc_q2', :'oracle');

\c :lc_db
DROP DATABASE lc_a;
DROP DATABASE lc_t;
