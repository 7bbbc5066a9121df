-- docs/design-stamp.md step 2: sources tracked with a cq.xid48 cq_xid (cq.stamp_type =
-- 'xid48').  First sql/80_brin_values on such a source: rows of every kind of write go into
-- summarized BRIN ranges through brin_insert.c (heap_value reads a by-reference value back
-- from the table), and every summary equals the one brin.c builds over the same rows; so do
-- the summaries summarize.c makes itself (a batch's).  Then the write paths and readers one
-- by one, each checked against the source (no row lost or counted twice).
-- Last, sql/48_brin_insert, sql/13_tracking (its tables attached or inheriting given
-- cq.xid48 columns; its pre-existing xid8 cq_xid stays xid8), sql/140_write_xid_const and
-- sql/144_copy_xid_default once more, each in a schema of its own, as in sql/215.
CREATE EXTENSION IF NOT EXISTS pg_cq;
CREATE EXTENSION IF NOT EXISTS pageinspect;
SET client_min_messages = warning;
SET cq.stamp_type = 'xid48';

CREATE TABLE b48v_src (k int, pad text, UNIQUE (k, pad));
CREATE TABLE b48v_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n, sum(k) AS s FROM b48v_src;
CREATE FUNCTION b48v_index() RETURNS regclass LANGUAGE sql
  AS $$ SELECT c.oid::regclass FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE i.indrelid = 'b48v_src'::regclass AND c.relname <> 'b48v_ref'
           AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'brin') $$;

-- three transactions: ~2.5 ranges of 32 pages (40 rows a page); every range summarized,
-- the last, partial one too
INSERT INTO b48v_src SELECT g, repeat('a', 150) FROM generate_series(1, 1000) g;
INSERT INTO b48v_src SELECT g, repeat('b', 150) FROM generate_series(1, 1000) g;
INSERT INTO b48v_src SELECT g, repeat('c', 150) FROM generate_series(1, 1000) g;
SELECT brin_summarize_new_values(b48v_index()) AS summarized_ranges;

-- rows into the summarized last range, by each kind of write
INSERT INTO b48v_src SELECT g, repeat('d', 150) FROM generate_series(1, 300) g;
COPY b48v_src (k, pad) FROM STDIN;
1	e
2	e
3	e
4	e
\.
INSERT INTO b48v_src (k, pad) VALUES (5, 'f');
INSERT INTO b48v_src (k, pad, cq_xid) SELECT g, 'g', '3' FROM generate_series(1, 50) g;
BEGIN;
SAVEPOINT s;
INSERT INTO b48v_src SELECT g, 'h' FROM generate_series(1, 50) g;
RELEASE SAVEPOINT s;
INSERT INTO b48v_src SELECT g, 'i' FROM generate_series(1, 50) g;
COMMIT;
-- INSERT ... ON CONFLICT: new rows, and new versions of rows (not HOT: the unique index
-- changes)
INSERT INTO b48v_src SELECT g, repeat('d', 150) FROM generate_series(251, 350) g
  ON CONFLICT (k, pad) DO UPDATE SET pad = 'o' || excluded.pad;
-- new versions of rows of the first range (not HOT: its pages are full)
UPDATE b48v_src SET pad = 'u' || pad WHERE pad LIKE 'b%' AND k <= 100;
-- rows into pages of the first range, which VACUUM freed: the first range was
-- summarized with the stamps of rows that stay (every other row is deleted)
DELETE FROM b48v_src WHERE pad LIKE 'a%' AND k % 2 = 0;
VACUUM b48v_src;
INSERT INTO b48v_src SELECT g, repeat('j', 150) FROM generate_series(1, 400) g;
-- the rows did go into summarized ranges (statement by statement: range, rows)
CREATE FUNCTION b48v_summarized(blk bigint) RETURNS bool LANGUAGE sql AS $$
  SELECT EXISTS (SELECT FROM generate_series(1, pg_relation_size(b48v_index()) / current_setting('block_size')::int - 1) b,
                 LATERAL brin_page_items(get_raw_page(b48v_index()::text, b::int), b48v_index()) i
                 WHERE brin_page_type(get_raw_page(b48v_index()::text, b::int)) = 'regular'
                   AND i.blknum = blk / 32 * 32 AND NOT i.placeholder)
