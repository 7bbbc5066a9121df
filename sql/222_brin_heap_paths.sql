-- Session 43: the error and abort paths of the heap access method wrapper that a COPY or
-- multi-row INSERT into a table whose only index is the BRIN index on cq_xid takes
-- (brin_heap.c: its rows meet the index in the table's access method, the statement's
-- ResultRelInfo holds no index).  Every step writes rows into summarized ranges, so a
-- row that missed the index would leave a summary without its stamp: after all of them
-- the summaries must equal those brin.c builds over the same rows, and the query count
-- every committed row once.  The paths: a COPY that fails after its first flushes (a bad
-- row, a CHECK constraint, an AFTER ROW trigger at the statement's end), in a subtransaction
-- that is rolled back and at the top level; a multi-row INSERT that fails in a PL/pgSQL
-- block that catches the error, in the middle of a statement that goes on writing; the
-- table altered, given a second index and its index dropped between COPYs of one
-- transaction; relation cache rebuilds of the table in the middle of a COPY; summarizing
-- the table after a multi-row INSERT failed.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
CREATE EXTENSION IF NOT EXISTS pageinspect;

CREATE TABLE bhp (k int, pad text);
CREATE TABLE bhp_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n, sum(k) AS s FROM bhp;
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'bhp'::regclass;
CREATE FUNCTION bhp_index() RETURNS regclass LANGUAGE sql
  AS $$ SELECT i.indexrelid::regclass FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE i.indrelid = 'bhp'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'brin')
           AND c.relname <> 'bhp_ref' $$;
-- every range summarized, the last, partial one too: the next rows land in a summary
CREATE PROCEDURE bhp_summarize() LANGUAGE sql AS $$ SELECT brin_summarize_new_values(bhp_index()) $$;
CREATE FUNCTION bhp_items(idx regclass)
RETURNS TABLE (blknum bigint, allnulls bool, hasnulls bool, lo xid8, hi xid8)
LANGUAGE sql AS $$
  SELECT i.blknum, i.allnulls, i.hasnulls,
         (regexp_match(i.value, '^\{(\d+) \.\. (\d+)\}$'))[1]::xid8,
         (regexp_match(i.value, '^\{(\d+) \.\. (\d+)\}$'))[2]::xid8
    FROM generate_series(1, pg_relation_size(idx) / current_setting('block_size')::int - 1) b,
         LATERAL brin_page_items(get_raw_page(idx::text, b::int), idx) i
   WHERE brin_page_type(get_raw_page(idx::text, b::int)) = 'regular' AND NOT i.placeholder
$$;
-- rows of a statement (by pad) that lie in a summarized range
CREATE FUNCTION bhp_in_summaries() RETURNS TABLE (stmt text, rows bigint) LANGUAGE sql AS $$
  SELECT pad, count(*) FROM bhp s
   WHERE pad <> 'base' AND EXISTS (SELECT FROM bhp_items(bhp_index()) i
                                    WHERE i.blknum = (s.ctid::text::point)[0]::bigint / 32 * 32)
   GROUP BY 1 ORDER BY 1
$$;

INSERT INTO bhp SELECT g, 'base' FROM generate_series(1, 3000) g;

-- 1. a COPY that fails at its last row, after two flushes, in a subtransaction rolled back;
-- then a COPY and a multi-row INSERT in the same transaction
CALL bhp_summarize();
BEGIN;
SAVEPOINT s;
COPY bhp (k, pad) FROM PROGRAM 'seq 1 2500 | sed "s/$/,c1/"; echo oops,c1' (FORMAT csv);
ROLLBACK TO SAVEPOINT s;
COPY bhp (k, pad) FROM PROGRAM 'seq 1 300 | sed "s/$/,c1/"' (FORMAT csv);
INSERT INTO bhp SELECT g, 'i1' FROM generate_series(1, 300) g;
COMMIT;

-- 2. a CHECK constraint that fails in the middle of a COPY, at the top level; then a COPY
ALTER TABLE bhp ADD CONSTRAINT bhp_not_13 CHECK (k <> 1301513);
CALL bhp_summarize();
\set VERBOSITY terse
COPY bhp (k, pad) FROM PROGRAM 'seq 1300001 1302000 | sed "s/$/,c2/"' (FORMAT csv);
\set VERBOSITY default
COPY bhp (k, pad) FROM PROGRAM 'seq 1 200 | sed "s/$/,c2/"' (FORMAT csv);
ALTER TABLE bhp DROP CONSTRAINT bhp_not_13;

-- 3. an AFTER ROW trigger that fails at the statement's end, when every row is in; then a
-- COPY with the trigger still there
CREATE FUNCTION bhp_refuse() RETURNS trigger LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION 'row % refused', NEW.k; END $$;
CREATE TRIGGER bhp_after AFTER INSERT ON bhp FOR EACH ROW WHEN (NEW.k = 999999)
  EXECUTE FUNCTION bhp_refuse();
CALL bhp_summarize();
COPY bhp (k, pad) FROM PROGRAM 'seq 1 1500 | sed "s/$/,c3/"; echo 999999,c3' (FORMAT csv);
COPY bhp (k, pad) FROM PROGRAM 'seq 1 200 | sed "s/$/,c3/"' (FORMAT csv);
DROP TRIGGER bhp_after ON bhp;

