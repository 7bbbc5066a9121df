-- DDL on sources and targets while queries depend on them.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE TABLE src (k text, v int);
INSERT INTO src VALUES ('a', 1), ('b', 2);
CREATE TABLE agg WITH (cq.trigger = 'available_now', cq.output_mode = 'update') AS SELECT k, sum(v) AS total FROM src GROUP BY k;
CREATE TABLE copy WITH (cq.trigger = 'available_now', cq.output_mode = 'append') AS SELECT k, v FROM src WHERE v > 0;

-- renaming the source, its columns and the target keeps the queries working
ALTER TABLE src RENAME TO source_renamed;
ALTER TABLE source_renamed RENAME COLUMN v TO amount;
ALTER TABLE agg RENAME TO agg_renamed;
INSERT INTO source_renamed (k, amount) VALUES ('a', 10), ('c', 5);
CALL cq.run('agg');
CALL cq.run('copy');
SELECT * FROM agg_renamed ORDER BY k;
SELECT * FROM copy ORDER BY k, v;
SELECT name, source, target FROM cq.queries ORDER BY name;

-- changes that would break a query are refused, as for a view
ALTER TABLE source_renamed ALTER COLUMN amount TYPE bigint;
ALTER TABLE source_renamed DROP COLUMN amount;
ALTER TABLE source_renamed DROP COLUMN cq_xid;
DROP TABLE source_renamed;
-- an unrelated column can come and go
ALTER TABLE source_renamed ADD COLUMN note text;
ALTER TABLE source_renamed DROP COLUMN note;
INSERT INTO source_renamed (k, amount) VALUES ('c', 1);
CALL cq.run('agg');
SELECT * FROM agg_renamed ORDER BY k;

-- options through ALTER TABLE on the target
ALTER TABLE agg_renamed SET (cq.trigger = '1 minute', cq.max_rows_per_trigger = 100);
SELECT name, "trigger", max_rows_per_trigger FROM cq.queries WHERE name = 'agg';
ALTER TABLE agg_renamed SET (cq.max_rows_per_trigger = 0);
SELECT cq.alter_query('agg', "trigger" => 'available_now');
SELECT name, "trigger", max_rows_per_trigger FROM cq.queries WHERE name = 'agg';
ALTER TABLE agg_renamed SET (cq.output_mode = 'complete');

-- DROP ... CASCADE of the source drops the queries (their targets stay)
DROP TABLE source_renamed CASCADE;
SELECT count(*) FROM cq.queries WHERE name IN ('agg', 'copy');
SELECT count(*) FROM agg_renamed;
SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'cq_state';

-- changing a running query (Spark's rules): filters and projections may change
CREATE TABLE s2 (k text, v int, w int);
INSERT INTO s2 VALUES ('a', 1, 1), ('b', 2, 2);
CREATE TABLE s2_agg WITH (cq.trigger = 'available_now', cq.output_mode = 'update') AS SELECT k, sum(v) AS total FROM s2 GROUP BY k;
SELECT cq.alter_query('s2_agg', query => 'SELECT k, sum(v) AS total FROM s2 WHERE w > 0 GROUP BY k');
INSERT INTO s2 (k, v, w) VALUES ('a', 100, -1), ('a', 10, 1);
CALL cq.run('s2_agg');
SELECT * FROM s2_agg ORDER BY k;
SELECT query FROM cq.queries WHERE name = 's2_agg';
-- a projection over the same keys and aggregates
SELECT cq.alter_query('s2_agg', query => 'SELECT k, sum(v) AS total FROM s2 WHERE w > 0 AND v < 1000 GROUP BY k');
-- refused: other grouping keys, other aggregates, another table, other target columns
SELECT cq.alter_query('s2_agg', query => 'SELECT w AS k, sum(v) AS total FROM s2 GROUP BY w');
SELECT cq.alter_query('s2_agg', query => 'SELECT k, sum(w) AS total FROM s2 GROUP BY k');
CREATE TABLE other (k text, v int);
SELECT cq.alter_query('s2_agg', query => 'SELECT k, sum(v) AS total FROM other GROUP BY k');
SELECT cq.alter_query('s2_agg', query => 'SELECT k, sum(v) AS grand_total FROM s2 GROUP BY k');
SELECT cq.alter_query('s2_agg', query => 'DROP TABLE s2');
SELECT count(*) FROM s2;

-- before its first batch a query may change in any way
CREATE TABLE fresh WITH (cq.trigger = 'available_now', cq.output_mode = 'update') AS SELECT k, count(*) AS n FROM s2 GROUP BY k WITH NO DATA;
ALTER TABLE fresh ADD COLUMN total bigint;
SELECT cq.alter_query('fresh', query => 'SELECT k, count(*) AS n, sum(w) AS total FROM s2 WHERE w > 0 GROUP BY k');
CALL cq.run('fresh');
SELECT * FROM fresh ORDER BY k;