$$;
SELECT left(pad, 1) AS stmt, count(*) AS rows_in_summarized_ranges
  FROM b48v_src WHERE b48v_summarized((ctid::text::point)[0]::bigint) AND pad !~ '^[abc]'
 GROUP BY 1 ORDER BY 1;

-- brin.c's own summaries of the same rows
SELECT format('CREATE INDEX b48v_ref ON b48v_src USING brin (cq_xid cq.xid48_minmax_ops) WITH (pages_per_range = %s)', 32) \gexec
CREATE FUNCTION b48v_items(idx regclass)
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
  FROM b48v_items('b48v_ref') r JOIN b48v_items(b48v_index()) c USING (blknum);

-- every row found by an index scan for its own stamp
DROP INDEX b48v_ref;
CREATE FUNCTION b48v_found() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint := 0; x cq.xid48; m bigint;
BEGIN
  SET LOCAL enable_seqscan = off;
  FOR x IN SELECT DISTINCT cq_xid FROM b48v_src LOOP
    SELECT count(*) INTO m FROM b48v_src WHERE cq_xid OPERATOR(cq.=) x;
    n := n + m;
  END LOOP;
  RETURN n;
END $$;
SELECT b48v_found() = (SELECT count(*) FROM b48v_src) AS all_found;
CALL cq.run('b48v_q');
SELECT n = (SELECT count(*) FROM b48v_src) AND s = (SELECT sum(k) FROM b48v_src) AS exact FROM b48v_q;

-- ranges that summarize.c summarizes itself (a batch summarizes the full ranges it reads,
-- reading the 6 bytes at each tuple's end): equal to brin.c's summaries of the same rows
INSERT INTO b48v_src SELECT g, repeat('k', 150) FROM generate_series(1, 3000) g;
INSERT INTO b48v_src SELECT g, repeat('l', 150) FROM generate_series(1, 3000) g;
CALL cq.run('b48v_q');
SELECT n = (SELECT count(*) FROM b48v_src) AND s = (SELECT sum(k) FROM b48v_src) AS exact FROM b48v_q;
SELECT format('CREATE INDEX b48v_ref ON b48v_src USING brin (cq_xid cq.xid48_minmax_ops) WITH (pages_per_range = %s)', 32) \gexec
SELECT count(*) > 4 AS ranges_compared,
       count(*) FILTER (WHERE (r.allnulls, r.hasnulls, r.lo, r.hi) IS DISTINCT FROM (c.allnulls, c.hasnulls, c.lo, c.hi)) AS differing
  FROM b48v_items('b48v_ref') r JOIN b48v_items(b48v_index()) c USING (blknum);
DROP INDEX b48v_ref;

-- a partitioned source: rows routed to a partition (its ResultRelInfo is built at the
-- first row, the cache at its first row) and written to it directly
CREATE TABLE b48v_p (k int, pad text) PARTITION BY RANGE (k);
CREATE TABLE b48v_p1 PARTITION OF b48v_p FOR VALUES FROM (0) TO (100000);
CREATE TABLE b48v_pq WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n FROM b48v_p;
CREATE FUNCTION b48v_brin(t regclass) RETURNS regclass LANGUAGE sql
  AS $$ SELECT c.oid::regclass FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE i.indrelid = t AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'brin')
         ORDER BY c.relname = 'b48v_p1_ref' LIMIT 1 $$;
INSERT INTO b48v_p SELECT g, repeat('a', 150) FROM generate_series(1, 2000) g;
SELECT brin_summarize_new_values(b48v_brin('b48v_p1')) AS summarized_ranges;
INSERT INTO b48v_p SELECT g, repeat('r', 150) FROM generate_series(2001, 2400) g;
INSERT INTO b48v_p1 SELECT g, repeat('s', 150) FROM generate_series(2401, 2800) g;
CREATE INDEX b48v_p1_ref ON b48v_p1 USING brin (cq_xid cq.xid48_minmax_ops) WITH (pages_per_range = 32);
SELECT count(*) AS ranges_compared,
       count(*) FILTER (WHERE (r.allnulls, r.hasnulls, r.lo, r.hi) IS DISTINCT FROM (c.allnulls, c.hasnulls, c.lo, c.hi)) AS differing
  FROM b48v_items('b48v_p1_ref') r JOIN b48v_items(b48v_brin('b48v_p1')) c USING (blknum);
DROP INDEX b48v_p1_ref;
CALL cq.run('b48v_pq');
SELECT n = (SELECT count(*) FROM b48v_p) AS exact FROM b48v_pq;
SELECT cq.drop_query('b48v_pq', drop_target => true);
DROP TABLE b48v_p;
DROP FUNCTION b48v_brin(regclass);

