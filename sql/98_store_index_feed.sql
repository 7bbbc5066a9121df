-- Issue 15's fold goal (session 28): batch 0 on the store (state_storage = 'memory')
-- loads its target rows (store_load.c) and builds the target's index on
-- hash_record(ROW(keys)) itself, from the key hash the store computes for each group and
-- the TIDs of the rows written (rowload.c, as bulkload.c builds the table path's), as
-- REINDEX builds an index (the same index: OID, name and definition kept, a new file),
-- instead of dropping it before the load and creating it again by a scan that evaluates
-- hash_record per row.  The index must hold exactly what its definition gives (amcheck
-- with heapallindexed; every row found again through the index), a build that fails
-- leaves everything as it was (a load failing midway: sql/93, case 4), later batches find
-- their groups through it, and where the path does not apply (a target that is not empty,
-- or with a second index) the old one runs.
CREATE EXTENSION IF NOT EXISTS pg_cq;
CREATE EXTENSION IF NOT EXISTS amcheck;
SET client_min_messages = warning;
\i sql/include/helpers.sql

-- keys: an int, a text of a nondeterministic collation (hashed by it) with NULLs, a
-- numeric whose equal values differ in scale
CREATE COLLATION sx_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE sx_src (k int, t text COLLATE sx_ci, d numeric, v int);
INSERT INTO sx_src SELECT g % 97,
       CASE WHEN g % 5 = 0 THEN NULL WHEN g % 2 = 0 THEN 'T' || (g % 7) ELSE 't' || (g % 7) END,
       CASE WHEN g % 4 = 0 THEN 1.50 ELSE 1.5 END * (g % 3), g
  FROM generate_series(1, 20000) g;
CREATE VIEW sx_oracle AS
  SELECT k, t, d, count(*) AS n, sum(v) AS s FROM sx_src GROUP BY k, t, d HAVING count(*) > 8;
-- HAVING: the target gets a part of the store's groups
SELECT cq.create_query('sx_u', pg_get_viewdef('sx_oracle'), output_mode => 'update',
                       "trigger" => 'available_now', state_storage => 'memory');
SELECT cq.create_query('sx_f', pg_get_viewdef('sx_oracle'), output_mode => 'update',
                       "trigger" => 'available_now', state_storage => 'memory');

-- the target's index: name (without the query id), OID, file
CREATE FUNCTION sx_index(q text) RETURNS TABLE (idx text, oid oid, file oid) LANGUAGE sql AS $$
  SELECT regexp_replace(c.relname, '_[0-9]+_', '_N_'), i.indexrelid, c.relfilenode
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
   WHERE i.indrelid = q::regclass $$;
-- amcheck (every row's key, computed from the index's definition, found in the index)
-- and each row found through the index
CREATE FUNCTION sx_check(q text) RETURNS TABLE (rows bigint, via_index bigint) LANGUAGE plpgsql AS $$
BEGIN
  PERFORM bt_index_check(i.indexrelid, true) FROM pg_index i WHERE i.indrelid = q::regclass;
  SET LOCAL enable_seqscan = off;
  SET LOCAL enable_bitmapscan = off;
  EXECUTE format('SELECT count(*) FROM %s', q::regclass) INTO rows;
  EXECUTE format('SELECT count(*) FROM %s a WHERE EXISTS (SELECT FROM %s b
                   WHERE pg_catalog.hash_record(ROW(b.k, b.t, b.d)) = pg_catalog.hash_record(ROW(a.k, a.t, a.d))
                     AND b.ctid = a.ctid)', q::regclass, q::regclass) INTO via_index;
  RETURN NEXT;
END $$;
SELECT idx FROM sx_index('sx_u');
CREATE TABLE sx_before AS SELECT 'sx_u' AS q, * FROM sx_index('sx_u')
  UNION ALL SELECT 'sx_f', * FROM sx_index('sx_f');
-- the same index (OID) as before; the same file too (unchanged) or not (built anew)
CREATE FUNCTION sx_same(q text) RETURNS TABLE (same_index boolean, same_file boolean) LANGUAGE sql AS $$
  SELECT a.oid = b.oid, a.file = b.file FROM sx_index(q) a JOIN sx_before b ON b.q = $1 $$;

-- batch 0: the same index, built anew from the load's key hashes; equal to what its
-- definition gives; the target equals the plain query
SELECT state_path FROM cq.queries WHERE name = 'sx_u';
CALL cq.run('sx_u');
SELECT * FROM sx_same('sx_u');
SELECT * FROM sx_check('sx_u');
SELECT mismatches('sx_u', 'TABLE sx_oracle') AS u_batch0;

-- later batches probe the target through it: existing groups, new ones, groups HAVING
-- now lets into the target
INSERT INTO sx_src SELECT g % 131, CASE WHEN g % 3 = 0 THEN NULL ELSE 'T' || (g % 9) END, 3.0, g
  FROM generate_series(1, 6000) g;
CALL cq.run('sx_u');
SELECT mismatches('sx_u', 'TABLE sx_oracle') AS u_batch1;
SELECT * FROM sx_check('sx_u');

-- a build that fails after the load (the target's index is in use by a cursor of this
-- session, so it cannot get a new file): the transaction rolls back, store, target and
-- index as they were
BEGIN;
SET LOCAL enable_seqscan = off;
DECLARE sx_cur CURSOR FOR SELECT * FROM sx_f WHERE pg_catalog.hash_record(ROW(k, t, d)) = 0;
FETCH 1 FROM sx_cur;
\set VERBOSITY terse
CALL cq.run('sx_f');
\set VERBOSITY default
ROLLBACK;
SELECT * FROM sx_same('sx_f');
SELECT * FROM sx_check('sx_f');
SELECT state_rows FROM cq.state_store_info('sx_f');
-- the next batch 0 finds only the failed load's dead rows in the target's file, empty to
-- every snapshot: the same path again (the same index, a new file), equal to the plain query
CALL cq.run('sx_f');
SELECT * FROM sx_same('sx_f');
SELECT * FROM sx_check('sx_f');
SELECT mismatches('sx_f', 'TABLE sx_oracle') AS f_batch0;

-- a target with a second index: no load (the INSERT, through both indexes), equal all
-- the same
SELECT cq.create_query('sx_n', pg_get_viewdef('sx_oracle'), output_mode => 'update',
                       "trigger" => 'available_now', state_storage => 'memory');
CREATE INDEX sx_n_s ON sx_n (s);
CALL cq.run('sx_n');
SELECT * FROM sx_check('sx_n');
SELECT mismatches('sx_n', 'TABLE sx_oracle') AS n_batch0;

SELECT cq.drop_query(q, drop_target => true) FROM unnest('{sx_u,sx_f,sx_n}'::text[]) q;
DROP VIEW sx_oracle;
DROP TABLE sx_src, sx_before;
DROP FUNCTION sx_index(text), sx_check(text), sx_same(text);
DROP COLLATION sx_ci;
