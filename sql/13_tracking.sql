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
CREATE TABLE tr_part_2 (k int, v int, cq_xid xid8);
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
CREATE TABLE tr_inh_c (k int, v int, cq_xid xid8);
ALTER TABLE tr_inh_c INHERIT tr_inh;
INSERT INTO tr_inh_a (k, v, cq_xid) VALUES (1, 1, '3');
INSERT INTO tr_inh_b (k, v, cq_xid) VALUES (2, 1, '3');
INSERT INTO tr_inh_c (k, v) VALUES (3, 1);
CALL cq.run('tr_inh_n');
SELECT * FROM tr_inh_n ORDER BY k;

DROP TABLE tr_pre_n, tr_pre_k, tr_pre, tr_n, tr_other_n, tr_src, tr_other, tr_part_n, tr_part,
  tr_inh_n, tr_inh CASCADE;
