-- cq.xid48 (docs/design-stamp.md step 1, src/xid48.c): an xid8's value in
-- 6 bytes.  Its I/O is xid8's, its comparisons with itself and with xid8
-- agree with xid8's at every byte boundary, no call mixing the two types is
-- ambiguous, and a btree or BRIN index of a cq.xid48 column serves bounds
-- of type xid8 with the rows a sequential scan returns.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
CREATE SCHEMA x207;
SET search_path = x207, cq, public;

-- the type: 6 bytes, by reference, no alignment, stored plain
SELECT typlen, typbyval, typalign, typstorage, typcategory
  FROM pg_type WHERE oid = 'cq.xid48'::regtype;
SELECT pg_column_size('281474976710655'::cq.xid48) AS bytes;
-- every operator class validates
SELECT c.opcname, a.amname, c.opcdefault, amvalidate(c.oid)
  FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod
 WHERE c.opcnamespace = 'cq'::regnamespace ORDER BY 1, 2;
-- the families: btree holds the three pairs and xid8's own, hash the four
-- equalities, BRIN the xid48 and (xid48, xid8) operators
SELECT a.amname, f.opfname, o.amoplefttype::regtype, o.amoprighttype::regtype,
       string_agg(o.amopopr::regoperator::text, ' ' ORDER BY o.amopstrategy) AS operators
  FROM pg_amop o JOIN pg_opfamily f ON f.oid = o.amopfamily JOIN pg_am a ON a.oid = f.opfmethod
 WHERE f.opfnamespace = 'cq'::regnamespace
 GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3::text, 4::text;
SELECT p.proname, p.provolatile, p.proparallel, p.prorettype::regtype
  FROM pg_proc p WHERE p.oid = 'cq.current_xid48()'::regprocedure;
SELECT castsource::regtype, casttarget::regtype, castcontext, castmethod
  FROM pg_cast WHERE castsource = 'cq.xid48'::regtype OR casttarget = 'cq.xid48'::regtype
 ORDER BY 1::text;

-- text I/O: xid8's literals, the same values; the largest value fits
SELECT v, v::cq.xid48 AS x48, v::xid8 AS x8, v::cq.xid48::text = v::xid8::text AS same
  FROM (VALUES ('0'), ('1'), ('255'), ('256'), ('65536'), ('4294967295'), ('4294967296'),
               ('1099511627776'), ('281474976710655'), ('  42  '), ('+7'), ('010'), ('0x1f')) AS l(v);
-- 2^48 and beyond: the limit error (literal, cast, assignment)
SELECT '281474976710656'::cq.xid48;
SELECT '18446744073709551615'::xid8::cq.xid48;
CREATE TABLE x207.lim (x cq.xid48);
INSERT INTO x207.lim VALUES ('281474976710656'::xid8);
-- text that is no number: an error (xid8in reads these as 0 or a prefix)
SELECT ''::cq.xid48;
SELECT 'abc'::cq.xid48;
SELECT '12abc'::cq.xid48;
SELECT '-1'::cq.xid48;
SELECT '99999999999999999999'::cq.xid48;
-- NULLs: strict functions, NULL comparisons, NULL casts
SELECT NULL::cq.xid48 IS NULL AS n, (NULL::cq.xid48)::xid8 IS NULL AS n8,
       (NULL::xid8)::cq.xid48 IS NULL AS n48, (NULL::cq.xid48 = '1') IS NULL AS cmp;
-- binary output: xid8send's bytes
SELECT v, cq.xid48_send(v::cq.xid48) AS sent, cq.xid48_send(v::cq.xid48) = xid8send(v::xid8) AS same
  FROM (VALUES ('0'), ('258'), ('4294967296'), ('281474976710655')) AS l(v);

