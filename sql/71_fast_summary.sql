-- Issue 12 goal 4: a batch summarizes the new full page ranges of its source's BRIN
-- index on cq_xid itself (src/tracking.c, summarize_xid_range) instead of through
-- brin_summarize_range, reading each page once.  Its summaries must be exactly those
-- PostgreSQL's own summarization gives (a second BRIN index with the same operator
-- class, built over the same table, summarizes every range with brin.c's code), or
-- wider where rows were deleted (brin.c leaves out tuples dead to everyone, the batch
-- does not).  Covered: ranges mixing NULL stamps (rows from before tracking) and
-- stamps, stamps of many transactions, ranges holding only NULL stamps, deleted rows,
-- and every row still found through the index.
CREATE EXTENSION IF NOT EXISTS pg_cq;
CREATE EXTENSION IF NOT EXISTS pageinspect;
SET client_min_messages = warning;

CREATE TABLE fsum_src (k int, pad text);
-- history: 40 rows a page, the last range partial; rows keep NULL in cq_xid
INSERT INTO fsum_src SELECT g, repeat('h', 150) FROM generate_series(1, 1500) g;
CREATE TABLE fsum_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n, sum(k) AS s FROM fsum_src;

-- new rows in 30 transactions: they fill the partial range (NULLs and stamps mixed)
-- and many more ranges
DO $$
BEGIN
  FOR i IN 1..30 LOOP
    INSERT INTO fsum_src SELECT g, repeat('n', 150) FROM generate_series(1, 300) g;
    COMMIT;
  END LOOP;
END $$;
-- a range of rows inserted with a NULL stamp (the stamp trigger skipped on purpose)
ALTER TABLE fsum_src DISABLE TRIGGER zz_cq_stamp;
ALTER TABLE fsum_src ALTER COLUMN cq_xid DROP DEFAULT;
INSERT INTO fsum_src SELECT g, repeat('z', 150) FROM generate_series(1, 3000) g;
SELECT format('ALTER TABLE fsum_src ALTER COLUMN cq_xid SET DEFAULT %s', 'pg_catalog.pg_current_xact_id()') \gexec
ALTER TABLE fsum_src ENABLE ALWAYS TRIGGER zz_cq_stamp;
DO $$
BEGIN
  FOR i IN 1..10 LOOP
    INSERT INTO fsum_src SELECT g, repeat('a', 150) FROM generate_series(1, 150) g;
    COMMIT;
  END LOOP;
END $$;
-- deleted rows in the last full ranges: the first and the last transaction's
DELETE FROM fsum_src WHERE pad LIKE 'a%' AND
  cq_xid IN ((SELECT min(cq_xid) FROM fsum_src WHERE pad LIKE 'a%'), (SELECT max(cq_xid) FROM fsum_src WHERE pad LIKE 'a%'));

CALL cq.run('fsum_q');

-- PostgreSQL's own summaries of the same table
SELECT format('CREATE INDEX fsum_ref ON fsum_src USING brin (cq_xid cq.xid8_minmax_ops) WITH (pages_per_range = %s)',
              (SELECT (regexp_match(array_to_string(reloptions, ','), 'pages_per_range=(\d+)'))[1]
                 FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
                WHERE i.indrelid = 'fsum_src'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'brin')
                  AND c.relname <> 'fsum_ref')) \gexec

CREATE FUNCTION fsum_items(idx regclass)
RETURNS TABLE (blknum bigint, allnulls bool, hasnulls bool, lo xid8, hi xid8)
LANGUAGE sql AS $$
  SELECT i.blknum, i.allnulls, i.hasnulls,
         (regexp_match(i.value, '^\{(\d+) \.\. (\d+)\}$'))[1]::xid8,
         (regexp_match(i.value, '^\{(\d+) \.\. (\d+)\}$'))[2]::xid8
    FROM generate_series(1, pg_relation_size(idx) / current_setting('block_size')::int - 1) b,
         LATERAL brin_page_items(get_raw_page(idx::text, b::int), idx) i
   WHERE brin_page_type(get_raw_page(idx::text, b::int)) = 'regular' AND NOT i.placeholder
$$;
CREATE TEMP TABLE fsum_cmp AS
SELECT r.blknum, r.allnulls AS r_allnulls, r.hasnulls AS r_hasnulls, r.lo AS r_lo, r.hi AS r_hi,
       c.allnulls AS c_allnulls, c.hasnulls AS c_hasnulls, c.lo AS c_lo, c.hi AS c_hi
  FROM fsum_items('fsum_ref') r
  JOIN fsum_items((SELECT indexrelid::regclass FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                    WHERE i.indrelid = 'fsum_src'::regclass AND c.relname <> 'fsum_ref')) c USING (blknum);

-- ranges the batch summarized (every full range after the history), and what they hold
SELECT count(*) AS ranges,
       count(*) FILTER (WHERE c_allnulls) AS null_only,
       count(*) FILTER (WHERE c_hasnulls) AS mixed,
       count(*) FILTER (WHERE NOT c_allnulls AND NOT c_hasnulls) AS stamped
  FROM fsum_cmp WHERE blknum >= 32;
-- identical to brin.c's where nothing was deleted
SELECT count(*) AS differing FROM fsum_cmp
 WHERE (r_allnulls, r_hasnulls, r_lo, r_hi) IS DISTINCT FROM (c_allnulls, c_hasnulls, c_lo, c_hi)
   AND blknum + 32 <= (SELECT min((ctid::text::point)[0]) FROM fsum_src WHERE pad LIKE 'a%');
-- never narrower anywhere
SELECT count(*) AS narrower FROM fsum_cmp
 WHERE (NOT r_allnulls AND c_allnulls) OR (r_hasnulls AND NOT c_hasnulls AND NOT c_allnulls)
    OR c_lo > r_lo OR c_hi < r_hi;

-- every row found through the index, and the batch counted every row (but those left
-- with a NULL stamp on purpose)
CREATE FUNCTION fsum_count() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  SET LOCAL enable_seqscan = off;
  SELECT count(*) INTO n FROM fsum_src WHERE cq_xid >= '1'::xid8;
  RETURN n;
END $$;
SELECT fsum_count() = (SELECT count(*) FROM fsum_src WHERE cq_xid IS NOT NULL) AS all_found;
INSERT INTO fsum_src SELECT g, repeat('b', 150) FROM generate_series(1, 700) g;
CALL cq.run('fsum_q');
SELECT n = (SELECT count(*) FROM fsum_src WHERE pad NOT LIKE 'z%') AND
       s = (SELECT sum(k) FROM fsum_src WHERE pad NOT LIKE 'z%') AS exact FROM fsum_q;

DROP INDEX fsum_ref;
SELECT cq.drop_query('fsum_q', drop_target => true);
DROP TABLE fsum_src;
DROP FUNCTION fsum_items(regclass);
DROP FUNCTION fsum_count();
DROP EXTENSION pageinspect;
