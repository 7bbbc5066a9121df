-- Issue 12 goal 7: which writer an update query's batches take, as
-- measured (bench/merge.sh): on the store the C writer (store_update.c)
-- wherever the target qualifies for it, whatever the keys; where it does
-- not (here: a second index on the target, or cq.target_update_in_c off),
-- MERGE for keys that are all NOT NULL up to cq.merge_max_groups changed
-- groups (here 8; by default -1, every batch), else the upsert statement;
-- on the table path MERGE for NOT NULL keys up to cq.merge_max_groups new
-- rows, else the upsert statement (always for nullable keys).  Each case's
-- path is read from cq.explain ("last batch in this session"), and every
-- target equals the plain GROUP BY of the source after every batch.
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SET client_min_messages = warning;
-- the batches run here, in this session, whose last path cq.explain reports
SET cq.run_in_worker = off;
SET cq.merge_max_groups = 8;

CREATE TABLE wp_src (k int NOT NULL, g int, v int NOT NULL);
-- the path of a query's last batch in this session, as cq.explain says
CREATE FUNCTION wp_path(qname text) RETURNS text LANGUAGE sql AS $$
  SELECT (regexp_match(cq.explain(qname), '-- last batch in this session: ([^(]*[^( ])'))[1]
$$;

-- k NOT NULL (a MERGE candidate), g nullable (never MERGE); on the store
-- (s) and on a state table (t); wp_k_sx's target gets a second index,
-- which the C writer does not maintain: it does not qualify
CREATE TABLE wp_cases (name text PRIMARY KEY, sql text, storage text);
INSERT INTO wp_cases VALUES
  ('wp_k_s', 'SELECT k, count(*) AS n, sum(v) AS s FROM wp_src GROUP BY k', 'memory'),
  ('wp_k_sx', 'SELECT k, count(*) AS n, sum(v) AS s FROM wp_src GROUP BY k', 'memory'),
  ('wp_k_t', 'SELECT k, count(*) AS n, sum(v) AS s FROM wp_src GROUP BY k', 'unlogged'),
  ('wp_g_s', 'SELECT g, count(*) AS n, sum(v) AS s FROM wp_src GROUP BY g', 'memory'),
  ('wp_g_sx', 'SELECT g, count(*) AS n, sum(v) AS s FROM wp_src GROUP BY g', 'memory'),
  ('wp_g_t', 'SELECT g, count(*) AS n, sum(v) AS s FROM wp_src GROUP BY g', 'unlogged');
SELECT name, cq.create_query(name, sql, output_mode => 'update', "trigger" => 'available_now',
                             state_storage => storage) IS NOT NULL AS created
  FROM wp_cases ORDER BY name;
CREATE INDEX ON wp_k_sx (n);
CREATE INDEX ON wp_g_sx (n);

-- what cq.explain says each may take, and why
SELECT name, line
  FROM wp_cases,
       regexp_split_to_table((regexp_match(cq.explain(name),
                                           '(-- target write:.*?)\n-- (the groups|a batch runs|last batch)'))[1],
                             E'\n') WITH ORDINALITY AS l(line, i)
 ORDER BY name, i;

-- one batch: rows of `changed` distinct k (and as many g, a tenth NULL)
CREATE FUNCTION wp_batch(changed int, b int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO wp_src
  SELECT (i * 7 + b) % 40, CASE WHEN i % 10 = 0 THEN NULL ELSE (i * 3 + b) % 40 END, i + b
    FROM generate_series(1, changed) i
$$;
CREATE TABLE wp_log (batch int, cq_setting text, name text, path text, mismatches bigint);
-- batch 0, then batches changing 5 groups (at most the cap of 8) and 20
-- (above it), with the C writer on, then off for the whole session
DO $$
DECLARE
  c record;
  b int := 0;
  setting text;
  n int;
BEGIN
  PERFORM wp_batch(30, 0);
  FOR c IN SELECT * FROM wp_cases ORDER BY name LOOP
    CALL cq.run(c.name);
  END LOOP;
  FOREACH setting IN ARRAY ARRAY['on', 'off'] LOOP
    PERFORM set_config('cq.target_update_in_c', setting, false);
    FOREACH n IN ARRAY ARRAY[5, 20, 5] LOOP
      b := b + 1;
      PERFORM wp_batch(n, b);
      COMMIT;
      FOR c IN SELECT * FROM wp_cases ORDER BY name LOOP
        CALL cq.run(c.name);
        INSERT INTO wp_log SELECT b, setting, c.name, wp_path(c.name), mismatches(c.name::regclass, c.sql);
      END LOOP;
      COMMIT;
    END LOOP;
  END LOOP;
  PERFORM set_config('cq.target_update_in_c', 'on', false);
END $$;
-- each batch's path, and its target equal to the plain GROUP BY
SELECT batch, cq_setting, name, path, mismatches
  FROM wp_log ORDER BY batch, name;
-- the table path's nullable key is never noted (always the upsert: see its
-- explain above); every target equal to its query after every batch
SELECT count(*) AS batches, sum(mismatches) AS mismatches FROM wp_log;

-- above the cap with the default (-1: always MERGE, 0: never)
SET cq.merge_max_groups = -1;
SELECT wp_batch(20, 99);
CALL cq.run('wp_k_t'); CALL cq.run('wp_k_sx');
SELECT wp_path('wp_k_t') AS table_path, wp_path('wp_k_sx') AS store_no_c_writer,
       mismatches('wp_k_t', 'SELECT k, count(*) AS n, sum(v) AS s FROM wp_src GROUP BY k') AS t,
       mismatches('wp_k_sx', 'SELECT k, count(*) AS n, sum(v) AS s FROM wp_src GROUP BY k') AS sx;
SET cq.merge_max_groups = 0;
SELECT wp_batch(3, 100);
CALL cq.run('wp_k_t'); CALL cq.run('wp_k_sx'); CALL cq.run('wp_k_s');
SELECT wp_path('wp_k_t') AS table_path, wp_path('wp_k_sx') AS store_no_c_writer, wp_path('wp_k_s') AS store,
       mismatches('wp_k_s', 'SELECT k, count(*) AS n, sum(v) AS s FROM wp_src GROUP BY k') AS s;
RESET cq.merge_max_groups;

SELECT cq.drop_query(name, drop_target => true) IS NOT NULL AS dropped FROM wp_cases ORDER BY name;
DROP TABLE wp_src, wp_cases, wp_log;
DROP FUNCTION wp_path(text), wp_batch(int, int);
