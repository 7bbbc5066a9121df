-- Issue 12 goal 2, session 31: batch 0 of the store links its new groups
-- into its group table up to 262,144 at a time (STORE_LINK_MAX), sorted by
-- the slot each one's probe starts from, instead of 256 at a time in the
-- order d made them; the pending (hash, node) pairs are kept in an array
-- that doubles from 1,024.  With 70,000 groups a batch 0 doubles it 7 times
-- and links them all at pre-commit (t/073 passes STORE_LINK_MAX: runs
-- linked while d runs, a rebuild, an image load).  Checked: (1) every
-- group is found again by a later batch's lookups (a batch that adds a row
-- to every group leaves 70,000 groups, not more), each h equals
-- hash_record() of its keys, the target equals the plain query; (2) batch
-- 0 rolled back after linking leaves no store, and runs again exactly;
-- (3) batch 0 failing with 69,999 nodes pending (an output that fails for
-- the last group in key order) leaves nothing; (4) batch 0 passing
-- cq.state_memory after ~68,000 groups: those pending are linked, the rest
-- goes to the overlay, the query moves to the table path, exactly.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
\i sql/include/helpers.sql

CREATE TABLE sl_src (k int, v int);
INSERT INTO sl_src SELECT CASE WHEN g % 50021 = 0 THEN NULL ELSE g % 70000 END, g % 1000
  FROM generate_series(1, 105000) g;
\set oracle 'SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m FROM sl_src GROUP BY k'
\set oracle3 'SELECT k, count(*) AS n, sum(v) / (k - 69999) AS r FROM sl_src GROUP BY k'
CREATE FUNCTION sl_create(q text, sql text) RETURNS boolean LANGUAGE sql AS $$
  SELECT cq.create_query(q, sql, output_mode => 'update', "trigger" => 'available_now',
                         state_storage => 'memory') IS NOT NULL
$$;
-- state rows of a query on the store whose h is not hash_record() of their key
CREATE FUNCTION sl_bad_h(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint; qid int; st regclass;
BEGIN
  SELECT id, state_table INTO qid, st FROM cq.queries WHERE name = q;
  EXECUTE format('SELECT count(*) FROM cq.state_rows(%s, NULL::%s) s '
                 'WHERE s.h IS DISTINCT FROM pg_catalog.hash_record(ROW(s.g1))', qid, st) INTO n;
  RETURN n;
END $$;
SELECT count(DISTINCT k) AS groups_without_null FROM sl_src;

-- (1) batch 0 over 70,000 groups, then a batch adding a row to every group
SELECT sl_create('sl_1', :'oracle') AS created;
CALL cq.run('sl_1');
SELECT mismatches('sl_1', :'oracle') AS bad_rows, sl_bad_h('sl_1') AS bad_h, l.* FROM store_left('sl_1') l;
INSERT INTO sl_src SELECT k, 7 FROM (SELECT DISTINCT k FROM sl_src) d;
CALL cq.run('sl_1');
SELECT mismatches('sl_1', :'oracle') AS bad_rows, sl_bad_h('sl_1') AS bad_h, l.* FROM store_left('sl_1') l;

-- (2) batch 0 rolled back with its transaction, after linking
SELECT sl_create('sl_2', :'oracle') AS created;
BEGIN;
CALL cq.run('sl_2');
SELECT mismatches('sl_2', :'oracle') AS bad_rows_in_transaction, l.* FROM store_left('sl_2') l;
ROLLBACK;
SELECT * FROM store_left('sl_2');
CALL cq.run('sl_2');
SELECT mismatches('sl_2', :'oracle') AS bad_rows, l.* FROM store_left('sl_2') l;

-- (3) an output failing for the last group in key order (hash aggregation
-- off: d sorts, then aggregates in key order), with 69,999 nodes pending
SELECT sl_create('sl_3', :'oracle3') AS created;
SET enable_hashagg = off;
\set VERBOSITY terse
CALL cq.run('sl_3');
\set VERBOSITY default
RESET enable_hashagg;
SELECT * FROM store_left('sl_3');
DELETE FROM sl_src WHERE k = 69999;
SELECT cq.resume('sl_3');
CALL cq.run('sl_3');
SELECT mismatches('sl_3', :'oracle3') AS bad_rows, l.* FROM store_left('sl_3') l;

-- (4) past cq.state_memory after about 68,000 groups (97% of the bytes
-- sl_1's store holds): linked at the overflow
SELECT set_config('cq.state_memory', (i.state_bytes * 97 / 100 / 1024)::text || 'kB', false) IS NOT NULL AS budget_set
  FROM cq.state_store_info('sl_1') i;
SELECT sl_create('sl_4', :'oracle') AS created;
SET client_min_messages = error;
CALL cq.run('sl_4');
SET client_min_messages = warning;
RESET cq.state_memory;
SELECT state_storage, state_path LIKE 'table: moved after exceeding cq.state_memory (% kB) at batch 0' AS moved
  FROM cq.queries WHERE name = 'sl_4';
SELECT mismatches('sl_4', :'oracle') AS bad_rows, l.* FROM store_left('sl_4') l;
INSERT INTO sl_src SELECT g % 75000, g FROM generate_series(1, 10000) g;
CALL cq.run('sl_4');
SELECT mismatches('sl_4', :'oracle') AS bad_rows, l.* FROM store_left('sl_4') l;

SELECT cq.drop_query(q, drop_target => true) FROM (VALUES ('sl_1'), ('sl_2'), ('sl_3'), ('sl_4')) v(q);
DROP TABLE sl_src;
DROP FUNCTION sl_create(text, text);
DROP FUNCTION sl_bad_h(text);
