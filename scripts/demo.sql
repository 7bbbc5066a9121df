-- scripts/demo.sql -- `make demo`: pg_cq continuous queries, batch by batch.
-- Run by scripts/demo.sh with psql -X -v ON_ERROR_STOP=1 --echo-queries against a
-- throwaway cluster; it cleans up after itself, so it can also be re-run by hand.
\pset footer off
SET client_min_messages = warning;   -- quiet clean-up of a previous run
DROP EXTENSION IF EXISTS pg_cq CASCADE;
DROP TABLE IF EXISTS sales, sales_by_category_update, sales_by_category_complete, big_sales;
RESET client_min_messages;

\echo '==== setup: a growing source table, and batch 0 of the Spark docs example'
CREATE EXTENSION pg_cq;
CREATE TABLE sales (category text, amount numeric);
INSERT INTO sales VALUES ('electronics', 1200), ('books', 50);

\echo '==== three continuous queries, one per output mode (WITH DATA: batch 0 runs at once)'
\echo '---- update: stateful aggregation, writes only the groups a batch changed'
CREATE TABLE sales_by_category_update WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT category, sum(amount) AS total, count(*) AS orders FROM sales GROUP BY category;
\echo '---- complete: rewrites the whole result every batch'
CREATE TABLE sales_by_category_complete WITH (cq.output_mode = 'complete', cq.trigger = 'available_now')
  AS SELECT category, sum(amount) AS total FROM sales GROUP BY category;
\echo '---- append: stateless filter, every qualifying row is inserted exactly once'
CREATE TABLE big_sales WITH (cq.output_mode = 'append', cq.trigger = 'available_now')
  AS SELECT category, amount FROM sales WHERE amount >= 100;
SELECT name, output_mode, "trigger", source, target FROM cq.queries ORDER BY name;

-- helpers: run every query once (available-now), then show the three targets
\set run_all 'CALL cq.run(''sales_by_category_update''); CALL cq.run(''sales_by_category_complete''); CALL cq.run(''big_sales'');'
\set show_all 'TABLE sales_by_category_update ORDER BY category; TABLE sales_by_category_complete ORDER BY category; TABLE big_sales ORDER BY category, amount;'

\echo '==== after batch 0'
:show_all

\echo '==== batch 1: (electronics,300), (apparel,150)'
\echo '---- sales now has a cq_xid column (see the NOTICE above): INSERTs name their columns'
INSERT INTO sales (category, amount) VALUES ('electronics', 300), ('apparel', 150);
:run_all
:show_all

\echo '==== batch 2: (books,20), (toys,100) -- plus an INSERT that rolls back'
BEGIN;
INSERT INTO sales (category, amount) VALUES ('electronics', 99999);
ROLLBACK;
INSERT INTO sales (category, amount) VALUES ('books', 20), ('toys', 100);
:run_all
\echo '---- the rolled-back electronics row is never counted (electronics stays 1500)'
:show_all

\echo '==== nothing new committed: run is a no-op, no batch'
:run_all

\echo '==== progress of the update query, one row per batch'
SELECT name, batch_id, num_input_rows, num_output_rows, num_state_rows_total, duration_ms
  FROM cq.progress WHERE name = 'sales_by_category_update' ORDER BY batch_id;
\echo '==== rows written per batch, by output mode: update writes only changed groups'
SELECT batch_id, name, num_input_rows, num_output_rows
  FROM cq.progress ORDER BY batch_id, name;
\echo '==== offsets: the source snapshot range (pg_snapshot) each batch of the update query covered'
SELECT batch_id, start_offset, end_offset FROM cq.offsets
 WHERE name = 'sales_by_category_update' ORDER BY batch_id;

\echo ''
\echo '==== in the background: trigger 0 = as fast as possible, woken by each commit'
CREATE TABLE clicks (ts timestamptz, page text);
CREATE TABLE clicks_per_page WITH (cq.output_mode = 'update')          -- trigger '0' is the default
  AS SELECT page, count(*) AS clicks FROM clicks GROUP BY page;
\echo '---- 10-second windows, 5-second watermark: append writes each window once, when it closes'
CREATE TABLE clicks_per_10s
  WITH (cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '5 seconds')
  AS SELECT w.window_start, w.window_end, page, count(*) AS clicks
       FROM clicks, LATERAL cq.window(ts, '10 seconds') AS w
      GROUP BY 1, 2, 3;
INSERT INTO clicks (ts, page) VALUES ('2024-01-01 12:00:01', '/home'), ('2024-01-01 12:00:03', '/cart'),
                                     ('2024-01-01 12:00:07', '/home');
INSERT INTO clicks (ts, page) VALUES ('2024-01-01 12:00:12', '/home');
INSERT INTO clicks (ts, page) VALUES ('2024-01-01 12:00:16', '/home');  -- watermark 12:00:11 closes 12:00:00-12:00:10
\echo '---- no CALL: the workers run the batches; wait (at most 10 s) until the targets caught up'
DO $$
DECLARE deadline timestamptz := clock_timestamp() + interval '10 seconds';
BEGIN
  WHILE clock_timestamp() < deadline LOOP
    EXIT WHEN (SELECT sum(clicks) FROM clicks_per_page) = 5
          AND (SELECT count(*) FROM clicks_per_10s) = 2;
    PERFORM pg_sleep(0.01);
  END LOOP;
END $$;
SELECT * FROM clicks_per_page ORDER BY page;
SELECT * FROM clicks_per_10s ORDER BY window_start, page;
SELECT name, message, is_data_available, is_trigger_active, watermark, last_batch_id
  FROM cq.status ORDER BY name;
SELECT name, batch_id, num_input_rows, watermark, num_rows_dropped_by_watermark AS dropped,
       num_state_rows_total AS state, num_output_rows AS output, round(duration_ms::numeric, 2) AS ms
  FROM cq.progress WHERE name LIKE 'clicks%' ORDER BY name, batch_id;
