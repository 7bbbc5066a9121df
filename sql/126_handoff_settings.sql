-- CALL cq.run handed to a pool worker (src/handoff.c) takes the caller's
-- settings along (session 31).  The worker applies each as the context and
-- role that set it in the caller, never as its own superuser: a plain role
-- may set a placeholder for a library its session has not loaded
-- (plpgsql.variable_conflict, which plpgsql defines PGC_SUSET), and the
-- worker, which has loaded it or loads it in the call, must refuse it as
-- the caller's own session would when loading the library.  Settings the
-- caller may set still follow it, a superuser's too.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
\i sql/include/helpers.sql

-- no batch of another test's query may take the worker meanwhile
SELECT pause_others() AS others_paused;
-- did a worker serve a CALL of this query for backend caller?
CREATE FUNCTION cq126_served(caller int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_stat_clear_snapshot();
  RETURN EXISTS (SELECT 1 FROM pg_stat_activity
                  WHERE backend_type = 'pg_cq worker'
                    AND query LIKE format('pg_cq: CALL cq.run(%%seen%%) for PID %s', caller));
END $$;

CREATE ROLE regress_cq126 LOGIN;
CREATE SCHEMA cq126 AUTHORIZATION regress_cq126;
SET ROLE regress_cq126;
CREATE TABLE cq126.src (k int);
-- what the session running the batch has for two plpgsql settings
CREATE FUNCTION cq126.settings(k int) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  RETURN current_setting('plpgsql.variable_conflict') || ' ' || current_setting('plpgsql.print_strict_params');
END $$;
CREATE TABLE cq126.seen WITH (cq.trigger = 'available_now')
  AS SELECT k, cq126.settings(k) AS settings FROM cq126.src WITH NO DATA;
RESET ROLE;
-- a CALL that finds no idle worker asks the database's scheduler for one
-- (with no scheduler yet, the scheduler starts it when it comes up)
CALL cq.run('cq126.seen');
SELECT wait_until('pool_idle_worker()');

-- a new session of the plain role, plpgsql not loaded: both placeholders
-- can be set; the worker takes print_strict_params (PGC_USERSET) and
-- refuses variable_conflict (PGC_SUSET) with a WARNING
\c - regress_cq126
SET client_min_messages = warning;
SET plpgsql.variable_conflict = 'use_variable';
SET plpgsql.print_strict_params = on;
INSERT INTO cq126.src VALUES (1);
CALL cq.run('cq126.seen');
SELECT pg_backend_pid() AS caller \gset
\c - postgres
SET client_min_messages = warning;
SELECT cq126_served(:caller) AS served;
SELECT k, settings FROM cq126.seen ORDER BY k;

-- a superuser caller may set it: the worker takes it
SELECT wait_until('pool_idle_worker()');
SET plpgsql.variable_conflict = 'use_variable';
INSERT INTO cq126.src VALUES (2);
CALL cq.run('cq126.seen');
SELECT cq126_served(pg_backend_pid()) AS served;
SELECT k, settings FROM cq126.seen ORDER BY k;
RESET plpgsql.variable_conflict;

-- in-process (cq.run_in_worker off), the plain role's session refuses it
-- itself when the batch loads plpgsql
\c - regress_cq126
SET client_min_messages = warning;
SET cq.run_in_worker = off;
SET plpgsql.variable_conflict = 'use_variable';
INSERT INTO cq126.src VALUES (3);
CALL cq.run('cq126.seen');
\c - postgres
SET client_min_messages = warning;
SELECT k, settings FROM cq126.seen ORDER BY k;

SET client_min_messages = warning;
SELECT cq.drop_query('cq126.seen', drop_target => true);
DROP SCHEMA cq126 CASCADE;
DROP ROLE regress_cq126;
DROP FUNCTION cq126_served(int);
