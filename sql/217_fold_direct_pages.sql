-- Batch 0's loads into empty tables write whole heap pages outside shared
-- buffers (heappage.c, session 43, issue 12 goal 2): the store's target,
-- the table path's state and target.  What must hold: the target equals the
-- plain query, its heap is sound (amcheck's verify_heapam) and its index
-- holds every row (bt_index_check with heapallindexed), the pages are filled
-- as the buffered path fills them (the same number of pages, fillfactor
-- honoured), rows too long for a page go to TOAST, later batches update and
-- insert as before, and a failed batch 0 leaves nothing visible.  Each case
-- against the same query with cq.fold_direct_pages off (the buffered path).
-- Every page written whole here (always); by default (on) only the pages
-- beyond those COPY's ring keeps in shared buffers, so that a small target
-- stays in them for the next batches as before: checked last.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
CREATE EXTENSION IF NOT EXISTS amcheck;
CREATE EXTENSION IF NOT EXISTS pageinspect;
\i sql/include/helpers.sql
SELECT pause_others();
SET cq.run_in_worker = off;
SET cq.fold_direct_pages = always;

-- 20,000 groups: ~170 pages of target, more than one group of 32 pages
CREATE TABLE dp_src (k int, c text, v numeric);
INSERT INTO dp_src SELECT g % 20000, 'c' || (g % 7), g % 1000 FROM generate_series(1, 60000) g;
CREATE VIEW dp_oracle AS
  SELECT k, c, count(*) AS n, sum(v) AS s, max(v) AS m FROM dp_src GROUP BY k, c;
SELECT cq.create_query('dp_on', pg_get_viewdef('dp_oracle'), output_mode => 'update',
                       "trigger" => 'available_now', state_storage => 'memory') IS NOT NULL AS created;
SELECT cq.create_query('dp_off', pg_get_viewdef('dp_oracle'), output_mode => 'update',
                       "trigger" => 'available_now', state_storage => 'memory') IS NOT NULL AS created;
-- a fillfactor the pages must keep free
SELECT cq.create_query('dp_ff', pg_get_viewdef('dp_oracle'), output_mode => 'update',
                       "trigger" => 'available_now', state_storage => 'memory') IS NOT NULL AS created;
SELECT cq.create_query('dp_ff_off', pg_get_viewdef('dp_oracle'), output_mode => 'update',
                       "trigger" => 'available_now', state_storage => 'memory') IS NOT NULL AS created;
ALTER TABLE dp_ff SET (fillfactor = 60);
ALTER TABLE dp_ff_off SET (fillfactor = 60);

-- the heap sound, the index holding every row, the row count
CREATE FUNCTION dp_check(q regclass) RETURNS TABLE (heap_errors bigint, rows bigint) LANGUAGE plpgsql AS $$
BEGIN
  SELECT count(*) INTO heap_errors FROM verify_heapam(q);
  PERFORM bt_index_check(i.indexrelid, true) FROM pg_index i WHERE i.indrelid = q;
  EXECUTE format('SELECT count(*) FROM %s', q) INTO rows;
  RETURN NEXT;
END $$;
CREATE FUNCTION dp_pages(q regclass) RETURNS bigint LANGUAGE sql AS
  $$ SELECT pg_relation_size(q) / current_setting('block_size')::int $$;

CALL cq.run('dp_on');
CALL cq.run('dp_ff');
SET cq.fold_direct_pages = off;
CALL cq.run('dp_off');
CALL cq.run('dp_ff_off');
SET cq.fold_direct_pages = always;
SELECT mismatches('dp_on', 'TABLE dp_oracle') AS on_batch0, mismatches('dp_off', 'TABLE dp_oracle') AS off_batch0,
       mismatches('dp_ff', 'TABLE dp_oracle') AS ff_batch0;
SELECT * FROM dp_check('dp_on');
SELECT * FROM dp_check('dp_ff');
-- filled as the buffered path fills them: as many pages, and more with the fillfactor
SELECT dp_pages('dp_on') = dp_pages('dp_off') AS same_pages, dp_pages('dp_on') > 64 AS many_groups,
       dp_pages('dp_ff') = dp_pages('dp_ff_off') AS same_pages_ff,
       dp_pages('dp_ff') > dp_pages('dp_on') * 1.4 AS ff_kept;
-- the pages went past shared buffers: no free space recorded (VACUUM records
-- it), where the buffered path records each page it leaves full
SELECT pg_relation_size('dp_on', 'fsm') = 0 AS on_no_fsm, pg_relation_size('dp_off', 'fsm') > 0 AS off_fsm;
-- each row's t_ctid is its own TID, its xmin the batch's, as an insert leaves them
SELECT count(*) FILTER (WHERE t_ctid <> ('(' || blk || ',' || lp || ')')::tid) AS ctid_not_self,
       count(DISTINCT t_xmin::text) AS xmins
  FROM generate_series(0, dp_pages('dp_on') - 1) blk,
       LATERAL heap_page_items(get_raw_page('dp_on', blk::int)) WHERE lp_flags = 1;

-- later batches: existing groups updated (found through the index), new groups inserted
INSERT INTO dp_src SELECT g % 25000, 'c' || (g % 7), 1 FROM generate_series(1, 30000, 3) g;
CALL cq.run('dp_on');
CALL cq.run('dp_ff');
SELECT mismatches('dp_on', 'TABLE dp_oracle') AS on_batch1, mismatches('dp_ff', 'TABLE dp_oracle') AS ff_batch1;
SELECT * FROM dp_check('dp_on');

-- rows too long for a page: their key goes to TOAST (incompressible text of ~10 kB)
CREATE TABLE dp_long (k int, t text, v int);
INSERT INTO dp_long SELECT g % 40, (SELECT string_agg(md5((g % 40)::text || i), '') FROM generate_series(1, 320) i), g
  FROM generate_series(1, 400) g;
SELECT cq.create_query('dp_toast', 'SELECT k, t, count(*) AS n, sum(v) AS s FROM dp_long GROUP BY k, t',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory') IS NOT NULL AS created;
CALL cq.run('dp_toast');
SELECT mismatches('dp_toast', 'SELECT k, t, count(*) AS n, sum(v) AS s FROM dp_long GROUP BY k, t') AS toast_batch0;
SELECT * FROM dp_check('dp_toast');
SELECT pg_relation_size(reltoastrelid) > 0 AS toasted FROM pg_class WHERE oid = 'dp_toast'::regclass;

-- the table path (unlogged state): its state and target loaded the same way
SELECT cq.create_query('dp_tab', pg_get_viewdef('dp_oracle'), output_mode => 'update',
                       "trigger" => 'available_now', state_storage => 'unlogged') IS NOT NULL AS created;
CALL cq.run('dp_tab');
SELECT mismatches('dp_tab', 'TABLE dp_oracle') AS tab_batch0;
SELECT * FROM dp_check('dp_tab');
INSERT INTO dp_src SELECT g % 30000, 'c' || (g % 5), 2 FROM generate_series(1, 9000) g;
CALL cq.run('dp_tab');
SELECT mismatches('dp_tab', 'TABLE dp_oracle') AS tab_batch1;

-- a batch 0 that fails during its load (NOT NULL on an output: the load
-- stops at the group with a NULL key, wherever it comes): nothing visible,
-- and the batch, retried after the fix, writes every row again
SELECT cq.create_query('dp_fail', 'SELECT c, k, count(*) AS n FROM dp_src GROUP BY c, k',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory') IS NOT NULL AS created;
INSERT INTO dp_src VALUES (NULL, 'c0', 1);
ALTER TABLE dp_fail ALTER COLUMN k SET NOT NULL;
DO $$
BEGIN
  BEGIN
    CALL cq.run('dp_fail');
  EXCEPTION WHEN not_null_violation THEN
    RAISE WARNING 'batch 0 failed: %', SQLERRM;
  END;
END $$;
SELECT count(*) AS visible_after_failure FROM dp_fail;
DELETE FROM dp_src WHERE k IS NULL;
SELECT cq.resume('dp_fail') IS NOT NULL AS resumed;
CALL cq.run('dp_fail');
SELECT mismatches('dp_fail', 'SELECT c, k, count(*) AS n FROM dp_src GROUP BY c, k') AS fail_retried;
SELECT * FROM dp_check('dp_fail');

-- the default (on): a target within the ring's pages goes through shared
-- buffers as before (free space recorded, no page written whole)
RESET cq.fold_direct_pages;
SHOW cq.fold_direct_pages;
SELECT cq.create_query('dp_small', pg_get_viewdef('dp_oracle'), output_mode => 'update',
                       "trigger" => 'available_now', state_storage => 'memory') IS NOT NULL AS created;
CALL cq.run('dp_small');
SELECT mismatches('dp_small', 'TABLE dp_oracle') AS small_batch0, pg_relation_size('dp_small', 'fsm') > 0 AS small_fsm;

SELECT cq.drop_query(n, drop_target => true) IS NOT NULL AS dropped
  FROM unnest(ARRAY['dp_on', 'dp_off', 'dp_ff', 'dp_ff_off', 'dp_toast', 'dp_tab', 'dp_fail', 'dp_small']) n;
DROP FUNCTION dp_check(regclass);
DROP FUNCTION dp_pages(regclass);
DROP VIEW dp_oracle;
DROP TABLE dp_src, dp_long;
DROP EXTENSION pageinspect;
DROP EXTENSION amcheck;
