-- Issue 12 goal 1: statements that leave cq_xid to its default (pg_current_xact_id())
-- run without the stamp trigger in their insert path (COPY then inserts in batches);
-- every other write still goes through it.  Whatever the path, every row carries the
-- id of the transaction that inserted it: explicit values in INSERT, INSERT ... SELECT,
-- COPY with and without a column list, a dropped default, another BEFORE trigger, user
-- code that writes to the table while a COPY runs; UPDATE cannot change the stamp.  As
-- the owner and as a role with only INSERT, with a hostile search_path.  And the owner
-- cannot drop or disable the stamp trigger while a query reads the table.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE TABLE sf_src (k int, v int);
CREATE TABLE sf_other (k int, v int, cq_xid xid8);
INSERT INTO sf_other VALUES (100, 0, '3'), (101, 0, '999999999999');
CREATE TABLE sf_n WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM sf_src GROUP BY k;

-- rows k in [lo, hi]: how many, and how many carry this transaction's id
CREATE FUNCTION sf_check(lo int, hi int, OUT n bigint, OUT stamped bigint)
LANGUAGE sql AS $$
  SELECT count(*), count(*) FILTER (WHERE cq_xid OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id())
    FROM public.sf_src WHERE k BETWEEN lo AND hi $$;

-- as the owner (superuser here)
BEGIN;
INSERT INTO sf_src (k, v) VALUES (1, 1), (2, 1);
INSERT INTO sf_src (k, v) SELECT g, 1 FROM generate_series(3, 4) g;
COPY sf_src (k, v) FROM STDIN;
5	1
6	1
\.
SELECT * FROM sf_check(1, 6);
-- explicit values: VALUES, INSERT ... SELECT (copies of another table's stamps), COPY
-- with the column, COPY without a column list
INSERT INTO sf_src (k, v, cq_xid) VALUES (11, 1, '3'), (12, 1, NULL), (13, 1, DEFAULT);
INSERT INTO sf_src SELECT * FROM sf_other;
INSERT INTO sf_src (k, v, cq_xid) SELECT 14, 1, '5' FROM generate_series(1, 2);
COPY sf_src (k, v, cq_xid) FROM STDIN;
15	1	3
\.
COPY sf_src FROM STDIN;
16	1	999999999999
\.
SELECT * FROM sf_check(11, 101);
COMMIT;

-- the default dropped or changed: leaving the column out goes through the trigger
ALTER TABLE sf_src ALTER COLUMN cq_xid SET DEFAULT '3';
BEGIN;
INSERT INTO sf_src (k, v) VALUES (21, 1);
COPY sf_src (k, v) FROM STDIN;
22	1
\.
SELECT * FROM sf_check(21, 22);
COMMIT;
ALTER TABLE sf_src ALTER COLUMN cq_xid DROP DEFAULT;
BEGIN;
COPY sf_src (k, v) FROM STDIN;
23	1
\.
INSERT INTO sf_src (k, v) SELECT 24, 1;
SELECT * FROM sf_check(23, 24);
COMMIT;
ALTER TABLE sf_src ALTER COLUMN cq_xid SET DEFAULT pg_current_xact_id();

-- another BEFORE ROW trigger that sets cq_xid: zz_cq_stamp, firing last, restamps
CREATE FUNCTION sf_forge() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.cq_xid := '3'; RETURN NEW; END $$;
CREATE TRIGGER sf_forge BEFORE INSERT ON sf_src FOR EACH ROW EXECUTE FUNCTION sf_forge();
BEGIN;
INSERT INTO sf_src (k, v) VALUES (31, 1);
COPY sf_src (k, v) FROM STDIN;
32	1
\.
SELECT * FROM sf_check(31, 32);
COMMIT;
DROP TRIGGER sf_forge ON sf_src;

-- user code that COPY runs (here another column's default) and that writes to the table
-- with an explicit cq_xid: its INSERT goes through the trigger
CREATE FUNCTION sf_sneak() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.sf_src (k, v, cq_xid) VALUES (49, 0, '3');
  RETURN 1;
END $$;
ALTER TABLE sf_src ALTER COLUMN v SET DEFAULT sf_sneak();
BEGIN;
COPY sf_src (k) FROM STDIN;
41
42
\.
INSERT INTO sf_src (k) VALUES (43);
SELECT * FROM sf_check(41, 49);
COMMIT;
ALTER TABLE sf_src ALTER COLUMN v DROP DEFAULT;

-- UPDATE cannot change the stamp, whatever path inserted the row
UPDATE sf_src SET cq_xid = '3' WHERE k = 5;
UPDATE sf_src SET cq_xid = NULL WHERE k = 1;
UPDATE sf_src SET v = v + 1 WHERE k = 5;

-- a role with only INSERT on the table, a hostile search_path: its own
-- pg_current_xact_id() and an = operator that always says yes
CREATE ROLE regress_cq27_writer;
CREATE SCHEMA regress_cq27_evil AUTHORIZATION regress_cq27_writer;
GRANT INSERT ON sf_src TO regress_cq27_writer;
SET ROLE regress_cq27_writer;
CREATE FUNCTION regress_cq27_evil.pg_current_xact_id() RETURNS xid8 LANGUAGE sql AS $$ SELECT '3'::xid8 $$;
CREATE FUNCTION regress_cq27_evil.yes(xid8, xid8) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR regress_cq27_evil.= (LEFTARG = xid8, RIGHTARG = xid8, FUNCTION = regress_cq27_evil.yes);
SET search_path = regress_cq27_evil, pg_catalog, public;
BEGIN;
SELECT pg_catalog.pg_current_xact_id() AS writer_xid \gset
INSERT INTO public.sf_src (k, v) VALUES (51, 1);
INSERT INTO public.sf_src (k, v, cq_xid) VALUES (52, 1, pg_current_xact_id()), (53, 1, '3');
INSERT INTO public.sf_src (k, v, cq_xid) SELECT 54, 1, pg_current_xact_id();
COPY public.sf_src (k, v) FROM STDIN;
55	1
\.
COPY public.sf_src (k, v, cq_xid) FROM STDIN;
56	1	3
\.
COPY public.sf_src FROM STDIN;
57	1	3
\.
COMMIT;
UPDATE public.sf_src SET cq_xid = '3' WHERE k = 51;
RESET search_path;
RESET ROLE;
SELECT count(*) AS n, count(*) FILTER (WHERE cq_xid = :'writer_xid'::xid8) AS stamped
  FROM sf_src WHERE k BETWEEN 51 AND 57;

-- nothing was forged: no row of the source carries a stamp from outside its writers'
-- transactions, and the query counts every row once
SELECT count(*) AS forged FROM sf_src WHERE cq_xid IS NULL OR cq_xid IN ('3', '5', '999999999999');
SET client_min_messages = notice;
CALL cq.run('sf_n');
SET client_min_messages = warning;
SELECT count(*) AS sf_n_diff
  FROM ((SELECT k, count(*) FROM sf_src GROUP BY k EXCEPT ALL TABLE sf_n)
        UNION ALL (TABLE sf_n EXCEPT ALL SELECT k, count(*) FROM sf_src GROUP BY k)) x;

-- the stamp trigger cannot be dropped or disabled (or made to fire no longer under
-- session_replication_role = replica) while a query reads the table: refused to its
-- owner, on the source and on a partition of a partitioned one
CREATE ROLE regress_cq27_owner;
GRANT CREATE ON SCHEMA public TO regress_cq27_owner;
SET ROLE regress_cq27_owner;
CREATE TABLE sf_own (k int);
CREATE TABLE sf_own_n WITH (cq.trigger = 'available_now') AS SELECT k FROM sf_own;
CREATE TABLE sf_part (k int) PARTITION BY LIST (k);
CREATE TABLE sf_part_1 PARTITION OF sf_part FOR VALUES IN (1);
CREATE TABLE sf_part_n WITH (cq.trigger = 'available_now') AS SELECT k FROM sf_part;
DROP TRIGGER zz_cq_stamp ON sf_own;
ALTER TABLE sf_own DISABLE TRIGGER zz_cq_stamp;
ALTER TABLE sf_own DISABLE TRIGGER USER;
ALTER TABLE sf_own ENABLE TRIGGER zz_cq_stamp;
ALTER TABLE sf_own ENABLE REPLICA TRIGGER zz_cq_stamp;
ALTER TABLE sf_own ENABLE TRIGGER ALL;
ALTER TABLE sf_part_1 DISABLE TRIGGER zz_cq_stamp;
ALTER TABLE sf_part DISABLE TRIGGER zz_cq_stamp;
-- also from user code a COPY runs (the refusal caught, the COPY goes on and stamps)
CREATE FUNCTION sf_try_disable() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    ALTER TABLE public.sf_own DISABLE TRIGGER zz_cq_stamp;
  EXCEPTION WHEN object_not_in_prerequisite_state THEN
    RAISE NOTICE 'refused: %', SQLERRM;
  END;
  RETURN 1;
END $$;
CREATE TABLE sf_own2 (k int, v int DEFAULT sf_try_disable());
CREATE TABLE sf_own2_n WITH (cq.trigger = 'available_now') AS SELECT k FROM sf_own2;
SET client_min_messages = notice;
COPY sf_own2 (k) FROM STDIN;
1
\.
SET client_min_messages = warning;
INSERT INTO sf_own2 (k, cq_xid) VALUES (2, '3');
SELECT count(*) AS forged FROM sf_own2 WHERE cq_xid IS NULL OR cq_xid = '3';
DROP TABLE sf_own2_n, sf_own2;
DROP FUNCTION sf_try_disable();
-- what leaves it firing always is allowed
ALTER TABLE sf_own ENABLE ALWAYS TRIGGER zz_cq_stamp;
ALTER TABLE sf_own DISABLE TRIGGER cq_wakeup, ENABLE TRIGGER cq_wakeup;
SELECT c.relname, t.tgenabled FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE c.relname IN ('sf_own', 'sf_part', 'sf_part_1') AND t.tgname = 'zz_cq_stamp' ORDER BY 1;
-- once no query reads the table, the owner may drop it
DROP TABLE sf_own_n;
DROP TRIGGER zz_cq_stamp ON sf_own;
DROP TABLE sf_own, sf_part_n, sf_part;
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM regress_cq27_owner;
DROP ROLE regress_cq27_owner;

-- a trigger '0' query is woken by the commit of an INSERT or COPY that ran without the
-- statement trigger cq_wakeup (the table is noted when the statement starts): with the
-- fallback poll an hour away, only the wake-up brings the rows in
\i sql/include/helpers.sql
ALTER SYSTEM SET cq.naptime = '1h';
SELECT pg_reload_conf();
CREATE TABLE sf_live (k int);
CREATE TABLE sf_live_n WITH (cq.output_mode = 'update') AS SELECT k, count(*) AS n FROM sf_live GROUP BY k;
SELECT wait_until($$(SELECT count(*) FROM cq.offsets WHERE name = 'sf_live_n') >= 1$$);
INSERT INTO sf_live VALUES (1);
SELECT wait_until($$(SELECT sum(n) FROM sf_live_n) = 1$$);
SELECT wait_until($$(SELECT message FROM cq.status WHERE name = 'sf_live_n') = 'Waiting for data to arrive'$$);
COPY sf_live (k) FROM STDIN;
2
\.
SELECT wait_until($$(SELECT sum(n) FROM sf_live_n) = 2$$);
SELECT wait_until($$(SELECT message FROM cq.status WHERE name = 'sf_live_n') = 'Waiting for data to arrive'$$);
INSERT INTO sf_live VALUES (3);
SELECT wait_until($$(SELECT sum(n) FROM sf_live_n) = 3$$);
ALTER SYSTEM RESET cq.naptime;
SELECT pg_reload_conf();
DROP TABLE sf_live_n, sf_live;

DROP TABLE sf_n, sf_src, sf_other;
DROP FUNCTION sf_check(int, int), sf_forge(), sf_sneak();
DROP SCHEMA regress_cq27_evil CASCADE;
DROP ROLE regress_cq27_writer;
