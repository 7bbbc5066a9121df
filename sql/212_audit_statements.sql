-- Adversarial audit of statements around queries (session 42).
-- 1. CREATE TABLE t (a, b) WITH (cq.*) AS SELECT ...: core names t's columns
-- after the list, but the query kept its own output names, so batch 0 failed
-- with "column "k" of relation "t" does not exist" and an INSERT of pg_cq's
-- in the context (every later batch likewise).  The names given are now the
-- query's output names (cq.queries.query shows them as AS aliases).
-- 2. Read-only transactions.  CALL cq.run in one ran a batch of a query on
-- the shared-memory store (its target and offsets written from C, which
-- no read-only check reaches) and failed any other batch on its first
-- statement, then again on recording the failure (an UPDATE of cq.queries
-- in the message); the other functions failed with their internal SQL in
-- the context.  Now each refuses first, as core's commands do (25006).  A
-- database whose default_transaction_read_only is on kept its workers'
-- batches from writing the same way (queries on the store wrote, the others
-- failed at every poll without recording it); workers now run read-write,
-- as they run READ COMMITTED whatever the defaults.
-- 3. CALL cq.run twice in one transaction (a DO block, a procedure): a call
-- that found nothing new (the rows the block inserted are not committed
-- yet) left the query's shared-memory overlay opened at the level of its
-- internal subtransaction, and the next call, in a subtransaction of its
-- own, was refused ("cannot run another batch ... in this subtransaction"),
-- the query left 'failed'.  A level now takes over an overlay no batch was
-- folded into; one that holds a batch stays refused at another level.
-- 4. cq.reset and CALL cq.run in one transaction after an earlier call: the
-- reset query's batch 0 reused the overlay the earlier call had opened (the
-- store as it was before the reset) and folded every row into it again:
-- the published store counted each row twice from then on.  cq.reset now
-- drops the transaction's overlay of the query.
-- 5. cq.run from code a batch runs, for the same query (a trigger on its
-- target, a function its query calls): the batch ran again inside itself,
-- reading the same rows, until the outer one failed on its offset's key
-- ("duplicate key value violates unique constraint offsets_pkey") or the
-- recursion ended in XX000 "scan settings nested too deeply".  Refused now
-- (55006); another query's batch from there runs as before, at most 7
-- levels deep: deeper raised XX000 "pg_cq: scan settings nested too deeply",
-- now 54001 with the limit.
-- 6. PREPARE TRANSACTION after a CALL cq.run that found nothing new was
-- refused as if the call had run a batch ("cannot prepare a transaction
-- that ran a batch of a continuous query with state_storage 'memory'": its
-- overlay was open); an overlay no batch was folded into is dropped first.
-- One that holds a batch still refuses (its store is published at COMMIT).
-- 7. A DO block or procedure that wrote (created, reset, paused or resumed
-- the query) and then called cq.run handed the batches to a pool worker,
-- which could not see what it wrote ("continuous query ... does not exist")
-- or waited for the query's row lock the caller held, while the caller
-- waited for it: the call hung.  Such a caller runs its batches itself.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
CREATE SCHEMA au212;
SET search_path = au212, public;

CREATE TABLE src (k int, v int);
INSERT INTO src VALUES (1, 1), (1, 2), (NULL, 3);
-- every output named
CREATE TABLE named ("Key", n) WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) FROM src GROUP BY k;
-- the first ones only
CREATE TABLE first_only (total) WITH (cq.trigger = 'available_now', cq.output_mode = 'complete')
  AS SELECT sum(v), k FROM src GROUP BY k;
CREATE TABLE rows_a (a) WITH (cq.trigger = 'available_now') AS SELECT k, v FROM src;
-- too many names: core's error, nothing registered
\set VERBOSITY terse
CREATE TABLE too_many (a, b, c) WITH (cq.trigger = 'available_now') AS SELECT k, v FROM src;
SELECT attname FROM pg_attribute WHERE attrelid = 'named'::regclass AND attnum > 0 ORDER BY attnum;
SELECT attname FROM pg_attribute WHERE attrelid = 'first_only'::regclass AND attnum > 0 ORDER BY attnum;
SELECT query FROM cq.queries WHERE schema = 'au212' AND name = 'named';

