-- Issue 12 goal 1: a COPY FROM into a tracked source, the cq_xid default of its rows
-- (session 34 measured evaluating it without the function call; any such shortcut must
-- keep what this test checks).  Every row of a COPY of
-- several flushes (1,000 rows each at most) carries its top-level transaction's id, in
-- cq_xid and in another column with the same default: in an autocommit COPY (xmin is that
-- id), in subtransactions (xmin is the subtransaction's), after a rolled-back COPY, in a
-- transaction that had its id before; and the query reads exactly the committed rows.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE TABLE cxd_src (k int, x2 xid8 DEFAULT pg_current_xact_id());
CREATE TABLE cxd_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n, sum(k) AS s FROM cxd_src;
-- rows whose ids are not those expected: cq_xid differs from x2, or from the noted id
CREATE TABLE cxd_seen (lo int, hi int, x xid8);
CREATE FUNCTION cxd_wrong() RETURNS bigint LANGUAGE sql
  AS $$ SELECT count(*) FROM cxd_src s LEFT JOIN cxd_seen w ON s.k BETWEEN w.lo AND w.hi
        WHERE s.cq_xid IS DISTINCT FROM s.x2 OR (w.x IS NOT NULL AND s.cq_xid <> w.x) $$;

-- autocommit COPY of 5,000 rows: one id, xmin's
COPY cxd_src (k) FROM PROGRAM 'seq 1 5000';
SELECT count(*) AS rows, count(DISTINCT cq_xid) AS ids,
       count(*) FILTER (WHERE cq_xid::text::bigint % 4294967296 <> xmin::text::bigint) AS not_xmin
  FROM cxd_src;

-- subtransactions: the top-level id, also after a rolled-back COPY
BEGIN;
SAVEPOINT s1;
COPY cxd_src (k) FROM PROGRAM 'seq 10001 13000';
RELEASE s1;
SAVEPOINT s2;
COPY cxd_src (k) FROM PROGRAM 'seq 20001 24000';
ROLLBACK TO s2;
SAVEPOINT s3;
COPY cxd_src (k) FROM PROGRAM 'seq 30001 32500';
SELECT count(*) AS rows_here, count(*) FILTER (WHERE cq_xid = pg_current_xact_id()) AS top_id,
       count(*) FILTER (WHERE xmin::text::bigint = pg_current_xact_id()::text::bigint % 4294967296) AS top_xmin
  FROM cxd_src WHERE k > 10000;
INSERT INTO cxd_seen VALUES (10001, 39999, pg_current_xact_id());
COMMIT;
SELECT cxd_wrong() AS wrong;

-- a transaction that had its id before the COPY, and a COPY that fails after its first flush
BEGIN;
INSERT INTO cxd_src (k) VALUES (40000);
COPY cxd_src (k) FROM PROGRAM 'seq 40001 42000';
INSERT INTO cxd_seen VALUES (40000, 49999, pg_current_xact_id());
COMMIT;
BEGIN;
SAVEPOINT s4;
COPY cxd_src (k) FROM PROGRAM 'seq 50001 53000; echo oops';
ROLLBACK TO s4;
COPY cxd_src (k) FROM PROGRAM 'seq 50001 51500';
INSERT INTO cxd_seen VALUES (50000, 59999, pg_current_xact_id());
COMMIT;
SELECT cxd_wrong() AS wrong, count(*) AS rows, count(DISTINCT cq_xid) AS ids FROM cxd_src;

-- the query reads exactly the committed rows
CALL cq.run('cxd_q');
SELECT q.n = s.n AND q.s = s.s AS query_matches, q.n
  FROM cxd_q q, (SELECT count(*) AS n, sum(k) AS s FROM cxd_src) s;

DROP TABLE cxd_q;
DROP TABLE cxd_src, cxd_seen;
DROP FUNCTION cxd_wrong();
