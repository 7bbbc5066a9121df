-- A batch's security sections pin search_path = pg_catalog, pg_temp, and leave it as it was
-- set already when it is (security.c: a background process pins it for its life, and so
-- does a session that set exactly that path itself).  Either way: user code that SETs
-- search_path for its session inside a batch (here a target trigger) changes it for the
-- rest of that batch's section only -- not for the caller after its CALL cq.run, not for
-- the next batch a worker runs -- and every batch starts pinned.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SELECT pause_others() AS others_paused;

CREATE SCHEMA sp159;
CREATE SCHEMA sp159_evil;
CREATE TABLE sp159.src (k int, v int);
CREATE TABLE sp159.seen (n serial, path text);
-- records the path it runs under, then sets another one for the session (not SET LOCAL)
CREATE FUNCTION sp159.log_and_set() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO sp159.seen (path) VALUES (current_setting('search_path'));
  PERFORM pg_catalog.set_config('search_path', 'sp159_evil, public', false);
  RETURN NULL;
END $$;
SELECT cq.create_query('sp159.q', 'SELECT k, v FROM sp159.src',
                       output_mode => 'append', "trigger" => 'available_now');
CREATE TRIGGER log_and_set AFTER INSERT ON sp159.q
  FOR EACH STATEMENT EXECUTE FUNCTION sp159.log_and_set();

-- 1. in the caller's process, under the caller's own path: pinned in the batch, the
-- caller's path back after it
SET cq.run_in_worker = off;
SET search_path = sp159, public;
INSERT INTO sp159.src VALUES (1, 1);
CALL cq.run('sp159.q');
SHOW search_path;
-- 2. a caller whose path is the pinned one already: the trigger's SET ends with the batch
SET search_path = pg_catalog, pg_temp;
INSERT INTO sp159.src VALUES (2, 2);
CALL cq.run('sp159.q');
SHOW search_path;
INSERT INTO sp159.src VALUES (3, 3);
CALL cq.run('sp159.q');
SHOW search_path;
RESET search_path;
RESET cq.run_in_worker;

-- 3. background batches, one after the other in a worker: each starts pinned
SELECT cq.alter_query('sp159.q', "trigger" => '10 milliseconds');
INSERT INTO sp159.src VALUES (4, 4);
SELECT wait_until($$(SELECT count(*) FROM sp159.seen) = 4$$) AS batch_4;
INSERT INTO sp159.src VALUES (5, 5);
SELECT wait_until($$(SELECT count(*) FROM sp159.seen) = 5$$) AS batch_5;
INSERT INTO sp159.src VALUES (6, 6);
SELECT wait_until($$(SELECT count(*) FROM sp159.seen) = 6$$) AS batch_6;
SELECT cq.alter_query('sp159.q', "trigger" => 'available_now');

SELECT n, path FROM sp159.seen ORDER BY n;
SELECT k, v FROM sp159.q ORDER BY k;

SELECT cq.drop_query('sp159.q', drop_target => true);
DROP SCHEMA sp159 CASCADE;
DROP SCHEMA sp159_evil CASCADE;
