-- Issue 12 goal 4 (session 31): the first incremental batches after batch 0
-- over history, as a user gets them (no ANALYZE of the source yet).
-- (1) Batch 0 writes the target's index (and on the table path the state's)
-- past shared buffers (an index build writes its file directly), and each
-- incremental batch inserts into random leaves of the index on the keys'
-- hash: the first ones read those pages from the operating system one by
-- one.  Batch 0 now reads the indexes it wrote into shared buffers
-- (rowload.c, cq_rowload_cache).
-- (2) A batch on a source that was never analyzed reads a few pages
-- around its new rows, not the table, and exactly its rows.
CREATE EXTENSION IF NOT EXISTS pg_cq;
CREATE EXTENSION IF NOT EXISTS pg_buffercache;
SET client_min_messages = warning;

CREATE TABLE cb_src (k int, v int, pad text) WITH (autovacuum_enabled = off);
INSERT INTO cb_src SELECT i, i % 97, repeat('x', 40) FROM generate_series(1, 20000) i;
CREATE FUNCTION cb_differences(t regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %1$s EXCEPT ALL SELECT k, count(*), sum(v) FROM cb_src GROUP BY k)
                  UNION ALL (SELECT k, count(*), sum(v) FROM cb_src GROUP BY k EXCEPT ALL TABLE %1$s)) d', t) INTO n;
  RETURN n;
END $$;
-- blocks of the relation's indexes in shared buffers, and all their blocks
CREATE FUNCTION cb_cached(t regclass, OUT cached bigint, OUT blocks bigint) LANGUAGE sql AS $$
  SELECT (SELECT count(*) FROM pg_buffercache b
           WHERE b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
             AND b.relfilenode IN (SELECT pg_relation_filenode(indexrelid) FROM pg_index WHERE indrelid = t)),
         (SELECT sum(pg_relation_size(indexrelid) / current_setting('block_size')::int)::bigint
            FROM pg_index WHERE indrelid = t)
$$;

-- on the store (the default) and on the table path
CREATE TABLE cb_mem WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM cb_src GROUP BY k;
CREATE TABLE cb_tab WITH (cq.output_mode = 'update', cq.trigger = 'available_now',
                          cq.state_storage = 'unlogged') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM cb_src GROUP BY k;
SELECT (SELECT state_path FROM cq.queries WHERE name = 'cb_mem') AS mem_path,
       (SELECT state_path FROM cq.queries WHERE name = 'cb_tab') AS tab_path;
-- batch 0 left the indexes it built in shared buffers (on main: none of
-- the target's index, built past them)
SELECT blocks > 20 AS index_of_many_blocks, cached = blocks AS index_cached FROM cb_cached('cb_mem');
SELECT cached = blocks AS index_cached FROM cb_cached('cb_tab');
SELECT cached = blocks AS state_index_cached
  FROM cb_cached((SELECT state_table FROM cq.queries WHERE name = 'cb_tab'));
SELECT NOT EXISTS (SELECT 1 FROM pg_stats WHERE schemaname = 'public' AND tablename = 'cb_src') AS never_analyzed;

-- 300 new groups and 300 existing ones changed
INSERT INTO cb_src SELECT CASE WHEN i % 2 = 0 THEN 20000 + i ELSE i * 31 END, i, 'y'
  FROM generate_series(1, 600) i;
BEGIN;
SELECT pg_stat_get_xact_tuples_fetched('cb_src'::regclass) AS f0 \gset
CALL cq.run('cb_mem');
-- the rows of a few pages around the new ones (the BRIN index's last,
-- unsummarized range), not the table's 20,600 (a plan without statistics
-- for cq_xid that scanned the table would read them all)
SELECT pg_stat_get_xact_tuples_fetched('cb_src'::regclass) - :f0 BETWEEN 600 AND 4000 AS read_few_rows;
COMMIT;
CALL cq.run('cb_tab');
SELECT (SELECT num_input_rows FROM cq.progress WHERE name = 'cb_mem' ORDER BY batch_id DESC LIMIT 1) AS mem_rows,
       (SELECT num_input_rows FROM cq.progress WHERE name = 'cb_tab' ORDER BY batch_id DESC LIMIT 1) AS tab_rows;
SELECT cb_differences('cb_mem') AS mem_differences, cb_differences('cb_tab') AS tab_differences;
SELECT NOT EXISTS (SELECT 1 FROM pg_stats WHERE schemaname = 'public' AND tablename = 'cb_src') AS still_never_analyzed;

SELECT cq.drop_query('cb_mem', drop_target => true);
SELECT cq.drop_query('cb_tab', drop_target => true);
DROP TABLE cb_src;
DROP FUNCTION cb_differences(regclass);
DROP FUNCTION cb_cached(regclass);
