-- Issue 12 goal 4 (session 27): a batch's BRIN scan takes the summaries of
-- the source's cq_xid index from this backend's cache, decoding again only
-- what lies on index pages whose LSN moved (horizon.c, cached_getbitmap).
-- Every way a summary changes must reach the next batch of the same
-- session: a summary widened by a row that lands in an old range, a range
-- desummarized by hand (then read whole), the index rebuilt (REINDEX).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

-- half-full pages: a row version written by an UPDATE stays on its page,
-- in an old, summarized range
CREATE TABLE bc_src (id int, v int, pad text) WITH (fillfactor = 50, autovacuum_enabled = off);
CREATE TABLE bc_q WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT count(*) AS n, sum(v) AS s FROM bc_src;
INSERT INTO bc_src SELECT i, i, repeat('p', 100) FROM generate_series(1, 6000) i;
CALL cq.run('bc_q');
SELECT pg_relation_size('bc_src') / current_setting('block_size')::int >= 5 * 32 AS five_ranges;
INSERT INTO bc_src VALUES (6001, 1, 'x');
CALL cq.run('bc_q');
INSERT INTO bc_src VALUES (6002, 1, 'x');
CALL cq.run('bc_q');
SELECT n, s FROM bc_q;

-- a new row version in range 0 (stamped by hand, as the stamp trigger keeps an
-- updated row's stamp): its summary is widened, the page's LSN moves
CREATE FUNCTION bc_restamp(k int, nv int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE 'ALTER TABLE bc_src DISABLE TRIGGER zz_cq_stamp';
  UPDATE bc_src SET v = nv, cq_xid = pg_catalog.pg_current_xact_id() WHERE id = k;
  EXECUTE 'ALTER TABLE bc_src ENABLE ALWAYS TRIGGER zz_cq_stamp';
END $$;
SELECT bc_restamp(1, 1000000);
SELECT (ctid::text::point)[0] < 32 AS in_range_0 FROM bc_src WHERE id = 1;
CALL cq.run('bc_q');
-- the new version is a new row: 6002 + 1 rows, 1000000 more
SELECT n, s FROM bc_q;

-- range 1 desummarized by hand, then a new version there: read whole
SELECT brin_desummarize_range(i.indexrelid::regclass, 32)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indrelid = 'bc_src'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'brin');
SELECT min(id) AS r1 FROM bc_src WHERE (ctid::text::point)[0] BETWEEN 40 AND 50 \gset
SELECT bc_restamp(:r1, 2000000);
SELECT (ctid::text::point)[0] BETWEEN 32 AND 63 AS in_range_1 FROM bc_src WHERE id = :r1;
CALL cq.run('bc_q');
SELECT n, s FROM bc_q;

-- the index rebuilt: a new relfilenode, the cache starts over
SELECT format('REINDEX INDEX %s', i.indexrelid::regclass)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indrelid = 'bc_src'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'brin') \gexec
CALL cq.run('bc_q');
SELECT bc_restamp(600, 3000000);
CALL cq.run('bc_q');
INSERT INTO bc_src VALUES (6003, 1, 'x');
CALL cq.run('bc_q');
SELECT n, s FROM bc_q;
-- every version stamped so far, counted once each
SELECT n = 6003 + 3 AS exact_n, s = (SELECT sum(v) FROM bc_src) + 1 + :r1 + 600 AS exact_s FROM bc_q;

SELECT cq.drop_query('bc_q', drop_target => true);
DROP TABLE bc_src;
DROP FUNCTION bc_restamp(int, int);