INSERT INTO src VALUES (1, 1), (2, 2);
CALL cq.run('named');
CALL cq.run('first_only');
CALL cq.run('rows_a');
SELECT name, state, last_error FROM cq.queries WHERE schema = 'au212' ORDER BY name;
SELECT mismatches('named', 'SELECT k, count(*) FROM au212.src GROUP BY k') AS named_mismatches,
       mismatches('first_only', 'SELECT sum(v), k FROM au212.src GROUP BY k') AS first_only_mismatches,
       mismatches('rows_a', 'SELECT k, v FROM au212.src') AS rows_a_mismatches;
-- a changed query names the outputs as the target's columns
SELECT cq.alter_query('au212.named', query => 'SELECT k AS "Key", count(*) AS n FROM au212.src WHERE v > 0 GROUP BY k');

-- 2. read-only transactions
CREATE TABLE ro_mem WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM src GROUP BY k;
CREATE TABLE ro_tab WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.state_storage = 'unlogged')
  AS SELECT k, count(*) AS n FROM src GROUP BY k;
INSERT INTO src VALUES (3, 3);
SELECT fingerprint('ro_mem') AS ro_mem_before, fingerprint('ro_tab') AS ro_tab_before \gset
SET default_transaction_read_only = on;
CALL cq.run('ro_mem');
CALL cq.run('ro_tab');
SET cq.run_in_worker = off;
CALL cq.run('ro_mem');
SELECT cq.pause('ro_mem');
SELECT cq.resume('ro_mem');
SELECT cq.reset('ro_mem');
SELECT cq.alter_query('ro_mem', trigger => '1 minute');
SELECT cq.drop_query('ro_mem');
SELECT cq.create_query('ro_new', 'SELECT k FROM au212.src');
ALTER TABLE ro_mem SET (cq.trigger = '1 minute');
RESET default_transaction_read_only;
BEGIN READ ONLY;
CALL cq.run('ro_tab');
ROLLBACK;
RESET cq.run_in_worker;
SELECT fingerprint('ro_mem') = :'ro_mem_before' AS ro_mem_unchanged,
       fingerprint('ro_tab') = :'ro_tab_before' AS ro_tab_unchanged;
SELECT name, state, last_error FROM cq.queries WHERE schema = 'au212' AND name LIKE 'ro%' ORDER BY name;
CALL cq.run('ro_mem');
CALL cq.run('ro_tab');
SELECT mismatches('ro_mem', 'SELECT k, count(*) AS n FROM au212.src GROUP BY k') AS ro_mem_mismatches,
       mismatches('ro_tab', 'SELECT k, count(*) AS n FROM au212.src GROUP BY k') AS ro_tab_mismatches;

-- a database read-only by default: its workers (which read the setting
-- when they start) run batches all the same
\set ECHO none
SELECT format('ALTER DATABASE %I SET default_transaction_read_only = on', current_database()) \gexec
\set ECHO all
SELECT clock_timestamp() AS t_altered \gset
SELECT bool_and(pg_terminate_backend(pid)) IS NOT FALSE AS workers_stopped FROM pg_stat_activity
 WHERE backend_type = 'pg_cq worker' AND datname = current_database();
SELECT wait_until(format($$NOT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'pg_cq worker'
                                       AND datname = current_database() AND backend_start < %L)$$,
                         :'t_altered')) AS old_workers_gone;
