-- Issue 12 goal 2 (session 27): batch 0's direct load (bulkload.c) builds the state's
-- index on h and the target's index on hash_record(ROW(keys)) itself, from the (h, TID)
-- pairs of the rows it writes, as REINDEX builds an index (the same index: OID, name and
-- definition kept, a new file), instead of dropping them before the load and creating them
-- again by a scan that evaluates hash_record per row.  The indexes must hold exactly what
-- their definitions give (amcheck with heapallindexed; every row found again through the
-- index), a load or build that fails leaves everything as it was, later batches find their
-- groups through them, and where the path does not apply (a target that is not empty) the
-- old one runs.  Session 28: a batch 0 retried after a failed one takes the path again
-- (the failed load's rows, dead in the tables' pages, count as empty).
CREATE EXTENSION IF NOT EXISTS pg_cq;
CREATE EXTENSION IF NOT EXISTS amcheck;
SET client_min_messages = warning;
\i sql/include/helpers.sql

-- keys: an int, a text of a nondeterministic collation (hashed by it) with NULLs, a
-- numeric whose equal values differ in scale
CREATE COLLATION fx_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE fx_src (k int, t text COLLATE fx_ci, d numeric, v int);
INSERT INTO fx_src SELECT g % 97,
       CASE WHEN g % 5 = 0 THEN NULL WHEN g % 2 = 0 THEN 'T' || (g % 7) ELSE 't' || (g % 7) END,
       CASE WHEN g % 4 = 0 THEN 1.50 ELSE 1.5 END * (g % 3), g
  FROM generate_series(1, 20000) g;
CREATE VIEW fx_oracle AS
  SELECT k, t, d, count(*) AS n, sum(v) AS s FROM fx_src GROUP BY k, t, d HAVING count(*) > 8;
-- HAVING: the target gets a part of the state's groups
SELECT cq.create_query('fx_u', pg_get_viewdef('fx_oracle'), output_mode => 'update',
                       "trigger" => 'available_now', state_storage => 'unlogged');
SELECT cq.create_query('fx_f', pg_get_viewdef('fx_oracle'), output_mode => 'update',
                       "trigger" => 'available_now', state_storage => 'unlogged');

-- the indexes of a query's state and target: name (without the query id), OID, file
CREATE FUNCTION fx_indexes(q text) RETURNS TABLE (tab text, idx text, oid oid, file oid) LANGUAGE sql AS $$
  SELECT CASE WHEN i.indrelid = q::regclass THEN 'target' ELSE 'state' END,
         regexp_replace(c.relname, '_[0-9]+_', '_N_'), i.indexrelid, c.relfilenode
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
   WHERE i.indrelid IN (q::regclass, (SELECT state_table FROM cq.queries WHERE name = q))
   ORDER BY 1 $$;
-- every index of a query's state and target: amcheck (every row's key, computed from
-- the index's definition, found in the index) and each row found through the index
CREATE FUNCTION fx_check(q text) RETURNS TABLE (tab text, rows bigint, via_index bigint) LANGUAGE plpgsql AS $$
DECLARE
  st regclass := (SELECT state_table FROM cq.queries WHERE name = q);
  i record;
BEGIN
  FOR i IN SELECT indexrelid FROM pg_index WHERE indrelid IN (q::regclass, st) LOOP
    PERFORM bt_index_check(i.indexrelid, true);
  END LOOP;
  SET LOCAL enable_seqscan = off;
  SET LOCAL enable_bitmapscan = off;
  tab := 'target';
  EXECUTE format('SELECT count(*) FROM %s', q::regclass) INTO rows;
  EXECUTE format('SELECT count(*) FROM %s a WHERE EXISTS (SELECT FROM %s b
                   WHERE pg_catalog.hash_record(ROW(b.k, b.t, b.d)) = pg_catalog.hash_record(ROW(a.k, a.t, a.d))
                     AND b.ctid = a.ctid)', q::regclass, q::regclass) INTO via_index;
  RETURN NEXT;
  tab := 'state';
  EXECUTE format('SELECT count(*) FROM %s', st) INTO rows;
  EXECUTE format('SELECT count(*) FROM %s a WHERE EXISTS (SELECT FROM %s b WHERE b.h = a.h AND b.ctid = a.ctid)',
                 st, st) INTO via_index;
  RETURN NEXT;
END $$;
SELECT tab, idx FROM fx_indexes('fx_u');
CREATE TABLE fx_before AS SELECT 'fx_u' AS q, * FROM fx_indexes('fx_u')
  UNION ALL SELECT 'fx_f', * FROM fx_indexes('fx_f');
