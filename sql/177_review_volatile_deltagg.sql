-- Session 38 review: a query with a volatile function on the store.  When
-- the C aggregation of the new rows (deltagg.c) outgrew hash_mem, its scan
-- stopped and d read the rows again: nextval() was called twice for the
-- rows already scanned (the sequence ran ahead of the rows counted).  Such
-- a query keeps d, which calls it once a row.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET cq.run_in_worker = off;
CREATE SEQUENCE rv_seq;
CREATE TABLE rv_src (k int);
INSERT INTO rv_src SELECT g FROM generate_series(1, 5000) g;
CREATE TABLE rv_t WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, max(nextval('rv_seq')) AS hi FROM rv_src GROUP BY k;
-- the same shape without the volatile call is aggregated in C
CREATE TABLE rv_plain WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, max(k::int8) AS hi FROM rv_src GROUP BY k;
SELECT name, state_path FROM cq.queries WHERE name LIKE 'rv\_%' ORDER BY name;
SELECT q, cq.explain(q) LIKE '%made in C (cq.delta_agg_in_c)%' AS in_c
  FROM unnest(ARRAY['rv_t', 'rv_plain']) q;
CALL cq.run('rv_t');
-- batch 1: 5,000 existing groups again, more than a 64 kB hash_mem holds
INSERT INTO rv_src SELECT g FROM generate_series(1, 5000) g;
SET cq.work_mem = 64;
CALL cq.run('rv_t');
RESET cq.work_mem;
-- one nextval() a row read: the sequence's last value is the rows counted
SELECT (SELECT last_value FROM rv_seq) AS nextval_calls, sum(n) AS rows_counted,
       count(*) AS groups FROM rv_t;
DROP TABLE rv_t, rv_plain, rv_src;
DROP SEQUENCE rv_seq;
