-- Issue 12 goal 1: rows inserted into a BRIN index on xid8 (the index on cq_xid of a
-- tracked source) read the revmap entry of their range and nothing else unless the range
-- is summarized (src/brin_insert.c, cq_brininsert).  Whatever the path (INSERT, INSERT ...
-- SELECT, COPY, prepared statements, errors in the middle of a statement, subtransactions,
-- partitions, autosummarize), an index scan finds every row, and no buffer pin leaks (a
-- leak would show as a WARNING).  The last, partial range of a fresh tracking index is
-- left unsummarized (the index build summarized it), as batches keep it.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE TABLE bri_src (k int CHECK (k <> -1), pad text);
CREATE TABLE bri_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n FROM bri_src;
-- the tracking index of a table
CREATE FUNCTION bri_index(t regclass) RETURNS regclass LANGUAGE sql
  AS $$ SELECT indexrelid::regclass FROM pg_index WHERE indrelid = t $$;

-- range 0 of the index built on the empty table is not summarized: summarizing the new
-- values now summarizes it
INSERT INTO bri_src VALUES (1, 'a');
SELECT brin_summarize_new_values(bri_index('bri_src')) AS summarized_ranges;
SELECT brin_desummarize_range(bri_index('bri_src'), 0);

-- rows through the index: every row, and the plan does use the index
CREATE FUNCTION bri_count(t regclass) RETURNS TABLE (by_index bigint, by_scan bigint)
LANGUAGE plpgsql AS $$
BEGIN
  SET LOCAL enable_seqscan = off;
  EXECUTE format('SELECT count(*) FROM %s WHERE cq_xid >= ''1''::xid8', t) INTO by_index;
  SET LOCAL enable_seqscan = on;
  SET LOCAL enable_bitmapscan = off;
  EXECUTE format('SELECT count(*) FROM %s', t) INTO by_scan;
  RETURN NEXT;
END $$;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM bri_src WHERE cq_xid >= '1'::xid8;
RESET enable_seqscan;

-- many ranges (32 pages each), some summarized while rows keep coming
INSERT INTO bri_src SELECT g, repeat('p', 200) FROM generate_series(1, 5000) g;
SELECT brin_summarize_new_values(bri_index('bri_src')) > 0 AS summarized;
INSERT INTO bri_src SELECT g, repeat('p', 200) FROM generate_series(1, 5000) g;
COPY bri_src (k, pad) FROM STDIN;
7	copied
8	copied
\.
SELECT * FROM bri_count('bri_src');

-- an error in the middle of an INSERT and of a COPY: the statement's pins go with it
\set VERBOSITY terse
INSERT INTO bri_src SELECT CASE WHEN g = 3000 THEN -1 ELSE g END, 'x' FROM generate_series(1, 4000) g;
COPY bri_src (k, pad) FROM STDIN;
9	copied
-1	copied
\.
\set VERBOSITY default
-- caught in a subtransaction, then more rows in the same transaction
DO $$
BEGIN
  BEGIN
    INSERT INTO bri_src SELECT CASE WHEN g = 300 THEN -1 ELSE g END, 'x' FROM generate_series(1, 400) g;
  EXCEPTION WHEN check_violation THEN
    RAISE WARNING 'caught';
  END;
  INSERT INTO bri_src SELECT g, 'y' FROM generate_series(1, 400) g;
END $$;
-- prepared, run more times than a plan is cached after
PREPARE bri_ins(int) AS INSERT INTO bri_src VALUES ($1, 'prepared');
EXECUTE bri_ins(1); EXECUTE bri_ins(2); EXECUTE bri_ins(3); EXECUTE bri_ins(4);
EXECUTE bri_ins(5); EXECUTE bri_ins(6); EXECUTE bri_ins(7);
DEALLOCATE bri_ins;
-- explicit values (the stamp trigger restamps them), and EXPLAIN ANALYZE
INSERT INTO bri_src (k, pad, cq_xid) VALUES (10, 'explicit', '3');
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) INSERT INTO bri_src SELECT g, 'e' FROM generate_series(1, 3) g;
SELECT * FROM bri_count('bri_src');

-- autosummarize: the first row of a range asks autovacuum to summarize the previous one
SELECT format('ALTER INDEX %s SET (autosummarize = on)', bri_index('bri_src')) \gexec
INSERT INTO bri_src SELECT g, repeat('p', 200) FROM generate_series(1, 5000) g;
SELECT * FROM bri_count('bri_src');

-- the batch reads every row
CALL cq.run('bri_q');
SELECT n, n = (SELECT count(*) FROM bri_src) AS all_rows FROM bri_q;

-- a partitioned source (each partition's index)
CREATE TABLE bri_p (k int, pad text) PARTITION BY RANGE (k);
CREATE TABLE bri_p1 PARTITION OF bri_p FOR VALUES FROM (0) TO (1000);
CREATE TABLE bri_p2 PARTITION OF bri_p FOR VALUES FROM (1000) TO (10000);
CREATE TABLE bri_pq WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n FROM bri_p;
INSERT INTO bri_p SELECT g, repeat('p', 200) FROM generate_series(0, 9999) g;
SELECT brin_summarize_new_values(bri_index('bri_p2')) > 0 AS summarized;
INSERT INTO bri_p1 SELECT g, 'direct' FROM generate_series(0, 999) g;
COPY bri_p2 (k, pad) FROM STDIN;
5000	copied
\.
SELECT * FROM bri_count('bri_p1');
SELECT * FROM bri_count('bri_p2');
CALL cq.run('bri_pq');
SELECT n, n = (SELECT count(*) FROM bri_p) AS all_rows FROM bri_pq;

-- an untracked table with a BRIN index on xid8 of its own, explicit values
CREATE TABLE bri_x (x xid8);
CREATE INDEX bri_x_idx ON bri_x USING brin (x cq.xid8_minmax_ops) WITH (pages_per_range = 1);
INSERT INTO bri_x SELECT g::text::xid8 FROM generate_series(1, 1000) g;
SELECT brin_summarize_new_values('bri_x_idx') > 0 AS summarized;
INSERT INTO bri_x SELECT (100000 + g)::text::xid8 FROM generate_series(1, 1000) g;
SET enable_seqscan = off;
SELECT count(*) FROM bri_x WHERE x > '1000'::xid8;
RESET enable_seqscan;

SELECT cq.drop_query('bri_q', drop_target => true);
SELECT cq.drop_query('bri_pq', drop_target => true);
DROP TABLE bri_src, bri_p, bri_x;
DROP FUNCTION bri_index(regclass), bri_count(regclass);