-- same indexes (OIDs) as before; same files too (unchanged) or not (built anew)
CREATE FUNCTION fx_same(q text) RETURNS TABLE (tab text, same_index boolean, same_file boolean) LANGUAGE sql AS $$
  SELECT a.tab, a.oid = b.oid, a.file = b.file FROM fx_indexes(q) a JOIN fx_before b ON b.q = $1 AND b.tab = a.tab
   ORDER BY 1 $$;

-- batch 0: the same indexes, built anew from the load's key hashes; both equal what
-- their definitions give; the target equals the plain query
CALL cq.run('fx_u');
SELECT * FROM fx_same('fx_u');
SELECT * FROM fx_check('fx_u');
SELECT mismatches('fx_u', 'TABLE fx_oracle') AS u_batch0;

-- later batches probe state and target through them: existing groups, new ones, groups
-- HAVING now lets into the target
INSERT INTO fx_src SELECT g % 131, CASE WHEN g % 3 = 0 THEN NULL ELSE 'T' || (g % 9) END, 3.0, g
  FROM generate_series(1, 6000) g;
CALL cq.run('fx_u');
SELECT mismatches('fx_u', 'TABLE fx_oracle') AS u_batch1;
SELECT * FROM fx_check('fx_u');

-- a build that fails after the load (the target's index is in use by a cursor of this
-- session, so it cannot get a new file; the state's index was built already): the
-- transaction rolls back, state, target and indexes as they were
BEGIN;
SET LOCAL enable_seqscan = off;
DECLARE fx_cur CURSOR FOR SELECT * FROM fx_f WHERE pg_catalog.hash_record(ROW(k, t, d)) = 0;
FETCH 1 FROM fx_cur;
\set VERBOSITY terse
CALL cq.run('fx_f');
\set VERBOSITY default
ROLLBACK;
SELECT * FROM fx_same('fx_f');
SELECT * FROM fx_check('fx_f');
-- the next batch 0 finds the failed load's rows in the tables' files, all dead (their
-- transaction aborted): empty to every snapshot, so the same path again (the same
-- indexes, new files), equal to the plain query
CALL cq.run('fx_f');
SELECT * FROM fx_same('fx_f');
SELECT * FROM fx_check('fx_f');
SELECT mismatches('fx_f', 'TABLE fx_oracle') AS f_batch0;


-- a load that fails in the middle (a group's output divides by zero after a thousand
-- rows were written and their keys noted): nothing changes, the query is failed; once the
-- cause is gone batch 0 runs, on the same path (the failed load's rows are dead)
SELECT cq.create_query('fx_e', 'SELECT k, t, d, count(*) AS n, 1000 / (max(v) - 777777) AS r FROM fx_src GROUP BY k, t, d',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'unlogged');
INSERT INTO fx_src SELECT g, NULL, 0, g FROM generate_series(1000, 3999) g;
INSERT INTO fx_src VALUES (2500, NULL, 0, 777777);
DELETE FROM fx_before;
INSERT INTO fx_before SELECT 'fx_e', * FROM fx_indexes('fx_e');
\set VERBOSITY terse
CALL cq.run('fx_e');
\set VERBOSITY default
SELECT state, last_error FROM cq.queries WHERE name = 'fx_e';
SELECT * FROM fx_same('fx_e');
SELECT * FROM fx_check('fx_e');
DELETE FROM fx_src WHERE v = 777777;
CALL cq.run('fx_e');
SELECT * FROM fx_same('fx_e');
SELECT * FROM fx_check('fx_e');
SELECT mismatches('fx_e', 'SELECT k, t, d, count(*) AS n, 1000 / (max(v) - 777777) AS r FROM fx_src GROUP BY k, t, d') AS e_batch0;

-- a target that is not empty to every snapshot (a row inserted and deleted by the
-- transaction that runs batch 0, not yet committed: dead to no one yet): the old path,
-- the index dropped and created again (a new OID), equal all the same
SELECT cq.create_query('fx_n', pg_get_viewdef('fx_oracle'), output_mode => 'update',
                       "trigger" => 'available_now', state_storage => 'unlogged');
DELETE FROM fx_before;
INSERT INTO fx_before SELECT 'fx_n', * FROM fx_indexes('fx_n');
BEGIN;
INSERT INTO fx_n VALUES (1, NULL, 1, 1, 1);
DELETE FROM fx_n;
CALL cq.run('fx_n');
COMMIT;
SELECT * FROM fx_same('fx_n');
SELECT * FROM fx_check('fx_n');
SELECT mismatches('fx_n', 'TABLE fx_oracle') AS n_batch0;

SELECT cq.drop_query(q, drop_target => true) FROM unnest('{fx_u,fx_f,fx_e,fx_n}'::text[]) q;
DROP VIEW fx_oracle;
DROP TABLE fx_src, fx_before;
DROP FUNCTION fx_indexes(text), fx_check(text), fx_same(text);
DROP COLLATION fx_ci;
