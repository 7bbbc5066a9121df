-- A backend's cached analysis and SQL of a query (plan.c) is tied to the
-- collations it uses (plan_deps.c), as to its functions and types.  The
-- batch statements spell a collation by name (qualified: a batch runs under
-- a pinned search_path), so renaming it, or its schema, must rebuild them:
-- before session 34 the entry was kept, and once its statements were parsed
-- again (here: after an ANALYZE of the source, which invalidates the saved
-- plans) the batch failed with "collation "pc151c.cx" ... does not exist"
-- and the query stopped.  Two shapes: a comparison under an explicit
-- COLLATE in the query, and a column of a non-default collation grouped,
-- counted DISTINCT and compared (min).  A collation a query uses cannot be
-- dropped (its view depends on it); DROP ... CASCADE drops the query, so no
-- batch ever runs with a collation that is gone.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SELECT pause_others() AS others_paused;
SET cq.run_in_worker = off;		-- the batches run in this backend, with its cache

CREATE SCHEMA pc151c;
CREATE COLLATION pc151c.cx (provider = libc, locale = 'C');
CREATE COLLATION pc151c.cy (provider = libc, locale = 'C');
CREATE TABLE pc151_src (c text, v int);
CREATE TABLE pc151_src2 (k int, c text COLLATE pc151c.cy);
INSERT INTO pc151_src VALUES ('a', 1), ('B', 2), ('m', 3), ('Z', 4);
INSERT INTO pc151_src2 SELECT g % 3, chr(65 + g % 7 + (g % 2) * 32) FROM generate_series(1, 30) g;
-- the plain queries, as views: they follow the renames below
CREATE VIEW pc151_oracle_a AS
  SELECT c, count(*) AS n, sum(v) AS sv FROM pc151_src WHERE c COLLATE pc151c.cx > 'M' GROUP BY c;
CREATE VIEW pc151_oracle_b AS
  SELECT k, count(DISTINCT c) AS dc, min(c) AS mn, max(c) AS mx FROM pc151_src2 GROUP BY k;
SELECT cq.create_query('pc151_a', 'SELECT c, count(*) AS n, sum(v) AS sv FROM pc151_src
                                    WHERE c COLLATE pc151c.cx > ''M'' GROUP BY c',
                       output_mode => 'update', "trigger" => 'available_now');
SELECT cq.create_query('pc151_b', 'SELECT k, count(DISTINCT c) AS dc, min(c) AS mn, max(c) AS mx
                                     FROM pc151_src2 GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'unlogged');

CALL cq.run('pc151_a');
CALL cq.run('pc151_b');
-- after each step: both active, each equal to its plain query
CREATE VIEW pc151_check AS
  SELECT q.name, q.state, q.last_error,
         CASE q.name WHEN 'pc151_a' THEN mismatches('pc151_a', 'SELECT c, n, sv FROM pc151_oracle_a')
                     ELSE mismatches('pc151_b', 'SELECT k, dc, mn, mx FROM pc151_oracle_b') END AS mismatches
    FROM cq.queries q WHERE q.name LIKE 'pc151%' ORDER BY q.name;
TABLE pc151_check;

-- new rows; ANALYZE invalidates the saved plans of the batch statements
-- (parsed again at their next use)
CREATE PROCEDURE pc151_rows() LANGUAGE sql AS $$
  INSERT INTO pc151_src SELECT chr(65 + g % 26 + (g % 2) * 32), g FROM generate_series(1, 9) g;
  INSERT INTO pc151_src2 SELECT g % 4, chr(65 + g % 9 + (g % 3) * 16) FROM generate_series(1, 9) g;
  ANALYZE pc151_src;
  ANALYZE pc151_src2;
$$;

-- 1. both collations renamed
ALTER COLLATION pc151c.cx RENAME TO cx2;
ALTER COLLATION pc151c.cy RENAME TO cy2;
CALL pc151_rows();
CALL cq.run('pc151_a');
CALL cq.run('pc151_b');
TABLE pc151_check;

-- 2. their schema renamed (the batch statements qualify them)
ALTER SCHEMA pc151c RENAME TO pc151c2;
CALL pc151_rows();
CALL cq.run('pc151_a');
CALL cq.run('pc151_b');
TABLE pc151_check;

-- 3. moved to another schema
CREATE SCHEMA pc151c3;
ALTER COLLATION pc151c2.cx2 SET SCHEMA pc151c3;
ALTER COLLATION pc151c2.cy2 SET SCHEMA pc151c3;
CALL pc151_rows();
CALL cq.run('pc151_a');
CALL cq.run('pc151_b');
TABLE pc151_check;

-- 4. no change: kept, still right
CALL pc151_rows();
CALL cq.run('pc151_a');
CALL cq.run('pc151_b');
TABLE pc151_check;

-- 5. a collation a query uses is not dropped under it; with CASCADE the
-- query goes with it (its catalog row too), never runs with a stale OID
\set VERBOSITY terse
DROP COLLATION pc151c3.cx2;
\set VERBOSITY default
DROP VIEW pc151_check;
DROP COLLATION pc151c3.cx2 CASCADE;
CALL cq.run('pc151_a');
SELECT name FROM cq.queries WHERE name LIKE 'pc151%' ORDER BY name;

SELECT cq.drop_query('pc151_b', drop_target => true);
DROP TABLE pc151_a;
DROP VIEW pc151_oracle_b;
DROP PROCEDURE pc151_rows();
DROP TABLE pc151_src, pc151_src2;
DROP SCHEMA pc151c2, pc151c3 CASCADE;
