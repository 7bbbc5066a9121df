-- A poll or call that finds nothing new runs no batch (SPEC §5: "no new data and no
-- watermark change = no batch"): nothing is recorded, and the target is not written at
-- all, which a statement-level trigger on the target would show (PostgreSQL fires those
-- for a statement that writes no row).  Before session 28 a query whose main statement
-- counts its rows itself (a single scan: no WHERE, no join, no LATERAL) ran it over the
-- empty range whenever any transaction had committed since its last batch, and the
-- user's trigger fired on every such poll.  The no-data batch that an advanced watermark
-- calls for still runs, and writes the target.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET timezone = 'UTC';

CREATE TABLE ep_src (k int, ts timestamptz, v int);
CREATE TABLE ep_other (x int);
CREATE TABLE ep_fires (tgt text, op text);
CREATE FUNCTION ep_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.ep_fires VALUES (TG_TABLE_NAME, TG_OP);
  RETURN NULL;
END $$;

-- single scans: an update-mode aggregation with its state in a table, a stateless
-- append, an update-mode aggregation on event time (a no-data batch can be due)
SELECT cq.create_query('ep_upd', 'SELECT k, count(*) AS n, sum(v) AS s FROM ep_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'unlogged');
SELECT cq.create_query('ep_app', 'SELECT k, v FROM ep_src', output_mode => 'append',
                       "trigger" => 'available_now');
SELECT cq.create_query('ep_wupd', 'SELECT date_trunc(''minute'', ts) AS m, count(*) AS n FROM ep_src GROUP BY 1',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'unlogged',
                       event_time => 'ts', watermark => '5 minutes');
-- and, for comparison, paths that counted first already: the store, complete mode, a
-- filter, an append-mode window (LATERAL)
SELECT cq.create_query('ep_mem', 'SELECT k, count(*) AS n FROM ep_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory');
SELECT cq.create_query('ep_cmp', 'SELECT k, count(*) AS n FROM ep_src GROUP BY k',
                       output_mode => 'complete', "trigger" => 'available_now');
SELECT cq.create_query('ep_filt', 'SELECT k, v FROM ep_src WHERE v > 0', output_mode => 'append',
                       "trigger" => 'available_now');
SELECT cq.create_query('ep_wapp', 'SELECT w.window_start, k, count(*) AS n FROM ep_src, LATERAL cq.window(ts, ''10 minutes'') AS w GROUP BY w.window_start, k',
                       output_mode => 'append', "trigger" => 'available_now',
                       event_time => 'ts', watermark => '5 minutes');
SELECT format('CREATE TRIGGER ep_n AFTER INSERT OR UPDATE OR DELETE ON %I FOR EACH STATEMENT EXECUTE FUNCTION ep_note()', t)
  FROM unnest(ARRAY['ep_upd', 'ep_app', 'ep_wupd', 'ep_mem', 'ep_cmp', 'ep_filt', 'ep_wapp']) t \gexec

CREATE PROCEDURE ep_run_all() LANGUAGE plpgsql AS $$
BEGIN
  CALL cq.run('ep_upd'); CALL cq.run('ep_app'); CALL cq.run('ep_wupd'); CALL cq.run('ep_mem');
  CALL cq.run('ep_cmp'); CALL cq.run('ep_filt'); CALL cq.run('ep_wapp');
END $$;
-- batches recorded so far, per query
CREATE VIEW ep_batches AS
  SELECT q.name, count(o.batch_id) AS batches, max(o.batch_id) AS last_batch,
         (SELECT count(*) FROM cq.progress p WHERE p.name = q.name) AS progress_rows
    FROM cq.queries q LEFT JOIN cq.offsets o USING (schema, name)
   WHERE q.name LIKE 'ep\_%' GROUP BY q.name ORDER BY q.name;

-- data: every query runs a batch; the event-time ones then a no-data batch (W moved)
INSERT INTO ep_src VALUES (1, '2024-01-01 12:01', 1), (2, '2024-01-01 12:21', 2);
CALL ep_run_all();
SELECT tgt, op, count(*) FROM ep_fires GROUP BY 1, 2 ORDER BY 1, 2;
SELECT * FROM ep_batches;

-- nothing new, though other transactions committed (the snapshot moved): no batch,
-- no trigger fired, nothing recorded
TRUNCATE ep_fires;
INSERT INTO ep_other VALUES (1);
CALL ep_run_all();
INSERT INTO ep_other VALUES (2);
CALL ep_run_all();
CALL ep_run_all();
SELECT tgt, op, count(*) FROM ep_fires GROUP BY 1, 2 ORDER BY 1, 2;
SELECT * FROM ep_batches;
SELECT count(*) FROM cq.queries WHERE name LIKE 'ep\_%' AND state <> 'active';

-- a row that moves the watermark: a data batch, then for the event-time queries the
-- no-data batch, which writes the target (append emits the closed window; update
-- evicts and writes nothing, but runs its statement)
INSERT INTO ep_src VALUES (3, '2024-01-01 12:40', 3);
CALL ep_run_all();
SELECT tgt, op, count(*) FROM ep_fires GROUP BY 1, 2 ORDER BY 1, 2;
SELECT * FROM ep_batches;
SELECT name, batch_id, num_input_rows FROM cq.progress
 WHERE name IN ('ep_wupd', 'ep_wapp') ORDER BY name, batch_id;
SELECT * FROM ep_wapp ORDER BY window_start, k;

-- and idle again
TRUNCATE ep_fires;
INSERT INTO ep_other VALUES (3);
CALL ep_run_all();
CALL ep_run_all();
SELECT tgt, op, count(*) FROM ep_fires GROUP BY 1, 2 ORDER BY 1, 2;
SELECT * FROM ep_batches;

-- the same inside a transaction block (batches share the caller's transaction)
BEGIN;
CALL ep_run_all();
SELECT count(*) FROM ep_fires;
COMMIT;

-- a trigger added to a target that had none is seen by the next call
DROP TRIGGER ep_n ON ep_upd;
INSERT INTO ep_other VALUES (4);
CALL cq.run('ep_upd');
CREATE TRIGGER ep_n2 BEFORE UPDATE ON ep_upd FOR EACH STATEMENT EXECUTE FUNCTION ep_note();
INSERT INTO ep_other VALUES (5);
CALL cq.run('ep_upd');
SELECT count(*) FROM ep_fires;
INSERT INTO ep_src VALUES (1, '2024-01-01 12:41', 10);
CALL cq.run('ep_upd');
SELECT tgt, op, count(*) FROM ep_fires GROUP BY 1, 2 ORDER BY 1, 2;
SELECT * FROM ep_upd ORDER BY k;

DROP PROCEDURE ep_run_all();
DROP VIEW ep_batches;
SELECT cq.drop_query(name, drop_target => true) FROM cq.queries WHERE name LIKE 'ep\_%' ORDER BY name;
DROP TABLE ep_src, ep_other, ep_fires;
DROP FUNCTION ep_note();