SELECT cq.drop_query('b48v_q', drop_target => true);
DROP TABLE b48v_src;
DROP FUNCTION b48v_index();
DROP FUNCTION b48v_items(regclass);
DROP FUNCTION b48v_summarized(bigint);
DROP FUNCTION b48v_found();
DROP EXTENSION pageinspect;

-- ---- write paths and readers, each against the source ----
-- p48_wrong(): rows whose cq_xid is not the id noted for them (p48_seen), or a cq_xid
-- that is no cq.xid48
CREATE TABLE p48_src (k int, v int, note text);
CREATE TABLE p48_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n, sum(v) AS s FROM p48_src GROUP BY k;
SELECT format_type(atttypid, NULL) AS stamp_type, attnum = (SELECT max(attnum) FROM pg_attribute
         WHERE attrelid = 'p48_src'::regclass) AS last
  FROM pg_attribute WHERE attrelid = 'p48_src'::regclass AND attname = 'cq_xid';
CREATE TABLE p48_seen (lo int, hi int, x xid8);
CREATE FUNCTION p48_wrong() RETURNS bigint LANGUAGE sql
  AS $$ SELECT count(*) FROM p48_src s LEFT JOIN p48_seen w ON s.k BETWEEN w.lo AND w.hi
        WHERE s.cq_xid IS NULL OR (w.x IS NOT NULL AND s.cq_xid::xid8 <> w.x) $$;
CREATE FUNCTION p48_exact() RETURNS bool LANGUAGE sql
  AS $$ SELECT NOT EXISTS (SELECT * FROM p48_q EXCEPT ALL SELECT k, count(*), sum(v) FROM p48_src GROUP BY k)
           AND NOT EXISTS (SELECT k, count(*), sum(v) FROM p48_src GROUP BY k EXCEPT ALL SELECT * FROM p48_q) $$;

