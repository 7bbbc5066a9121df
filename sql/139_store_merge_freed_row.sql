-- Session 32: a group changed twice in one transaction (two batches of the
-- query in one transaction, here by max_rows_per_trigger) whose merged row
-- has another size than its row in the overlay: the overlay's old node is
-- freed when the group is put again (cq_store_own_row), and the changed
-- row written into m must not be read from the merge's values, which
-- pointed into that freed row (a read after free in the store's area:
-- silent while the area keeps the bytes, a wrong key in the target in a
-- build that clobbers freed memory, -DCQ_CLOBBER_STORE or an
-- assert-enabled PostgreSQL; a segfault if the area gave the segment back).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET cq.run_in_worker = off;

CREATE TABLE mf_src (k text, v numeric);
CREATE TABLE mf_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now',
                          cq.max_rows_per_trigger = 50) AS
  SELECT k, count(*) AS n, max(v) AS m FROM mf_src GROUP BY k;
SELECT state_path FROM cq.queries WHERE name = 'mf_agg';
INSERT INTO mf_src SELECT 'key-' || g, 1 FROM generate_series(1, 50) g;
CALL cq.run('mf_agg');
-- two batches in the next call: the second makes each group's max wider
INSERT INTO mf_src SELECT 'key-' || g, 2 FROM generate_series(1, 50) g;
INSERT INTO mf_src SELECT 'key-' || g, 123456789.123456789 FROM generate_series(1, 50) g;
BEGIN;
CALL cq.run('mf_agg');
SELECT max(batch_id) AS last_batch FROM cq.offsets WHERE name = 'mf_agg';
COMMIT;
SELECT count(*) AS target_rows, count(*) FILTER (WHERE k !~ '^key-[0-9]+$') AS bad_keys FROM mf_agg;
SELECT count(*) AS differing FROM (
  (SELECT k, count(*), max(v) FROM mf_src GROUP BY k EXCEPT SELECT k, n, m FROM mf_agg)
  UNION ALL
  (SELECT k, n, m FROM mf_agg EXCEPT SELECT k, count(*), max(v) FROM mf_src GROUP BY k)) d;
-- the store as the target
SELECT batch_id, state_rows FROM cq.state_store_info('mf_agg');

DROP TABLE mf_agg;
DROP TABLE mf_src;
