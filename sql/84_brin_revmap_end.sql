-- Issue 12 goal 1: rows past the heap blocks that the revmap of a BRIN index on xid8
-- covers (one revmap page: 1,360 ranges; 340 MB of a tracked source at 32 pages per
-- range) have no summary until a summarization extends the revmap.  cq_brininsert
-- (src/brin_insert.c) keeps such a range with a pin on the metapage and reads, for each later
-- row in it, only the metapage's last revmap page, without the page's lock; before, each
-- such row pinned, locked and read the metapage.  If a summarization extends the revmap
-- and summarizes the range between two rows of one statement, the later rows must widen
-- the new summary.  Here (pages_per_range = 1, three rows a page, so the first revmap
-- page covers ~4,080 rows) statements cross the revmap's end, and one summarizes the
-- last range between its rows again and again; every summary must equal the one a
-- fresh index gives, and index scans find the rows.
CREATE EXTENSION IF NOT EXISTS pg_cq;
CREATE EXTENSION IF NOT EXISTS pageinspect;
SET client_min_messages = warning;
\i sql/include/helpers.sql

CREATE TABLE brev_x (x xid8, pad text);
ALTER TABLE brev_x ALTER pad SET STORAGE PLAIN;
CREATE INDEX brev_idx ON brev_x USING brin (x cq.xid8_minmax_ops) WITH (pages_per_range = 1);

-- the revmap pages of an index (the metapage's last revmap page)
CREATE FUNCTION brev_revmap_pages(idx regclass) RETURNS int LANGUAGE sql
  AS $$ SELECT lastrevmappage FROM brin_metapage_info(get_raw_page(idx::text, 0)) $$;
-- compare brev_idx's summaries with a freshly built index's
CREATE FUNCTION brev_compare() RETURNS TABLE (ranges_compared bigint, differing bigint)
LANGUAGE plpgsql AS $$
BEGIN
  CREATE INDEX brev_ref ON brev_x USING brin (x cq.xid8_minmax_ops) WITH (pages_per_range = 1);
  RETURN QUERY
    SELECT count(*),
           count(*) FILTER (WHERE (r.allnulls, r.hasnulls, r.lo, r.hi) IS DISTINCT FROM (c.allnulls, c.hasnulls, c.lo, c.hi))
      FROM brin_summaries('brev_ref') r JOIN brin_summaries('brev_idx') c USING (blknum);
  DROP INDEX brev_ref;
END $$;
-- summarize the new ranges when asked, between two rows of the statement that calls it
CREATE FUNCTION brev_summarize_at(g int, lo int, hi int) RETURNS xid8 LANGUAGE plpgsql AS $$
BEGIN
  IF g BETWEEN lo AND hi THEN
    PERFORM brin_summarize_new_values('brev_idx');
  END IF;
  RETURN g::text::xid8;
END $$;
-- rows of brev_x an index scan finds for values in [lo, hi]; each = an index scan for
-- each value
CREATE FUNCTION brev_found(lo int, hi int, each bool DEFAULT false) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE n bigint := 0; m bigint;
BEGIN
  SET LOCAL enable_seqscan = off;
  SET LOCAL enable_indexscan = off;
  IF NOT each THEN
    SELECT count(*) INTO n FROM brev_x WHERE x BETWEEN lo::text::xid8 AND hi::text::xid8;
    RETURN n;
  END IF;
  FOR g IN lo .. hi LOOP
    SELECT count(*) INTO m FROM brev_x WHERE x = g::text::xid8;
    n := n + m;
  END LOOP;
  RETURN n;
END $$;

-- one INSERT ... SELECT across the revmap's end (nothing summarized yet)
INSERT INTO brev_x SELECT g::text::xid8, repeat('p', 2500) FROM generate_series(1, 4500) g;
SELECT pg_relation_size('brev_x') / current_setting('block_size')::int > 1360 AS past_the_revmap,
       brev_revmap_pages('brev_idx') AS revmap_pages;
-- summarized now: the revmap grows to a second page
SELECT brin_summarize_new_values('brev_idx') > 1360 AS summarized;
SELECT brev_revmap_pages('brev_idx') AS revmap_pages;
SELECT * FROM brev_compare();

-- rows into the summarized last range and on; then a COPY that crosses the second
-- revmap page's end: it covers ranges up to 2,719 (~8,160 rows)
INSERT INTO brev_x SELECT (100000 + g)::text::xid8, repeat('q', 2500) FROM generate_series(1, 100) g;
ALTER TABLE brev_x ALTER pad SET DEFAULT repeat('c', 2500);
COPY brev_x (x) FROM PROGRAM 'seq 200001 204000';
SELECT pg_relation_size('brev_x') / current_setting('block_size')::int > 2720 AS past_the_revmap,
       brev_revmap_pages('brev_idx') AS revmap_pages;
SELECT * FROM brev_compare();

-- one statement past the revmap's end whose rows in the middle each summarize the new
-- ranges first (the row before included; the revmap grows to a third page at the
-- first), so that the next row, in the same page two times in three, widens the last
-- range's summary
INSERT INTO brev_x SELECT g::text::xid8, repeat('r', 2500) FROM generate_series(300001, 300050) g;
INSERT INTO brev_x SELECT brev_summarize_at(g, 400020, 400060), repeat('s', 2500)
  FROM generate_series(400001, 400100) g;
SELECT brev_revmap_pages('brev_idx') AS revmap_pages;
SELECT * FROM brev_compare();
SELECT brev_found(1, 4500) AS first, brev_found(100001, 100100) AS second,
       brev_found(200001, 204000) AS copied, brev_found(300001, 300050) AS third,
       brev_found(400001, 400100, true) AS summarized_between_rows;
