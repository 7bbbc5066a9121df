-- Session 33: the fixed per-batch costs of a small batch.
-- 1. The column numbers of cq.queries and of the directly written
--    cq.offsets/cq.progress rows are cached per backend (colmap.c) and
--    dropped when the table's relation cache entry is invalidated: a
--    column renamed and another of the same name added, in this very
--    transaction and after its rollback, is read and written by its new
--    number.
-- 2. A batch on the store whose changed groups all exist runs the
--    update-mode target statement without o1 (CqStoreSql.sink_existing):
--    the target stays exact, a row deleted by hand is written again, and
--    statement triggers on the target fire as they did with o1 (PostgreSQL
--    fires them once a query for each table and event: oi's INSERT fires
--    INSERT's).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET cq.run_in_worker = off;
SET TimeZone = 'UTC';

-- 1. column numbers cached across batches of one backend
CREATE TABLE fb_src (ts timestamptz, v int);
CREATE TABLE fb_day WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT date_trunc('day', ts) AS d, count(*) AS n FROM fb_src GROUP BY 1;
SELECT timezone FROM cq.queries WHERE name = 'fb_day';
INSERT INTO fb_src VALUES ('2026-01-01 12:00+00', 1);
CALL cq.run('fb_day');
INSERT INTO fb_src VALUES ('2026-01-03 02:00+00', 1);
BEGIN;
-- the query now runs in New York time: read through the new column
ALTER TABLE cq.queries RENAME COLUMN timezone TO timezone_old;
ALTER TABLE cq.queries ADD COLUMN timezone text NOT NULL DEFAULT 'America/New_York';
-- the offset row's state_rows: written into the new column
ALTER TABLE cq.offsets RENAME COLUMN state_rows TO state_rows_old;
ALTER TABLE cq.offsets ALTER COLUMN state_rows_old DROP NOT NULL;
ALTER TABLE cq.offsets ALTER COLUMN state_rows_old DROP DEFAULT;
ALTER TABLE cq.offsets ADD COLUMN state_rows bigint;
CALL cq.run('fb_day');
SELECT d, n FROM fb_day ORDER BY d;
SELECT batch_id, state_rows, state_rows_old FROM cq.offsets WHERE name = 'fb_day' ORDER BY batch_id;
ROLLBACK;
-- rolled back: the old columns again (UTC), by their numbers
INSERT INTO fb_src VALUES ('2026-01-05 02:00+00', 1);
CALL cq.run('fb_day');
SELECT d, n FROM fb_day ORDER BY d;
SELECT batch_id, state_rows FROM cq.offsets WHERE name = 'fb_day' ORDER BY batch_id;

-- 2. the target statement without o1
CREATE TABLE fb_src2 (k text, v int);
CREATE TABLE fb_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM fb_src2 GROUP BY k;
SELECT state_path FROM cq.queries WHERE name = 'fb_agg';
CREATE FUNCTION fb_check() RETURNS TABLE (target_rows bigint, differing bigint) LANGUAGE sql AS $$
  SELECT (SELECT count(*) FROM fb_agg),
         (SELECT count(*) FROM ((SELECT k, count(*), sum(v) FROM fb_src2 GROUP BY k EXCEPT SELECT k, n, s FROM fb_agg)
                                UNION ALL (SELECT k, n, s FROM fb_agg EXCEPT SELECT k, count(*), sum(v) FROM fb_src2 GROUP BY k)) x)
$$;
INSERT INTO fb_src2 VALUES ('a', 1), ('b', 2), (NULL, 3);
CALL cq.run('fb_agg');
SELECT * FROM fb_check();
-- existing groups only (the NULL key's among them)
INSERT INTO fb_src2 VALUES ('a', 10), (NULL, 30);
CALL cq.run('fb_agg');
SELECT * FROM fb_check();
-- a target row deleted by hand comes back when its group changes
DELETE FROM fb_agg WHERE k = 'b';
INSERT INTO fb_src2 VALUES ('b', 20);
CALL cq.run('fb_agg');
SELECT * FROM fb_check();
-- a new group next to existing ones: o1 again
INSERT INTO fb_src2 VALUES ('c', 5), ('a', 1);
CALL cq.run('fb_agg');
SELECT * FROM fb_check();
-- statement triggers: INSERT once (oi), UPDATE once (ou), as with o1
CREATE TABLE fb_fired (op text, n int DEFAULT 1);
CREATE FUNCTION fb_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.fb_fired (op) VALUES (TG_OP); RETURN NULL; END $$;
CREATE TRIGGER fb_stmt BEFORE INSERT OR UPDATE ON fb_agg FOR EACH STATEMENT EXECUTE FUNCTION fb_note();
INSERT INTO fb_src2 VALUES ('a', 100);
CALL cq.run('fb_agg');
SELECT * FROM fb_check();
SELECT op, count(*) FROM fb_fired GROUP BY op ORDER BY op;
-- and the same with a new group (o1's INSERT and oi's: still once)
DELETE FROM fb_fired;
INSERT INTO fb_src2 VALUES ('d', 1);
CALL cq.run('fb_agg');
SELECT * FROM fb_check();
SELECT op, count(*) FROM fb_fired GROUP BY op ORDER BY op;
DROP TRIGGER fb_stmt ON fb_agg;
DELETE FROM fb_fired;
INSERT INTO fb_src2 VALUES ('c', 100);
CALL cq.run('fb_agg');
SELECT * FROM fb_check();
SELECT count(*) AS fired FROM fb_fired;

DROP TABLE fb_agg, fb_day;
DROP TABLE fb_src, fb_src2, fb_fired;
DROP FUNCTION fb_check(), fb_note();