-- comparisons: every pair of values around byte boundaries, each of the six
-- operators for (xid48, xid48), (xid48, xid8) and (xid8, xid48) against
-- xid8's; both sides of the cast
CREATE TABLE x207.vals AS
SELECT v::xid8 AS v8, v::xid8::cq.xid48 AS v48
  FROM unnest(ARRAY['0', '1', '255', '256', '65535', '65536', '16777216', '4294967295', '4294967296',
                    '4294967297', '1099511627775', '1099511627776', '281474976710399',
                    '281474976710655']) AS v;
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE (a.v48 = b.v48) = (a.v8 = b.v8) AND (a.v48 <> b.v48) = (a.v8 <> b.v8)
                          AND (a.v48 < b.v48) = (a.v8 < b.v8) AND (a.v48 <= b.v48) = (a.v8 <= b.v8)
                          AND (a.v48 > b.v48) = (a.v8 > b.v8) AND (a.v48 >= b.v48) = (a.v8 >= b.v8)) AS xid48_xid48,
       count(*) FILTER (WHERE (a.v48 = b.v8) = (a.v8 = b.v8) AND (a.v48 <> b.v8) = (a.v8 <> b.v8)
                          AND (a.v48 < b.v8) = (a.v8 < b.v8) AND (a.v48 <= b.v8) = (a.v8 <= b.v8)
                          AND (a.v48 > b.v8) = (a.v8 > b.v8) AND (a.v48 >= b.v8) = (a.v8 >= b.v8)) AS xid48_xid8,
       count(*) FILTER (WHERE (a.v8 = b.v48) = (a.v8 = b.v8) AND (a.v8 <> b.v48) = (a.v8 <> b.v8)
                          AND (a.v8 < b.v48) = (a.v8 < b.v8) AND (a.v8 <= b.v48) = (a.v8 <= b.v8)
                          AND (a.v8 > b.v48) = (a.v8 > b.v8) AND (a.v8 >= b.v48) = (a.v8 >= b.v8)) AS xid8_xid48,
       count(*) FILTER (WHERE sign(cq.xid48_cmp(a.v48, b.v48)) = sign(xid8cmp(a.v8, b.v8))
                          AND cq.xid48_xid8_cmp(a.v48, b.v8) = xid8cmp(a.v8, b.v8)
                          AND cq.xid8_xid48_cmp(a.v8, b.v48) = xid8cmp(a.v8, b.v8)) AS cmp,
       count(*) FILTER (WHERE a.v48::xid8 = a.v8 AND (cq.xid48_hash(a.v48) = hashint8(a.v8::text::bigint))
                          AND cq.xid48_hash_extended(a.v48, 7) = hashint8extended(a.v8::text::bigint, 7)) AS cast_hash
  FROM x207.vals a, x207.vals b;

-- which operator each call resolves to, with cq on the search path: the
-- exact one, no cast added, no ambiguity
CREATE TABLE x207.t (id int, x cq.xid48, y xid8);
EXPLAIN (VERBOSE, COSTS OFF)
SELECT x = '5', '5' = x, x = pg_current_xact_id(), pg_current_xact_id() = x, x < y, y >= x, x <> x,
       x::xid8, x = NULL, pg_visible_in_snapshot(x, pg_current_snapshot())
  FROM x207.t;
-- an integer compares with neither type
SELECT x = 5 FROM x207.t;
SELECT y = 5 FROM x207.t;
-- without cq on the path the cq operators are not visible: xid8's apply,
-- through the implicit cast (same results, not indexable by cq.xid48's
-- operator classes); pg_cq's own SQL names OPERATOR(cq.>=)
SET search_path = x207, public;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT x = '5', x = pg_current_xact_id(), x < y, x OPERATOR(cq.>=) y FROM x207.t;
SELECT count(*) FILTER (WHERE (a.v48 < b.v48) = (a.v8 < b.v8) AND (a.v48 = b.v8) = (a.v8 = b.v8)) AS same,
       count(*) AS pairs
  FROM x207.vals a, x207.vals b;
SET search_path = x207, cq, public;

