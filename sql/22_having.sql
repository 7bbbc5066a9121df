-- Issue 10 part 2: HAVING.  Update, complete and append (with a watermark)
-- targets equal the plain query at every batch: a group of an update target
-- that stops satisfying HAVING is deleted, one that starts is inserted.
-- HAVING may use aggregates that are not selected, grouping keys, and any
-- expression over them (NULL = not satisfied).  cq.alter_query may add,
-- remove or change HAVING (the target is rewritten from the state), not
-- when that changes the state's aggregates.
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SET client_min_messages = warning;
SET timezone = 'UTC';
SELECT setseed(0.22);

-- 1. Deterministic: a group leaves and re-enters HAVING (update mode)
CREATE TABLE hv_s (k int, x int);
SELECT cq.create_query('hv_max', 'SELECT k, count(*) AS n FROM hv_s GROUP BY k HAVING max(x) < 5',
                       output_mode => 'update', "trigger" => 'available_now');
SELECT cq.create_query('hv_odd', 'SELECT k, sum(x) AS sx FROM hv_s GROUP BY k HAVING count(*) % 2 = 1',
                       output_mode => 'update', "trigger" => 'available_now');
SELECT cq.create_query('hv_odd_c', 'SELECT k, sum(x) AS sx FROM hv_s GROUP BY k HAVING count(*) % 2 = 1 ORDER BY k',
                       output_mode => 'complete', "trigger" => 'available_now');
CREATE PROCEDURE hv_run() LANGUAGE plpgsql AS $$
BEGIN
  CALL cq.run('hv_max');
  CALL cq.run('hv_odd');
  CALL cq.run('hv_odd_c');
END $$;
INSERT INTO hv_s VALUES (1, 1), (2, 7), (NULL, 2);
CALL hv_run();
SELECT * FROM hv_max ORDER BY k;
SELECT * FROM hv_odd ORDER BY k;
-- k = 1 gets x = 9: leaves hv_max; every group seen twice leaves hv_odd
INSERT INTO hv_s VALUES (1, 9), (2, 1), (NULL, 3), (3, 0);
CALL hv_run();
SELECT * FROM hv_max ORDER BY k;
SELECT * FROM hv_odd ORDER BY k;
SELECT * FROM hv_odd_c ORDER BY k;
-- a third row: they re-enter hv_odd with their new sums; group 3 leaves
INSERT INTO hv_s VALUES (1, 4), (2, 2), (NULL, 5), (3, 0);
CALL hv_run();
SELECT * FROM hv_odd ORDER BY k;
SELECT * FROM hv_odd_c ORDER BY k;
-- k = 1 leaves again; groups the batch does not change keep their rows
INSERT INTO hv_s VALUES (1, 0);
CALL hv_run();
SELECT * FROM hv_odd ORDER BY k;
-- the final view shows what the target shows
SELECT mismatches(format('cq_state.f_%s', id)::regclass,
                  'SELECT k, sum(x), count(*) FROM hv_s GROUP BY k HAVING count(*) % 2 = 1') AS final_view_mismatches
  FROM cq.queries WHERE name = 'hv_odd';
SELECT mismatches('hv_max', 'SELECT k, count(*) AS n FROM hv_s GROUP BY k HAVING max(x) < 5') AS max_mismatches,
       mismatches('hv_odd', 'SELECT k, sum(x) AS sx FROM hv_s GROUP BY k HAVING count(*) % 2 = 1') AS odd_mismatches,
       mismatches('hv_odd_c', 'SELECT k, sum(x) AS sx FROM hv_s GROUP BY k HAVING count(*) % 2 = 1') AS odd_c_mismatches;

-- HAVING rejects what the plain query rejects
SELECT cq.create_query('hv_bad', 'SELECT k FROM hv_s GROUP BY k HAVING x > 1', output_mode => 'update');

-- 2. Randomized oracle: many batches, NULL keys and values; HAVING over
-- selected and unselected aggregates, FILTER, keys, NULL results
CREATE TABLE hv_r (k1 int, k2 text, b varbit, x int, v numeric(8,2));
CREATE FUNCTION hv_rows(n int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO hv_r (k1, k2, b, x, v)
  SELECT k1, k2, CASE WHEN k1 IS NULL THEN NULL ELSE (k1 % 4)::bit(3)::varbit END, x, v
    FROM (SELECT CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 6)::int END AS k1,
                 CASE WHEN random() < 0.1 THEN NULL ELSE chr(97 + (random() * 3)::int) END AS k2,
                 CASE WHEN random() < 0.15 THEN NULL ELSE (random() * 100)::int END AS x,
                 CASE WHEN random() < 0.15 THEN NULL ELSE round((random() * 20 - 5)::numeric, 2) END AS v
            FROM generate_series(1, n)) r
