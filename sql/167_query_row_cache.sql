-- Session 36: a backend reads its query's cq.queries row into a CqQuery once per
-- stored version of the row (rowcache.c: the row's bytes are compared, not its id):
-- every change of the row between two batches -- an option altered, a pause, a
-- reset, a change made by another backend -- is seen by the next batch, in this
-- backend (CALL cq.run) and in a pool worker; the text of an interval column is read
-- again under another IntervalStyle.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET cq.run_in_worker = off;
\i sql/include/helpers.sql

CREATE TABLE rc_src (k int, v int);
CREATE TABLE rc_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now',
                          cq.max_rows_per_trigger = 2) AS
  SELECT k, count(*) AS n, sum(v) AS s FROM rc_src GROUP BY k;
-- rows in transactions of their own (a row limit ends a batch at a transaction's end)
CREATE PROCEDURE rc_add(k int, a int, b int) LANGUAGE plpgsql AS $$
BEGIN
  FOR g IN a .. b LOOP INSERT INTO public.rc_src VALUES (coalesce(k, g % 3), g); COMMIT; END LOOP;
END $$;
CREATE VIEW rc_batches AS
  SELECT batch_id, num_input_rows AS rows FROM cq.progress WHERE name = 'rc_agg' ORDER BY batch_id;

-- A. this backend: the row limit altered between batches is the next batch's
-- (cq.run runs batches of at most max_rows_per_trigger rows until it has caught up)
CALL rc_add(NULL, 1, 4);
CALL cq.run('rc_agg');
SELECT cq.alter_query('rc_agg', max_rows_per_trigger => 3);
CALL rc_add(NULL, 5, 10);
CALL cq.run('rc_agg');
SELECT cq.alter_query('rc_agg', max_rows_per_trigger => 5);
CALL rc_add(NULL, 11, 20);
CALL cq.run('rc_agg');
SELECT * FROM rc_batches;
-- paused: this backend's next call finds the row paused
SELECT cq.pause('rc_agg');
\set VERBOSITY terse
CALL cq.run('rc_agg');
\set VERBOSITY default
SELECT cq.resume('rc_agg');
SELECT cq.alter_query('rc_agg', max_rows_per_trigger => 0);
INSERT INTO rc_src SELECT g % 3, g FROM generate_series(21, 27) g;
CALL cq.run('rc_agg');
SELECT * FROM rc_batches;
SELECT mismatches('rc_agg', 'SELECT k, count(*) AS n, sum(v) AS s FROM rc_src GROUP BY k') AS diff;
-- a reset gives the row a new run_id and start offset: batches start over
SELECT cq.reset('rc_agg');
INSERT INTO rc_src VALUES (7, 7);
CALL cq.run('rc_agg');
SELECT batch_id, rows, (SELECT run_id FROM cq.progress WHERE name = 'rc_agg')
       = (SELECT run_id FROM cq.queries WHERE name = 'rc_agg') AS same_run
  FROM rc_batches;

-- B. a row changed by another backend: a pool worker runs the batches (interval
-- trigger) with the row as it read it before, the limit altered here in between
-- (its three rows committed within a few microseconds: with the row of limit 4 the
-- worker would read them in one batch; with limit 1 always one a batch)
CALL rc_add(1, 1, 8);
SELECT cq.alter_query('rc_agg', "trigger" => '10 milliseconds', max_rows_per_trigger => 4);
SELECT wait_until($$(SELECT sum(num_input_rows) FROM cq.progress WHERE name = 'rc_agg') = 36$$) AS worker_caught_up;
SELECT cq.alter_query('rc_agg', max_rows_per_trigger => 1);
CALL rc_add(2, 1, 3);
SELECT wait_until($$(SELECT sum(num_input_rows) FROM cq.progress WHERE name = 'rc_agg') = 39$$) AS worker_caught_up;
SELECT cq.alter_query('rc_agg', "trigger" => 'available_now');
-- the batches after batch 0: 4 rows each, then one row each
SELECT array_agg(rows ORDER BY batch_id) FILTER (WHERE batch_id > 0 AND rows > 0) AS rows FROM rc_batches;
SELECT mismatches('rc_agg', 'SELECT k, count(*) AS n, sum(v) AS s FROM rc_src GROUP BY k') AS diff;

-- C. an interval column (watermark) read under another IntervalStyle: the same delay
CREATE TABLE rc_ticks (ts timestamptz);
CREATE TABLE rc_win
  WITH (cq.trigger = 'available_now', cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '10 seconds')
  AS SELECT date_bin('5 seconds', ts, '1970-01-01') AS w, count(*) AS count
       FROM rc_ticks GROUP BY 1 WITH NO DATA;
INSERT INTO rc_ticks SELECT to_timestamp(s) FROM generate_series(1, 12) s;
CALL cq.run('rc_win');
SET IntervalStyle = iso_8601;
INSERT INTO rc_ticks SELECT to_timestamp(30);
CALL cq.run('rc_win');
SET IntervalStyle = sql_standard;
INSERT INTO rc_ticks SELECT to_timestamp(50);
CALL cq.run('rc_win');
RESET IntervalStyle;
SELECT batch_id, extract(epoch FROM watermark) AS wm
  FROM cq.offsets WHERE name = 'rc_win' ORDER BY batch_id;
SELECT extract(epoch FROM w) AS w, count FROM rc_win ORDER BY w;

-- D. the store's layout and key functions, kept per query between its batches
-- (store_setup.c), follow the query: reset, then its keys of another type
CREATE TABLE rc_kv (k int, t text, v int);
CREATE TABLE rc_store WITH (cq.output_mode = 'update', cq.trigger = 'available_now',
                            cq.state_storage = 'memory') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM rc_kv GROUP BY k;
INSERT INTO rc_kv VALUES (1, 'x', 1), (2, 'y', 2);
CALL cq.run('rc_store');
INSERT INTO rc_kv VALUES (1, 'x', 3);
CALL cq.run('rc_store');
SELECT mismatches('rc_store', 'SELECT k, count(*) AS n, sum(v) AS s FROM rc_kv GROUP BY k') AS diff;
SELECT cq.reset('rc_store');
DELETE FROM rc_store;
ALTER TABLE rc_store ALTER COLUMN k TYPE text;
SELECT cq.alter_query('rc_store', query => 'SELECT t AS k, count(*) AS n, sum(v) AS s FROM rc_kv GROUP BY t');
CALL cq.run('rc_store');
INSERT INTO rc_kv VALUES (3, 'x', 4), (4, 'z', 5);
CALL cq.run('rc_store');
SELECT mismatches('rc_store', 'SELECT t AS k, count(*) AS n, sum(v) AS s FROM rc_kv GROUP BY t') AS diff;
SELECT * FROM rc_store ORDER BY k;
SELECT cq.drop_query('rc_store', drop_target => true);
DROP TABLE rc_kv;

SELECT cq.drop_query('rc_agg', drop_target => true);
SELECT cq.drop_query('rc_win', drop_target => true);
DROP VIEW rc_batches;
DROP TABLE rc_src, rc_ticks;
DROP PROCEDURE rc_add(int, int, int);
