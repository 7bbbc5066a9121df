-- Issue 12 goal 1: the rows a statement writes into a tracked source no longer hand their
-- cq_xid to the BRIN index (src/brin_insert.c, values_from_heap: the statement's IndexInfo
-- takes the row's tableoid, which costs no deform of the row; INSERT from its first row,
-- COPY and routed rows after theirs); a row whose range has a summary reads its value
-- back from the table (heap_value).  A wrong value there would leave the summary without
-- the row's stamp, and a batch's index scan would miss the row.  So: rows of many
-- statements (INSERT ... SELECT, COPY, single-row and explicit-value INSERTs, INSERT ...
-- ON CONFLICT, an UPDATE, a subtransaction, rows in pages freed by VACUUM, rows routed to
-- a partition) go into summarized ranges, and every summary must equal the one a fresh
-- BRIN index (built by brin.c over the same rows) gives; every row is found by an index
-- scan for its own stamp, and the batch counts every row.  The same for a table whose only
-- index is the BRIN index (session 43), whose COPY and multi-row INSERT rows meet it in the
-- table's access method (brin_heap.c).
CREATE EXTENSION IF NOT EXISTS pg_cq;
CREATE EXTENSION IF NOT EXISTS pageinspect;
SET client_min_messages = warning;

CREATE TABLE bval_src (k int, pad text, UNIQUE (k, pad));
CREATE TABLE bval_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n, sum(k) AS s FROM bval_src;
CREATE FUNCTION bval_index() RETURNS regclass LANGUAGE sql
  AS $$ SELECT c.oid::regclass FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE i.indrelid = 'bval_src'::regclass AND c.relname <> 'bval_ref'
           AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'brin') $$;

-- three transactions: ~2.5 ranges of 32 pages (40 rows a page); every range summarized,
-- the last, partial one too
INSERT INTO bval_src SELECT g, repeat('a', 150) FROM generate_series(1, 1000) g;
INSERT INTO bval_src SELECT g, repeat('b', 150) FROM generate_series(1, 1000) g;
INSERT INTO bval_src SELECT g, repeat('c', 150) FROM generate_series(1, 1000) g;
SELECT brin_summarize_new_values(bval_index()) AS summarized_ranges;

-- rows into the summarized last range, by each kind of write
INSERT INTO bval_src SELECT g, repeat('d', 150) FROM generate_series(1, 300) g;
COPY bval_src (k, pad) FROM STDIN;
1	e
2	e
3	e
4	e
\.
INSERT INTO bval_src (k, pad) VALUES (5, 'f');
INSERT INTO bval_src (k, pad, cq_xid) SELECT g, 'g', '3' FROM generate_series(1, 50) g;
BEGIN;
SAVEPOINT s;
INSERT INTO bval_src SELECT g, 'h' FROM generate_series(1, 50) g;
RELEASE SAVEPOINT s;
INSERT INTO bval_src SELECT g, 'i' FROM generate_series(1, 50) g;
COMMIT;
-- INSERT ... ON CONFLICT: new rows, and new versions of rows (not HOT: the unique index
-- changes)
INSERT INTO bval_src SELECT g, repeat('d', 150) FROM generate_series(251, 350) g
  ON CONFLICT (k, pad) DO UPDATE SET pad = 'o' || excluded.pad;
-- new versions of rows of the first range (not HOT: its pages are full)
UPDATE bval_src SET pad = 'u' || pad WHERE pad LIKE 'b%' AND k <= 100;
-- rows into pages of the first range, which VACUUM freed: the first range was
-- summarized with the stamps of rows that stay (every other row is deleted)
DELETE FROM bval_src WHERE pad LIKE 'a%' AND k % 2 = 0;
VACUUM bval_src;
INSERT INTO bval_src SELECT g, repeat('j', 150) FROM generate_series(1, 400) g;
-- the rows did go into summarized ranges (statement by statement: range, rows)
CREATE FUNCTION bval_summarized(blk bigint) RETURNS bool LANGUAGE sql AS $$
  SELECT EXISTS (SELECT FROM generate_series(1, pg_relation_size(bval_index()) / current_setting('block_size')::int - 1) b,
                 LATERAL brin_page_items(get_raw_page(bval_index()::text, b::int), bval_index()) i
                 WHERE brin_page_type(get_raw_page(bval_index()::text, b::int)) = 'regular'
                   AND i.blknum = blk / 32 * 32 AND NOT i.placeholder)