$$;
CREATE TABLE hv_queries (name text PRIMARY KEY, sql text);
INSERT INTO hv_queries VALUES
  -- re-enters (count parity), leaves for good (max), NULL results (avg of NULLs), a key
  ('hv_r_upd', 'SELECT k1, k2, count(*) AS n, sum(v) AS sv FROM hv_r GROUP BY k1, k2 '
               'HAVING (count(*) % 3 <> 0 AND max(x) < 95) OR avg(x) > 60 OR k1 IS NULL'),
  -- aggregates that are not selected only, one with FILTER
  ('hv_r_nosel', 'SELECT k1, avg(v) AS av FROM hv_r GROUP BY k1 '
                 'HAVING sum(x) FILTER (WHERE v > 0) % 2 = 0 AND bool_or(x > 90) IS NOT TRUE'),
  -- a key only
  ('hv_r_key', 'SELECT k2, count(*) AS n FROM hv_r GROUP BY k2 HAVING k2 > ''a'''),
  -- keys without a hash opclass: the target is upserted through its unique index
  ('hv_r_varbit', 'SELECT b, count(*) AS n, max(v) AS mv FROM hv_r GROUP BY b HAVING count(*) % 2 = 1 OR b IS NULL'),
  -- no GROUP BY: one row or none
  ('hv_r_global', 'SELECT count(*) AS n, sum(v) AS sv FROM hv_r HAVING count(*) % 2 = 0');
SELECT cq.create_query(name, sql, output_mode => 'update', "trigger" => 'available_now') FROM hv_queries ORDER BY name;
SELECT cq.create_query('hv_r_cmp', sql, output_mode => 'complete', complete_refresh => 'delete',
                       "trigger" => 'available_now')
  FROM hv_queries WHERE name = 'hv_r_upd';
INSERT INTO hv_queries SELECT 'hv_r_cmp', sql FROM hv_queries WHERE name = 'hv_r_upd';
-- the state of the varbit query has no key hash (a unique index instead)
SELECT count(*) AS varbit_hash_columns FROM pg_attribute
 WHERE attrelid = (SELECT state_table FROM cq.queries WHERE name = 'hv_r_varbit') AND attname = 'h';

CREATE TABLE hv_log (batch int, name text, bad bigint, rows bigint);
DO $$
DECLARE
  q record;
  bad bigint;
  n bigint;
BEGIN
  FOR b IN 1 .. 40 LOOP
    PERFORM hv_rows((random() * 30)::int + 1);
    IF b % 7 = 0 THEN
      -- a rolled-back transaction leaves nothing
      BEGIN
        PERFORM hv_rows(5);
        RAISE EXCEPTION 'rollback';
      EXCEPTION WHEN raise_exception THEN NULL;
      END;
    END IF;
    COMMIT;
    FOR q IN SELECT * FROM hv_queries ORDER BY name LOOP
      CALL cq.run(q.name);
      bad := mismatches(q.name::regclass, q.sql);
      EXECUTE format('SELECT count(*) FROM %I', q.name) INTO n;
      INSERT INTO hv_log VALUES (b, q.name, bad, n);
    END LOOP;
    COMMIT;
  END LOOP;
END $$;
-- every target equal to the plain query after every batch
SELECT name, sum(bad) AS mismatches, count(*) AS batches FROM hv_log GROUP BY name ORDER BY name;
-- groups did leave and enter: target sizes went down as well as up
SELECT name, bool_or(rows < prev) AS shrank, bool_or(rows > prev) AS grew
  FROM (SELECT name, rows, lag(rows) OVER (PARTITION BY name ORDER BY batch) AS prev FROM hv_log) l
 WHERE name IN ('hv_r_upd', 'hv_r_nosel', 'hv_r_varbit', 'hv_r_global')
 GROUP BY name ORDER BY name;
