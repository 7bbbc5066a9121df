-- cq.batch0_read_back (session 41, issue 12 goal 2): batch 0 over history of
-- an update query reads its target's heap back into shared buffers at its
-- end (on; rowload.c, cq_rowload_cache), or leaves it (off, the default: its
-- rows went through COPY's ring, and the next batches read the pages they
-- update from the operating system); the target's index is read back either
-- way.  Same rows and the same valid index either way, in batch 0 and in the
-- batches after it, on the store and on the table path.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
CREATE EXTENSION IF NOT EXISTS amcheck;
\i sql/include/helpers.sql
-- the batches run in this session, whose statistics are read below
SET cq.run_in_worker = off;

CREATE TABLE rb_src (k int, pad text, v numeric);
INSERT INTO rb_src SELECT g % 9000, repeat('p', 60) || (g % 3 = 0)::int, g % 97
  FROM generate_series(1, 12000) g;
CREATE VIEW rb_oracle AS
  SELECT k, pad, count(*) AS n, sum(v) AS s, avg(v) AS a, max(v) AS m FROM rb_src GROUP BY k, pad;
SELECT cq.create_query(q, pg_get_viewdef('rb_oracle'), output_mode => 'update', "trigger" => 'available_now',
                       state_storage => CASE WHEN q LIKE '%tab%' THEN 'unlogged' ELSE 'memory' END)
  FROM unnest('{rb_on,rb_off,rb_tab_on,rb_tab_off}'::text[]) q;
-- blocks of the target's heap fetched through shared buffers (hits and reads)
CREATE FUNCTION rb_fetched(q text) RETURNS bigint LANGUAGE sql AS
  $$ SELECT pg_stat_get_blocks_fetched(q::regclass) $$;

SHOW cq.batch0_read_back;
CALL cq.run('rb_off');
SET cq.batch0_read_back = on;
CALL cq.run('rb_on');
CALL cq.run('rb_tab_on');
RESET cq.batch0_read_back;
CALL cq.run('rb_tab_off');
SELECT pg_stat_force_next_flush();
SELECT mismatches(q, 'TABLE rb_oracle') AS batch0_mismatches, checked_rows(q::regclass) = (SELECT count(*) FROM rb_oracle) AS index_ok
  FROM unnest('{rb_on,rb_off,rb_tab_on,rb_tab_off}'::text[]) q;
-- on read the target's heap back once more than off: each of its blocks
SELECT (SELECT rb_fetched('rb_on')) - (SELECT rb_fetched('rb_off'))
       = pg_relation_size('rb_on') / current_setting('block_size')::int AS store_read_back,
       (SELECT rb_fetched('rb_tab_on')) - (SELECT rb_fetched('rb_tab_off'))
       = pg_relation_size('rb_tab_on') / current_setting('block_size')::int AS table_read_back,
       pg_relation_size('rb_on') = pg_relation_size('rb_off') AS same_size;

-- the next batches: existing groups changed, new ones added
INSERT INTO rb_src SELECT g * 7 % 11000, repeat('p', 60) || '1', g FROM generate_series(1, 3000) g;
CALL cq.run('rb_on');
CALL cq.run('rb_off');
CALL cq.run('rb_tab_on');
CALL cq.run('rb_tab_off');
INSERT INTO rb_src SELECT g * 13 % 12000, repeat('p', 60) || '0', g FROM generate_series(1, 2000) g;
CALL cq.run('rb_on');
CALL cq.run('rb_off');
CALL cq.run('rb_tab_on');
CALL cq.run('rb_tab_off');
SELECT mismatches(q, 'TABLE rb_oracle') AS later_mismatches, checked_rows(q::regclass) = (SELECT count(*) FROM rb_oracle) AS index_ok
  FROM unnest('{rb_on,rb_off,rb_tab_on,rb_tab_off}'::text[]) q;

SELECT cq.drop_query(q, drop_target => true) FROM unnest('{rb_on,rb_off,rb_tab_on,rb_tab_off}'::text[]) q;
DROP VIEW rb_oracle;
DROP TABLE rb_src;
DROP FUNCTION rb_fetched(text);
DROP EXTENSION amcheck;
