-- Session 35: what a batch knows without reading it again.
-- A. What an update-mode batch on the store asks of its target -- does an UPDATE
-- of it fire a statement trigger (then a batch of new groups alone still runs the upsert,
-- whose UPDATE fires it), has it every output column (then a batch of existing groups
-- alone runs the statement without o1) -- is decided when the query's plan is built
-- (CqStoreSql), not in every batch.  A trigger created or dropped, a column renamed
-- between two batches of one backend is honoured by the next batch: the plan is checked
-- again (plan_deps.c: the target's triggers and columns are in its fingerprint).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET cq.run_in_worker = off;

CREATE TABLE tf_src (k text, v int);
CREATE TABLE tf_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM tf_src GROUP BY k;
CREATE TABLE tf_fired (op text);
CREATE FUNCTION tf_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.tf_fired (op) VALUES (TG_OP); RETURN NULL; END $$;
CREATE FUNCTION tf_check() RETURNS TABLE (k text, n bigint, s bigint, same boolean) LANGUAGE sql AS $$
  SELECT a.k, a.n, a.s, a.n = o.n AND a.s = o.s
    FROM tf_agg a FULL JOIN (SELECT k, count(*) AS n, sum(v) AS s FROM tf_src GROUP BY k) o USING (k)
   ORDER BY 1 $$;

-- warm: batches of existing and of new groups, the plan cached in this backend
INSERT INTO tf_src VALUES ('a', 1);
CALL cq.run('tf_agg');
INSERT INTO tf_src VALUES ('a', 2);
CALL cq.run('tf_agg');
INSERT INTO tf_src VALUES ('b', 3);
CALL cq.run('tf_agg');
SELECT * FROM tf_check();

-- 1. an UPDATE statement trigger created between batches: a batch of new groups alone
-- fires it (the upsert's UPDATE runs), once
CREATE TRIGGER tf_upd AFTER UPDATE ON tf_agg FOR EACH STATEMENT EXECUTE FUNCTION tf_note();
INSERT INTO tf_src VALUES ('c', 4);
CALL cq.run('tf_agg');
SELECT op, count(*) FROM tf_fired GROUP BY op ORDER BY op;
-- 2. disabled, then dropped: not fired
DELETE FROM tf_fired;
ALTER TABLE tf_agg DISABLE TRIGGER tf_upd;
INSERT INTO tf_src VALUES ('d', 5);
CALL cq.run('tf_agg');
SELECT count(*) AS fired FROM tf_fired;
ALTER TABLE tf_agg ENABLE TRIGGER tf_upd;
INSERT INTO tf_src VALUES ('e', 6);
CALL cq.run('tf_agg');
SELECT op, count(*) FROM tf_fired GROUP BY op ORDER BY op;
DELETE FROM tf_fired;
DROP TRIGGER tf_upd ON tf_agg;
INSERT INTO tf_src VALUES ('f', 7);
CALL cq.run('tf_agg');
SELECT count(*) AS fired FROM tf_fired;
SELECT * FROM tf_check();

-- 3. an output column renamed between batches: a batch of existing groups alone fails
-- with the clear error (o1's), and goes on once it is back
ALTER TABLE tf_agg RENAME COLUMN s TO s2;
INSERT INTO tf_src VALUES ('a', 10);
\set VERBOSITY terse
CALL cq.run('tf_agg');
\set VERBOSITY default
ALTER TABLE tf_agg RENAME COLUMN s2 TO s;
CALL cq.run('tf_agg');
SELECT * FROM tf_check();

-- 4. a trigger created in the transaction of the batch (atomic CALL), after the plan was
-- cached: fired
INSERT INTO tf_src VALUES ('g', 8);
BEGIN;
CREATE TRIGGER tf_upd2 BEFORE UPDATE ON tf_agg FOR EACH STATEMENT EXECUTE FUNCTION tf_note();
CALL cq.run('tf_agg');
COMMIT;
SELECT op, count(*) FROM tf_fired GROUP BY op ORDER BY op;
SELECT * FROM tf_check();


-- B. A batch's input_rows_per_second divides its rows by the time since the previous
-- batch started: the started_at of that batch's cq.progress row, or, when this backend
-- committed it, the one it remembers (progress.c).  Never a batch rolled back, nor one of
-- another backend (a pool worker's), nor one of an earlier run of the query (cq.reset).
-- Every batch's rate agrees with the rows (to 1e-9).
CREATE FUNCTION tf_rates() RETURNS TABLE (batch_id bigint, rows bigint, rate_ok boolean) LANGUAGE sql AS $$
  SELECT batch_id, num_input_rows,
         CASE WHEN prev IS NULL THEN input_rows_per_second IS NULL
              ELSE abs(input_rows_per_second - num_input_rows /
                       greatest(extract(epoch FROM started_at - prev)::float8, 0.001))
                   <= 1e-9 * input_rows_per_second END
    FROM (SELECT p.*, lag(started_at) OVER (ORDER BY batch_id) AS prev
            FROM cq.progress p WHERE name = 'tf_agg' AND run_id = (SELECT run_id FROM cq.queries WHERE name = 'tf_agg')) p
   ORDER BY batch_id $$;
SELECT cq.reset('tf_agg');
-- batches of this backend, one after the other
INSERT INTO tf_src VALUES ('a', 1);
CALL cq.run('tf_agg');
INSERT INTO tf_src VALUES ('a', 1), ('b', 1);
CALL cq.run('tf_agg');
INSERT INTO tf_src VALUES ('a', 1), ('b', 1), ('c', 1);
CALL cq.run('tf_agg');
-- a batch rolled back, in full and to a savepoint
INSERT INTO tf_src VALUES ('a', 1);
BEGIN;
CALL cq.run('tf_agg');
ROLLBACK;
BEGIN;
SAVEPOINT s;
CALL cq.run('tf_agg');
ROLLBACK TO SAVEPOINT s;
COMMIT;
CALL cq.run('tf_agg');
-- a batch of a background worker (interval trigger) between two of this backend
\i sql/include/helpers.sql
SELECT cq.alter_query('tf_agg', "trigger" => '10 milliseconds');
INSERT INTO tf_src VALUES ('b', 1);
SELECT wait_until($$(SELECT count(*) FROM cq.offsets WHERE name = 'tf_agg') = 5$$) AS background_ran;
SELECT cq.alter_query('tf_agg', "trigger" => 'available_now');
INSERT INTO tf_src VALUES ('c', 1), ('d', 1);
CALL cq.run('tf_agg');
SELECT * FROM tf_rates();
-- after a reset: batch ids start over, the rates too
SELECT cq.reset('tf_agg');
INSERT INTO tf_src VALUES ('a', 1);
CALL cq.run('tf_agg');
INSERT INTO tf_src VALUES ('a', 1), ('e', 1);
CALL cq.run('tf_agg');
SELECT * FROM tf_rates();

SELECT cq.drop_query('tf_agg', drop_target => true);
DROP TABLE tf_src, tf_fired;
DROP FUNCTION tf_note(), tf_check(), tf_rates();
