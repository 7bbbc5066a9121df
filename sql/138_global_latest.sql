-- A global aggregation (aggregates without GROUP BY) has one result row
-- (SPEC §2), as the query has over no rows.  Created with starting =
-- 'latest' (session 32), its target was empty until the first row came:
-- batch 0 found nothing new and did not run, unlike the same query over
-- an empty table with starting = 'earliest', whose batch 0 over history
-- writes count 0.  Now batch 0 of a global aggregation runs with no row
-- and writes that row, in the store and on the table path, update and
-- complete, at creation, called or in the background; after cq.reset too.
-- A query with GROUP BY still has no row until a group has one.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = notice;
\i sql/include/helpers.sql
SET client_min_messages = warning;
CREATE SCHEMA cq138;
-- rows before the queries: 'latest' never reads them
CREATE TABLE cq138.src (v int);
INSERT INTO cq138.src VALUES (1), (2);
-- the plain query over the rows a 'latest' query reads (v >= 10)
CREATE VIEW cq138.oracle AS SELECT count(*) AS n, sum(v) AS t FROM cq138.src WHERE v >= 10;

-- CREATE TABLE AS runs batch 0 at once: the row is there
CREATE TABLE cq138.upd WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.starting = 'latest')
  AS SELECT count(*) AS n, sum(v) AS t FROM cq138.src;
SELECT * FROM cq138.upd;
-- WITH NO DATA: batch 0 at the first call
CREATE TABLE cq138.cmp WITH (cq.trigger = 'available_now', cq.output_mode = 'complete', cq.starting = 'latest',
                             cq.state_storage = 'unlogged')
  AS SELECT count(*) AS n, sum(v) AS t FROM cq138.src WITH NO DATA;
CREATE TABLE cq138.upd_tab WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.starting = 'latest',
                                 cq.state_storage = 'unlogged')
  AS SELECT count(*) AS n, sum(v) AS t FROM cq138.src WITH NO DATA;
-- HAVING over no rows: no row, as the plain query
CREATE TABLE cq138.hav WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.starting = 'latest')
  AS SELECT count(*) AS n FROM cq138.src HAVING count(*) > 0 WITH NO DATA;
-- GROUP BY: no group yet, no row
CREATE TABLE cq138.grp WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.starting = 'latest')
  AS SELECT v, count(*) AS n FROM cq138.src GROUP BY v WITH NO DATA;
SELECT (SELECT count(*) FROM cq138.cmp) AS cmp, (SELECT count(*) FROM cq138.upd_tab) AS upd_tab;

-- the first call: batch 0 runs with no row and writes the one row
SET client_min_messages = notice;
CALL cq.run('cq138.cmp');
CALL cq.run('cq138.upd_tab');
CALL cq.run('cq138.hav');
CALL cq.run('cq138.grp');
-- a second call finds nothing new: no batch
CALL cq.run('cq138.upd');
SET client_min_messages = warning;
SELECT 'upd' AS q, * FROM cq138.upd UNION ALL SELECT 'cmp', * FROM cq138.cmp
UNION ALL SELECT 'upd_tab', * FROM cq138.upd_tab UNION ALL SELECT 'oracle', * FROM cq138.oracle ORDER BY 1;
SELECT (SELECT count(*) FROM cq138.hav) AS hav, (SELECT count(*) FROM cq138.grp) AS grp;
SELECT name, batch_id, num_input_rows FROM cq.progress WHERE schema = 'cq138' ORDER BY 1, 2;

-- new rows fold into it
INSERT INTO cq138.src VALUES (10), (20);
CALL cq.run('cq138.upd');
CALL cq.run('cq138.cmp');
CALL cq.run('cq138.upd_tab');
CALL cq.run('cq138.hav');
CALL cq.run('cq138.grp');
SELECT 'upd' AS q, * FROM cq138.upd UNION ALL SELECT 'cmp', * FROM cq138.cmp
UNION ALL SELECT 'upd_tab', * FROM cq138.upd_tab UNION ALL SELECT 'oracle', * FROM cq138.oracle ORDER BY 1;
SELECT (SELECT n FROM cq138.hav) AS hav, (SELECT count(*) FROM cq138.grp) AS grp;

-- cq.reset starts over from 'latest': one row of no rows again
SELECT cq.reset('cq138.upd');
CALL cq.run('cq138.upd');
SELECT * FROM cq138.upd;

-- in the background (trigger '0', WITH NO DATA): a worker runs batch 0 with no row
-- (its check that nothing is new passes: the CREATE committed after the start)
CREATE TABLE cq138.bg WITH (cq.output_mode = 'update', cq.starting = 'latest')
  AS SELECT count(*) AS n, max(v) AS m FROM cq138.src WITH NO DATA;
SELECT wait_until('(SELECT count(*) = 1 FROM cq138.bg)') AS bg_row;
SELECT * FROM cq138.bg;
INSERT INTO cq138.src VALUES (30);
SELECT wait_until('(SELECT n = 1 FROM cq138.bg)') AS bg_folded;
SELECT * FROM cq138.bg;

DROP SCHEMA cq138 CASCADE;
