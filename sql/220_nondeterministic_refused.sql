-- Session 43: what a batch would evaluate other than a plain SELECT over the same rows is
-- refused at creation and by cq.alter_query (src/determinism.c), with 0A000, a detail and
-- a hint, through CREATE TABLE ... AS and cq.create_query alike:
--   - TABLESAMPLE on the stream or a static table (a batch reads only the stream's new
--     rows, and every static table again: the sample is not the plain query's);
--   - a volatile function in HAVING or in the select list of an aggregation outside its
--     aggregates' arguments and grouping keys (evaluated for every group a batch changes,
--     again in later batches, HAVING possibly twice in one batch).
-- What a batch evaluates once per source row stays allowed, volatile or not: WHERE, a
-- grouping key, an aggregate's argument, a stateless select list; and STABLE functions
-- over groups (now()).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET cq.run_in_worker = off;
CREATE TABLE nd_src (k int, v int);
CREATE TABLE nd_dim (k int, name text);
INSERT INTO nd_src SELECT g % 5, g FROM generate_series(1, 100) g;
INSERT INTO nd_dim SELECT g, 'n' || g FROM generate_series(0, 4) g;
CREATE FUNCTION nd_vol(int) RETURNS int LANGUAGE sql VOLATILE AS 'SELECT $1';
CREATE FUNCTION nd_imm(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1';

\set VERBOSITY default
-- TABLESAMPLE
CREATE TABLE nd_t1 WITH (cq.trigger = 'available_now') AS
  SELECT k, v FROM nd_src TABLESAMPLE SYSTEM (50);
SELECT cq.create_query('nd_t2', 'SELECT s.k, d.name FROM nd_src s JOIN nd_dim d TABLESAMPLE BERNOULLI (50) REPEATABLE (7) ON s.k = d.k',
                       source => 'nd_src');
-- volatile functions over groups
CREATE TABLE nd_h1 WITH (cq.output_mode = 'update') AS
  SELECT k, count(*) AS n FROM nd_src GROUP BY k HAVING random() < 0.5;
CREATE TABLE nd_h2 WITH (cq.output_mode = 'update') AS
  SELECT k, count(*) AS n FROM nd_src GROUP BY k HAVING sum(v) > nd_vol(10);
CREATE TABLE nd_s1 WITH (cq.output_mode = 'complete') AS
  SELECT k, count(*) * random() AS r FROM nd_src GROUP BY k;
SELECT cq.create_query('nd_s2', 'SELECT k, nd_vol(count(*)::int) AS n FROM nd_src GROUP BY k', output_mode => 'update');
SELECT count(*) AS queries FROM cq.queries WHERE name LIKE 'nd\_%';

-- allowed: evaluated once per source row, or not volatile
CREATE TABLE nd_ok1 WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT nd_vol(k) AS k, count(*) AS n, max(v + nd_vol(0)) AS m FROM nd_src
   WHERE nd_vol(v) > 0 GROUP BY 1 HAVING max(v * nd_vol(1)) > 0 AND count(*) > nd_imm(1);
CREATE TABLE nd_ok2 WITH (cq.trigger = 'available_now') AS
  SELECT k, nd_vol(v) AS v FROM nd_src WHERE random() >= 0;
CREATE TABLE nd_ok3 WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, now() - now() AS zero FROM nd_src GROUP BY k HAVING now() IS NOT NULL;
-- a volatile grouping key inside a select-list expression is the key's value (once a row)
CREATE TABLE nd_ok4 WITH (cq.output_mode = 'complete', cq.trigger = 'available_now') AS
  SELECT nd_vol(k) + 1 AS k1, count(*) AS n FROM nd_src GROUP BY nd_vol(k);
SELECT name FROM cq.queries WHERE name LIKE 'nd\_%' ORDER BY name;
TABLE nd_ok1 ORDER BY k;
TABLE nd_ok4 ORDER BY k1;
SELECT count(*) AS rows FROM nd_ok2;
TABLE nd_ok3 ORDER BY k;

-- cq.alter_query refuses the same
SELECT cq.alter_query('nd_ok1', query => 'SELECT nd_vol(k) AS k, count(*) AS n, max(v + nd_vol(0)) AS m FROM nd_src GROUP BY 1 HAVING count(*) > random()');
SELECT cq.alter_query('nd_ok2', query => 'SELECT k, v FROM nd_src TABLESAMPLE SYSTEM (10)');
SELECT query FROM cq.queries WHERE name = 'nd_ok1';

SELECT cq.drop_query(name, drop_target => true) FROM cq.queries WHERE name LIKE 'nd\_%';
DROP TABLE nd_src, nd_dim;
DROP FUNCTION nd_vol(int), nd_imm(int);
