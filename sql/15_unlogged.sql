-- Issue 9 item 11: a crash empties unlogged tables while offsets, targets and catalog stay,
-- so sources and targets must be logged: refused at creation (CREATE TABLE ... WITH (cq.*)
-- AS, cq.create_query), and ALTER TABLE ... SET UNLOGGED of a source, a table whose rows
-- reach one (partition, inheritance child) or a target is refused while a query uses it.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE UNLOGGED TABLE ul_src_u (k int);
CREATE TABLE ul_src (k int);
CREATE TABLE ul_bad WITH (cq.trigger = 'available_now') AS SELECT k FROM ul_src_u;
SELECT cq.create_query('ul_bad', 'SELECT k FROM ul_src_u', "trigger" => 'available_now');
CREATE UNLOGGED TABLE ul_bad WITH (cq.trigger = 'available_now') AS SELECT k FROM ul_src;
CREATE UNLOGGED TABLE ul_target_u (k int);
SELECT cq.create_query('ul_bad', 'SELECT k FROM ul_src', target => 'ul_target_u', "trigger" => 'available_now');
SELECT count(*) AS queries FROM cq.queries WHERE name = 'ul_bad';

-- later: SET UNLOGGED of a source or a target
CREATE TABLE ul_ok WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM ul_src GROUP BY k;
ALTER TABLE ul_src SET UNLOGGED;
ALTER TABLE ul_ok SET UNLOGGED;
-- the state keeps the persistence state_storage gave it (the crash rebuild depends on it)
DO $$
BEGIN
  EXECUTE format('ALTER TABLE %s SET LOGGED', (SELECT state_table FROM cq.queries WHERE name = 'ul_ok'));
EXCEPTION WHEN feature_not_supported THEN
  RAISE WARNING 'refused: %', regexp_replace(SQLERRM, 's_[0-9]+', 's_N');
END $$;
SELECT relname, relpersistence FROM pg_class WHERE relname IN ('ul_src', 'ul_ok') ORDER BY 1;

-- a partitioned source: its partitions, now and later, and an inheritance child
CREATE TABLE ul_part (k int) PARTITION BY LIST (k);
CREATE TABLE ul_part_1 PARTITION OF ul_part FOR VALUES IN (1);
CREATE UNLOGGED TABLE ul_part_9 PARTITION OF ul_part FOR VALUES IN (9);
CREATE TABLE ul_part_bad WITH (cq.trigger = 'available_now') AS SELECT k FROM ul_part;
DROP TABLE ul_part_9;
CREATE TABLE ul_part_n WITH (cq.trigger = 'available_now') AS SELECT k FROM ul_part;
ALTER TABLE ul_part_1 SET UNLOGGED;
CREATE UNLOGGED TABLE ul_part_2 PARTITION OF ul_part FOR VALUES IN (2);
CREATE UNLOGGED TABLE ul_part_3 (k int, cq_xid xid8);
ALTER TABLE ul_part ATTACH PARTITION ul_part_3 FOR VALUES IN (3);
CREATE UNLOGGED TABLE ul_child () INHERITS (ul_src);
-- nor may an inheritance child be temporary: workers cannot read another session's
CREATE TEMP TABLE ul_temp_child () INHERITS (ul_src);
SELECT relname, relispartition FROM pg_class WHERE relname IN ('ul_part_2', 'ul_part_3', 'ul_child', 'ul_temp_child');
SELECT count(*) AS unlogged_members FROM pg_partition_tree('ul_part') t JOIN pg_class c ON c.oid = t.relid
 WHERE c.relpersistence = 'u';

-- once no query uses them, they may be unlogged again
DROP TABLE ul_ok, ul_part_n;
ALTER TABLE ul_src SET UNLOGGED;
ALTER TABLE ul_part_1 SET UNLOGGED;
SELECT relname, relpersistence FROM pg_class WHERE relname IN ('ul_src', 'ul_part_1') ORDER BY 1;

DROP TABLE ul_src_u, ul_src, ul_target_u, ul_part, ul_part_3;