-- single-row INSERTs (stamp.c's Const, the row that waits for its index), a multi-row
-- INSERT, INSERT ... SELECT, COPY (the Const swapped into the default, the heap AM's
-- gate): each carries its transaction's id
BEGIN;
INSERT INTO p48_src VALUES (1, 1, 'single');
INSERT INTO p48_src VALUES (2, 2, 'multi'), (3, 3, 'multi'), (4, 4, 'multi');
INSERT INTO p48_src SELECT 5 + g % 20, g, 'select' FROM generate_series(1, 2000) g;
COPY p48_src (k, v, note) FROM PROGRAM 'seq 1 3000 | awk ''{print 30 + $1 % 7 "," $1 ",copy"}''' (FORMAT csv);
INSERT INTO p48_seen VALUES (1, 40, pg_current_xact_id());
COMMIT;
SELECT p48_wrong() AS wrong, count(*) AS rows, count(DISTINCT cq_xid) AS ids FROM p48_src;
CALL cq.run('p48_q');
SELECT p48_exact() AS exact;

-- subtransactions: committed ones carry the top-level id, aborted ones count nowhere
BEGIN;
SAVEPOINT a;
INSERT INTO p48_src SELECT 50, g, 'sub' FROM generate_series(1, 100) g;
COPY p48_src (k, v, note) FROM PROGRAM 'seq 1 100 | awk ''{print "51," $1 ",subcopy"}''' (FORMAT csv);
RELEASE a;
SAVEPOINT b;
INSERT INTO p48_src SELECT 52, g, 'aborted' FROM generate_series(1, 100) g;
COPY p48_src (k, v, note) FROM PROGRAM 'seq 1 100 | awk ''{print "53," $1 ",aborted"}''' (FORMAT csv);
ROLLBACK TO b;
INSERT INTO p48_seen VALUES (50, 53, pg_current_xact_id());
COMMIT;
-- a transaction that aborts as a whole
BEGIN;
INSERT INTO p48_src SELECT 54, g, 'rolled back' FROM generate_series(1, 100) g;
ROLLBACK;
SELECT p48_wrong() AS wrong, count(*) FILTER (WHERE k IN (52, 53, 54)) AS aborted_rows FROM p48_src;
CALL cq.run('p48_q');
SELECT p48_exact() AS exact;

-- a value given for cq_xid is replaced by the stamp (the trigger), of either type
BEGIN;
INSERT INTO p48_src (k, v, note, cq_xid) VALUES (60, 1, 'given', '3');
INSERT INTO p48_src (k, v, note, cq_xid) SELECT 61, 1, 'given', '5'::xid8;
INSERT INTO p48_seen VALUES (60, 61, pg_current_xact_id());
COMMIT;
SELECT p48_wrong() AS wrong;
-- UPDATEs keep the stamp (not new rows); changing it is refused
UPDATE p48_src SET note = 'updated' WHERE k = 1;
UPDATE p48_src SET cq_xid = '7' WHERE k = 1;
UPDATE p48_src SET cq_xid = cq_xid WHERE k = 1;
SELECT p48_wrong() AS wrong;
CALL cq.run('p48_q');
SELECT p48_exact() AS exact;

-- the new rows read in C (delta_scan.c) and by the statement: the same
INSERT INTO p48_src SELECT 70 + g % 5, g, 'c' FROM generate_series(1, 1000) g;
SET cq.delta_scan_in_c = off;
CALL cq.run('p48_q');
SELECT p48_exact() AS exact;
INSERT INTO p48_src SELECT 70 + g % 5, g, 'c' FROM generate_series(1, 1000) g;
SET cq.delta_scan_in_c = on;
CALL cq.run('p48_q');
SELECT p48_exact() AS exact;
RESET cq.delta_scan_in_c;

-- a column added after cq_xid: a positional INSERT that would give cq_xid the next
-- column's value is refused, as with xid8
ALTER TABLE p48_src ADD COLUMN extra int;
INSERT INTO p48_src VALUES (80, 1, 'positional', '5');
INSERT INTO p48_src VALUES (80, 1, 'positional', DEFAULT, 5);
SELECT p48_wrong() AS wrong;
CALL cq.run('p48_q');
SELECT p48_exact() AS exact;
-- cq.explain names the stamp's type
SELECT position('cq.xid48' IN cq.explain('p48_q')) > 0 AS explain_names_type;

-- a partitioned source: rows routed, written to a partition directly, moved between
-- partitions by an UPDATE (they keep their stamp and are not new again)
CREATE TABLE pp48 (k int, v int) PARTITION BY RANGE (k);
CREATE TABLE pp48_a PARTITION OF pp48 FOR VALUES FROM (0) TO (100);
CREATE TABLE pp48_b PARTITION OF pp48 FOR VALUES FROM (100) TO (200);
CREATE TABLE pp48_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k / 10 AS g, count(*) AS n, sum(v) AS s FROM pp48 GROUP BY 1;
CREATE FUNCTION pp48_exact() RETURNS bool LANGUAGE sql
  AS $$ SELECT NOT EXISTS (SELECT * FROM pp48_q EXCEPT ALL SELECT k / 10, count(*), sum(v) FROM pp48 GROUP BY 1)
           AND NOT EXISTS (SELECT k / 10, count(*), sum(v) FROM pp48 GROUP BY 1 EXCEPT ALL SELECT * FROM pp48_q) $$;
SELECT format_type(atttypid, NULL) AS partition_stamp_type FROM pg_attribute
 WHERE attrelid = 'pp48_b'::regclass AND attname = 'cq_xid';
INSERT INTO pp48 SELECT g % 200, g FROM generate_series(1, 4000) g;
INSERT INTO pp48_b SELECT 100 + g % 100, g FROM generate_series(1, 1000) g;
CALL cq.run('pp48_q');
SELECT pp48_exact() AS exact;
CREATE TABLE pp48_before AS SELECT v, cq_xid::xid8 AS x FROM pp48 WHERE k < 10;
UPDATE pp48 SET k = k + 150 WHERE k < 10;
SELECT count(*) AS moved, count(*) FILTER (WHERE p.cq_xid::xid8 <> b.x) AS restamped
  FROM pp48 p JOIN pp48_before b USING (v) WHERE p.k >= 150 AND p.k < 160;
INSERT INTO pp48 SELECT g % 200, g FROM generate_series(1, 500) g;
CALL cq.run('pp48_q');
-- the moved rows are counted in their new group by the recomputation only if new:
-- the query folds inserts only, so compare with the source as it was folded
SELECT (SELECT sum(n) FROM pp48_q) = (SELECT count(*) FROM pp48) AS every_row_once;
SELECT cq.drop_query('pp48_q', drop_target => true);
DROP TABLE pp48, pp48_before;
DROP FUNCTION pp48_exact();

-- an unprivileged owner whose search_path leads to its own schema, where operators of
-- the same names as cq's shadow them for (cq.xid48, xid8) and always say true: pg_cq's
-- SQL spells OPERATOR(cq.x) and resolves nothing through the path
CREATE ROLE regress_p48_owner;
CREATE SCHEMA p48_evil AUTHORIZATION regress_p48_owner;
GRANT CREATE ON SCHEMA public TO regress_p48_owner;
SET ROLE regress_p48_owner;
CREATE FUNCTION p48_evil.yes(cq.xid48, xid8) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE OPERATOR p48_evil.>= (LEFTARG = cq.xid48, RIGHTARG = xid8, FUNCTION = p48_evil.yes);
CREATE OPERATOR p48_evil.< (LEFTARG = cq.xid48, RIGHTARG = xid8, FUNCTION = p48_evil.yes);
CREATE OPERATOR p48_evil.= (LEFTARG = cq.xid48, RIGHTARG = xid8, FUNCTION = p48_evil.yes);
SET search_path = p48_evil, public, cq;
CREATE TABLE public.h48_src (k int, v int);
SET cq.stamp_type = 'xid48';
CREATE TABLE public.h48_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n, sum(v) AS s FROM public.h48_src GROUP BY k;
CREATE TABLE public.h48_l WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.max_rows_per_trigger = 150)
  AS SELECT k, count(*) AS n, sum(v) AS s FROM public.h48_src GROUP BY k;