$$;
SELECT left(pad, 1) AS stmt, count(*) AS rows_in_summarized_ranges
  FROM bval_src WHERE bval_summarized((ctid::text::point)[0]::bigint) AND pad !~ '^[abc]'
 GROUP BY 1 ORDER BY 1;

-- brin.c's own summaries of the same rows
SELECT format('CREATE INDEX bval_ref ON bval_src USING brin (cq_xid cq.xid8_minmax_ops) WITH (pages_per_range = %s)', 32) \gexec
CREATE FUNCTION bval_items(idx regclass)
RETURNS TABLE (blknum bigint, allnulls bool, hasnulls bool, lo xid8, hi xid8)
LANGUAGE sql AS $$
  SELECT i.blknum, i.allnulls, i.hasnulls,
         (regexp_match(i.value, '^\{(\d+) \.\. (\d+)\}$'))[1]::xid8,
         (regexp_match(i.value, '^\{(\d+) \.\. (\d+)\}$'))[2]::xid8
    FROM generate_series(1, pg_relation_size(idx) / current_setting('block_size')::int - 1) b,
         LATERAL brin_page_items(get_raw_page(idx::text, b::int), idx) i
   WHERE brin_page_type(get_raw_page(idx::text, b::int)) = 'regular' AND NOT i.placeholder
$$;
SELECT count(*) AS ranges_compared,
       count(*) FILTER (WHERE (r.allnulls, r.hasnulls, r.lo, r.hi) IS DISTINCT FROM (c.allnulls, c.hasnulls, c.lo, c.hi)) AS differing
  FROM bval_items('bval_ref') r JOIN bval_items(bval_index()) c USING (blknum);

-- every row found by an index scan for its own stamp
DROP INDEX bval_ref;
CREATE FUNCTION bval_found() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint := 0; x xid8; m bigint;
BEGIN
  SET LOCAL enable_seqscan = off;
  FOR x IN SELECT DISTINCT cq_xid FROM bval_src LOOP
    SELECT count(*) INTO m FROM bval_src WHERE cq_xid = x;
    n := n + m;
  END LOOP;
  RETURN n;
END $$;
SELECT bval_found() = (SELECT count(*) FROM bval_src) AS all_found;
CALL cq.run('bval_q');
SELECT n = (SELECT count(*) FROM bval_src) AND s = (SELECT sum(k) FROM bval_src) AS exact FROM bval_q;

