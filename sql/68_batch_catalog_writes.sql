-- Issue 12 goals 5-6: a batch locks its query's row through the unique
-- index on id (a tuple lock, no statement) and writes its cq.offsets and
-- cq.progress rows directly (no statement, no foreign-key check: the row
-- lock stands for it).  What they do must not change: the last 100 batches
-- are kept, a duplicate batch id fails as before, and tables that are not
-- as pg_cq made them (here: a trigger on cq.progress) get the statement.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE TABLE cw_src (k int, v int);
SELECT cq.create_query('cw_q', 'SELECT k, count(*) AS n, sum(v) AS s FROM cw_src GROUP BY k',
                       output_mode => 'update', max_rows_per_trigger => 1,
                       "trigger" => 'available_now');

-- cq.queries is read once per batch (the locked read by id); the record
-- checks no foreign key (each check scanned cq.queries again)
CREATE FUNCTION cw_queries_scans() RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(pg_catalog.pg_stat_get_xact_numscans(c.oid))::bigint
    FROM pg_catalog.pg_class c
   WHERE c.oid = 'cq.queries'::regclass
      OR c.oid IN (SELECT indexrelid FROM pg_catalog.pg_index WHERE indrelid = 'cq.queries'::regclass)
$$;
DO $$ BEGIN FOR i IN 1 .. 5 LOOP
  INSERT INTO cw_src VALUES (i % 2, i);
  COMMIT;
END LOOP; END $$;
BEGIN;
SELECT cw_queries_scans() AS before \gset
CALL cq.run('cw_q');
SELECT count(*) AS batches FROM cq.offsets WHERE name = 'cw_q';
SELECT cw_queries_scans() - :before AS scans1 \gset
COMMIT;
-- the same again, five batches more: an invalidation that arrives during
-- a run (any relation's relcache entry, e.g. autovacuum's statistics of a
-- table of another test in this database) makes the next batch rebuild
-- its plan, which reads cq.queries once more; of two runs one is clean
DO $$ BEGIN FOR i IN 6 .. 10 LOOP
  INSERT INTO cw_src VALUES (i % 2, i);
  COMMIT;
END LOOP; END $$;
BEGIN;
SELECT cw_queries_scans() AS before \gset
CALL cq.run('cw_q');
SELECT cw_queries_scans() - :before AS scans2 \gset
COMMIT;
-- 7 (17 with a statement and two foreign-key checks per batch; 9 when
-- batch 0, a sweeping batch, still recorded through the statement): the
-- name look-up of CALL cq.run, one read per batch and the last with nothing new
SELECT least(:scans1, :scans2) AS queries_scans;

-- 205 batches of one row: the last 100 are kept in both tables, the
-- oldest trimmed by exact key and, every 100 batches, by the full sweep
DO $$ BEGIN FOR i IN 11 .. 205 LOOP
  INSERT INTO cw_src VALUES (i % 2, i);
  COMMIT;
END LOOP; END $$;
CALL cq.run('cw_q');
SELECT count(*), min(batch_id), max(batch_id) FROM cq.offsets WHERE name = 'cw_q';
SELECT count(*), min(batch_id), max(batch_id) FROM cq.progress WHERE name = 'cw_q';
SELECT count(*) AS differences FROM
  ((TABLE cw_q EXCEPT ALL SELECT k, count(*), sum(v) FROM cw_src GROUP BY k)
   UNION ALL (SELECT k, count(*), sum(v) FROM cw_src GROUP BY k EXCEPT ALL TABLE cw_q)) d;
-- the rows read back as written
SELECT p.num_input_rows, p.num_state_rows_total, p.num_output_rows, p.durations ? 'addBatch' AS durations,
       p.run_id = q.run_id AS run_id, p.start_offset::text = o.start_offset::text AS same_start,
       p.end_offset::text = o.end_offset::text AS same_end, o.state_rows
  FROM cq.progress p JOIN cq.offsets o USING (schema, name, batch_id) JOIN cq.queries q USING (schema, name)
 WHERE name = 'cw_q' AND batch_id = 204;

-- a row a batch would write already there: the same error as the statement's,
-- and the batch changes nothing
INSERT INTO cq.progress (schema, name, batch_id, run_id, started_at, duration_ms, durations,
    num_input_rows, num_state_rows_total, num_state_rows_updated, num_state_rows_removed,
    num_rows_dropped_by_watermark, num_output_rows, start_offset, end_offset)
  VALUES ('public', 'cw_q', 205, gen_random_uuid(), now(), 0, '{}', 0, 0, 0, 0, 0, 0, '1:1:', '1:1:');
INSERT INTO cw_src VALUES (1, 206);
CALL cq.run('cw_q');
SELECT max(batch_id) FROM cq.offsets WHERE name = 'cw_q';
DELETE FROM cq.progress WHERE name = 'cw_q' AND batch_id = 205;
CALL cq.run('cw_q');
SELECT max(batch_id) FROM cq.offsets WHERE name = 'cw_q';
SELECT max(batch_id) FROM cq.progress WHERE name = 'cw_q';

-- a trigger on cq.progress: batches write through the statement, which fires it
CREATE TABLE cw_seen (batch_id bigint);
CREATE FUNCTION cw_seen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.cw_seen VALUES (NEW.batch_id); RETURN NEW; END $$;
CREATE TRIGGER cw_seen AFTER INSERT ON cq.progress FOR EACH ROW EXECUTE FUNCTION cw_seen();
INSERT INTO cw_src VALUES (0, 207), (1, 208);
CALL cq.run('cw_q');
SELECT * FROM cw_seen ORDER BY batch_id;
DROP TRIGGER cw_seen ON cq.progress;
SELECT count(*), min(batch_id), max(batch_id) FROM cq.progress WHERE name = 'cw_q';

-- a dropped query's rows go with it (the foreign keys' cascade)
SELECT cq.drop_query('cw_q', drop_target => true);
SELECT count(*) FROM cq.offsets WHERE name = 'cw_q';
SELECT count(*) FROM cq.progress WHERE name = 'cw_q';
DROP TABLE cw_src, cw_seen;
DROP FUNCTION cw_seen(), cw_queries_scans();
