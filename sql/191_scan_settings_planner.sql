-- The scan settings of a batch (enable_seqscan, jit, enable_sort off) are
-- set by pg_cq's planner hook around each planning within the batch's
-- region, not for the whole region (delta_plan.c): a statement planned
-- within it (here an EXPLAIN run by a function the query calls) is planned
-- under them; the user's own values are untouched before, between and
-- after batches; a batch that fails inside the region (the transaction or
-- the subtransaction it began in aborts) leaves no setting behind.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
-- a small table with an index: a seq scan unless enable_seqscan is off
CREATE TABLE t191_other (id int PRIMARY KEY, v int);
INSERT INTO t191_other SELECT g, g FROM generate_series(1, 10) g;
ANALYZE t191_other;
CREATE TABLE t191_plans (x int, plan text);
CREATE FUNCTION t191_first_plan_line() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  EXECUTE 'EXPLAIN (COSTS OFF) SELECT v FROM public.t191_other WHERE id = 3' INTO line;
  RETURN line;
END $$;
-- called for each new row of the batch; x = -1 fails the batch
CREATE FUNCTION t191_probe(x int) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF x = -1 THEN
    RAISE EXCEPTION 't191: failing row';
  END IF;
  INSERT INTO public.t191_plans VALUES (x, public.t191_first_plan_line());
  RETURN true;
END $$;
CREATE TABLE t191_src (k int, x int);
CREATE TABLE t191_q WITH (cq.output_mode = 'append', cq.trigger = 'available_now') AS
SELECT k, x FROM t191_src WHERE t191_probe(x);
-- outside a batch: a seq scan
SELECT t191_first_plan_line() AS session_plan;
-- within a batch: the statement the function plans gets the settings
INSERT INTO t191_src VALUES (1, 10), (2, 20);
CALL cq.run('t191_q');
SELECT x, plan FROM t191_plans ORDER BY x;
-- the user's values, before, between and after batches
SHOW enable_seqscan;
SHOW jit;
SHOW enable_sort;
SET enable_sort = off;
SET jit = off;
INSERT INTO t191_src VALUES (3, 30);
CALL cq.run('t191_q');
SHOW enable_sort;
SHOW jit;
SHOW enable_seqscan;
RESET enable_sort;
RESET jit;
SELECT t191_first_plan_line() AS session_plan;
-- a batch failing inside the region: the transaction aborts, nothing stays
INSERT INTO t191_src VALUES (4, -1);
\set VERBOSITY terse
CALL cq.run('t191_q');
\set VERBOSITY default
SELECT t191_first_plan_line() AS session_plan_after_failure;
SHOW enable_seqscan;
-- and when only a subtransaction aborts (the caller goes on in its transaction)
SET client_min_messages = notice;
DO $$
BEGIN
  BEGIN
    CALL cq.run('t191_q');
  EXCEPTION WHEN others THEN
    RAISE NOTICE 'batch failed: %', SQLERRM;
  END;
  RAISE NOTICE 'plan after the failed batch, same transaction: %', public.t191_first_plan_line();
END $$;
SET client_min_messages = warning;
-- the failing row gone, the query goes on
DELETE FROM t191_src WHERE x = -1;
SELECT cq.resume('t191_q');
INSERT INTO t191_src VALUES (5, 50);
CALL cq.run('t191_q');
SELECT k, x FROM t191_q ORDER BY x;
SELECT x, plan FROM t191_plans ORDER BY x;
SELECT cq.drop_query('t191_q', drop_target => true);
DROP TABLE t191_src, t191_plans, t191_other;
DROP FUNCTION t191_probe(int), t191_first_plan_line();
