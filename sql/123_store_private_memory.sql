-- Session 30: a batch's private memory per changed group.  Until session
-- 31 a batch that changed groups of a store kept their new rows in its
-- backend-local overlay until the transaction committed: per changed group
-- an item (48 bytes) and a copy of the row, ~150 bytes for this query's
-- ~50-byte rows (282 before session 30).  Since session 31 the items and
-- rows are written into the store's shared area as the batch makes them
-- (linked nowhere until pre-commit), and the overlay's context keeps only
-- what does not grow with the changed groups (the state row's layout, the
-- keys' functions, a pointer per 1,024 items): asserted here as less than
-- 4 bytes a changed group at 20,000 groups, inside the batch's transaction
-- (bench/README.md, "Round 10 (session 31): a batch's private memory").
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET cq.run_in_worker = off;

CREATE TABLE pm_src (k int, v numeric(10,2));
INSERT INTO pm_src SELECT g, (g % 1000) / 10.0 FROM generate_series(1, 20000) g;
CREATE TABLE pm_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(v) AS total, max(v) AS top FROM pm_src GROUP BY k;
-- rows of the target that are not the plain GROUP BY's, and the other way
CREATE FUNCTION pm_differing() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM (
    (SELECT k, n, total, top FROM pm_agg
     EXCEPT SELECT k, count(*), sum(v), max(v) FROM pm_src GROUP BY k)
    UNION ALL
    (SELECT k, count(*), sum(v), max(v) FROM pm_src GROUP BY k
     EXCEPT SELECT k, n, total, top FROM pm_agg)) d
$$;
SELECT state_path FROM cq.queries WHERE name = 'pm_agg';
SELECT batch_id, state_rows FROM cq.state_store_info('pm_agg');
-- every group changed, twice over
INSERT INTO pm_src SELECT 1 + g % 20000, (g % 997) / 10.0 FROM generate_series(1, 40000) g;
BEGIN;
CALL cq.run('pm_agg');
SELECT sum(total_bytes) / 20000 < 4 AS overlay_bytes_per_group_bounded
FROM pg_backend_memory_contexts WHERE name = 'pg_cq store overlay' OR parent = 'pg_cq store overlay';
COMMIT;
SELECT batch_id, state_rows FROM cq.state_store_info('pm_agg');
-- the target is the plain GROUP BY's
SELECT pm_differing() AS differing;
-- a batch rolled back (its overlay dropped) leaves the store as it was
INSERT INTO pm_src SELECT 1 + g % 20000, 1.00 FROM generate_series(1, 20000) g;
BEGIN;
CALL cq.run('pm_agg');
SELECT pm_differing() AS differing_in_transaction;
ROLLBACK;
SELECT batch_id, state_rows FROM cq.state_store_info('pm_agg');
CALL cq.run('pm_agg');
SELECT pm_differing() AS differing;

SELECT cq.drop_query('pm_agg', drop_target => true);
DROP FUNCTION pm_differing();
DROP TABLE pm_src;
