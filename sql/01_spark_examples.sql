-- Spark's worked examples (reference/spark-semantics.md §8.1, §8.2), batch by batch.
CREATE EXTENSION IF NOT EXISTS pg_cq;

-- §8.1 sales by category: B0 = (electronics,1200),(books,50); B1 = (electronics,300),(apparel,150)
CREATE TABLE sales (category text, amount int);
INSERT INTO sales VALUES ('electronics', 1200), ('books', 50);

CREATE TABLE sales_update WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT category, sum(amount) AS total FROM sales GROUP BY category;
CREATE TABLE sales_complete WITH (cq.output_mode = 'complete', cq.trigger = 'available_now')
  AS SELECT category, sum(amount) AS total FROM sales GROUP BY category;
CREATE TABLE sales_append WITH (cq.output_mode = 'append', cq.trigger = 'available_now') AS SELECT category, amount FROM sales WITH NO DATA;

-- batch 0 ran at creation (WITH DATA); the append query deferred its first batch
SELECT * FROM sales_update ORDER BY category;
SELECT * FROM sales_complete ORDER BY category;
SELECT count(*) FROM sales_append;
CALL cq.run('sales_append');
SELECT * FROM sales_append ORDER BY category;

INSERT INTO sales (category, amount) VALUES ('electronics', 300), ('apparel', 150);
CALL cq.run('sales_update');
CALL cq.run('sales_complete');
CALL cq.run('sales_append');
SELECT * FROM sales_update ORDER BY category;
SELECT * FROM sales_complete ORDER BY category;
SELECT * FROM sales_append ORDER BY category, amount;

-- progress: update writes 2 rows in batch 1 (books unchanged), complete writes all 3
SELECT name, batch_id, num_input_rows, num_state_rows_total, num_state_rows_updated, num_output_rows
  FROM cq.progress ORDER BY name, batch_id;
SELECT name, batch_id, start_offset::text = lag(end_offset::text) OVER (PARTITION BY name ORDER BY batch_id) AS contiguous
  FROM cq.offsets ORDER BY name, batch_id;

-- nothing new: no batch, batch ids do not advance
CALL cq.run('sales_update');
SELECT max(batch_id) FROM cq.offsets WHERE name = 'sales_update';

-- §8.2 orders per region: B0 = north, north, south; B1 = north, north, east
CREATE TABLE orders (region text);
SELECT cq.create_query('orders_per_region',
                       'SELECT region, count(*) AS count FROM orders GROUP BY region',
                       output_mode => 'update', "trigger" => 'available_now');
SELECT cq.create_query('orders_per_region_complete',
                       'SELECT region, count(*) AS count FROM orders GROUP BY region',
                       output_mode => 'complete', "trigger" => 'available_now');
INSERT INTO orders (region) VALUES ('north'), ('north'), ('south');
CALL cq.run('orders_per_region');
CALL cq.run('orders_per_region_complete');
SELECT * FROM orders_per_region ORDER BY region;
INSERT INTO orders (region) VALUES ('north'), ('north'), ('east');
CALL cq.run('orders_per_region');
CALL cq.run('orders_per_region_complete');
SELECT * FROM orders_per_region ORDER BY region;
SELECT * FROM orders_per_region_complete ORDER BY region;
SELECT name, batch_id, num_input_rows, num_state_rows_total, num_state_rows_updated, num_output_rows
  FROM cq.progress WHERE name LIKE 'orders%' ORDER BY name, batch_id;

-- the catalog
SELECT name, owner, source, target, output_mode, "trigger", starting, state_storage, complete_refresh, state
  FROM cq.queries ORDER BY name;

-- a rolled-back insert is never counted
BEGIN;
INSERT INTO orders (region) VALUES ('west');
ROLLBACK;
CALL cq.run('orders_per_region');
SELECT * FROM orders_per_region ORDER BY region;

-- DROP TABLE of a target drops its query and internal objects
DROP TABLE orders_per_region_complete;
SELECT name FROM cq.queries WHERE name LIKE 'orders%';
-- cq.drop_query keeps the table
SELECT cq.drop_query('orders_per_region');
SELECT count(*) FROM orders_per_region;
SELECT count(*) FROM cq.queries WHERE name = 'orders_per_region';