-- assignment from xid8 and the default: the transaction's id
BEGIN;
INSERT INTO x207.t VALUES (-1, pg_current_xact_id(), pg_current_xact_id());
SELECT x = y AS same, x = cq.current_xid48() AS current, x = pg_current_xact_id() AS current8
  FROM x207.t WHERE id = -1;
ROLLBACK;
CREATE TABLE x207.d (k int, x cq.xid48 DEFAULT cq.current_xid48());
BEGIN;
INSERT INTO x207.d (k) SELECT g FROM generate_series(1, 3) g;
COPY x207.d (k) FROM STDIN;
4
5
\.
SELECT count(*), count(*) FILTER (WHERE x = pg_current_xact_id()) AS stamped FROM x207.d;
COMMIT;

-- a table: ids 1..20000, values spread over four epochs (x = y), NULLs
INSERT INTO x207.t
SELECT g, v, v
  FROM generate_series(1, 20000) g,
       LATERAL (SELECT ((g % 4)::bigint * 4294967296 + g * 1000)::text::xid8 AS v) s;
INSERT INTO x207.t VALUES (0, NULL, NULL), (20001, NULL, '7');
ANALYZE x207.t;

-- parallel unsafe: a query that could run in parallel mode does not, so
-- the transaction can be given its id (a parallel restricted function
-- failed: cannot assign XIDs during a parallel operation)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT cq.current_xid48(), count(*) FROM x207.t;
SELECT cq.current_xid48() = pg_current_xact_id() AS same, count(*) FROM x207.t;
EXPLAIN (COSTS OFF) SELECT count(*) FROM x207.t WHERE x < cq.current_xid48();
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- ORDER BY (sort support), DISTINCT, GROUP BY by hash and by sort
SELECT x FROM x207.t WHERE id IN (1, 2, 3, 4, 5, 0) ORDER BY x DESC NULLS LAST;
SELECT count(*) = 20000 AS sorted FROM (
  SELECT x, y, lag(y) OVER (ORDER BY x, id) AS prev FROM x207.t WHERE x IS NOT NULL) s
 WHERE prev IS NULL OR prev <= y;
SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT x, count(*) FROM x207.t GROUP BY x;
SELECT count(*) AS groups, sum(n) AS rows, count(*) FILTER (WHERE x IS NULL) AS null_groups
  FROM (SELECT x, count(*) AS n FROM x207.t GROUP BY x) s;
EXPLAIN (COSTS OFF) SELECT DISTINCT x FROM x207.t;
SELECT count(*) FROM (SELECT DISTINCT x FROM x207.t) s;
RESET enable_sort;
SET enable_hashagg = off;
EXPLAIN (COSTS OFF) SELECT x, count(*) FROM x207.t GROUP BY x;
SELECT count(*) AS groups, sum(n) AS rows FROM (SELECT x, count(*) AS n FROM x207.t GROUP BY x) s;
RESET enable_hashagg;
-- joins across the types: hash and merge, the same rows as the xid8 join
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM x207.t a JOIN x207.t b ON a.x = b.y;
SELECT count(*) FROM x207.t a JOIN x207.t b ON a.x = b.y;
RESET enable_mergejoin;
SET enable_hashjoin = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM x207.t a JOIN x207.t b ON b.y = a.x;
SELECT count(*) FROM x207.t a JOIN x207.t b ON b.y = a.x;
RESET enable_hashjoin;
SELECT count(*) FROM x207.t a JOIN x207.t b ON a.y = b.y;
-- xid8's own plans stay: its operators in cq.xid48_ops do not change the
-- family an xid8 column sorts and merges by (a btree index of it serves both)
CREATE INDEX t_y ON x207.t (y);
EXPLAIN (COSTS OFF) SELECT id FROM x207.t ORDER BY y DESC LIMIT 3;
SET enable_hashjoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT count(*) FILTER (WHERE a.id <> b.id) FROM x207.t a JOIN x207.t b ON a.y = b.y;
RESET enable_nestloop;
RESET enable_hashjoin;
DROP INDEX x207.t_y;