-- 40 transactions of 30 rows, batches between them: a limited batch takes whole
-- transactions (offsets.c's limit_scan, the count statement with OPERATOR(cq.>=))
DO $$
BEGIN
  FOR i IN 1..40 LOOP
    INSERT INTO public.h48_src SELECT g % 9, g + 100 * i FROM generate_series(1, 30) g;
    COMMIT;
    IF i % 10 = 0 THEN
      CALL cq.run('h48_q');
      CALL cq.run('h48_l');
    END IF;
  END LOOP;
  FOR i IN 1..10 LOOP
    CALL cq.run('h48_l');
  END LOOP;
  CALL cq.run('h48_q');
END $$;
RESET search_path;
SELECT (SELECT count(*) FROM ((TABLE h48_q EXCEPT ALL SELECT k, count(*), sum(v) FROM h48_src GROUP BY k)
        UNION ALL (SELECT k, count(*), sum(v) FROM h48_src GROUP BY k EXCEPT ALL TABLE h48_q)) d) AS update_diff,
       (SELECT count(*) FROM ((TABLE h48_l EXCEPT ALL SELECT k, count(*), sum(v) FROM h48_src GROUP BY k)
        UNION ALL (SELECT k, count(*), sum(v) FROM h48_src GROUP BY k EXCEPT ALL TABLE h48_l)) d) AS limited_diff;
SELECT count(*) >= 8 AS limited_batches, bool_and(num_input_rows <= 150) AS limit_respected
  FROM cq.progress WHERE name = 'h48_l' AND num_input_rows > 0;
SELECT cq.drop_query('h48_q', drop_target => true);
SELECT cq.drop_query('h48_l', drop_target => true);
DROP TABLE h48_src;
RESET ROLE;
DROP SCHEMA p48_evil CASCADE;
REVOKE CREATE ON SCHEMA public FROM regress_p48_owner;
DROP ROLE regress_p48_owner;

SELECT cq.drop_query('p48_q', drop_target => true);
DROP TABLE p48_src, p48_seen;
DROP FUNCTION p48_wrong();
DROP FUNCTION p48_exact();
RESET cq.stamp_type;

-- ---- sql/48_brin_insert.sql once more, on cq.xid48 sources: rows into the BRIN index through brin_insert.c's gate ----
\set port x48_48
\i sql/include/xid48_port_begin.sql
\i sql/48_brin_insert.sql
\i sql/include/xid48_port_end.sql

-- ---- sql/13_tracking.sql once more, on cq.xid48 sources: tracking and the stamp trigger (a pre-existing xid8 cq_xid stays xid8; tables attached or inheriting get cq.xid48 columns) ----
\set port x48_13
\i sql/include/xid48_port_begin.sql
-- Issue 9 item 10: every row that reaches a source is stamped with the id of the
-- transaction that inserted it, whatever the statement gave cq_xid, so no committed
-- row is skipped: a cq_xid column that existed before tracking, a partition attached
-- later (rows inserted straight into it), a dropped or changed default, explicit
-- values (INSERT ... SELECT * from another tracked table, COPY with the column),
-- inheritance children, session_replication_role = replica.  An UPDATE cannot change
-- cq_xid, and a row an UPDATE moves to another partition is not counted again.
CREATE EXTENSION IF NOT EXISTS pg_cq;

-- a table with a cq_xid column of its own (no default, no index), holding values
-- pg_cq did not stamp: rows present now are history, read by batch 0
CREATE TABLE tr_pre (k int, cq_xid xid8);
INSERT INTO tr_pre VALUES (1, NULL), (2, '3'), (3, '999999999999');
CREATE TABLE tr_pre_n WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM tr_pre GROUP BY k;
SELECT * FROM tr_pre_n ORDER BY k;
-- tracking gave it what a new column gets
SELECT pg_get_expr(d.adbin, d.adrelid) AS cq_xid_default
  FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
 WHERE d.adrelid = 'tr_pre'::regclass AND a.attname = 'cq_xid';
SELECT c.relname, am.amname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
  JOIN pg_am am ON am.oid = c.relam WHERE i.indrelid = 'tr_pre'::regclass;
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'tr_pre'::regclass ORDER BY tgname;
INSERT INTO tr_pre (k) VALUES (4), (1);
CALL cq.run('tr_pre_n');
SELECT * FROM tr_pre_n ORDER BY k;
-- a source tracked without the stamp trigger (by 0.1): the owner's next query adds it
DROP TRIGGER zz_cq_stamp ON tr_pre;
CREATE TABLE tr_pre_k WITH (cq.trigger = 'available_now') AS SELECT k FROM tr_pre WITH NO DATA;
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'tr_pre'::regclass ORDER BY tgname;

-- a source and another tracked table
CREATE TABLE tr_src (k int, v int);
CREATE TABLE tr_other (k int, v int);
CREATE TABLE tr_n WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n, sum(v) AS s FROM tr_src GROUP BY k;
CREATE TABLE tr_other_n WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM tr_other GROUP BY k;
INSERT INTO tr_other VALUES (1, 10), (2, 20);
INSERT INTO tr_src VALUES (0, 0);
CALL cq.run('tr_n');
-- explicit values: copies of another table's stamps, a made-up one, COPY with the column
INSERT INTO tr_src SELECT * FROM tr_other;
INSERT INTO tr_src (k, v, cq_xid) VALUES (3, 30, '3'), (4, 40, '999999999999'), (5, 50, NULL);
COPY tr_src (k, v, cq_xid) FROM STDIN;
6	60	3
\.
-- every row carries the stamp of the transaction that inserted it
SELECT count(*) FILTER (WHERE cq_xid IS NULL) AS unstamped,
       count(*) FILTER (WHERE cq_xid > pg_snapshot_xmax(pg_current_snapshot())) AS in_the_future
  FROM tr_src;
CALL cq.run('tr_n');
SELECT * FROM tr_n ORDER BY k;

-- the default dropped or changed: rows are stamped all the same
ALTER TABLE tr_src ALTER COLUMN cq_xid DROP DEFAULT;
INSERT INTO tr_src (k, v) VALUES (7, 70);
ALTER TABLE tr_src ALTER COLUMN cq_xid SET DEFAULT '5';
INSERT INTO tr_src (k, v) VALUES (7, 71);
ALTER TABLE tr_src ALTER COLUMN cq_xid SET DEFAULT pg_current_xact_id();
-- a replica's apply (session_replication_role = replica) stamps too
SET session_replication_role = replica;
INSERT INTO tr_src (k, v, cq_xid) VALUES (8, 80, '3');
RESET session_replication_role;
CALL cq.run('tr_n');
SELECT * FROM tr_n WHERE k >= 7 ORDER BY k;
-- the target equals its plain query
SELECT count(*) AS tr_n_diff
  FROM ((SELECT k, count(*), sum(v) FROM tr_src GROUP BY k EXCEPT ALL TABLE tr_n)
        UNION ALL (TABLE tr_n EXCEPT ALL SELECT k, count(*), sum(v) FROM tr_src GROUP BY k)) x;

-- UPDATE cannot change cq_xid (it would count a row again, or never); other columns may
-- change, unseen by the queries (sources are append-only)
UPDATE tr_src SET cq_xid = pg_current_xact_id() WHERE k = 1;
UPDATE tr_src SET cq_xid = NULL WHERE k = 1;
UPDATE tr_src SET v = v + 1, cq_xid = cq_xid WHERE k = 1;
DELETE FROM tr_src WHERE k = 0;
CALL cq.run('tr_n');
SELECT * FROM tr_n WHERE k <= 1 ORDER BY k;

-- a partitioned source: a partition attached later, rows inserted straight into it
CREATE TABLE tr_part (k int, v int) PARTITION BY LIST (k);
CREATE TABLE tr_part_1 PARTITION OF tr_part FOR VALUES IN (1);
CREATE TABLE tr_part_n WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM tr_part GROUP BY k;
CREATE TABLE tr_part_2 (k int, v int, cq_xid cq.xid48);
-- rows a table brings when attached keep their cq_xid: NULL is history (not counted)
INSERT INTO tr_part_2 VALUES (2, 0, NULL);
ALTER TABLE tr_part ATTACH PARTITION tr_part_2 FOR VALUES IN (2);
INSERT INTO tr_part_2 (k, v) VALUES (2, 1);
INSERT INTO tr_part_1 (k, v, cq_xid) VALUES (1, 1, '3');
INSERT INTO tr_part VALUES (1, 2), (2, 2);
-- a partition created later, and a tracked table attached with its own trigger
CREATE TABLE tr_part_3 PARTITION OF tr_part FOR VALUES IN (3);
INSERT INTO tr_part_3 (k, v, cq_xid) VALUES (3, 1, '3');
CREATE TABLE tr_part_4 (k int, v int);
CREATE TABLE tr_part_4_n WITH (cq.trigger = 'available_now') AS SELECT k FROM tr_part_4;
DROP TABLE tr_part_4_n;
ALTER TABLE tr_part ATTACH PARTITION tr_part_4 FOR VALUES IN (4);
INSERT INTO tr_part_4 (k, v, cq_xid) VALUES (4, 1, '3');
SELECT c.relname, t.tgname, t.tgparentid <> 0 AS cloned
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE c.relname LIKE 'tr\_part%' AND t.tgname = 'zz_cq_stamp' ORDER BY 1;
CALL cq.run('tr_part_n');
SELECT * FROM tr_part_n ORDER BY k;
-- an UPDATE that moves a row to another partition does not count it again
UPDATE tr_part SET k = 3 WHERE k = 1 AND v = 2;
SELECT k, v FROM tr_part WHERE v = 2 ORDER BY k;
CALL cq.run('tr_part_n');
SELECT * FROM tr_part_n ORDER BY k;

-- inheritance children (row triggers are not cloned to them): existing ones at tracking,
-- CREATE TABLE ... INHERITS and ALTER TABLE ... INHERIT later
CREATE TABLE tr_inh (k int, v int);
CREATE TABLE tr_inh_a () INHERITS (tr_inh);
CREATE TABLE tr_inh_n WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM tr_inh GROUP BY k;
CREATE TABLE tr_inh_b () INHERITS (tr_inh);
CREATE TABLE tr_inh_c (k int, v int, cq_xid cq.xid48);
ALTER TABLE tr_inh_c INHERIT tr_inh;
INSERT INTO tr_inh_a (k, v, cq_xid) VALUES (1, 1, '3');
INSERT INTO tr_inh_b (k, v, cq_xid) VALUES (2, 1, '3');
INSERT INTO tr_inh_c (k, v) VALUES (3, 1);
CALL cq.run('tr_inh_n');
SELECT * FROM tr_inh_n ORDER BY k;

DROP TABLE tr_pre_n, tr_pre_k, tr_pre, tr_n, tr_other_n, tr_src, tr_other, tr_part_n, tr_part,
  tr_inh_n, tr_inh CASCADE;
\i sql/include/xid48_port_end.sql

-- ---- sql/140_write_xid_const.sql once more, on cq.xid48 sources: INSERT's Const of cq.xid48 (by reference) in the place of cq.current_xid48() ----
\set port x48_140
\i sql/include/xid48_port_begin.sql
\i sql/140_write_xid_const.sql
\i sql/include/xid48_port_end.sql

-- ---- sql/144_copy_xid_default.sql once more, on cq.xid48 sources: COPY's Const of cq.xid48 swapped into the default ----
\set port x48_144
\i sql/include/xid48_port_begin.sql
\i sql/144_copy_xid_default.sql
\i sql/include/xid48_port_end.sql