-- Session 43: a table whose only index is the BRIN index on cq_xid.  bval_src's unique
-- index keeps its writes on the executor's index path (brin_row_gate), so it never reached
-- the gate a COPY or multi-row INSERT into such a table takes in the table's access method
-- (brin_heap.c: gate_rows, which hands the row's value from its slot), nor the check of a
-- single-row INSERT's row at the statement's end (stamp.c, defer_row).  The same writes
-- into its summarized ranges, the same comparison with brin.c's summaries.
CREATE TABLE bval_solo (k int, pad text);
CREATE TABLE bval_sq WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n, sum(k) AS s FROM bval_solo;
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'bval_solo'::regclass;
CREATE FUNCTION bval_solo_index() RETURNS regclass LANGUAGE sql
  AS $$ SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'bval_solo'::regclass
         ORDER BY indexrelid::regclass::text = 'bval_solo_ref' LIMIT 1 $$;
-- before each write every range is summarized, the last, partial one too
CREATE PROCEDURE bval_solo_summarize() LANGUAGE sql
  AS $$ SELECT brin_summarize_new_values(bval_solo_index()) $$;
INSERT INTO bval_solo SELECT g, repeat('a', 150) FROM generate_series(1, 2500) g;
-- a multi-row INSERT, a COPY (batches of rows, its default a Const), single-row INSERTs
-- (in a transaction and alone), explicit values, a subtransaction (kept and rolled back)
CALL bval_solo_summarize();
INSERT INTO bval_solo SELECT g, repeat('d', 150) FROM generate_series(1, 300) g;
CALL bval_solo_summarize();
COPY bval_solo (k, pad) FROM STDIN;
1	e
2	e
3	e
\.
CALL bval_solo_summarize();
INSERT INTO bval_solo (k, pad) VALUES (5, 'f');
BEGIN;
INSERT INTO bval_solo (k, pad) VALUES (6, 'f');
INSERT INTO bval_solo (k, pad) VALUES (7, 'f');
COMMIT;
INSERT INTO bval_solo (k, pad, cq_xid) SELECT g, 'g', '3' FROM generate_series(1, 50) g;
CALL bval_solo_summarize();
BEGIN;
SAVEPOINT s;
INSERT INTO bval_solo SELECT g, 'h' FROM generate_series(1, 50) g;
RELEASE SAVEPOINT s;
SAVEPOINT t;
INSERT INTO bval_solo SELECT g, 'x' FROM generate_series(1, 50) g;
ROLLBACK TO SAVEPOINT t;
INSERT INTO bval_solo SELECT g, 'i' FROM generate_series(1, 50) g;
COMMIT;
-- rows into pages of the first range that VACUUM freed, by COPY
DELETE FROM bval_solo WHERE pad LIKE 'a%' AND k % 2 = 0 AND k <= 1000;
VACUUM bval_solo;
COPY bval_solo (k, pad) FROM PROGRAM 'seq 1 400 | sed "s/$/,j/"' (FORMAT csv);
SELECT left(pad, 1) AS stmt, count(*) AS rows_in_summarized_ranges
  FROM bval_solo s, LATERAL (SELECT (s.ctid::text::point)[0]::bigint AS blk) b
 WHERE pad !~ '^a' AND EXISTS (SELECT FROM bval_items(bval_solo_index()) i WHERE i.blknum = b.blk / 32 * 32)
 GROUP BY 1 ORDER BY 1;
SELECT format('CREATE INDEX bval_solo_ref ON bval_solo USING brin (cq_xid cq.xid8_minmax_ops) WITH (pages_per_range = %s)', 32) \gexec
SELECT count(*) AS ranges_compared,
       count(*) FILTER (WHERE (r.allnulls, r.hasnulls, r.lo, r.hi) IS DISTINCT FROM (c.allnulls, c.hasnulls, c.lo, c.hi)) AS differing
  FROM bval_items('bval_solo_ref') r JOIN bval_items(bval_solo_index()) c USING (blknum);
DROP INDEX bval_solo_ref;
CALL cq.run('bval_sq');
SELECT n = (SELECT count(*) FROM bval_solo) AND s = (SELECT sum(k) FROM bval_solo) AS exact FROM bval_sq;
SELECT cq.drop_query('bval_sq', drop_target => true);
DROP TABLE bval_solo;
DROP PROCEDURE bval_solo_summarize();
DROP FUNCTION bval_solo_index();

-- a partitioned source: rows routed to a partition (its ResultRelInfo is built at the
-- first row, the cache at its first row) and written to it directly
CREATE TABLE bval_p (k int, pad text) PARTITION BY RANGE (k);
CREATE TABLE bval_p1 PARTITION OF bval_p FOR VALUES FROM (0) TO (100000);
CREATE TABLE bval_pq WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n FROM bval_p;
CREATE FUNCTION bval_brin(t regclass) RETURNS regclass LANGUAGE sql
  AS $$ SELECT c.oid::regclass FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE i.indrelid = t AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'brin')
         ORDER BY c.relname = 'bval_p1_ref' LIMIT 1 $$;
INSERT INTO bval_p SELECT g, repeat('a', 150) FROM generate_series(1, 2000) g;
SELECT brin_summarize_new_values(bval_brin('bval_p1')) AS summarized_ranges;
INSERT INTO bval_p SELECT g, repeat('r', 150) FROM generate_series(2001, 2400) g;
INSERT INTO bval_p1 SELECT g, repeat('s', 150) FROM generate_series(2401, 2800) g;
CREATE INDEX bval_p1_ref ON bval_p1 USING brin (cq_xid cq.xid8_minmax_ops) WITH (pages_per_range = 32);
SELECT count(*) AS ranges_compared,
       count(*) FILTER (WHERE (r.allnulls, r.hasnulls, r.lo, r.hi) IS DISTINCT FROM (c.allnulls, c.hasnulls, c.lo, c.hi)) AS differing
  FROM bval_items('bval_p1_ref') r JOIN bval_items(bval_brin('bval_p1')) c USING (blknum);
DROP INDEX bval_p1_ref;
CALL cq.run('bval_pq');
SELECT n = (SELECT count(*) FROM bval_p) AS exact FROM bval_pq;
SELECT cq.drop_query('bval_pq', drop_target => true);
DROP TABLE bval_p;
DROP FUNCTION bval_brin(regclass);

SELECT cq.drop_query('bval_q', drop_target => true);
DROP TABLE bval_src;
DROP FUNCTION bval_index();
DROP FUNCTION bval_items(regclass);
DROP FUNCTION bval_summarized(bigint);
DROP FUNCTION bval_found();
DROP EXTENSION pageinspect;