-- the batch's bounds as parameters of type xid8
PREPARE x207_range(xid8, xid8) AS
  SELECT id, x FROM x207.t WHERE x >= $1 AND x < $2;
CREATE TABLE x207.bounds AS
SELECT lo::xid8 AS lo, hi::xid8 AS hi
  FROM (VALUES ('0', '5000000'), ('4294967296', '4294967296'), ('4294967295', '4294968296'),
               ('8589934592', '8589984592'), ('12884901888', '12904901888'), ('0', '281474976710655'),
               ('13000000000', '281474976710655')) AS b(lo, hi);
-- the rows of a sequential scan
CREATE TABLE x207.expect AS
SELECT b.lo, b.hi, t.id FROM x207.bounds b, x207.t t WHERE t.x::xid8 >= b.lo AND t.x::xid8 < b.hi;
SELECT lo, hi, count(*) FROM x207.expect GROUP BY 1, 2 ORDER BY 1, 2;
-- rows that a scan of tab by x for the bounds returns and the seq scan did
-- not, or the other way round
CREATE FUNCTION x207.wrong(tab regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
BEGIN
  EXECUTE format($q$
    CREATE TEMP TABLE got AS
    SELECT b.lo, b.hi, r.id FROM x207.bounds b,
           LATERAL (SELECT t.id FROM %s t WHERE t.x >= b.lo AND t.x < b.hi) r$q$, tab);
  SELECT count(*) INTO n FROM ((TABLE got EXCEPT ALL TABLE x207.expect)
                               UNION ALL (TABLE x207.expect EXCEPT ALL TABLE got)) d;
  DROP TABLE got;
  RETURN n;
END $$;

-- a btree index: index scans for xid8 bounds, xid48 bounds, both mixed;
-- the planner proves a partial index's xid8 predicate from an xid48 bound
CREATE INDEX t_x ON x207.t (x);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE x207_range('1', '2');
EXPLAIN (COSTS OFF) SELECT b.lo, b.hi, r.id FROM x207.bounds b,
       LATERAL (SELECT t.id FROM x207.t t WHERE t.x >= b.lo AND t.x < b.hi) r;
SELECT x207.wrong('x207.t') AS wrong;
EXPLAIN (COSTS OFF)
SELECT id FROM x207.t WHERE x >= '4294967296'::xid8 AND x > '4294968296'::cq.xid48 AND x < '8589934592'::xid8;
SELECT count(*) FROM x207.t WHERE x >= '4294967296'::xid8 AND x > '4294968296'::cq.xid48 AND x < '8589934592'::xid8;
DROP INDEX x207.t_x;
CREATE INDEX t_x_part ON x207.t (id) WHERE x >= '12884901888'::xid8;
EXPLAIN (COSTS OFF) SELECT count(*) FROM x207.t WHERE x >= '12884902888'::cq.xid48 AND id < 100;
SELECT count(*) FROM x207.t WHERE x >= '12884902888'::cq.xid48 AND id < 100;
DROP INDEX x207.t_x_part;
RESET enable_bitmapscan;
RESET enable_seqscan;

-- a BRIN index (minmax, 16 pages a range): bitmap scans for xid8 bounds
-- (parameters and constants), commuted bounds too; rows as the seq scan's
CREATE TABLE x207.b AS SELECT * FROM x207.t ORDER BY x NULLS FIRST;
CREATE INDEX b_brin ON x207.b USING brin (x) WITH (pages_per_range = 16);
ANALYZE x207.b;
SELECT opcname FROM pg_index i JOIN pg_opclass c ON c.oid = i.indclass[0]
 WHERE i.indexrelid = 'x207.b_brin'::regclass;
PREPARE x207_brange(xid8, xid8) AS
  SELECT id, x FROM x207.b WHERE x >= $1 AND x < $2;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) EXECUTE x207_brange('1', '2');
