-- Session 30: a batch's private memory per changed group.  A batch that
-- changes groups of a store keeps their new rows in its backend-local
-- overlay until the transaction commits: per changed group an item (48
-- bytes, allocated 1,024 at a time) and a copy of the row in 64 kB blocks
-- (no palloc rounding, no chunk header), ~150 bytes for this query's
-- ~50-byte rows; it was 282 (the row one palloc, rounded to 128 bytes plus
-- a 16-byte header; items in 64-item chunks of 72 bytes rounded up to 8 kB;
-- bench/README.md, "Private memory of a batch").  The bound asserted here
-- is generous (200 bytes a group) and the size small, as the overlay's
-- context reports it inside the batch's transaction.
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
SELECT sum(total_bytes) / 20000 BETWEEN 60 AND 200 AS overlay_bytes_per_group_bounded
FROM pg_backend_memory_contexts WHERE name = 'pg_cq store overlay';
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
