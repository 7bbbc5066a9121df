-- Complete mode on the store: the reload statement reads every state row
-- from a tuplestore (cq_all, spilled to a temporary file beyond work_mem).
-- An error in the reload (here a trigger on the target) aborts the batch;
-- the next batches of the same session make their own and end it, the
-- target then exact.  Session 29: the tuplestore is the caller's (it was
-- also kept in a static pointer that an error left pointing to freed
-- memory; never read before being set again, so this passed before too).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
\i sql/include/helpers.sql
\set oracle 'SELECT k, count(*) AS n, sum(x) AS sx FROM rf_src GROUP BY k'
CREATE TABLE rf_src (k int, x int);
INSERT INTO rf_src SELECT g % 5000, g FROM generate_series(1, 20000) g;
SELECT cq.create_query('rf_q', :'oracle', output_mode => 'complete', "trigger" => 'available_now',
                       starting => 'earliest');
SELECT state_path FROM cq.queries WHERE name = 'rf_q';
CREATE TABLE rf_fail (k int);
CREATE FUNCTION rf_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT FROM public.rf_fail WHERE k = NEW.k) THEN
    RAISE EXCEPTION 'rf: row % refused', NEW.k;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER rf_refuse BEFORE INSERT ON rf_q FOR EACH ROW EXECUTE FUNCTION rf_refuse();
SET work_mem = '64kB';
\set VERBOSITY terse
-- batch 0 refused twice in this session, then run
INSERT INTO rf_fail VALUES (4000);
CALL cq.run('rf_q');
CALL cq.run('rf_q');
SELECT batch_id, state_rows FROM cq.state_store_info('rf_q');
DELETE FROM rf_fail;
CALL cq.run('rf_q');
SELECT batch_id, state_rows FROM cq.state_store_info('rf_q');
SELECT mismatches('rf_q', :'oracle');
-- batch 1 refused (the store keeps batch 0), then run twice
INSERT INTO rf_src SELECT g % 6000, g FROM generate_series(1, 6000) g;
INSERT INTO rf_fail VALUES (5500);
CALL cq.run('rf_q');
SELECT batch_id, state_rows FROM cq.state_store_info('rf_q');
DELETE FROM rf_fail;
CALL cq.run('rf_q');
INSERT INTO rf_src VALUES (1, 1);
CALL cq.run('rf_q');
SELECT batch_id, state_rows FROM cq.state_store_info('rf_q');
SELECT mismatches('rf_q', :'oracle');
\set VERBOSITY default
RESET work_mem;
SELECT cq.drop_query('rf_q', drop_target => true);
DROP TABLE rf_src, rf_fail;
DROP FUNCTION rf_refuse();
