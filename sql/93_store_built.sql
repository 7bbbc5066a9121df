-- Issue 15, batch 0 of the store: a store that starts empty in a
-- transaction (batch 0, a rebuild) writes each new group straight into a
-- group table of its own in shared memory, which COMMIT makes the store's
-- by one pointer (no overlay rows, no copy at commit).  An abort frees that
-- table and leaves the store, the target and the offsets as they were:
-- (1) batch 0 failing after its target rows were written (a statement
--     trigger of the target raises), at top level and inside a block;
-- (2) batch 0 rolled back with its transaction; (3) batch 0 in a
--     savepoint rolled back, then again in the same transaction;
-- (4) batch 0 writing its target rows as d makes them (store_load.c),
--     failing midway; (5) batch 0 whose groups pass cq.state_memory
--     partway: the rest go to the overlay, the query moves to the table path;
-- after each, the next batch equals the plain query.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE TABLE sb_src (k int, v int);
INSERT INTO sb_src SELECT CASE WHEN g % 97 = 0 THEN NULL ELSE g % 700 END, g % 1000
  FROM generate_series(1, 7000) g;
\i sql/include/helpers.sql
\set oracle 'SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m FROM sb_src GROUP BY k'
\set oracle5 'SELECT k, count(*) AS n, sum(v) / (k - 2999) AS r FROM sb_src5 GROUP BY k HAVING count(*) > 3'
CREATE FUNCTION sb_create(q text) RETURNS boolean LANGUAGE sql AS $$
  SELECT cq.create_query(q, 'SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m FROM sb_src GROUP BY k',
                         output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory') IS NOT NULL
$$;
SELECT count(DISTINCT k) AS groups_without_null FROM sb_src;

-- (1) an error after the target load
SELECT sb_create('sb_1') AS created;
CREATE TABLE sb_fail (on_ boolean);
INSERT INTO sb_fail VALUES (true);
CREATE FUNCTION sb_raise() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (SELECT on_ FROM public.sb_fail) THEN
    RAISE EXCEPTION 'target refused after % rows', (SELECT count(*) FROM public.sb_1);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER sb_after AFTER INSERT ON sb_1 FOR EACH STATEMENT EXECUTE FUNCTION sb_raise();
DO $$
BEGIN
  BEGIN
    CALL cq.run('sb_1');
  EXCEPTION WHEN raise_exception THEN
    RAISE WARNING 'batch 0 failed: %', SQLERRM;
  END;
END $$;
SELECT * FROM store_left('sb_1');
\set VERBOSITY terse
CALL cq.run('sb_1');
\set VERBOSITY default
SELECT * FROM store_left('sb_1');
UPDATE sb_fail SET on_ = false;
SELECT cq.resume('sb_1');
CALL cq.run('sb_1');
SELECT mismatches('sb_1', :'oracle') AS bad_rows, l.* FROM store_left('sb_1') l;
-- the next batch merges into the published table
INSERT INTO sb_src SELECT g % 900, g FROM generate_series(1, 1000) g;
CALL cq.run('sb_1');
SELECT mismatches('sb_1', :'oracle') AS bad_rows, l.* FROM store_left('sb_1') l;

-- (2) batch 0 rolled back with its transaction
SELECT sb_create('sb_2') AS created;
BEGIN;
CALL cq.run('sb_2');
-- this transaction sees its batch
SELECT mismatches('sb_2', :'oracle') AS bad_rows_in_transaction, l.* FROM store_left('sb_2') l;
ROLLBACK;
SELECT * FROM store_left('sb_2');
CALL cq.run('sb_2');
SELECT mismatches('sb_2', :'oracle') AS bad_rows, l.* FROM store_left('sb_2') l;

-- (3) batch 0 in a savepoint rolled back, then run again in the transaction
SELECT sb_create('sb_3') AS created;
BEGIN;
SAVEPOINT s;
CALL cq.run('sb_3');
ROLLBACK TO SAVEPOINT s;
SELECT * FROM store_left('sb_3');
CALL cq.run('sb_3');
COMMIT;
SELECT mismatches('sb_3', :'oracle') AS bad_rows, l.* FROM store_left('sb_3') l;

-- (4) batch 0 writing its target rows as d makes them (the store's load
-- statement: a plain target, its index built after the load), with HAVING
-- and an output that fails for one group, the last in key order (hash
-- aggregation off: d sorts, then aggregates in key order): the error comes
-- after 2,000 rows were written to the target (a thousand at a time) and
-- groups to the store, and nothing of the batch remains; without the
-- failing group the batch equals the plain query, and the target's index
-- is there again
CREATE TABLE sb_src5 (k int, v int);
INSERT INTO sb_src5 SELECT CASE WHEN g % 101 = 0 THEN NULL ELSE g % 3000 END, g % 1000
  FROM generate_series(1, 12000) g;
SELECT cq.create_query('sb_5', 'SELECT k, count(*) AS n, sum(v) / (k - 2999) AS r FROM sb_src5 GROUP BY k HAVING count(*) > 3',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory') IS NOT NULL AS created;
SET enable_hashagg = off;
\set VERBOSITY terse
CALL cq.run('sb_5');
\set VERBOSITY default
RESET enable_hashagg;
SELECT * FROM store_left('sb_5');
DELETE FROM sb_src5 WHERE k = 2999;
SELECT cq.resume('sb_5');
CALL cq.run('sb_5');
SELECT mismatches('sb_5', :'oracle5') AS bad_rows,
       l.*, (SELECT count(*) FROM pg_index WHERE indrelid = 'sb_5'::regclass) AS target_indexes
  FROM store_left('sb_5') l;
INSERT INTO sb_src5 SELECT g % 3100, g FROM generate_series(1, 2000) g WHERE g % 3100 <> 2999;
CALL cq.run('sb_5');
SELECT mismatches('sb_5', :'oracle5') AS bad_rows,
       l.* FROM store_left('sb_5') l;

-- (5) past cq.state_memory partway through batch 0 (asked for the store:
-- no move up front): the batch moves the query to the table path
INSERT INTO sb_src SELECT 1000 + g % 2500, g FROM generate_series(1, 5000) g;
SET cq.state_memory = '64kB';
SELECT sb_create('sb_4') AS created;
CALL cq.run('sb_4');
SELECT state_storage, state_path FROM cq.queries WHERE name = 'sb_4';
SELECT mismatches('sb_4', :'oracle') AS bad_rows, l.* FROM store_left('sb_4') l;
RESET cq.state_memory;
INSERT INTO sb_src SELECT g % 1100, g FROM generate_series(1, 500) g;
CALL cq.run('sb_4');
SELECT mismatches('sb_4', :'oracle') AS bad_rows, l.* FROM store_left('sb_4') l;

SELECT cq.drop_query(q, drop_target => true) FROM (VALUES ('sb_1'), ('sb_2'), ('sb_3'), ('sb_4'), ('sb_5')) v(q);
DROP TABLE sb_src, sb_src5, sb_fail;
DROP FUNCTION sb_create(text);
DROP FUNCTION sb_raise();
