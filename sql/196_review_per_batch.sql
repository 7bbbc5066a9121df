-- Session 40 review of session 39's per-batch changes.
-- 1. The scan settings set by the planner hook only while planning
-- (delta_plan.c): a planning within the batch that fails and is caught in a
-- subtransaction (the function called for each row catches it) leaves the
-- batch's later plannings under the settings, and the user's values after
-- it; a planning nested in a planning (a function the planner folds plans a
-- statement of its own) is under them too, and the outer planning's
-- settings are back after the inner one.
-- 2. The pg_snapshot conversions remembered (snapmemo.c): batches that fail
-- after their end offset was converted, in a transaction or in a
-- subtransaction rolled back, and batches of two queries of two sources in
-- turn: every row folded once (the memo maps values only: nothing of a
-- rolled-back batch is taken for the offset of the next).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET cq.run_in_worker = off;
CREATE TABLE t196_other (id int PRIMARY KEY, v int);
INSERT INTO t196_other SELECT g, g FROM generate_series(1, 10) g;
ANALYZE t196_other;
CREATE TABLE t196_plans (x int, what text, plan text);
-- an immutable function with constant arguments: folded by the planner,
-- which then plans its statement (a planning nested in a planning)
CREATE FUNCTION t196_inner(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  n int;
BEGIN
  RAISE NOTICE 'folded by the planner, before its own planning: enable_seqscan %, jit %',
    current_setting('enable_seqscan'), current_setting('jit');
  EXECUTE 'SELECT count(*) FROM public.t196_other WHERE id = 4' INTO n;
  RAISE NOTICE 'folded by the planner, after its own planning: enable_seqscan %, jit %',
    current_setting('enable_seqscan'), current_setting('jit');
  RETURN i;
END $$;
CREATE FUNCTION t196_probe(x int) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  line text;
  n int;
BEGIN
  -- a planning that fails (1/0 folded by the planner), caught
  BEGIN
    EXECUTE 'SELECT 1 / 0 FROM public.t196_other' INTO n;
  EXCEPTION WHEN division_by_zero THEN
    INSERT INTO public.t196_plans VALUES (x, 'caught', SQLERRM);
  END;
  EXECUTE 'EXPLAIN (COSTS OFF) SELECT v FROM public.t196_other WHERE id = 3' INTO line;
  INSERT INTO public.t196_plans VALUES (x, 'after the error', line);
  EXECUTE 'EXPLAIN (COSTS OFF) SELECT v FROM public.t196_other WHERE id = public.t196_inner(' || x || ')' INTO line;
  INSERT INTO public.t196_plans VALUES (x, 'outer', line);
  INSERT INTO public.t196_plans VALUES (x, 'settings while running',
    current_setting('enable_seqscan') || ' ' || current_setting('jit') || ' ' || current_setting('enable_sort'));
  RETURN true;
END $$;
CREATE TABLE t196_src (k int, x int);
CREATE TABLE t196_q WITH (cq.output_mode = 'append', cq.trigger = 'available_now') AS
SELECT k, x FROM t196_src WHERE t196_probe(x);
SET enable_sort = off;
INSERT INTO t196_src VALUES (1, 10);
SET client_min_messages = notice;
CALL cq.run('t196_q');
SET client_min_messages = warning;
SELECT x, what, plan FROM t196_plans ORDER BY x, what;
SHOW enable_seqscan;
SHOW jit;
SHOW enable_sort;
RESET enable_sort;
EXPLAIN (COSTS OFF) SELECT v FROM t196_other WHERE id = 3;
SELECT k, x FROM t196_q;
SELECT cq.drop_query('t196_q', drop_target => true);

-- 2. batches failing after their end offset was converted
CREATE FUNCTION t196_check(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF x < 0 THEN
    RAISE EXCEPTION 't196: bad row %', x;
  END IF;
  RETURN x % 3;
END $$;
CREATE TABLE t196_a (x int, v numeric);
CREATE TABLE t196_b (x int, v numeric);
CREATE TABLE t196_qa WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT t196_check(x) AS g, count(*) AS n, sum(v) AS s FROM t196_a GROUP BY 1;
CREATE TABLE t196_qb WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT t196_check(x) AS g, count(*) AS n, sum(v) AS s FROM t196_b GROUP BY 1;
CREATE FUNCTION t196_diffs() RETURNS TABLE (a_vs_groupby bigint, b_vs_groupby bigint) LANGUAGE sql AS $$
  SELECT (SELECT count(*) FROM ((TABLE t196_qa EXCEPT ALL SELECT t196_check(x), count(*), sum(v) FROM t196_a WHERE x >= 0 GROUP BY 1)
                                UNION ALL (SELECT t196_check(x), count(*), sum(v) FROM t196_a WHERE x >= 0 GROUP BY 1 EXCEPT ALL TABLE t196_qa)) d),
         (SELECT count(*) FROM ((TABLE t196_qb EXCEPT ALL SELECT t196_check(x), count(*), sum(v) FROM t196_b WHERE x >= 0 GROUP BY 1)
                                UNION ALL (SELECT t196_check(x), count(*), sum(v) FROM t196_b WHERE x >= 0 GROUP BY 1 EXCEPT ALL TABLE t196_qb)) d) $$;
INSERT INTO t196_a SELECT g, g FROM generate_series(1, 30) g;
INSERT INTO t196_b SELECT g, g FROM generate_series(1, 20) g;
CALL cq.run('t196_qa');
CALL cq.run('t196_qb');
SELECT * FROM t196_diffs();
-- a failing batch (the transaction aborts), then the row fixed
INSERT INTO t196_a VALUES (-1, 100);
INSERT INTO t196_a SELECT g, g FROM generate_series(31, 40) g;
INSERT INTO t196_b SELECT g, g FROM generate_series(21, 25) g;
\set VERBOSITY terse
CALL cq.run('t196_qa');
\set VERBOSITY default
CALL cq.run('t196_qb');
UPDATE t196_a SET x = 1000 WHERE x = -1;
SELECT cq.resume('t196_qa');
CALL cq.run('t196_qa');
SELECT * FROM t196_diffs();
-- a failing batch in a subtransaction rolled back, its caller goes on
INSERT INTO t196_a VALUES (-2, 100);
INSERT INTO t196_b SELECT g, g FROM generate_series(26, 30) g;
SET client_min_messages = notice;
DO $$
BEGIN
  BEGIN
    CALL cq.run('t196_qa');
  EXCEPTION WHEN others THEN
    RAISE NOTICE 'batch failed: %', SQLERRM;
  END;
END $$;
SET client_min_messages = warning;
CALL cq.run('t196_qb');
DELETE FROM t196_a WHERE x = -2;
SELECT cq.resume('t196_qa');
INSERT INTO t196_a SELECT g, g FROM generate_series(41, 45) g;
CALL cq.run('t196_qa');
CALL cq.run('t196_qb');
SELECT * FROM t196_diffs();
SELECT (SELECT sum(n) FROM t196_qa) AS a_rows, (SELECT count(*) FROM t196_a) AS a_source,
       (SELECT sum(n) FROM t196_qb) AS b_rows, (SELECT count(*) FROM t196_b) AS b_source;
SELECT cq.drop_query(q, drop_target => true) FROM unnest(ARRAY['t196_qa', 't196_qb']) q;
DROP TABLE t196_src, t196_plans, t196_other, t196_a, t196_b;
DROP FUNCTION t196_probe(int), t196_inner(int), t196_check(int), t196_diffs();
