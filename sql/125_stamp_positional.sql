-- A column added to a tracked source comes after cq_xid (session 31).  An
-- INSERT that names no columns fills columns in table order: a writer who
-- does not know of cq_xid gives it the value meant for the new column (a
-- quoted literal or an untyped parameter is valid xid8 input), the stamp
-- trigger replaces it, and the value was lost without a word.  Such an
-- INSERT is refused now (SQLSTATE 428C9, as a value for a GENERATED ALWAYS
-- column); DEFAULT, NULL, named columns, copies of stored rows and COPY go
-- through, and every row is stamped.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE TABLE cq125_src (k int, v int);
CREATE TABLE cq125_all WITH (cq.trigger = 'available_now')
  AS SELECT k, v FROM cq125_src WITH NO DATA;
ALTER TABLE cq125_src ADD COLUMN note text;
SELECT attname FROM pg_attribute WHERE attrelid = 'cq125_src'::regclass AND attnum > 0 AND NOT attisdropped
 ORDER BY attnum;

-- refused: a value that lands in cq_xid
\set VERBOSITY default
INSERT INTO cq125_src VALUES (1, 10, '42');
\set VERBOSITY terse
INSERT INTO cq125_src VALUES (1, 10, '42', 'note');
INSERT INTO cq125_src VALUES (1, 10, DEFAULT), (2, 20, '43');
INSERT INTO cq125_src SELECT 1, 10, '44';
INSERT INTO cq125_src SELECT * FROM (VALUES (1, 10, '45'::xid8)) v;
PREPARE cq125_p AS INSERT INTO cq125_src VALUES ($1, $2, $3);
WITH w AS (INSERT INTO cq125_src VALUES (1, 10, '46') RETURNING k) SELECT count(*) FROM w;
CREATE FUNCTION cq125_insert() RETURNS void LANGUAGE plpgsql AS $$
BEGIN INSERT INTO cq125_src VALUES (9, 90, '47'); END $$;
SELECT cq125_insert();
\set VERBOSITY default
SELECT count(*) AS rows_after_refusals FROM cq125_src;

-- allowed: named columns, DEFAULT, NULL (the new column gets NULL, as meant),
-- fewer values, copies of stored rows (restamped), COPY
INSERT INTO cq125_src (k, v, note) VALUES (1, 10, 'named');
INSERT INTO cq125_src VALUES (2, 20, DEFAULT, 'default');
INSERT INTO cq125_src VALUES (3, 30, NULL);
INSERT INTO cq125_src VALUES (4, 40, NULL, 'null'), (4, 41, DEFAULT, 'null');
INSERT INTO cq125_src VALUES (5, 50);
INSERT INTO cq125_src SELECT k + 10, v, cq_xid, note FROM cq125_src WHERE k = 1;
INSERT INTO cq125_src SELECT * FROM cq125_src WHERE k = 2;
PREPARE cq125_named(int, int, text) AS INSERT INTO cq125_src (k, v, note) VALUES ($1, $2, $3);
EXECUTE cq125_named(6, 60, 'prepared');
COPY cq125_src (k, v, note) FROM STDIN;
7	70	copy
\.
COPY cq125_src FROM STDIN;
8	80	\N	copy all
\.
SELECT k, v, note, cq_xid IS NOT NULL AND cq_xid::text::bigint > 100 AS stamped
  FROM cq125_src ORDER BY k, note;

-- a source whose cq_xid is last: values for it are replaced, not refused
-- (sql/13_tracking.sql)
CREATE TABLE cq125_last (k int, v int);
CREATE TABLE cq125_last_all WITH (cq.trigger = 'available_now')
  AS SELECT k, v FROM cq125_last WITH NO DATA;
INSERT INTO cq125_last VALUES (1, 10, '42');
SELECT k, cq_xid::text::bigint > 100 AS stamped FROM cq125_last;

-- with the stamp trigger disabled (pg_restore --disable-triggers, a
-- superuser), values are taken as given: a data-only restore of rows
-- dumped with --inserts goes through
ALTER TABLE cq125_src DISABLE TRIGGER zz_cq_stamp;
INSERT INTO cq125_src VALUES (20, 200, NULL, 'restored');
ALTER TABLE cq125_src ENABLE ALWAYS TRIGGER zz_cq_stamp;

-- the query reads every row exactly once
CALL cq.run('cq125_all');
SELECT (SELECT count(*) FROM cq125_all) AS target_rows, count(*) AS source_rows,
       count(*) FILTER (WHERE cq_xid IS NULL) AS history_rows
  FROM cq125_src;

SELECT cq.drop_query(n, drop_target => true) FROM unnest(ARRAY['cq125_all', 'cq125_last_all']) n;
DROP FUNCTION cq125_insert();
DEALLOCATE cq125_named;
DROP TABLE cq125_src, cq125_last;
