-- Issue 15, fold at executor speed: the store folds each group of d into
-- its overlay as the executor makes it (a DestReceiver, no SPI tuple
-- table), and batch 0's plain INSERT reads m as the overlay's rows.
-- (1) Oracle: store queries with NULL keys, one merged in C (count, sum,
--     min, max) and one by the merge statement (avg), over history
--     (batch 0) then random batches of new and existing groups, equal
--     the plain query after every batch, row for row as text.
-- (2) Abort in the middle of d: with a streamed plan (GroupAggregate over
--     an index scan in key order) groups are put before a later row of d
--     raises an error; the batch changes nothing (the store keeps the
--     last committed batch), and once the bad row is gone the next batch
--     folds every group exactly once.  Same inside a transaction block
--     (a DO block's exception handler rolls the batch back).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SELECT setseed(0.78);

CREATE TABLE sfs_src (k1 int, k2 text, v int, w numeric);
CREATE FUNCTION sfs_rows(n int, span int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO sfs_src
  SELECT CASE WHEN random() < 0.08 THEN NULL ELSE (random() * span)::int END,
         CASE WHEN random() < 0.08 THEN NULL ELSE chr(97 + (random() * 2)::int) END,
         CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 1000)::int - 500 END,
         CASE WHEN random() < 0.05 THEN NULL ELSE round((random() * 100)::numeric, 2) END
    FROM generate_series(1, n)
$$;
CREATE FUNCTION sfs_bad(q text, oracle text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((SELECT x::text FROM %I x EXCEPT ALL SELECT y::text FROM (%s) y) '
                 'UNION ALL (SELECT y::text FROM (%s) y EXCEPT ALL SELECT x::text FROM %I x)) z',
                 q, oracle, oracle, q) INTO n;
  RETURN n;
END $$;

-- history: batch 0 reads it
SELECT sfs_rows(3000, 200);
CREATE TABLE sfs_queries (name text PRIMARY KEY, sql text);
INSERT INTO sfs_queries VALUES
  ('sfs_c', 'SELECT k1, k2, count(*) AS n, count(v) AS nv, sum(v) AS s, min(v) AS mi, max(w) AS mx FROM sfs_src GROUP BY k1, k2'),
  ('sfs_a', 'SELECT k2, k1, count(*) AS n, avg(w) AS a, sum(w) AS sw FROM sfs_src GROUP BY k2, k1');
SELECT name, cq.create_query(name, sql, output_mode => 'update', "trigger" => 'available_now',
                             state_storage => 'memory') IS NOT NULL AS created
  FROM sfs_queries ORDER BY name;

CREATE TABLE sfs_log (batch int, name text, bad bigint, store_rows bigint, groups bigint);
DO $$
DECLARE
  q record;
  n bigint;
BEGIN
  FOR b IN 0 .. 8 LOOP
    IF b > 0 THEN
      -- new groups (span grows) and existing ones, NULL keys among them
      PERFORM sfs_rows((random() * 400)::int + 1, 200 + b * 40);
      COMMIT;
    END IF;
    FOR q IN SELECT * FROM sfs_queries ORDER BY name LOOP
      CALL cq.run(q.name);
      EXECUTE format('SELECT count(*) FROM (%s) o', q.sql) INTO n;
      INSERT INTO sfs_log
        SELECT b, q.name, sfs_bad(q.name, q.sql), i.state_rows, n
          FROM cq.state_store_info(q.name) i;
    END LOOP;
    COMMIT;
  END LOOP;
END $$;
-- every batch: no row differs, the store holds one row per group
SELECT name, count(*) AS batches, sum(bad) AS bad_rows, bool_and(store_rows = groups) AS store_rows_ok
  FROM sfs_log GROUP BY name ORDER BY name;
-- NULL keys were folded (in both key columns)
SELECT count(*) FILTER (WHERE k1 IS NULL) > 0 AS null_k1, count(*) FILTER (WHERE k2 IS NULL) > 0 AS null_k2
  FROM sfs_c;

-- (2) an error in the middle of d
CREATE TABLE sfs_src2 (k int NOT NULL, v int NOT NULL);
CREATE INDEX ON sfs_src2 (k);
INSERT INTO sfs_src2 SELECT g % 500, g % 7 + 1 FROM generate_series(1, 5000) g;
SELECT cq.create_query('sfs_e', 'SELECT k, count(*) AS n, sum(100 / v) AS s, max(v) AS m FROM sfs_src2 GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory') IS NOT NULL AS created;
CALL cq.run('sfs_e');
ANALYZE sfs_src2;
-- new rows for every group and 50 new groups (k < 0), and one row (in the
-- last group in key order) that divides by zero: with hash aggregation off
-- and the batch's own settings (no sort, no sequential scan after batch 0)
-- d streams its groups in key order from the index, so the new groups and
-- the existing ones before k = 499 reach the store before the error
INSERT INTO sfs_src2 SELECT g % 550 - 50, g % 5 + 1 FROM generate_series(1, 2200) g;
INSERT INTO sfs_src2 VALUES (499, 0);
SET enable_hashagg = off;
SELECT state_rows, batch_id FROM cq.state_store_info('sfs_e');
\set VERBOSITY terse
CALL cq.run('sfs_e');
\set VERBOSITY default
SELECT state, last_error FROM cq.queries WHERE name = 'sfs_e';
-- nothing of the failed batch: the store and the target are those of batch 0
SELECT state_rows, batch_id FROM cq.state_store_info('sfs_e');
SELECT sum(n) AS target_rows_counted FROM sfs_e;
-- the same inside a transaction block, the error caught by a handler
DO $$
BEGIN
  BEGIN
    CALL cq.run('sfs_e');
  EXCEPTION WHEN division_by_zero THEN
    RAISE WARNING 'caught';
  END;
END $$;
SELECT state_rows, batch_id FROM cq.state_store_info('sfs_e');
SELECT sum(n) AS target_rows_counted FROM sfs_e;
DELETE FROM sfs_src2 WHERE v = 0;
CALL cq.run('sfs_e');
RESET enable_hashagg;
SELECT q.state, i.state_rows, i.batch_id FROM cq.queries q, cq.state_store_info('sfs_e') i WHERE q.name = 'sfs_e';
SELECT sfs_bad('sfs_e', 'SELECT k, count(*) AS n, sum(100 / v) AS s, max(v) AS m FROM sfs_src2 GROUP BY k') AS bad_rows,
       (SELECT sum(n) FROM sfs_e) AS counted, (SELECT count(*) FROM sfs_src2) AS source_rows;

SELECT cq.drop_query('sfs_c', drop_target => true), cq.drop_query('sfs_a', drop_target => true),
       cq.drop_query('sfs_e', drop_target => true);
DROP TABLE sfs_src, sfs_src2, sfs_queries, sfs_log;
DROP FUNCTION sfs_rows(int, int);
DROP FUNCTION sfs_bad(text, text);
