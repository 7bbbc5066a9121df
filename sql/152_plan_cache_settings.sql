-- The batch statements of a query are printed from its tree (deparsed),
-- cached in the backend (plan.c) and prepared when first run; PostgreSQL's
-- plan cache analyzes a saved statement again when a relation it reads
-- changes (here: ANALYZE), under the settings of that moment.  Constants
-- must read back as they were, whatever the settings meanwhile:
--   - ps152_d: a date printed under the session's DateStyle 'SQL, DMY'
--     ('04/03/2026') was read back as another date under 'ISO, MDY' (after
--     a SET, or in a pool worker serving another caller): rows were lost;
--   - ps152_f: a float8 printed under a negative extra_float_digits lost
--     digits (1.2500001 became 1.25);
--   - ps152_s: a string with a backslash printed under
--     standard_conforming_strings on, first prepared after it was set off,
--     was another string.
-- Since session 34 the SQL is printed under DateStyle ISO, IntervalStyle
-- postgres and extra_float_digits 3 (cq_security_deparse_begin), and
-- standard_conforming_strings is in the cache's key.  Planner settings
-- (enable_*, work_mem) choose plans, not results (plan.c says why they are
-- not in the key): the batch after a change of them stays right.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SELECT pause_others() AS others_paused;
SET cq.run_in_worker = off;		-- the batches run in this backend, with its cache

CREATE TABLE ps152_src (d date, x float8, c text, iv interval);
CREATE PROCEDURE ps152_rows() LANGUAGE sql AS $$
  INSERT INTO ps152_src VALUES ('2026-03-01', 1.5, E'a\\b', '1 day'), ('2026-03-10', 1.5, 'a', '-1 day +02:00'),
                               ('2026-04-02', 1.25, E'a\\b', '2 days'), ('2026-03-21', 1.2500001, E'a\\b', '1 day'),
                               ('2026-03-22', 1.25000011, 'a', '1 day'), ('2026-03-23', 2, E'a\\b', '-1 day +03:00');
  ANALYZE ps152_src;
$$;
CALL ps152_rows();
CREATE VIEW ps152_oracle_d AS
  SELECT d, count(*) AS n FROM ps152_src WHERE d >= '2026-03-04'::date GROUP BY d;
CREATE VIEW ps152_oracle_f AS
  SELECT d, count(*) AS n FROM ps152_src WHERE x > '1.2500001'::float8 GROUP BY d;
CREATE VIEW ps152_oracle_s AS
  SELECT d, count(*) AS n FROM ps152_src WHERE c = E'a\\b' GROUP BY d;
CREATE VIEW ps152_check AS
  SELECT q.name, q.state, q.last_error,
         mismatches(q.name::regclass, format('SELECT d, n FROM %I', replace(q.name, '_', '_oracle_'))) AS mismatches
    FROM cq.queries q WHERE q.name LIKE 'ps152%' ORDER BY q.name;
SELECT cq.create_query('ps152_d', 'SELECT d, count(*) AS n FROM ps152_src WHERE d >= ''2026-03-04''::date GROUP BY d',
                       output_mode => 'update', "trigger" => 'available_now');
SELECT cq.create_query('ps152_f', 'SELECT d, count(*) AS n FROM ps152_src WHERE x > ''1.2500001''::float8 GROUP BY d',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'unlogged');
SELECT cq.create_query('ps152_s', 'SELECT d, count(*) AS n FROM ps152_src WHERE c = E''a\\b'' GROUP BY d',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'unlogged');

-- batch 0 printed under settings whose output reads back otherwise
SET DateStyle = 'SQL, DMY';
SET IntervalStyle = sql_standard;
SET extra_float_digits = -10;
CALL cq.run('ps152_d');
CALL cq.run('ps152_f');
CALL cq.run('ps152_s');
RESET DateStyle;
RESET IntervalStyle;
RESET extra_float_digits;
TABLE ps152_check;

-- 1. other date, interval and float settings: the statements read the same constants
SET DateStyle = 'ISO, MDY';
SET IntervalStyle = postgres_verbose;
CALL ps152_rows();
CALL cq.run('ps152_d');
CALL cq.run('ps152_f');
RESET DateStyle;
RESET IntervalStyle;
SELECT * FROM ps152_check WHERE name <> 'ps152_s';

-- 2. standard_conforming_strings off: rebuilt, the string read as it was
SET standard_conforming_strings = off;
SET escape_string_warning = off;
CALL ps152_rows();
CALL cq.run('ps152_s');
SELECT * FROM ps152_check WHERE name = 'ps152_s';
RESET standard_conforming_strings;
CALL ps152_rows();
CALL cq.run('ps152_s');
SELECT * FROM ps152_check WHERE name = 'ps152_s';

-- 3. planner settings choose plans, not results: the batches stay right
SET enable_hashagg = off;
SET enable_seqscan = off;
SET work_mem = '64kB';
CALL ps152_rows();
CALL cq.run('ps152_d');
CALL cq.run('ps152_f');
CALL cq.run('ps152_s');
RESET enable_hashagg;
RESET enable_seqscan;
RESET work_mem;
TABLE ps152_check;

DROP VIEW ps152_check;
SELECT cq.drop_query('ps152_d', drop_target => true);
SELECT cq.drop_query('ps152_f', drop_target => true);
SELECT cq.drop_query('ps152_s', drop_target => true);
DROP PROCEDURE ps152_rows();
DROP VIEW ps152_oracle_d, ps152_oracle_f, ps152_oracle_s;
DROP TABLE ps152_src;
