-- Session 36: the rows of cq.offsets and cq.progress that leave the window of
-- the last 100 batches are found at the TID this backend inserted them at
-- (progress.c), when the row there is still visible and has the query's key;
-- else by a probe of the primary key as before.  The last offset is read by a
-- forward scan from the batch id known last.  Whatever the TIDs and that id
-- point at after a rewrite of the tables, a reset, rows deleted by hand and
-- their slots taken by another query's rows, each query keeps exactly its
-- last 100 rows and no other query's row is deleted.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET cq.run_in_worker = off;

CREATE TABLE tt_src (k int, v int);
SELECT cq.create_query('tt_a', 'SELECT k, count(*) AS n, sum(v) AS s FROM tt_src GROUP BY k',
                       output_mode => 'update', max_rows_per_trigger => 1,
                       "trigger" => 'available_now');
SELECT cq.create_query('tt_b', 'SELECT k, sum(v) AS s FROM tt_src GROUP BY k',
                       output_mode => 'update', max_rows_per_trigger => 1,
                       "trigger" => 'available_now');
-- tt_batches(q, n): n more batches of q, one row each (rows in transactions of their own)
CREATE PROCEDURE tt_batches(q text, n int) LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. n LOOP
    INSERT INTO public.tt_src VALUES (i % 3, i);
    COMMIT;
  END LOOP;
  CALL cq.run(q);
END $$;
CREATE VIEW tt_window AS
  SELECT o.name, o.n, o.lo, o.hi, p.n = o.n AND p.lo = o.lo AND p.hi = o.hi AS progress_same
    FROM (SELECT name, count(*) AS n, min(batch_id) AS lo, max(batch_id) AS hi
            FROM cq.offsets WHERE name LIKE 'tt\_%' GROUP BY name) o
    JOIN (SELECT name, count(*) AS n, min(batch_id) AS lo, max(batch_id) AS hi
            FROM cq.progress WHERE name LIKE 'tt\_%' GROUP BY name) p USING (name)
   ORDER BY o.name;

-- 1. tt_a in its steady state: 120 batches of this backend, the last 100 kept
CALL tt_batches('tt_a', 120);
SELECT * FROM tt_window;

-- 2. both tables rewritten (new files: the TIDs are another table's), then more batches
VACUUM FULL cq.offsets;
VACUUM FULL cq.progress;
CALL tt_batches('tt_a', 5);
SELECT * FROM tt_window;

-- 3. rows of the window deleted by hand and vacuumed, their slots free for other rows:
-- tt_b's batches fill them; tt_a's trims find tt_b's rows at its TIDs and leave them
DELETE FROM cq.offsets WHERE name = 'tt_a' AND batch_id BETWEEN 26 AND 60;
DELETE FROM cq.progress WHERE name = 'tt_a' AND batch_id BETWEEN 26 AND 60;
VACUUM cq.offsets;
VACUUM cq.progress;
CALL tt_batches('tt_b', 60);
SELECT * FROM tt_window;
CALL tt_batches('tt_a', 40);
SELECT * FROM tt_window;
SELECT count(*) AS b_rows_left FROM cq.offsets WHERE name = 'tt_b';

-- 4. a reset: the batch ids start over below the one read last
SELECT cq.reset('tt_a');
CALL tt_batches('tt_a', 3);
SELECT * FROM tt_window;
SELECT count(*) AS differences FROM
  ((TABLE tt_a EXCEPT ALL SELECT k, count(*), sum(v) FROM tt_src GROUP BY k)
   UNION ALL (SELECT k, count(*), sum(v) FROM tt_src GROUP BY k EXCEPT ALL TABLE tt_a)) d;

SELECT cq.drop_query('tt_a', drop_target => true);
SELECT cq.drop_query('tt_b', drop_target => true);
DROP VIEW tt_window;
DROP TABLE tt_src;
DROP PROCEDURE tt_batches(text, int);
