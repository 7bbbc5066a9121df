-- Issue 12 goal 1: the write path of a COPY FROM or multi-row INSERT into a tracked source.
-- (1) A COPY evaluates a Const for cq_xid's default (stamp.c, copy_const_begin: the
-- relation cache's default swapped while the COPY runs).  What must hold: every row
-- carries its top-level transaction's id; the default is pg_current_xact_id() again after
-- the COPY (a COPY or INSERT of a later transaction in the same session stamps that
-- transaction's id and takes the fast path, also after a COPY that failed); user code the
-- COPY runs (another column's default) that writes the same table stamps its rows right,
-- and so does the plan it made then, run again in a later transaction; a relation cache
-- rebuild of the table during the COPY (a GRANT in user code, which runs with the real
-- default back) changes none of this; a read-only transaction gets the error it got, with
-- no id assigned.  The stamp trigger's calls in a transaction (track_functions) show
-- which writes took the fast path: a default left as a Const would take them off it (and
-- the trigger would restamp their rows).
-- (2) A COPY's rows meet the BRIN index on cq_xid in the table's access method, not
-- through the executor's index path (brin_heap.c), when that index is the table's only
-- one: rows that land in a range with a summary must widen it, in batches (multi-insert)
-- and row by row (a volatile default of another column), also when the table's relation
-- cache entry is rebuilt in the middle of the COPY (which takes the wrapped access method
-- away until pg_cq puts it back); an index scan for the COPY's stamp finds every row.
-- (3) So do a multi-row INSERT's rows: INSERT ... SELECT, with RETURNING, with user code in
-- its SELECT that inserts into the same table or revokes on it (a rebuild), and after
-- statements that failed in the middle (in a subtransaction, and a whole transaction).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET track_functions = 'all';
-- calls of the stamp trigger not yet flushed to the statistics (the transaction's and
-- maybe earlier ones'): compared at a transaction's start and end
CREATE FUNCTION cdc_stamp_calls() RETURNS bigint LANGUAGE sql
  AS $$ SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions
        WHERE funcid = 'cq.stamp'::regproc $$;

CREATE TABLE cdc_src (k int, note text);
CREATE TABLE cdc_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n, sum(k) AS s FROM cdc_src;
-- the id each range of k was written by
CREATE TABLE cdc_seen (lo int, hi int, x xid8);
CREATE FUNCTION cdc_wrong() RETURNS bigint LANGUAGE sql
  AS $$ SELECT count(*) FROM cdc_src s LEFT JOIN cdc_seen w ON s.k BETWEEN w.lo AND w.hi
        WHERE w.x IS NULL OR s.cq_xid IS DISTINCT FROM w.x $$;

-- two COPYs in two transactions of one session: two ids, each its own
BEGIN;
SELECT cdc_stamp_calls() AS c0 \gset
COPY cdc_src (k) FROM PROGRAM 'seq 1 2500';
INSERT INTO cdc_seen VALUES (1, 2999, pg_current_xact_id());
SELECT cdc_stamp_calls() - :c0 AS stamp_calls;
COMMIT;
BEGIN;
SELECT cdc_stamp_calls() AS c0 \gset
COPY cdc_src (k) FROM PROGRAM 'seq 3001 5500';
INSERT INTO cdc_seen VALUES (3000, 5999, pg_current_xact_id());
SELECT cdc_stamp_calls() - :c0 AS stamp_calls;
COMMIT;
SELECT cdc_wrong() AS wrong, count(DISTINCT cq_xid) AS ids FROM cdc_src;

-- the catalog keeps the function; INSERTs after a COPY take the fast path
SELECT pg_get_expr(d.adbin, d.adrelid) AS catalog_default
  FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
 WHERE d.adrelid = 'cdc_src'::regclass AND a.attname = 'cq_xid';
BEGIN;
SELECT cdc_stamp_calls() AS c0 \gset
INSERT INTO cdc_src (k) VALUES (6000);
INSERT INTO cdc_src (k) SELECT g FROM generate_series(6001, 6100) g;
INSERT INTO cdc_seen VALUES (6000, 6999, pg_current_xact_id());
SELECT cdc_stamp_calls() - :c0 AS stamp_calls;
COMMIT;
SELECT cdc_wrong() AS wrong;

-- a COPY that fails after its first flush, then a COPY and an INSERT in a later transaction
BEGIN;
COPY cdc_src (k) FROM PROGRAM 'seq 7001 9000; echo oops';
ROLLBACK;
BEGIN;
SELECT cdc_stamp_calls() AS c0 \gset
COPY cdc_src (k) FROM PROGRAM 'seq 7001 7100';
INSERT INTO cdc_src (k) VALUES (7101);
INSERT INTO cdc_seen VALUES (7000, 7999, pg_current_xact_id());
SELECT cdc_stamp_calls() - :c0 AS stamp_calls;
COMMIT;
SELECT cdc_wrong() AS wrong, count(*) AS rows FROM cdc_src;

-- user code the COPY runs: another column's default inserts into the same table (PL/pgSQL
-- plans that INSERT during the COPY, and keeps the plan)
CREATE FUNCTION cdc_side(k int) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO cdc_src (k, note) VALUES (k, 'side');
  RETURN 'copied';
END $$;
ALTER TABLE cdc_src ALTER COLUMN note SET DEFAULT cdc_side(1000000);
BEGIN;
SELECT cdc_stamp_calls() AS c0 \gset
COPY cdc_src (k) FROM PROGRAM 'seq 10001 13000';
INSERT INTO cdc_seen VALUES (10001, 13000, pg_current_xact_id()), (1000000, 1000000, pg_current_xact_id());
-- the trigger fired for the side INSERTs only
SELECT cdc_stamp_calls() - :c0 AS stamp_calls;
COMMIT;
SELECT cdc_wrong() AS wrong, count(*) FILTER (WHERE note = 'side') AS side_rows,
       count(*) FILTER (WHERE note = 'copied') AS copied_rows
  FROM cdc_src;
-- that plan, run in a later transaction: its row goes through the trigger, which stamps it
-- with that transaction's id; a COPY that gives note itself takes the fast path
BEGIN;
SELECT cdc_stamp_calls() AS c0 \gset
SELECT cdc_side(20000);
COPY cdc_src (k, note) FROM PROGRAM 'seq 20001 20100 | sed s/$/,x/' (FORMAT csv);
INSERT INTO cdc_seen VALUES (20000, 20999, pg_current_xact_id());
SELECT cdc_stamp_calls() - :c0 AS stamp_calls;
COMMIT;
SELECT cdc_wrong() AS wrong;

-- a relation cache rebuild of the table while the COPY runs (a GRANT, once, in user code
-- the COPY runs)
CREATE TABLE cdc_in (k int);
INSERT INTO cdc_in SELECT g FROM generate_series(1, 1499) g;
CREATE FUNCTION cdc_grant() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  IF (SELECT count(*) FROM cdc_in) = 1500 THEN
    EXECUTE 'GRANT SELECT ON cdc_src TO PUBLIC';
  END IF;
  INSERT INTO cdc_in VALUES (0);
  RETURN 'granted';
END $$;
ALTER TABLE cdc_src ALTER COLUMN note SET DEFAULT cdc_grant();
BEGIN;
SELECT cdc_stamp_calls() AS c0 \gset
COPY cdc_src (k) FROM PROGRAM 'seq 30001 33000';
INSERT INTO cdc_seen VALUES (30001, 33000, pg_current_xact_id());
SELECT cdc_stamp_calls() - :c0 AS stamp_calls;
COMMIT;
ALTER TABLE cdc_src ALTER COLUMN note DROP DEFAULT;
SELECT cdc_wrong() AS wrong, count(*) FILTER (WHERE note = 'granted') AS granted_rows,
       has_table_privilege('public', 'cdc_src', 'SELECT') AS granted
  FROM cdc_src;
BEGIN;
SELECT cdc_stamp_calls() AS c0 \gset
COPY cdc_src (k) FROM PROGRAM 'seq 40001 40100';
INSERT INTO cdc_src (k) VALUES (40101);
INSERT INTO cdc_seen VALUES (40001, 40101, pg_current_xact_id());
SELECT cdc_stamp_calls() - :c0 AS stamp_calls;
COMMIT;
SELECT cdc_wrong() AS wrong;

-- a read-only transaction: refused, no id assigned
BEGIN READ ONLY;
COPY cdc_src (k) FROM PROGRAM 'seq 50001 50010';
ROLLBACK;
BEGIN READ ONLY;
SAVEPOINT s;
COPY cdc_src (k) FROM PROGRAM 'seq 50001 50010';
ROLLBACK TO s;
SELECT pg_current_xact_id_if_assigned() IS NULL AS no_id;
ROLLBACK;

-- the query reads exactly the committed rows
CALL cq.run('cdc_q');
SELECT q.n = s.n AND q.s = s.s AS query_matches, q.n
  FROM cdc_q q, (SELECT count(*) AS n, sum(k) AS s FROM cdc_src) s;

DROP TABLE cdc_q;
DROP TABLE cdc_src, cdc_seen, cdc_in;
DROP FUNCTION cdc_wrong(), cdc_side(int), cdc_grant(), cdc_stamp_calls();

-- (2) rows into summarized ranges; the table's only index is the BRIN index on cq_xid
CREATE TABLE cdg_src (k int, pad text, note text);
CREATE TABLE cdg_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n, sum(k) AS s FROM cdg_src;
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'cdg_src'::regclass;
CREATE FUNCTION cdg_index() RETURNS regclass LANGUAGE sql
  AS $$ SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'cdg_src'::regclass $$;
-- rows of k in [lo, hi] found by a BRIN bitmap scan for stamp x / all of them
CREATE FUNCTION cdg_found(lo int, hi int, x xid8) RETURNS text LANGUAGE plpgsql AS $$
DECLARE found bigint; total bigint;
BEGIN
  SET LOCAL enable_seqscan = off;
  SET LOCAL enable_indexscan = off;
  SELECT count(*) INTO found FROM cdg_src WHERE cq_xid = x AND k BETWEEN lo AND hi;
  RESET enable_seqscan;
  SELECT count(*) INTO total FROM cdg_src WHERE k BETWEEN lo AND hi;
  RETURN found || ' of ' || total;
END $$;
CREATE TABLE cdg_x (step text, x xid8);
-- a partial first range, summarized (its summary: this transaction's id only)
INSERT INTO cdg_src (k, pad) SELECT g, repeat('p', 200) FROM generate_series(1, 100) g;
SELECT brin_summarize_new_values(cdg_index()) AS summarized;
-- a COPY in batches into it
BEGIN;
COPY cdg_src (k, pad) FROM PROGRAM 'seq 1001 1300 | sed s/$/,pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp/' (FORMAT csv);
INSERT INTO cdg_x VALUES ('multi', pg_current_xact_id());
COMMIT;
SELECT cdg_found(1001, 1300, (SELECT x FROM cdg_x WHERE step = 'multi')) AS multi_found,
       (SELECT count(DISTINCT (ctid::text::point)[0]) FROM cdg_src WHERE k BETWEEN 1001 AND 1300) > 5 AS pages;
-- row by row (a volatile default of another column), into a range summarized again
SELECT brin_summarize_range(cdg_index(), 0) >= 0 AS resummarized;
SELECT brin_desummarize_range(cdg_index(), 0);
SELECT brin_summarize_range(cdg_index(), 0) AS summarized;
ALTER TABLE cdg_src ALTER COLUMN note SET DEFAULT (random() * 0)::text;
BEGIN;
COPY cdg_src (k, pad) FROM PROGRAM 'seq 2001 2300 | sed s/$/,p/' (FORMAT csv);
INSERT INTO cdg_x VALUES ('single', pg_current_xact_id());
COMMIT;
SELECT cdg_found(2001, 2300, (SELECT x FROM cdg_x WHERE step = 'single')) AS single_found;
-- the relation cache entry rebuilt in the middle of the COPY (a GRANT at its 150th row)
CREATE TABLE cdg_n (k int);
CREATE FUNCTION cdg_grant() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO cdg_n VALUES (0);
  IF (SELECT count(*) FROM cdg_n) = 150 THEN
    EXECUTE 'GRANT SELECT ON cdg_src TO PUBLIC';
  END IF;
  RETURN 'g';
END $$;
ALTER TABLE cdg_src ALTER COLUMN note SET DEFAULT cdg_grant();
SELECT brin_desummarize_range(cdg_index(), 0);
SELECT brin_summarize_range(cdg_index(), 0) AS summarized;
BEGIN;
COPY cdg_src (k, pad) FROM PROGRAM 'seq 3001 3300 | sed s/$/,p/' (FORMAT csv);
INSERT INTO cdg_x VALUES ('rebuilt', pg_current_xact_id());
COMMIT;
ALTER TABLE cdg_src ALTER COLUMN note DROP DEFAULT;
SELECT cdg_found(3001, 3300, (SELECT x FROM cdg_x WHERE step = 'rebuilt')) AS rebuilt_found,
       has_table_privilege('public', 'cdg_src', 'SELECT') AS granted;
-- the query reads every committed row once
CALL cq.run('cdg_q');
SELECT q.n = s.n AND q.s = s.s AS query_matches, q.n
  FROM cdg_q q, (SELECT count(*) AS n, sum(k) AS s FROM cdg_src) s;


-- (3) multi-row INSERTs into summarized ranges
CREATE FUNCTION cdg_resummarize() RETURNS void LANGUAGE sql AS $$
  SELECT brin_desummarize_range(cdg_index(), 0);
  SELECT brin_summarize_range(cdg_index(), 0);
  SELECT brin_summarize_new_values(cdg_index());
$$;
SELECT cdg_resummarize();
BEGIN;
INSERT INTO cdg_src (k, pad) SELECT g, 'i' FROM generate_series(4001, 4300) g;
INSERT INTO cdg_x VALUES ('insert', pg_current_xact_id());
COMMIT;
SELECT cdg_found(4001, 4300, (SELECT x FROM cdg_x WHERE step = 'insert')) AS insert_found;
SELECT cdg_resummarize();
BEGIN;
INSERT INTO cdg_src (k, pad) SELECT g, 'r' FROM generate_series(5001, 5300) g RETURNING k % 100 = 0 AS r
\g /dev/null
INSERT INTO cdg_x VALUES ('returning', pg_current_xact_id());
COMMIT;
SELECT cdg_found(5001, 5300, (SELECT x FROM cdg_x WHERE step = 'returning')) AS returning_found;
-- user code in the SELECT: an INSERT into the same table at every 10th row (it takes the
-- executor's index path while the table is gated; its rows meet the outer gate too), a
-- REVOKE at the 150th (a rebuild)
CREATE FUNCTION cdg_nested(k int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  IF k % 10 = 0 THEN
    INSERT INTO cdg_src (k, pad) SELECT k + 100000 + g, 'n' FROM generate_series(0, 1) g;
  END IF;
  IF k = 6150 THEN
    EXECUTE 'REVOKE SELECT ON cdg_src FROM PUBLIC';
  END IF;
  RETURN k;
END $$;
SELECT cdg_resummarize();
BEGIN;
INSERT INTO cdg_src (k, pad) SELECT cdg_nested(g), 'o' FROM generate_series(6001, 6300) g;
INSERT INTO cdg_x VALUES ('nested', pg_current_xact_id());
COMMIT;
SELECT cdg_found(6001, 6300, (SELECT x FROM cdg_x WHERE step = 'nested')) AS outer_found,
       cdg_found(106001, 106301, (SELECT x FROM cdg_x WHERE step = 'nested')) AS nested_found,
       has_table_privilege('public', 'cdg_src', 'SELECT') AS granted;
-- a statement that fails in a subtransaction, one that fails its transaction, then more
SELECT cdg_resummarize();
BEGIN;
SAVEPOINT s;
INSERT INTO cdg_src (k, pad) SELECT g, (1 / (7200 - g))::text FROM generate_series(7001, 7300) g;
ROLLBACK TO s;
INSERT INTO cdg_src (k, pad) SELECT g, 'a' FROM generate_series(7001, 7300) g;
INSERT INTO cdg_x VALUES ('after_error', pg_current_xact_id());
COMMIT;
BEGIN;
INSERT INTO cdg_src (k, pad) SELECT g, (1 / (8200 - g))::text FROM generate_series(8001, 8300) g;
ROLLBACK;
INSERT INTO cdg_src (k, pad) SELECT g, 'b' FROM generate_series(8001, 8300) g;
INSERT INTO cdg_x SELECT 'after_abort', cq_xid FROM cdg_src WHERE k = 8001;
SELECT cdg_found(7001, 7300, (SELECT x FROM cdg_x WHERE step = 'after_error')) AS after_error_found,
       cdg_found(8001, 8300, (SELECT x FROM cdg_x WHERE step = 'after_abort')) AS after_abort_found;
-- the query reads every committed row once
CALL cq.run('cdg_q');
SELECT q.n = s.n AND q.s = s.s AS query_matches, q.n
  FROM cdg_q q, (SELECT count(*) AS n, sum(k) AS s FROM cdg_src) s;

DROP TABLE cdg_q;
DROP TABLE cdg_src, cdg_x, cdg_n;
DROP FUNCTION cdg_index(), cdg_found(int, int, xid8), cdg_grant(), cdg_resummarize(), cdg_nested(int);
