-- Issue 12 goal 1: a single-row INSERT into a tracked source opens the table's only index,
-- the BRIN index on cq_xid, with an IndexInfo made once per table (src/stamp.c,
-- open_sole_index), and its row reads its range's revmap entry in the index's gate
-- (brin_row_gate).  Rows in a summarized range still widen the summary; an index created,
-- rebuilt or dropped later, or changed options, are seen by the next statement (every row
-- is found through each index).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE TABLE wsr_src (k int, pad text);
CREATE TABLE wsr_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n FROM wsr_src;
CREATE FUNCTION wsr_brin() RETURNS regclass LANGUAGE sql
  AS $$ SELECT i.indexrelid::regclass FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = 'wsr_src'::regclass AND a.amname = 'brin' $$;
-- rows found through the BRIN index with cq_xid at least that of the transaction that ran
-- the step (so only a summary widened by later rows can find them), and by a plain scan
CREATE TABLE wsr_mark (step text PRIMARY KEY, x xid8);
CREATE FUNCTION wsr_count(s text) RETURNS TABLE (by_index bigint, by_scan bigint)
LANGUAGE plpgsql AS $$
DECLARE lo xid8 := (SELECT x FROM wsr_mark WHERE step = s);
BEGIN
  SET LOCAL enable_seqscan = off;
  SET LOCAL enable_indexscan = off;
  SELECT count(*) INTO by_index FROM wsr_src WHERE cq_xid >= lo;
  SET LOCAL enable_seqscan = on;
  SET LOCAL enable_bitmapscan = off;
  SELECT count(*) INTO by_scan FROM wsr_src WHERE cq_xid >= lo;
  RETURN NEXT;
END $$;
-- single-row INSERTs, as separate statements and a prepared one
CREATE PROCEDURE wsr_rows(n int, tag text) LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..n LOOP
    INSERT INTO wsr_src VALUES (i, tag);
    COMMIT;
  END LOOP;
END $$;

CALL wsr_rows(5, 'a');
-- range 0 summarized: later rows land in it and must widen its summary
SELECT brin_summarize_new_values(wsr_brin()) AS summarized;
INSERT INTO wsr_mark VALUES ('summarized', pg_current_xact_id());
CALL wsr_rows(5, 'b');
PREPARE wsr_ins(int) AS INSERT INTO wsr_src VALUES ($1, 'prepared');
EXECUTE wsr_ins(1); EXECUTE wsr_ins(2); EXECUTE wsr_ins(3); EXECUTE wsr_ins(4);
EXECUTE wsr_ins(5); EXECUTE wsr_ins(6); EXECUTE wsr_ins(7);
SELECT * FROM wsr_count('summarized');

-- a second index: the next statements write both
CREATE INDEX wsr_k ON wsr_src (k);
INSERT INTO wsr_mark VALUES ('two indexes', pg_current_xact_id());
CALL wsr_rows(3, 'c');
EXECUTE wsr_ins(8);
SELECT * FROM wsr_count('two indexes');
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) AS by_btree FROM wsr_src WHERE k >= 0;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) AS by_scan FROM wsr_src;
DROP INDEX wsr_k;

-- the BRIN index rebuilt (new storage, same options), then with autosummarize
SELECT format('REINDEX INDEX %s', wsr_brin()) \gexec
SELECT brin_summarize_new_values(wsr_brin()) >= 0 AS summarized;
INSERT INTO wsr_mark VALUES ('reindexed', pg_current_xact_id());
CALL wsr_rows(3, 'd');
EXECUTE wsr_ins(9);
SELECT * FROM wsr_count('reindexed');
SELECT format('ALTER INDEX %s SET (autosummarize = on)', wsr_brin()) \gexec
INSERT INTO wsr_mark VALUES ('autosummarize', pg_current_xact_id());
CALL wsr_rows(3, 'e');
EXECUTE wsr_ins(10);
SELECT * FROM wsr_count('autosummarize');
SELECT count(*) AS rows, count(DISTINCT pad) AS tags FROM wsr_src;

DEALLOCATE wsr_ins;
DROP TABLE wsr_q;
DROP TABLE wsr_src, wsr_mark;
DROP FUNCTION wsr_brin, wsr_count;
DROP PROCEDURE wsr_rows;
