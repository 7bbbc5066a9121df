-- Issue 9 items 6 and 25: pg_cq changes a table only with its owner's rights, runs the
-- source owner's code (a restored query rewriting the source) with a pinned search_path,
-- and checks at creation what every batch will need: a permanent target, and SELECT on
-- the source's cq_xid and event-time columns (not only on the columns the query names).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE ROLE regress_cq12_owner;
CREATE ROLE regress_cq12_reader;
GRANT CREATE ON SCHEMA public TO regress_cq12_owner, regress_cq12_reader;

-- item 6: a role with only SELECT on another role's table that has a cq_xid xid8 column
-- cannot have pg_cq add anything to it
SET ROLE regress_cq12_owner;
CREATE TABLE rt_src (k int, cq_xid xid8);
INSERT INTO rt_src (k) VALUES (1), (2);
GRANT SELECT ON rt_src TO regress_cq12_reader;
RESET ROLE;
SET ROLE regress_cq12_reader;
CREATE TABLE rt_steal WITH (cq.trigger = 'available_now') AS SELECT k FROM rt_src;
SELECT cq.create_query('rt_steal', 'SELECT k FROM rt_src', "trigger" => 'available_now');
RESET ROLE;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'rt_src'::regclass;
SELECT count(*) AS queries FROM cq.queries WHERE source = 'rt_src'::regclass;

-- the owner tracks it by creating the first query; then a reader needs nothing new
SET ROLE regress_cq12_owner;
CREATE TABLE rt_own WITH (cq.trigger = 'available_now') AS SELECT k FROM rt_src;
RESET ROLE;
SET ROLE regress_cq12_reader;
CREATE TABLE rt_read_too WITH (cq.trigger = 'available_now') AS SELECT k FROM rt_src;
RESET ROLE;

-- item 6: a query that belongs to another cluster (as after a restore) starts over: it
-- makes the source's rows history as the source's owner, whose trigger records whose
-- rights and which search_path its code runs with: the owner's, and a pinned one
SET ROLE regress_cq12_owner;
CREATE TABLE rt_src2 (k int);
CREATE TABLE rt_own2 WITH (cq.trigger = 'available_now') AS SELECT k FROM rt_src2;
GRANT SELECT ON rt_src2 TO regress_cq12_reader;
CREATE TABLE rt_log (who text, path text);
CREATE FUNCTION rt_log_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.rt_log VALUES (current_user, current_setting('search_path'));
  RETURN NEW;
END $$;
CREATE TRIGGER rt_on_update AFTER UPDATE ON rt_src2 FOR EACH ROW EXECUTE FUNCTION rt_log_update();
INSERT INTO rt_src2 (k) VALUES (1), (2);
RESET ROLE;
SET ROLE regress_cq12_reader;
CREATE TABLE rt_read WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM rt_src2 GROUP BY k;
RESET ROLE;
SET ROLE regress_cq12_owner;
INSERT INTO rt_src2 (k) VALUES (3);
RESET ROLE;
UPDATE cq.queries SET cluster_id = 'another cluster' WHERE name = 'rt_read';
CREATE SCHEMA regress_cq12_hostile;
SET ROLE regress_cq12_reader;
SET search_path = regress_cq12_hostile, public;
CALL cq.run('rt_read');
RESET search_path;
SELECT * FROM rt_read ORDER BY k;
RESET ROLE;
SELECT who, path, count(*) FROM rt_log GROUP BY 1, 2;
SELECT count(*) AS stamped FROM rt_src2 WHERE cq_xid IS NOT NULL;

-- item 25: a temporary target, existing or to be created, is refused as in CREATE TABLE AS
CREATE TABLE rt_any (k int, ts timestamptz, secret int);
CREATE TEMP TABLE rt_tmp_target (k int);
SELECT cq.create_query('rt_tmp', 'SELECT k FROM rt_any', target => 'rt_tmp_target', "trigger" => 'available_now');
SELECT cq.create_query('rt_tmp', 'SELECT k FROM rt_any', target => 'pg_temp.rt_tmp_new', "trigger" => 'available_now');
SELECT count(*) AS queries FROM cq.queries WHERE name = 'rt_tmp';

-- item 25: column privileges.  Batches read cq_xid and the event-time column too.
CREATE TABLE rt_any_track WITH (cq.trigger = 'available_now') AS SELECT k FROM rt_any;
GRANT SELECT (k) ON rt_any TO regress_cq12_reader;
SET ROLE regress_cq12_reader;
SELECT cq.create_query('rt_cols', 'SELECT k FROM rt_any', "trigger" => 'available_now');
RESET ROLE;
GRANT SELECT (cq_xid) ON rt_any TO regress_cq12_reader;
SET ROLE regress_cq12_reader;
SELECT cq.create_query('rt_cols', 'SELECT k, count(*) AS n FROM rt_any GROUP BY k', 'update',
                       "trigger" => 'available_now', event_time => 'ts', watermark => '1 minute');
RESET ROLE;
GRANT SELECT (ts) ON rt_any TO regress_cq12_reader;
SET ROLE regress_cq12_reader;
SELECT cq.create_query('rt_cols', 'SELECT k, count(*) AS n FROM rt_any GROUP BY k', 'update',
                       "trigger" => 'available_now', event_time => 'ts', watermark => '1 minute');
-- changing the query later is checked the same way
SELECT cq.alter_query('rt_cols', query => 'SELECT k, count(*) AS n FROM rt_any WHERE secret > 0 GROUP BY k');
RESET ROLE;
INSERT INTO rt_any VALUES (1, now(), 0);
SET ROLE regress_cq12_reader;
CALL cq.run('rt_cols');
SELECT * FROM rt_cols;
RESET ROLE;

DROP TABLE IF EXISTS rt_steal;
DROP TABLE rt_own, rt_read_too, rt_own2, rt_read, rt_src, rt_src2, rt_log, rt_cols, rt_any_track, rt_any;
DROP FUNCTION rt_log_update();
DROP SCHEMA regress_cq12_hostile;
REVOKE CREATE ON SCHEMA public FROM regress_cq12_owner, regress_cq12_reader;
DROP ROLE regress_cq12_owner, regress_cq12_reader;
