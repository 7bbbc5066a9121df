-- Adversarial audit of sources (session 42).  A continuous query counts the
-- rows stored in this database's tables, ordered by its transactions (the
-- cq_xid stamp, snapshots as offsets); a source and every table whose rows
-- reach it must therefore be local, logged, permanent tables.  Unlogged and
-- temporary partitions and inheritance children were refused already; a
-- foreign table was refused as a source, but it could still be a partition or
-- inheritance child of one (CREATE FOREIGN TABLE ... PARTITION OF / INHERITS,
-- ATTACH PARTITION, ALTER FOREIGN TABLE ... INHERIT, or already there when
-- the query was created).  Every batch then scanned it through its wrapper:
-- here one without a handler, which failed every batch; with a real wrapper,
-- rows stored elsewhere whose cq_xid no offset of ours can order.  Now each
-- of those ways is refused with the reason (0A000).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
CREATE SCHEMA au210;
SET search_path = au210, public;
CREATE FOREIGN DATA WRAPPER au210_fdw;
CREATE SERVER au210_srv FOREIGN DATA WRAPPER au210_fdw;
\set VERBOSITY default

-- a partitioned source
CREATE TABLE parted (k int, v int) PARTITION BY LIST (k);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES IN (1);
CREATE TABLE parted_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM parted GROUP BY k;
-- CREATE FOREIGN TABLE ... PARTITION OF
CREATE FOREIGN TABLE parted_2 PARTITION OF parted FOR VALUES IN (2) SERVER au210_srv;
-- ATTACH PARTITION of a foreign table (with the column tracking needs)
CREATE FOREIGN TABLE parted_3 (k int, v int, cq_xid xid8) SERVER au210_srv;
ALTER TABLE parted ATTACH PARTITION parted_3 FOR VALUES IN (3);
-- a foreign partition of a partition
CREATE TABLE parted_4 PARTITION OF parted FOR VALUES IN (4, 5) PARTITION BY LIST (k);
CREATE FOREIGN TABLE parted_5 PARTITION OF parted_4 FOR VALUES IN (5) SERVER au210_srv;
CREATE TABLE parted_4_4 PARTITION OF parted_4 FOR VALUES IN (4);
SELECT relname FROM pg_class WHERE relname ~ '^parted_[235]$';

-- an inheritance parent
CREATE TABLE inh (k int, v int);
CREATE TABLE inh_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM inh GROUP BY k;
CREATE FOREIGN TABLE inh_f1 () INHERITS (inh) SERVER au210_srv;
CREATE FOREIGN TABLE inh_f2 (k int, v int, cq_xid xid8) SERVER au210_srv;
ALTER FOREIGN TABLE inh_f2 INHERIT inh;
CREATE TABLE inh_c () INHERITS (inh);
CREATE FOREIGN TABLE inh_f3 () INHERITS (inh_c) SERVER au210_srv;
SELECT count(*) AS children FROM pg_inherits WHERE inhparent IN ('inh'::regclass, 'inh_c'::regclass);

-- a foreign table already in the tree when the first query is created
CREATE TABLE later (k int) PARTITION BY LIST (k);
CREATE FOREIGN TABLE later_1 PARTITION OF later FOR VALUES IN (1) SERVER au210_srv;
CREATE TABLE later_q WITH (cq.trigger = 'available_now') AS SELECT k FROM later;
SELECT cq.create_query('later_q2', 'SELECT k FROM au210.later', trigger => 'available_now');
-- and never a query over no table
SELECT count(*) AS later_queries FROM cq.queries WHERE name LIKE 'later_q%';

-- the queries still run, exactly
INSERT INTO parted VALUES (1, 1), (4, 4);
INSERT INTO inh VALUES (1, 1);
INSERT INTO inh_c VALUES (2, 2);
CALL cq.run('parted_q');
CALL cq.run('inh_q');
SELECT mismatches('parted_q', 'SELECT k, count(*) AS n FROM au210.parted GROUP BY k') AS parted_mismatches,
       mismatches('inh_q', 'SELECT k, count(*) AS n FROM au210.inh GROUP BY k') AS inh_mismatches;
SELECT name, state FROM cq.queries WHERE schema = 'au210' ORDER BY name;

-- a foreign partition of a table no query reads stays allowed
CREATE TABLE other (k int) PARTITION BY LIST (k);
CREATE FOREIGN TABLE other_1 PARTITION OF other FOR VALUES IN (1) SERVER au210_srv;

\set VERBOSITY terse
RESET search_path;
SELECT cq.drop_query(format('au210.%I', name)) FROM cq.queries WHERE schema = 'au210';
DROP SCHEMA au210 CASCADE;
DROP SERVER au210_srv;
DROP FOREIGN DATA WRAPPER au210_fdw;
