-- The settings that change how values are written as text or read from it
-- are pinned per query, as TimeZone is (session 41, src/settings_pin.c).
-- cq.create_query records its creator's DateStyle, IntervalStyle,
-- extra_float_digits and bytea_output (cq.queries.settings); every batch
-- runs with them, whoever runs it: CALL cq.run in the caller's process, in
-- a pool worker (which takes the caller's settings), a background worker
-- (the database's).  Before, an update query grouping by ts::date::text
-- wrote one date as two target rows, '02/01/2026' and '2026-01-02'.
-- As an unprivileged role.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SELECT pause_others();
CREATE ROLE pin204_user;
CREATE SCHEMA pin204 AUTHORIZATION pin204_user;
SET ROLE pin204_user;
CREATE TABLE pin204.src (ts timestamptz, d interval, f float8, b bytea);

-- the creator's settings: none the database's
SET DateStyle = 'SQL, DMY';
SET IntervalStyle = 'sql_standard';
SET extra_float_digits = 0;
SET bytea_output = 'escape';
INSERT INTO pin204.src VALUES ('2026-01-02 10:00+00', '1 day 2 hours', 0.1::float8 + 0.2::float8, '\x41');
SELECT cq.create_query('days',
  'SELECT ts::date::text AS day, d::text AS dur, f::text AS ftxt, b::text AS btxt, count(*) AS n
     FROM pin204.src GROUP BY 1, 2, 3, 4',
  output_mode => 'update', "trigger" => 'available_now', target => 'pin204.days') IS NOT NULL AS created;
SELECT settings FROM cq.queries WHERE schema = 'pin204' AND name = 'days';
-- cq.explain's header says so
SELECT l FROM regexp_split_to_table(cq.explain('pin204.days'), E'\n') l WHERE l LIKE '-- DateStyle%';

-- batch 0 in the caller's process, under other settings
RESET DateStyle; RESET IntervalStyle; RESET extra_float_digits; RESET bytea_output;
SET DateStyle = 'ISO, MDY';
SET cq.run_in_worker = off;
CALL cq.run('pin204.days');
-- the caller's settings are back
SELECT current_setting('DateStyle') AS datestyle, current_setting('IntervalStyle') AS intervalstyle,
       current_setting('extra_float_digits') AS extra_float_digits, current_setting('bytea_output') AS bytea_output;
SELECT * FROM pin204.days;

-- batch 1 in a pool worker, which takes the caller's settings for the call
-- (a first call without new data asks for one if none is idle)
RESET cq.run_in_worker;
CALL cq.run('pin204.days');
RESET ROLE;  -- (workers are not in pg_stat_activity for a plain role)
SELECT wait_until('pool_idle_worker()') AS idle_worker;
SET ROLE pin204_user;
INSERT INTO pin204.src VALUES ('2026-01-02 11:00+00', '1 day 2 hours', 0.1::float8 + 0.2::float8, '\x41');
CALL cq.run('pin204.days');
SELECT current_setting('DateStyle') AS datestyle;
RESET ROLE;
SELECT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'pg_cq worker'
                  AND query = format('pg_cq: CALL cq.run(%L) for PID %s', 'pin204.days', pg_backend_pid()))
       AS served_by_worker;
SET ROLE pin204_user;
SELECT * FROM pin204.days;

-- then in a background worker, with the database's settings
INSERT INTO pin204.src VALUES ('2026-01-02 12:00+00', '1 day 2 hours', 0.1::float8 + 0.2::float8, '\x41');
SELECT cq.alter_query('pin204.days', "trigger" => '0') IS NOT NULL AS altered;
SELECT wait_until($$(SELECT sum(n) FROM pin204.days) = 3$$) AS background_ran;
SELECT cq.pause('pin204.days') IS NOT NULL AS paused;
SELECT * FROM pin204.days;
SELECT count(*) > 2 AS three_batches FROM cq.offsets WHERE schema = 'pin204' AND name = 'days';

-- the target equals the plain query under the creator's settings
SET DateStyle = 'SQL, DMY'; SET IntervalStyle = 'sql_standard';
SET extra_float_digits = 0; SET bytea_output = 'escape';
SELECT mismatches('pin204.days', 'SELECT ts::date::text AS day, d::text AS dur, f::text AS ftxt,
  b::text AS btxt, count(*) AS n FROM pin204.src GROUP BY 1, 2, 3, 4') AS mismatches;
RESET DateStyle; RESET IntervalStyle; RESET extra_float_digits; RESET bytea_output;

-- a query without recorded settings (created before pg_cq 0.2) runs with
-- the runner's, as before: the split group of the text above
RESET ROLE;
UPDATE cq.queries SET settings = NULL WHERE schema = 'pin204' AND name = 'days';
SET ROLE pin204_user;
SELECT l FROM regexp_split_to_table(cq.explain('pin204.days'), E'\n') l WHERE l LIKE '-- DateStyle%';
INSERT INTO pin204.src VALUES ('2026-01-02 13:00+00', '1 day 2 hours', 0.1::float8 + 0.2::float8, '\x41');
SET cq.run_in_worker = off;
SET DateStyle = 'ISO, MDY';
CALL cq.run('pin204.days');
SELECT * FROM pin204.days ORDER BY day;

RESET ROLE;
SELECT cq.drop_query('pin204.days');
DROP SCHEMA pin204 CASCADE;
DROP ROLE pin204_user;
