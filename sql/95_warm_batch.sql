-- Issue 12 goal 4 (session 27): a warm batch's fixed costs.
-- (1) A batch takes a scan-horizon sample (horizon.c) before it locks its
-- query's row and so gets a transaction id: the next batch's low bound is
-- that id (a batch's end offset counts its own transaction as running), so
-- only a sample taken before it serves the next batch's scan.  Without it,
-- the newest usable sample predated the rows the batch read, and the next
-- batch re-read their pages.
-- (2) The batch's own summarizer reads cq_xid from the end of the tuple
-- when it is the last stored attribute and not NULL (summarize.c); any
-- other row through heap_getattr.  Its summaries must match brin.c's.
CREATE EXTENSION IF NOT EXISTS pg_cq;
CREATE EXTENSION IF NOT EXISTS pageinspect;
SET client_min_messages = warning;

CREATE TABLE wb_src (id int, g int, v int, pad text) WITH (autovacuum_enabled = off);
SELECT cq.create_query('wb_q', 'SELECT g, count(*) AS n, sum(v) AS s FROM wb_src GROUP BY g',
                       output_mode => 'update', "trigger" => 'available_now');
CREATE FUNCTION wb_differences() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM
    ((TABLE wb_q EXCEPT ALL SELECT g, count(*), sum(v) FROM wb_src GROUP BY g)
     UNION ALL (SELECT g, count(*), sum(v) FROM wb_src GROUP BY g EXCEPT ALL TABLE wb_q)) d
$$;
INSERT INTO wb_src VALUES (0, 0, 0, 'x');
CALL cq.run('wb_q');
-- 3000 rows (about 20 pages, within the first range of 32), one batch reads them
INSERT INTO wb_src SELECT i, i % 7, i, repeat('p', 20) FROM generate_series(1, 3000) i;
CALL cq.run('wb_q');
SELECT pg_relation_size('wb_src') / current_setting('block_size')::int < 32 AS one_range;
-- one new row: the next batch reads the page it went to, not the 3000 rows
-- the batch before read (on main it read them all again: 3000+)
INSERT INTO wb_src VALUES (3001, 1, 1, 'y');
BEGIN;
SELECT pg_stat_get_xact_tuples_fetched('wb_src'::regclass) AS fetched \gset
CALL cq.run('wb_q');
SELECT pg_stat_get_xact_tuples_fetched('wb_src'::regclass) - :fetched < 1000 AS few_rows_read;
COMMIT;
-- and again, in a session that ran no batch before (its first batch)
INSERT INTO wb_src SELECT i, i % 5, i, NULL FROM generate_series(3002, 3400) i;
CALL cq.run('wb_q');
INSERT INTO wb_src VALUES (3401, 2, 2, 'z');
\c
SET client_min_messages = warning;
BEGIN;
SELECT pg_stat_get_xact_tuples_fetched('wb_src'::regclass) AS fetched \gset
CALL cq.run('wb_q');
SELECT pg_stat_get_xact_tuples_fetched('wb_src'::regclass) - :fetched < 1000 AS few_rows_read_new_session;
COMMIT;
SELECT wb_differences() AS differences;

-- (2) summaries: rows with NULLs before cq_xid (the stamp read from the
-- tuple's end), then a column added after cq_xid (heap_getattr: cq_xid is
-- no longer the last attribute of new rows; old rows keep it last), rows
-- with that column NULL and not, and rows whose cq_xid is NULL
INSERT INTO wb_src SELECT i, NULL, i, CASE WHEN i % 3 = 0 THEN NULL ELSE repeat('n', i % 40) END
  FROM generate_series(4000, 9000) i;
CALL cq.run('wb_q');
ALTER TABLE wb_src ADD COLUMN extra text;
INSERT INTO wb_src (id, g, v, pad, extra) SELECT i, i % 3, i, repeat('e', 30), CASE WHEN i % 2 = 0 THEN 'e' END
  FROM generate_series(9001, 14000) i;
ALTER TABLE wb_src DISABLE TRIGGER zz_cq_stamp;
ALTER TABLE wb_src ALTER COLUMN cq_xid DROP DEFAULT;
INSERT INTO wb_src (id, g, v, pad) SELECT i, 1, 0, repeat('z', 30) FROM generate_series(14001, 16000) i;
SELECT format('ALTER TABLE wb_src ALTER COLUMN cq_xid SET DEFAULT %s', 'pg_catalog.pg_current_xact_id()') \gexec
ALTER TABLE wb_src ENABLE ALWAYS TRIGGER zz_cq_stamp;
INSERT INTO wb_src (id, g, v, pad) SELECT i, i % 3, i, repeat('f', 30) FROM generate_series(16001, 22000) i;
CALL cq.run('wb_q');
SELECT format('CREATE INDEX wb_ref ON wb_src USING brin (cq_xid cq.xid8_minmax_ops) WITH (pages_per_range = %s)',
              (SELECT (regexp_match(array_to_string(reloptions, ','), 'pages_per_range=(\d+)'))[1]
                 FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
                WHERE i.indrelid = 'wb_src'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'brin')
                  AND c.relname <> 'wb_ref')) \gexec
CREATE FUNCTION wb_items(idx regclass)
RETURNS TABLE (blknum bigint, allnulls bool, hasnulls bool, value text)
LANGUAGE sql AS $$
  SELECT i.blknum, i.allnulls, i.hasnulls, i.value
    FROM generate_series(1, pg_relation_size(idx) / current_setting('block_size')::int - 1) b,
         LATERAL brin_page_items(get_raw_page(idx::text, b::int), idx) i
   WHERE brin_page_type(get_raw_page(idx::text, b::int)) = 'regular' AND NOT i.placeholder
$$;
-- every range the batches summarized (all full ranges), identical to brin.c's
SELECT count(*) > 5 AS ranges,
       count(*) FILTER (WHERE (r.allnulls, r.hasnulls, r.value) IS DISTINCT FROM (c.allnulls, c.hasnulls, c.value)) AS differing,
       count(*) FILTER (WHERE c.hasnulls) > 0 AS some_mixed
  FROM wb_items('wb_ref') r
  JOIN wb_items((SELECT indexrelid::regclass FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                  WHERE i.indrelid = 'wb_src'::regclass AND c.relname <> 'wb_ref')) c USING (blknum);
-- and the batches counted every stamped row
SELECT count(*) AS differences FROM
  ((TABLE wb_q EXCEPT ALL SELECT g, count(*), sum(v) FROM wb_src WHERE cq_xid IS NOT NULL GROUP BY g)
   UNION ALL (SELECT g, count(*), sum(v) FROM wb_src WHERE cq_xid IS NOT NULL GROUP BY g EXCEPT ALL TABLE wb_q)) d;

DROP INDEX wb_ref;
SELECT cq.drop_query('wb_q', drop_target => true);
DROP TABLE wb_src;
DROP FUNCTION wb_items(regclass);
DROP FUNCTION wb_differences();
DROP EXTENSION pageinspect;
