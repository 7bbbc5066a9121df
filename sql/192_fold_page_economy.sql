-- cq.fold_page_economy (session 40, issue 12 goal 2): batch 0 of an update query on
-- the store loads its target into shared buffers of its own for as many blocks as it
-- reads back at its end (an eighth of shared_buffers), then through COPY's ring, and
-- maps the store's new pages in bulk (src/prefault.c).  Same rows and the same valid
-- index either way, for a target larger than that budget (the load switches to the
-- ring in the middle), in batch 0 and in the batch after it.  The load in buffers
-- pairs with the read-back of the target's heap, cq.batch0_read_back (off by
-- default since session 41; sql/200): on here.
SET client_min_messages = warning;
SET cq.batch0_read_back = on;
CREATE EXTENSION IF NOT EXISTS pg_cq;
CREATE EXTENSION IF NOT EXISTS amcheck;
\i sql/include/helpers.sql

CREATE TABLE pe_src (k int, pad text, v numeric);
-- ~79,000 groups of wide rows (a 200-byte key: the target's ~280-byte rows take more
-- than the 2,048 blocks the test cluster's 128MB of shared buffers gives the read-back)
INSERT INTO pe_src SELECT g % 70000, repeat('p', 199) || (g % 3 = 0)::int, g % 97
  FROM generate_series(1, 84000) g;
CREATE VIEW pe_oracle AS
  SELECT k, pad, count(*) AS n, sum(v) AS s, avg(v) AS a, max(v) AS m FROM pe_src GROUP BY k, pad;
SELECT cq.create_query(q, pg_get_viewdef('pe_oracle'), output_mode => 'update',
                       "trigger" => 'available_now', state_storage => 'memory')
  FROM unnest('{pe_on,pe_off}'::text[]) q;
CREATE FUNCTION pe_check(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  PERFORM bt_index_check(i.indexrelid, true) FROM pg_index i WHERE i.indrelid = q::regclass;
  EXECUTE format('SELECT count(*) FROM %s', q::regclass) INTO n;
  RETURN n;
END $$;

SET cq.fold_page_economy = on;
CALL cq.run('pe_on');
SET cq.fold_page_economy = off;
CALL cq.run('pe_off');
RESET cq.fold_page_economy;
-- the target outgrew the blocks batch 0 reads back: the load switched to the ring
SELECT pg_relation_size('pe_on') / 8192 >
       (SELECT setting::bigint / 8 FROM pg_settings WHERE name = 'shared_buffers') AS past_budget;
SELECT mismatches('pe_on', 'TABLE pe_oracle') AS on_batch0, mismatches('pe_off', 'TABLE pe_oracle') AS off_batch0;
SELECT count(*) AS groups FROM pe_oracle;
SELECT pe_check('pe_on') = (SELECT count(*) FROM pe_oracle) AS on_index_ok,
       pe_check('pe_off') = (SELECT count(*) FROM pe_oracle) AS off_index_ok;
SELECT a.state_rows = (SELECT count(*) FROM pe_oracle) AS every_group, a.state_rows = b.state_rows AS same_rows,
       a.state_bytes = b.state_bytes AS same_bytes
  FROM cq.state_store_info('pe_on') a, cq.state_store_info('pe_off') b;

-- the next batch: existing groups changed, new ones added
INSERT INTO pe_src SELECT g * 7 % 90000, repeat('p', 199) || '1', g FROM generate_series(1, 8000) g;
CALL cq.run('pe_on');
CALL cq.run('pe_off');
SELECT mismatches('pe_on', 'TABLE pe_oracle') AS on_batch1, mismatches('pe_off', 'TABLE pe_oracle') AS off_batch1;
SELECT pe_check('pe_on') = (SELECT count(*) FROM pe_oracle) AS on_index_ok1,
       pe_check('pe_off') = (SELECT count(*) FROM pe_oracle) AS off_index_ok1;

SELECT cq.drop_query(q, drop_target => true) FROM unnest('{pe_on,pe_off}'::text[]) q;
DROP VIEW pe_oracle;
DROP TABLE pe_src;
DROP FUNCTION pe_check(text);
DROP EXTENSION amcheck;
RESET cq.batch0_read_back;
