-- Session 36 review of delta_plan.c: the planner hook that drops the
-- recheck of the cq_xid range from d's bitmap heap scan (implied by
-- cq.xid_new for the parameters pg_cq passes) took any statement of d's
-- text planned while d ran, by comparing the texts: a function that d
-- calls for each row, running d's text with its own parameters (a range
-- that cq.xid_new does not imply), got the plan without the recheck, and
-- every row of the lossy BRIN pages that passed cq.xid_new.  The hook now
-- takes only d's own saved statement (the address of its plan source's
-- text).  Here: rows of two transactions on one page; the function runs
-- d's statement (from cq.explain) for the second transaction's xid alone,
-- under enable_seqscan = off (a bitmap scan of the BRIN index), and must
-- count its row alone.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SELECT pause_others() AS others_paused;
SET cq.run_in_worker = off;

CREATE TABLE dp_src (k int, v int);
CREATE TABLE dp_probe (dtext text, lo xid8, hi xid8, seen bigint);
INSERT INTO dp_probe VALUES (NULL, NULL, NULL, NULL);
CREATE FUNCTION dp_f(v int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  p record;
  r record;
  n bigint := 0;
BEGIN
  IF current_setting('dp.probe', true) = 'on' THEN
    PERFORM set_config('dp.probe', 'off', true);
    PERFORM set_config('enable_seqscan', 'off', true);
    SELECT * INTO p FROM public.dp_probe;
    FOR r IN EXECUTE p.dtext USING p.lo, p.hi, pg_current_snapshot(), '1:1:'::pg_snapshot LOOP
      n := n + 1;
    END LOOP;
    UPDATE public.dp_probe SET seen = n;
  END IF;
  RETURN v;
END $$;
CREATE TABLE dp_q WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(dp_f(v)) AS s FROM dp_src GROUP BY k;
CALL cq.run('dp_q');
SELECT state_path FROM cq.queries WHERE name = 'dp_q';
-- d's statement, as the batch runs it (d itself: dp_f is volatile, so the
-- new rows are not grouped in C, sql/177)
UPDATE dp_probe SET dtext = substring(cq.explain('dp_q') from E'one row per group, as state\n-- rows\n(.*?);\n\n');
SELECT dtext LIKE 'WITH d AS (SELECT %' AS has_statement FROM dp_probe;

-- two transactions' rows on the first page; the probe's range: the second's xid
INSERT INTO dp_src SELECT 1, g FROM generate_series(1, 50) g;
BEGIN;
INSERT INTO dp_src VALUES (2, 1000);
UPDATE dp_probe SET lo = pg_current_xact_id(), hi = (pg_current_xact_id()::text::bigint + 1)::text::xid8;
COMMIT;
SET dp.probe = on;
CALL cq.run('dp_q');
RESET dp.probe;
SELECT seen FROM dp_probe;
SELECT mismatches('dp_q', 'SELECT k, count(*), sum(v) FROM dp_src GROUP BY k') AS mismatches;

DROP TABLE dp_q;
DROP TABLE dp_src, dp_probe;
DROP FUNCTION dp_f(int);