CREATE TABLE bg_mem WITH (cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM src GROUP BY k;
CREATE TABLE bg_tab WITH (cq.output_mode = 'update', cq.state_storage = 'unlogged')
  AS SELECT k, count(*) AS n FROM src GROUP BY k;
INSERT INTO src VALUES (4, 4), (4, 5);
SELECT wait_until($$(SELECT n FROM au212.bg_mem WHERE k = 4) = 2 AND (SELECT n FROM au212.bg_tab WHERE k = 4) = 2$$)
  AS background_batches_ran;
\set ECHO none
SELECT format('ALTER DATABASE %I RESET default_transaction_read_only', current_database()) \gexec
\set ECHO all
SELECT name, state, last_error FROM cq.queries WHERE schema = 'au212' AND name LIKE 'bg%' ORDER BY name;

-- 3. CALL cq.run twice in one transaction
SET cq.run_in_worker = off;
CREATE TABLE twice WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM src GROUP BY k;
SET client_min_messages = notice;
DO $$ BEGIN
  INSERT INTO au212.src VALUES (5, 5);
  CALL cq.run('au212.twice');      -- nothing committed is new
  CALL cq.run('au212.twice');
  COMMIT;
  CALL cq.run('au212.twice');      -- the row
  CALL cq.run('au212.twice');
END $$;
CREATE PROCEDURE run_twice() LANGUAGE plpgsql AS $$
BEGIN
  CALL cq.run('au212.twice');
  INSERT INTO au212.src VALUES (6, 6);
  CALL cq.run('au212.twice');
END $$;
CALL run_twice();
CALL cq.run('twice');
-- a batch that ran stays alone at its level
INSERT INTO src VALUES (7, 7);
BEGIN;
CALL cq.run('twice');
SAVEPOINT s;
CALL cq.run('twice');
ROLLBACK TO s;
COMMIT;
SET client_min_messages = warning;
SELECT state, last_error FROM cq.queries WHERE schema = 'au212' AND name = 'twice';
SELECT mismatches('twice', 'SELECT k, count(*) AS n FROM au212.src GROUP BY k') AS twice_mismatches;
-- 4. cq.reset between two calls in one transaction
CREATE TABLE reset_in WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM src GROUP BY k;
BEGIN;
CALL cq.run('reset_in');
SELECT cq.reset('reset_in');
CALL cq.run('reset_in');
COMMIT;
INSERT INTO src VALUES (1, 8);
CALL cq.run('reset_in');
SELECT mismatches('reset_in', 'SELECT k, count(*) AS n FROM au212.src GROUP BY k') AS reset_in_mismatches;
-- twice, after a batch that ran
INSERT INTO src VALUES (2, 9);
BEGIN;
CALL cq.run('reset_in');
SELECT cq.reset('reset_in');
CALL cq.run('reset_in');
SELECT cq.reset('reset_in');
CALL cq.run('reset_in');
COMMIT;
INSERT INTO src VALUES (2, 10);
CALL cq.run('reset_in');
SELECT mismatches('reset_in', 'SELECT k, count(*) AS n FROM au212.src GROUP BY k') AS reset_twice_mismatches;
-- a reset rolled back to a savepoint after a batch: the next batch rebuilds the store
INSERT INTO src VALUES (3, 11);
BEGIN;
CALL cq.run('reset_in');
SAVEPOINT s;
SELECT cq.reset('reset_in');
ROLLBACK TO s;
COMMIT;
INSERT INTO src VALUES (3, 12);
CALL cq.run('reset_in');
SELECT mismatches('reset_in', 'SELECT k, count(*) AS n FROM au212.src GROUP BY k') AS reset_undone_mismatches;
-- 5. cq.run from code the batch runs
CREATE TABLE nested WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM src GROUP BY k;
CREATE TABLE other_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM src GROUP BY k;
CREATE FUNCTION run_from_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF pg_trigger_depth() < 3 THEN CALL cq.run(TG_ARGV[0]); END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER again AFTER INSERT OR UPDATE ON nested
  FOR EACH STATEMENT EXECUTE FUNCTION run_from_trigger('au212.nested');
INSERT INTO src VALUES (1, 13);
CALL cq.run('nested');
SELECT state, last_error FROM cq.queries WHERE schema = 'au212' AND name = 'nested';
-- its batch runs another query's
DROP TRIGGER again ON nested;
CREATE TRIGGER again AFTER INSERT OR UPDATE ON nested
  FOR EACH STATEMENT EXECUTE FUNCTION run_from_trigger('au212.other_q');
SELECT cq.resume('nested');
CALL cq.run('nested');
SELECT mismatches('nested', 'SELECT k, count(*) AS n FROM au212.src GROUP BY k') AS nested_mismatches,
       mismatches('other_q', 'SELECT k, count(*) AS n FROM au212.src GROUP BY k') AS other_q_mismatches;
-- a function of the query
CREATE FUNCTION run_from_query(k int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN CALL cq.run('au212.from_query'); RETURN k; END $$;
CREATE TABLE from_query WITH (cq.trigger = 'available_now')
  AS SELECT au212.run_from_query(k) AS k FROM src WITH NO DATA;
CALL cq.run('from_query');
-- a chain of queries, each target's trigger running the next query
DO $$ BEGIN
  FOR i IN 1..9 LOOP
    EXECUTE format('CREATE TABLE au212.chain%s WITH (cq.output_mode = ''update'', cq.trigger = ''available_now'') '
                   'AS SELECT k, count(*) AS n FROM au212.src GROUP BY k', i);
    IF i < 9 THEN
      EXECUTE format('CREATE TRIGGER next AFTER INSERT OR UPDATE ON au212.chain%s FOR EACH STATEMENT '
                     'EXECUTE FUNCTION au212.run_from_trigger(%L)', i, 'au212.chain' || (i + 1));
    END IF;
  END LOOP;
END $$;
CREATE OR REPLACE FUNCTION run_from_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN CALL cq.run(TG_ARGV[0]); RETURN NULL; END $$;
INSERT INTO src VALUES (1, 14);
CALL cq.run('chain1');
-- eight levels run
DROP TRIGGER next ON chain8;
SELECT cq.resume(format('au212.%I', name)) FROM cq.queries WHERE schema = 'au212' AND name LIKE 'chain%' AND state = 'failed';
CALL cq.run('chain1');
SELECT count(*) AS chain_mismatches FROM cq.queries
 WHERE schema = 'au212' AND name ~ '^chain[1-8]$'
   AND mismatches(format('au212.%I', name)::regclass, 'SELECT k, count(*) AS n FROM au212.src GROUP BY k') <> 0;
-- 6. PREPARE TRANSACTION after CALL cq.run
CREATE TABLE prepared WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM src GROUP BY k;
BEGIN;
CALL cq.run('prepared');          -- nothing new
INSERT INTO src VALUES (8, 15);
PREPARE TRANSACTION 'au212_nothing_new';
COMMIT PREPARED 'au212_nothing_new';
BEGIN;
CALL cq.run('prepared');          -- the row
PREPARE TRANSACTION 'au212_batch';
SELECT count(*) AS prepared_left FROM pg_prepared_xacts WHERE gid LIKE 'au212%';
CALL cq.run('prepared');
SELECT mismatches('prepared', 'SELECT k, count(*) AS n FROM au212.src GROUP BY k') AS prepared_mismatches;
-- 7. cq.run after writes in the same DO block or procedure, pool workers on
RESET cq.run_in_worker;
SET statement_timeout = '60s';
DO $$ BEGIN
  PERFORM cq.create_query('au212.in_block', 'SELECT k, count(*) AS n FROM au212.src GROUP BY k',
                          output_mode => 'update', trigger => 'available_now');
  CALL cq.run('au212.in_block');
END $$;
CREATE PROCEDURE create_and_run() LANGUAGE plpgsql AS $$
BEGIN
  CREATE TABLE au212.in_proc WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
    AS SELECT k, count(*) AS n FROM au212.src GROUP BY k WITH NO DATA;
  CALL cq.run('au212.in_proc');
END $$;
CALL create_and_run();
INSERT INTO src VALUES (9, 16);
DO $$ BEGIN
  PERFORM cq.pause('au212.in_block');
  PERFORM cq.resume('au212.in_block');
  CALL cq.run('au212.in_block');
END $$;
RESET statement_timeout;
SELECT mismatches('in_block', 'SELECT k, count(*) AS n FROM au212.src GROUP BY k') AS in_block_mismatches,
       mismatches('in_proc', 'SELECT k, count(*) AS n FROM au212.src WHERE k IS DISTINCT FROM 9 GROUP BY k') AS in_proc_mismatches;

RESET search_path;
SELECT cq.drop_query(format('au212.%I', name)) FROM cq.queries WHERE schema = 'au212';
DROP SCHEMA au212 CASCADE;