-- 4. a multi-row INSERT that fails in the middle of a PL/pgSQL block that catches it (its
-- subtransaction aborts), between two that succeed, all in one statement
CREATE FUNCTION bhp_three() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO bhp SELECT g, 'p4' FROM generate_series(1, 200) g;
  BEGIN
    INSERT INTO bhp SELECT g, 'x4' FROM generate_series(1, 1500) g WHERE 1 / (1400 - g) IS NOT NULL;
  EXCEPTION WHEN division_by_zero THEN NULL;
  END;
  INSERT INTO bhp SELECT g, 'p4' FROM generate_series(1, 200) g;
  RETURN (SELECT count(*) FROM bhp WHERE pad = 'p4');
END $$;
CALL bhp_summarize();
SELECT bhp_three() AS p4_rows;

-- 5. one transaction: a COPY; the table altered (its relation cache entry rebuilt); a COPY; a
-- second index (the executor's index path); a COPY; that index dropped (the gate again); a
-- COPY; a multi-row INSERT
CALL bhp_summarize();
BEGIN;
COPY bhp (k, pad) FROM PROGRAM 'seq 1 300 | sed "s/$/,c5/"' (FORMAT csv);
ALTER TABLE bhp ADD COLUMN note text;
COPY bhp (k, pad) FROM PROGRAM 'seq 1 300 | sed "s/$/,c5/"' (FORMAT csv);
CREATE INDEX bhp_k ON bhp (k);
COPY bhp (k, pad) FROM PROGRAM 'seq 1 300 | sed "s/$/,c5/"' (FORMAT csv);
DROP INDEX bhp_k;
COPY bhp (k, pad) FROM PROGRAM 'seq 1 300 | sed "s/$/,c5/"' (FORMAT csv);
INSERT INTO bhp SELECT g, 'c5' FROM generate_series(1, 300) g;
COMMIT;

-- 6. relation cache rebuilds of the table while a COPY runs: another column's default
-- grants and revokes on it every 400 rows
CREATE TABLE bhp_n (i int);
CREATE FUNCTION bhp_flip() RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  INSERT INTO bhp_n VALUES (1);
  n := (SELECT count(*) FROM bhp_n);
  IF n % 400 = 0 THEN
    EXECUTE CASE WHEN n % 800 = 0 THEN 'REVOKE SELECT ON bhp FROM PUBLIC' ELSE 'GRANT SELECT ON bhp TO PUBLIC' END;
  END IF;
  RETURN 'flipped';
END $$;
ALTER TABLE bhp ALTER COLUMN note SET DEFAULT bhp_flip();
CALL bhp_summarize();
COPY bhp (k, pad) FROM PROGRAM 'seq 1 2000 | sed "s/$/,c6/"' (FORMAT csv);
ALTER TABLE bhp ALTER COLUMN note DROP DEFAULT;
SELECT count(*) AS flips FROM bhp_n;

-- 7. a multi-row INSERT that fails at the top level, and one in a subtransaction rolled
-- back: the table's access method is heap's again at once (it stayed the wrapper's, and
-- what reads the table with heap_getnext, brin_summarize_new_values or VACUUM's BRIN
-- summarization, failed in this backend with "only heap AM is supported" until a row was
-- inserted again)
INSERT INTO bhp SELECT 1 / (1400 - g), 'x7' FROM generate_series(1, 1500) g;
SELECT brin_summarize_new_values(bhp_index()) >= 0 AS summarized;
BEGIN;
SAVEPOINT s;
INSERT INTO bhp SELECT 1 / (1400 - g), 'x7' FROM generate_series(1, 1500) g;
ROLLBACK TO SAVEPOINT s;
SELECT brin_summarize_new_values(bhp_index()) >= 0 AS summarized;
COMMIT;

-- 8. after all that, plain writes into a summary: a COPY and a single-row INSERT
CALL bhp_summarize();
COPY bhp (k, pad) FROM PROGRAM 'seq 1 100 | sed "s/$/,c7/"' (FORMAT csv);
INSERT INTO bhp (k, pad) VALUES (7, 'c7');

-- the rows that went into summarized ranges, statement by statement; none of the failed ones
SELECT * FROM bhp_in_summaries();
SELECT count(*) FILTER (WHERE pad LIKE 'x%') AS failed_rows_kept FROM bhp;
-- brin.c's summaries of the same rows
SELECT format('CREATE INDEX bhp_ref ON bhp USING brin (cq_xid cq.xid8_minmax_ops) WITH (pages_per_range = %s)', 32) \gexec
SELECT count(*) AS ranges_compared,
       count(*) FILTER (WHERE (r.allnulls, r.hasnulls, r.lo, r.hi) IS DISTINCT FROM (c.allnulls, c.hasnulls, c.lo, c.hi)) AS differing
  FROM bhp_items('bhp_ref') r JOIN bhp_items(bhp_index()) c USING (blknum);
DROP INDEX bhp_ref;
-- the query counts every committed row once
SET cq.run_in_worker = off;
CALL cq.run('bhp_q');
SELECT n = (SELECT count(*) FROM bhp) AND s = (SELECT sum(k) FROM bhp) AS exact,
       n AS rows_counted FROM bhp_q;

SELECT cq.drop_query('bhp_q', drop_target => true);
DROP TABLE bhp, bhp_n;
DROP FUNCTION bhp_index(), bhp_items(regclass), bhp_in_summaries(), bhp_refuse(), bhp_three(), bhp_flip();
DROP PROCEDURE bhp_summarize();
DROP EXTENSION pageinspect;
