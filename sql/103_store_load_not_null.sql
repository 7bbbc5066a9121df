-- Batch 0 of an update query on the store writing its target rows as d
-- makes them (store_load.c) checks NOT NULL on the target's columns, as
-- the INSERT it replaces does (and the table path's direct load,
-- bulkload.c): it checked a copy of the target's descriptor, which has
-- none, and wrote a NULL into a NOT NULL column.  The batch fails and
-- writes nothing; once the group has a sum, it runs.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
\i sql/include/helpers.sql
\set oracle 'SELECT k, count(*) AS n, sum(x) AS s FROM nn_src GROUP BY k'

CREATE TABLE nn_src (k int, x int);
INSERT INTO nn_src SELECT g % 50, CASE WHEN g % 50 = 7 THEN NULL ELSE g END FROM generate_series(1, 500) g;
SELECT cq.create_query('nn_m', :'oracle', output_mode => 'update', "trigger" => 'available_now',
                       starting => 'earliest');
SELECT cq.create_query('nn_t', :'oracle', output_mode => 'update', "trigger" => 'available_now',
                       starting => 'earliest', state_storage => 'unlogged');
ALTER TABLE nn_m ALTER COLUMN s SET NOT NULL;
ALTER TABLE nn_t ALTER COLUMN s SET NOT NULL;
-- the store's load and the table path's refuse the NULL sum of group 7
\set VERBOSITY terse
CALL cq.run('nn_m');
CALL cq.run('nn_t');
\set VERBOSITY default
SELECT (SELECT count(*) FROM nn_m) AS target_rows, (SELECT state_rows FROM cq.state_store_info('nn_m')) AS store_rows,
       (SELECT count(*) FROM cq.offsets WHERE name = 'nn_m') AS batches;
SELECT (SELECT count(*) FROM nn_t) AS target_rows, (SELECT count(*) FROM cq.offsets WHERE name = 'nn_t') AS batches;
-- with a sum for group 7, batch 0 runs on both paths
UPDATE nn_src SET x = 1 WHERE k = 7 AND x IS NULL AND ctid = (SELECT min(ctid) FROM nn_src WHERE k = 7);
CALL cq.run('nn_m');
CALL cq.run('nn_t');
SELECT mismatches('nn_m', :'oracle') AS store_mismatches, mismatches('nn_t', :'oracle') AS table_mismatches;
SELECT count(*) FILTER (WHERE s IS NULL) AS null_sums FROM nn_m;

SELECT cq.drop_query(name, drop_target => true) FROM cq.queries WHERE name LIKE 'nn\_%' ORDER BY name;