-- the final views agree with the query
-- the final view agrees with the query (its columns: keys, then every
-- aggregate, HAVING's included)
SELECT mismatches(format('cq_state.f_%s', id)::regclass,
                  'SELECT k1, k2, count(*), sum(v), max(x), avg(x) FROM hv_r GROUP BY k1, k2
                    HAVING (count(*) % 3 <> 0 AND max(x) < 95) OR avg(x) > 60 OR k1 IS NULL') AS final_view_mismatches
  FROM cq.queries WHERE name = 'hv_r_upd';
-- a changed HAVING rewrites every kind of target from the state (keys
-- hashed or through a unique index, no GROUP BY, complete mode)
UPDATE hv_queries SET sql = replace(sql, 'count(*) % 2 = 1', 'count(*) % 3 = 1') WHERE name = 'hv_r_varbit';
UPDATE hv_queries SET sql = replace(sql, 'count(*) % 2 = 0', 'count(*) % 2 = 1') WHERE name = 'hv_r_global';
UPDATE hv_queries SET sql = replace(sql, 'count(*) % 3 <> 0', 'count(*) % 3 = 0') WHERE name IN ('hv_r_upd', 'hv_r_cmp');
SELECT name, cq.alter_query(name, query => sql) FROM hv_queries WHERE name IN ('hv_r_varbit', 'hv_r_global', 'hv_r_upd', 'hv_r_cmp') ORDER BY name;
SELECT name, mismatches(name::regclass, sql) AS mismatches_after_alter FROM hv_queries ORDER BY name;
SELECT hv_rows(40);
DO $$
DECLARE q record;
BEGIN
  FOR q IN SELECT name FROM hv_queries ORDER BY name LOOP
    CALL cq.run(q.name);
  END LOOP;
END $$;
SELECT name, mismatches(name::regclass, sql) AS mismatches_after_batch FROM hv_queries ORDER BY name;

-- 3. Append with a watermark: a closed window is written once, if it
-- satisfies HAVING then
CREATE TABLE hv_ev (ts timestamptz, word text, x int);
SELECT cq.create_query('hv_app',
  'SELECT date_bin(''10 minutes'', ts, ''2024-01-01'') AS w, word, count(*) AS n FROM hv_ev
    GROUP BY 1, word HAVING count(*) >= 2 AND max(x) IS NOT NULL',
  output_mode => 'append', event_time => 'ts', watermark => '5 minutes', "trigger" => 'available_now');
-- (update mode with a watermark, for comparison: windows evicted keep the
-- row they last had; a late row does not change them)
SELECT cq.create_query('hv_upw',
  'SELECT date_bin(''10 minutes'', ts, ''2024-01-01'') AS w, word, count(*) AS n FROM hv_ev
    GROUP BY 1, word HAVING count(*) % 2 = 1',
  output_mode => 'update', event_time => 'ts', watermark => '5 minutes', "trigger" => 'available_now');
INSERT INTO hv_ev VALUES ('2024-01-01 12:01', 'a', 1), ('2024-01-01 12:02', 'a', 2),
                         ('2024-01-01 12:03', 'b', 1), ('2024-01-01 12:04', 'c', NULL),
                         ('2024-01-01 12:05', 'c', NULL);
CALL cq.run('hv_app');
CALL cq.run('hv_upw');
SELECT count(*) AS rows_before_close FROM hv_app;
SELECT to_char(w, 'HH24:MI') AS w, word, n FROM hv_upw ORDER BY 1, 2;
INSERT INTO hv_ev VALUES ('2024-01-01 12:31', 'a', 1);
CALL cq.run('hv_app');
CALL cq.run('hv_app');
CALL cq.run('hv_upw');
CALL cq.run('hv_upw');
SELECT to_char(w, 'HH24:MI') AS w, word, n FROM hv_app ORDER BY 1, 2;
SELECT to_char(w, 'HH24:MI') AS w, word, n FROM hv_upw ORDER BY 1, 2;
-- late for the watermark (12:26): dropped, no window changes
INSERT INTO hv_ev VALUES ('2024-01-01 12:06', 'b', 1), ('2024-01-01 12:07', 'c', 1);
CALL cq.run('hv_app');
CALL cq.run('hv_upw');
SELECT to_char(w, 'HH24:MI') AS w, word, n FROM hv_upw ORDER BY 1, 2;
SELECT sum(num_rows_dropped_by_watermark) AS late_rows FROM cq.progress WHERE name = 'hv_upw';
SELECT mismatches('hv_app', 'SELECT date_bin(''10 minutes'', ts, ''2024-01-01'') AS w, word, count(*) AS n FROM hv_ev
                              WHERE ts < ''2024-01-01 12:06'' GROUP BY 1, word HAVING count(*) >= 2 AND max(x) IS NOT NULL')
  AS append_mismatches;

-- 4. cq.alter_query: adding, removing or changing HAVING rewrites the target
CREATE TABLE hv_a (k int, x int);
SELECT cq.create_query('hv_alt', 'SELECT k, count(*) AS n, max(x) AS mx FROM hv_a GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now');
SELECT cq.create_query('hv_alt_c', 'SELECT k, count(*) AS n, max(x) AS mx FROM hv_a GROUP BY k',
                       output_mode => 'complete', "trigger" => 'available_now');
INSERT INTO hv_a SELECT i % 5, i FROM generate_series(1, 12) i;
CALL cq.run('hv_alt');
CALL cq.run('hv_alt_c');
SELECT * FROM hv_alt ORDER BY k;
-- add: groups failing it leave at once, though no batch touched them
SELECT cq.alter_query('hv_alt', query => 'SELECT k, count(*) AS n, max(x) AS mx FROM hv_a GROUP BY k HAVING max(x) > 10');
SELECT cq.alter_query('hv_alt_c', query => 'SELECT k, count(*) AS n, max(x) AS mx FROM hv_a GROUP BY k HAVING max(x) > 10');
SELECT * FROM hv_alt ORDER BY k;
SELECT * FROM hv_alt_c ORDER BY k;
-- change: others come back, with their current values
SELECT cq.alter_query('hv_alt', query => 'SELECT k, count(*) AS n, max(x) AS mx FROM hv_a GROUP BY k HAVING count(*) = 2');
SELECT cq.alter_query('hv_alt_c', query => 'SELECT k, count(*) AS n, max(x) AS mx FROM hv_a GROUP BY k HAVING count(*) = 2');
SELECT * FROM hv_alt ORDER BY k;
SELECT * FROM hv_alt_c ORDER BY k;
-- batches go on with the new condition
INSERT INTO hv_a VALUES (0, 100), (1, 0);
CALL cq.run('hv_alt');
CALL cq.run('hv_alt_c');
SELECT * FROM hv_alt ORDER BY k;
SELECT mismatches('hv_alt', 'SELECT k, count(*) AS n, max(x) AS mx FROM hv_a GROUP BY k HAVING count(*) = 2') AS alt_mismatches,
       mismatches('hv_alt_c', 'SELECT k, count(*) AS n, max(x) AS mx FROM hv_a GROUP BY k HAVING count(*) = 2') AS alt_c_mismatches;
-- the final view follows
SELECT mismatches(format('cq_state.f_%s', id)::regclass,
                  'SELECT k, count(*), max(x) FROM hv_a GROUP BY k HAVING count(*) = 2') AS final_view_mismatches
  FROM cq.queries WHERE name = 'hv_alt';
-- remove: every group is back
SELECT cq.alter_query('hv_alt', query => 'SELECT k, count(*) AS n, max(x) AS mx FROM hv_a GROUP BY k');
SELECT * FROM hv_alt ORDER BY k;
-- a HAVING that needs an aggregate the state does not hold changes the state: refused
SELECT cq.alter_query('hv_alt', query => 'SELECT k, count(*) AS n, max(x) AS mx FROM hv_a GROUP BY k HAVING sum(x) > 10');
-- a HAVING over an aggregate of the select list, or a key, is fine
SELECT cq.alter_query('hv_alt', query => 'SELECT k, count(*) AS n, max(x) AS mx FROM hv_a GROUP BY k HAVING k <> 2 AND max(x) < 100');
SELECT * FROM hv_alt ORDER BY k;
-- removing a HAVING whose aggregate is not selected changes the state too: refused
SELECT cq.create_query('hv_alt2', 'SELECT k, count(*) AS n FROM hv_a GROUP BY k HAVING sum(x) > 20',
                       output_mode => 'update', "trigger" => 'available_now');
CALL cq.run('hv_alt2');
SELECT * FROM hv_alt2 ORDER BY k;
SELECT cq.alter_query('hv_alt2', query => 'SELECT k, count(*) AS n FROM hv_a GROUP BY k');
-- while changing its condition over the same aggregate is not
SELECT cq.alter_query('hv_alt2', query => 'SELECT k, count(*) AS n FROM hv_a GROUP BY k HAVING sum(x) > 25');
SELECT * FROM hv_alt2 ORDER BY k;

-- unlogged state lost in a crash-restart (simulated: emptied, sentinel
-- gone): a HAVING change would rewrite the target from an empty state, so
-- it waits for the batch that rebuilds the state
SELECT cq.create_query('hv_unl', 'SELECT k, count(*) AS n FROM hv_a GROUP BY k',
                       output_mode => 'update', state_storage => 'unlogged', "trigger" => 'available_now');
CALL cq.run('hv_unl');
DO $$
BEGIN
  EXECUTE format('TRUNCATE %s', (SELECT state_table FROM cq.queries WHERE name = 'hv_unl'));
  DELETE FROM cq.state_sentinel WHERE query_id = (SELECT id FROM cq.queries WHERE name = 'hv_unl');
END $$;
SELECT cq.alter_query('hv_unl', query => 'SELECT k, count(*) AS n FROM hv_a GROUP BY k HAVING count(*) = 2');
CALL cq.run('hv_unl');
SELECT cq.alter_query('hv_unl', query => 'SELECT k, count(*) AS n FROM hv_a GROUP BY k HAVING count(*) = 2');
SELECT * FROM hv_unl ORDER BY k;

SELECT cq.drop_query(name, drop_target => true) FROM cq.queries WHERE name LIKE 'hv\_%' ORDER BY name;
DROP TABLE hv_s, hv_r, hv_queries, hv_log, hv_ev, hv_a;
DROP PROCEDURE hv_run();
DROP FUNCTION hv_rows(int);
