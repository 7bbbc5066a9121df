-- Session 31: a batch's changed groups are written into the store's shared
-- area as the batch makes them (items and rows, not in the backend's
-- memory), linked nowhere until pre-commit.  Every way a batch ends without
-- publishing frees them and leaves the store as it was; the next batch
-- equals the plain query:
-- (1) a batch rolled back with its transaction (new, changed, and deleted
--     groups: a windowed update query evicts groups the batch changed);
-- (2) a batch in a savepoint rolled back, then run again in the same
--     transaction and committed;
-- (3) a batch failing after its fold (a trigger of the target raises),
--     inside a block that catches the error;
-- (4) complete mode (its reload reads every row through the overlay) and a
--     merge statement (avg of a numeric: not merged in C) rolled back;
-- (5) the store's budget: a batch whose groups pass cq.state_memory moves
--     the query to the table path, as before.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET cq.run_in_worker = off;
\i sql/include/helpers.sql

CREATE TABLE oa_src (k int, u text, ts timestamptz, v numeric(10,2));
INSERT INTO oa_src SELECT g % 3000, 'u' || g % 17, '2024-01-01'::timestamptz + (g % 600) * interval '1 second', (g % 1000) / 10.0
  FROM generate_series(1, 9000) g;
\set oracle_u 'SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m, min(u) AS mu FROM oa_src GROUP BY k'
\set oracle_c 'SELECT k % 50 AS b, count(*) AS n, max(v) AS m, avg(v) AS a FROM oa_src GROUP BY 1'
\set oracle_w 'SELECT date_bin(''1 minute'', ts, ''2024-01-01'') AS minute, k % 7 AS r, count(*) AS n, sum(v) AS s FROM oa_src GROUP BY 1, 2'
SELECT cq.create_query('oa_u', :'oracle_u', output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory') IS NOT NULL AS created;
SELECT cq.create_query('oa_c', :'oracle_c', output_mode => 'complete', "trigger" => 'available_now', state_storage => 'memory') IS NOT NULL AS created;
SELECT cq.create_query('oa_w', :'oracle_w', output_mode => 'update', "trigger" => 'available_now',
                       event_time => 'ts', watermark => '2 minutes', state_storage => 'memory') IS NOT NULL AS created;
-- what a query left: its store's batch and rows, its batches
CREATE FUNCTION oa_left(q text, OUT store_batch bigint, OUT store_rows bigint, OUT batches bigint)
LANGUAGE plpgsql AS $$
BEGIN
  SELECT i.batch_id, i.state_rows INTO store_batch, store_rows FROM cq.state_store_info(q) i;
  SELECT count(*) INTO batches FROM cq.offsets o WHERE o.name = q;
END $$;
CALL cq.run('oa_u');
CALL cq.run('oa_c');
CALL cq.run('oa_w');
SELECT mismatches('oa_u', :'oracle_u') AS bad_u, mismatches('oa_c', :'oracle_c') AS bad_c;
SELECT * FROM oa_left('oa_u');
SELECT 'cq_state.f_' || id AS fu FROM cq.queries WHERE name = 'oa_u' \gset
SELECT 'cq_state.f_' || id AS fw FROM cq.queries WHERE name = 'oa_w' \gset
\set oracle_fu 'SELECT k, count(*), sum(v), max(v), min(u) FROM oa_src GROUP BY k'
-- the windowed query's final view: the windows still open (end > watermark)
SELECT count(*) AS open_windows FROM :fw;

-- new rows: every group of oa_u changed, 1,000 new ones; later windows,
-- whose watermark closes (evicts) windows this batch also changes
INSERT INTO oa_src SELECT g % 4000, 'a' || g % 5, '2024-01-01'::timestamptz + (300 + g % 600) * interval '1 second', (g % 997) / 10.0
  FROM generate_series(1, 8000) g;

-- (1) rolled back with the transaction
BEGIN;
CALL cq.run('oa_u');
CALL cq.run('oa_w');
-- the transaction sees its batches
SELECT mismatches('oa_u', :'oracle_u') AS bad_u_in_transaction,
       mismatches(:'fu', :'oracle_fu') AS bad_final_view;
SELECT (SELECT state_rows FROM cq.state_store_info('oa_u')) AS published_rows_meanwhile;
ROLLBACK;
SELECT * FROM oa_left('oa_u');
SELECT * FROM oa_left('oa_w');
SELECT mismatches(:'fu', :'oracle_fu') > 0 AS final_view_without_the_new_rows,
       mismatches(:'fu', 'SELECT k, n, s, m, mu FROM oa_u') AS final_view_differs_from_target;

-- (2) a savepoint rolled back, then the batch again and COMMIT
BEGIN;
SAVEPOINT s;
CALL cq.run('oa_u');
CALL cq.run('oa_w');
ROLLBACK TO SAVEPOINT s;
SELECT * FROM oa_left('oa_u');
CALL cq.run('oa_u');
CALL cq.run('oa_w');
COMMIT;
SELECT mismatches('oa_u', :'oracle_u') AS bad_u, l.* FROM oa_left('oa_u') l;
-- the store of oa_w lost its closed windows: its rows are the open ones
SELECT (SELECT count(*) FROM :fw) = (SELECT state_rows FROM cq.state_store_info('oa_w')) AS final_view_is_store;
SELECT mismatches(:'fw', 'SELECT date_bin(''1 minute'', ts, ''2024-01-01''), k % 7, count(*), sum(v) FROM oa_src GROUP BY 1, 2 HAVING date_bin(''1 minute'', ts, ''2024-01-01'') + interval ''1 minute'' > (SELECT watermark FROM cq.offsets WHERE name = ''oa_w'' ORDER BY batch_id DESC LIMIT 1)') AS bad_w_store;

-- (3) an error after the fold: the target's trigger raises
INSERT INTO oa_src SELECT g % 5000, 'b' || g % 3, '2024-01-01'::timestamptz + (900 + g % 60) * interval '1 second', g % 50
  FROM generate_series(1, 6000) g;
CREATE TABLE oa_fail (on_ boolean);
INSERT INTO oa_fail VALUES (true);
CREATE FUNCTION oa_raise() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (SELECT on_ FROM public.oa_fail) THEN
    RAISE EXCEPTION 'target refused';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER oa_after AFTER INSERT OR UPDATE ON oa_u FOR EACH STATEMENT EXECUTE FUNCTION oa_raise();
DO $$
BEGIN
  BEGIN
    CALL cq.run('oa_u');
  EXCEPTION WHEN raise_exception THEN
    RAISE WARNING 'batch failed: %', SQLERRM;
  END;
END $$;
SELECT * FROM oa_left('oa_u');
UPDATE oa_fail SET on_ = false;
SELECT cq.resume('oa_u');
CALL cq.run('oa_u');
SELECT mismatches('oa_u', :'oracle_u') AS bad_u, l.* FROM oa_left('oa_u') l;

-- (4) complete mode and a merge statement, rolled back, then committed
BEGIN;
CALL cq.run('oa_c');
SELECT mismatches('oa_c', :'oracle_c') AS bad_c_in_transaction;
ROLLBACK;
SELECT * FROM oa_left('oa_c');
CALL cq.run('oa_c');
SELECT mismatches('oa_c', :'oracle_c') AS bad_c, l.* FROM oa_left('oa_c') l;

-- (5) past cq.state_memory in an incremental batch: moved to the table path
INSERT INTO oa_src SELECT 10000 + g, 'c', '2024-01-01'::timestamptz, 1 FROM generate_series(1, 3000) g;
SET cq.state_memory = '256kB';
CALL cq.run('oa_u');
RESET cq.state_memory;
SELECT state_storage, state_path LIKE 'table:%' AS on_table_path FROM cq.queries WHERE name = 'oa_u';
SELECT mismatches('oa_u', :'oracle_u') AS bad_u, l.* FROM oa_left('oa_u') l;
INSERT INTO oa_src SELECT g % 200, 'd', '2024-01-01'::timestamptz, 2 FROM generate_series(1, 400) g;
CALL cq.run('oa_u');
SELECT mismatches('oa_u', :'oracle_u') AS bad_u;

SELECT cq.drop_query(q, drop_target => true) FROM (VALUES ('oa_u'), ('oa_c'), ('oa_w')) v(q);
DROP TABLE oa_src, oa_fail;
DROP FUNCTION oa_left(text);
DROP FUNCTION oa_raise();