EXPLAIN (COSTS OFF) SELECT id FROM x207.b WHERE '4294967296'::xid8 <= x AND '8589934592'::xid8 > x;
EXPLAIN (COSTS OFF) SELECT b.lo, b.hi, r.id FROM x207.bounds b,
       LATERAL (SELECT t.id FROM x207.b t WHERE t.x >= b.lo AND t.x < b.hi) r;
SELECT x207.wrong('x207.b') AS wrong;
-- the index prunes: a narrow range reads a few of the table's pages
CREATE FUNCTION x207.heap_blocks(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF) ' || q INTO plan;
  RETURN (plan -> 0 -> 'Plan' -> 'Plans' -> 0 ->> 'Exact Heap Blocks')::bigint
       + (plan -> 0 -> 'Plan' -> 'Plans' -> 0 ->> 'Lossy Heap Blocks')::bigint;
END $$;
SELECT x207.heap_blocks($$SELECT count(*) FROM x207.b WHERE x >= '12884901888'::xid8 AND x < '12884911888'::xid8$$)
       BETWEEN 1 AND 32 AS pruned,
       pg_relation_size('x207.b') / 8192 > 64 AS table_larger;
SELECT count(*) FROM x207.b WHERE x >= '12884901888'::xid8 AND x < '12884911888'::xid8;
RESET enable_seqscan;
DEALLOCATE x207_range;
DEALLOCATE x207_brange;
RESET plan_cache_mode;

-- COPY: the text pg_dump writes reads back; xid8's binary COPY reads into
-- cq.xid48 and back out the same
CREATE TABLE x207.c (id int, x cq.xid48);
INSERT INTO x207.c VALUES (1, '0'), (2, '4294967296'), (3, '281474976710655'), (4, NULL);
COPY x207.c TO STDOUT;
TRUNCATE x207.c;
COPY x207.c FROM STDIN;
1	0
2	4294967296
3	281474976710655
4	\N
\.
SELECT id, x, x::xid8 FROM x207.c ORDER BY id;
CREATE TABLE x207.c8 (id int, x xid8);
INSERT INTO x207.c8 SELECT id, x FROM x207.c;
SELECT current_setting('data_directory') || '/pg_cq_207_xid8.bin' AS f8,
       current_setting('data_directory') || '/pg_cq_207_xid48.bin' AS f48 \gset
COPY x207.c8 TO :'f8' (FORMAT binary);
TRUNCATE x207.c;
COPY x207.c FROM :'f8' (FORMAT binary);
COPY x207.c TO :'f48' (FORMAT binary);
SELECT pg_read_binary_file(:'f8') = pg_read_binary_file(:'f48') AS same_bytes;
SELECT count(*) AS rows, count(*) FILTER (WHERE c.x IS NOT DISTINCT FROM c8.x) AS equal
  FROM x207.c JOIN x207.c8 USING (id);
-- binary input of 2^48: the limit error
UPDATE x207.c8 SET x = '281474976710656' WHERE id = 3;
COPY x207.c8 TO :'f8' (FORMAT binary);
COPY x207.c FROM :'f8' (FORMAT binary);

-- a role without privileges uses the type, its default and its operator
-- classes (cq's USAGE is PUBLIC's)
CREATE ROLE x207_user;
GRANT CREATE, USAGE ON SCHEMA x207 TO x207_user;
SET ROLE x207_user;
CREATE TABLE x207.u (k int, x cq.xid48 DEFAULT cq.current_xid48());
CREATE INDEX ON x207.u USING brin (x);
CREATE INDEX ON x207.u (x);
INSERT INTO x207.u (k) VALUES (1), (2);
SELECT count(*) FILTER (WHERE x OPERATOR(cq.<=) pg_current_xact_id()) AS stamped FROM x207.u;
RESET ROLE;
DROP TABLE x207.u;
REVOKE ALL ON SCHEMA x207 FROM x207_user;
DROP ROLE x207_user;

RESET search_path;
DROP SCHEMA x207 CASCADE;
