-- Issue 12 goal 1: the row of a single-row INSERT into a tracked source skips
-- ExecInsertIndexTuples and is checked at the statement's ExecutorFinish (src/stamp.c,
-- defer_row): the gate (brin_row_gate) is asked then, and a row in a summarized range still
-- widens the summary, before AFTER triggers run and before the transaction ends.  Not for a
-- statement with RETURNING or WITH CHECK OPTIONs, whose user code runs after the row's insert
-- and could read the index.  Each count below compares the rows found through the BRIN index
-- with those of a plain scan.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE TABLE wdr_src (k int, pad text);
CREATE TABLE wdr_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n FROM wdr_src;
CREATE FUNCTION wdr_brin() RETURNS regclass LANGUAGE sql
  AS $$ SELECT i.indexrelid::regclass FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = 'wdr_src'::regclass AND a.amname = 'brin' $$;
-- rows with cq_xid at least lo, through the BRIN index and by a plain scan
CREATE FUNCTION wdr_count(lo xid8) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE by_index bigint; by_scan bigint;
BEGIN
  SET LOCAL enable_seqscan = off;
  SET LOCAL enable_indexscan = off;
  SELECT count(*) INTO by_index FROM wdr_src WHERE cq_xid >= lo;
  SET LOCAL enable_seqscan = on;
  SET LOCAL enable_bitmapscan = off;
  SELECT count(*) INTO by_scan FROM wdr_src WHERE cq_xid >= lo;
  RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan;
  RETURN by_index || ' by index, ' || by_scan || ' by scan';
END $$;
CREATE TABLE wdr_mark (step text PRIMARY KEY, x xid8);
CREATE FUNCTION wdr_since(s text) RETURNS text LANGUAGE sql VOLATILE
  AS $$ SELECT wdr_count((SELECT x FROM wdr_mark WHERE step = s)) $$;

INSERT INTO wdr_src SELECT g, 'history' FROM generate_series(1, 5) g;
-- range 0 summarized: the rows below land in it and must widen its summary
SELECT brin_summarize_new_values(wdr_brin()) AS summarized;
INSERT INTO wdr_mark VALUES ('start', pg_current_xact_id());

-- single-row INSERTs, seen through the index in their own transaction, before it ends
BEGIN;
INSERT INTO wdr_src VALUES (1, 'plain');
SELECT wdr_count(pg_current_xact_id()) AS in_transaction;
INSERT INTO wdr_src VALUES (2, 'plain');
SELECT wdr_count(pg_current_xact_id()) AS in_transaction;
COMMIT;
PREPARE wdr_ins(int) AS INSERT INTO wdr_src VALUES ($1, 'prepared');
EXECUTE wdr_ins(1); EXECUTE wdr_ins(2); EXECUTE wdr_ins(3); EXECUTE wdr_ins(4);
EXECUTE wdr_ins(5); EXECUTE wdr_ins(6); EXECUTE wdr_ins(7);
SELECT wdr_since('start') AS after_prepared;

-- an AFTER ROW trigger of the statement reads the index after the check
CREATE TABLE wdr_seen (k int, counts text);
CREATE FUNCTION wdr_after() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO wdr_seen VALUES (NEW.k, wdr_count(NEW.cq_xid));
  RETURN NULL;
END $$;
CREATE TRIGGER wdr_after AFTER INSERT ON wdr_src FOR EACH ROW WHEN (NEW.pad = 'watched')
  EXECUTE FUNCTION wdr_after();
BEGIN;
INSERT INTO wdr_src VALUES (10, 'watched');
INSERT INTO wdr_src VALUES (11, 'watched');
COMMIT;
SELECT * FROM wdr_seen ORDER BY k;
DROP TRIGGER wdr_after ON wdr_src;

-- RETURNING (not deferred): its volatile function, run after the row's insert, sees the
-- row through the index
BEGIN;
INSERT INTO wdr_src VALUES (20, 'returning') RETURNING k, wdr_count(cq_xid) AS counts;
COMMIT;

-- a view's WITH CHECK OPTION (not deferred): its check runs after the row's insert
CREATE FUNCTION wdr_check(k int) RETURNS bool LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF k = 30 THEN
    RAISE NOTICE 'check sees %', wdr_count(pg_current_xact_id());
  END IF;
  RETURN true;
END $$;
CREATE VIEW wdr_view AS SELECT k, pad FROM wdr_src WHERE wdr_check(k) WITH CHECK OPTION;
SET client_min_messages = notice;
BEGIN;
INSERT INTO wdr_view VALUES (30, 'view');
COMMIT;
SET client_min_messages = warning;
DROP VIEW wdr_view;
DROP FUNCTION wdr_check(int);

-- a single-row INSERT whose value comes from a function inserting a row of its own
-- (nested statements, each with its own row checked)
CREATE FUNCTION wdr_nested(k int) RETURNS int LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  INSERT INTO wdr_src VALUES (k + 1, 'inner');
  RETURN k;
END $$;
INSERT INTO wdr_mark VALUES ('nested', pg_current_xact_id());
INSERT INTO wdr_src VALUES (wdr_nested(40), 'outer');
INSERT INTO wdr_src VALUES (wdr_nested(wdr_nested(50)), 'outer');
SELECT wdr_since('nested') AS nested;

-- EXPLAIN ANALYZE, a plpgsql loop (SPI), a DO block
INSERT INTO wdr_mark VALUES ('spi', pg_current_xact_id());
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) INSERT INTO wdr_src VALUES (60, 'explain');
DO $$ BEGIN FOR i IN 1..5 LOOP INSERT INTO wdr_src VALUES (70 + i, 'do'); END LOOP; END $$;
SELECT wdr_since('spi') AS spi;

-- savepoints: rolled back rows and their neighbours
INSERT INTO wdr_mark VALUES ('savepoints', pg_current_xact_id());
BEGIN;
INSERT INTO wdr_src VALUES (80, 'kept');
SAVEPOINT a;
INSERT INTO wdr_src VALUES (81, 'rolled back');
ROLLBACK TO a;
INSERT INTO wdr_src VALUES (82, 'kept');
SAVEPOINT b;
INSERT INTO wdr_src VALUES (83, 'kept');
RELEASE b;
SELECT wdr_count(pg_current_xact_id()) AS in_transaction;
COMMIT;
SELECT wdr_since('savepoints') AS savepoints;

-- a statement that fails before its row is inserted (its check never runs), then others
ALTER TABLE wdr_src ADD CONSTRAINT wdr_k_positive CHECK (k > 0);
INSERT INTO wdr_mark VALUES ('errors', pg_current_xact_id());
\set VERBOSITY terse
INSERT INTO wdr_src VALUES (-1, 'refused');
BEGIN;
INSERT INTO wdr_src VALUES (90, 'kept');
SAVEPOINT a;
INSERT INTO wdr_src VALUES (-2, 'refused');
ROLLBACK TO a;
INSERT INTO wdr_src VALUES (91, 'kept');
COMMIT;
\set VERBOSITY default
EXECUTE wdr_ins(92);
SELECT wdr_since('errors') AS errors;

-- the whole table: every row through the index
SELECT wdr_count('0'::xid8) AS all_rows;
SELECT count(*) AS rows, count(DISTINCT pad) AS tags FROM wdr_src;

DEALLOCATE wdr_ins;
DROP TABLE wdr_q;
DROP TABLE wdr_src, wdr_mark, wdr_seen;
DROP FUNCTION wdr_brin, wdr_count, wdr_since, wdr_after, wdr_nested;
