-- Issue 12 goal 2 / issue 15: batch 0 of a query on the shared-memory store reads a
-- backlog without testing each row's cq_xid when the BRIN summaries of cq_xid (all NULL,
-- or ids below the end offset's xmin) and a read of the unsummarized tail show that every
-- row passes (store_fold.c fold_history, tracking.c cq_tracking_history_all); else it
-- tests them.  Either way the targets must equal the plain query, and the rows of later
-- batches must count once.  (t/044 checks which statement ran and the concurrent cases.)
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
\i sql/include/helpers.sql

-- history rows only (NULL cq_xid), several summarized ranges and a partial last one
CREATE TABLE hu_a (k int, g text, v numeric(10,2), w int);
INSERT INTO hu_a SELECT i % 37, 'g' || (i % 5), (i % 1000) / 7.0, CASE WHEN i % 11 = 0 THEN NULL ELSE i END
  FROM generate_series(1, 30000) i;
SELECT cq.create_query('hu_a1', 'SELECT k, g, count(*) AS n, sum(v) AS s, avg(v) AS a, max(w) AS m, count(w) AS c FROM hu_a GROUP BY k, g',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory');
-- the user's WHERE stays when cq_xid is not tested
SELECT cq.create_query('hu_a2', 'SELECT g, count(*) AS n, min(v) AS lo FROM hu_a WHERE w > 100 GROUP BY g',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory');
-- rows stamped after tracking began, before batch 0: in the unsummarized tail
INSERT INTO hu_a SELECT i % 37, 'g' || (i % 5), 1.5, i FROM generate_series(1, 500) i;
CALL cq.run('hu_a1');
CALL cq.run('hu_a2');
SELECT mismatches('hu_a1', 'SELECT k, g, count(*) AS n, sum(v) AS s, avg(v) AS a, max(w) AS m, count(w) AS c FROM hu_a GROUP BY k, g') AS a1_batch0,
       mismatches('hu_a2', 'SELECT g, count(*) AS n, min(v) AS lo FROM hu_a WHERE w > 100 GROUP BY g') AS a2_batch0;
-- later rows, deleted and updated rows: batches after 0 test cq_xid as always
INSERT INTO hu_a SELECT i % 41, 'g' || (i % 7), 2.25, i FROM generate_series(1, 3000) i;
CALL cq.run('hu_a1');
CALL cq.run('hu_a2');
SELECT mismatches('hu_a1', 'SELECT k, g, count(*) AS n, sum(v) AS s, avg(v) AS a, max(w) AS m, count(w) AS c FROM hu_a GROUP BY k, g') AS a1_batch1,
       mismatches('hu_a2', 'SELECT g, count(*) AS n, min(v) AS lo FROM hu_a WHERE w > 100 GROUP BY g') AS a2_batch1;

-- a query made after more rows were stamped than the tail read covers (all unsummarized):
-- batch 0 tests cq_xid; the same result
CREATE TABLE hu_b (k int, v int);
SELECT cq.create_query('hu_b0', 'SELECT k, count(*) AS n FROM hu_b GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory');
INSERT INTO hu_b SELECT i % 13, i FROM generate_series(1, 60000) i;
SELECT pg_relation_size('hu_b') / current_setting('block_size')::int > 4 * 32 AS tail_longer_than_read;
SELECT cq.create_query('hu_b1', 'SELECT k, count(*) AS n, sum(v) AS s FROM hu_b GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory');
CALL cq.run('hu_b1');
SELECT mismatches('hu_b1', 'SELECT k, count(*) AS n, sum(v) AS s FROM hu_b GROUP BY k') AS b1_batch0;

-- an empty source
CREATE TABLE hu_c (k int, v int);
SELECT cq.create_query('hu_c1', 'SELECT k, count(*) AS n FROM hu_c GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory');
CALL cq.run('hu_c1');
SELECT count(*) AS c1_rows FROM hu_c1;
INSERT INTO hu_c VALUES (1, 1), (1, 2), (NULL, 3);
CALL cq.run('hu_c1');
SELECT mismatches('hu_c1', 'SELECT k, count(*) AS n FROM hu_c GROUP BY k') AS c1_batch1;

SELECT cq.drop_query(n, drop_target => true) FROM unnest(ARRAY['hu_a1', 'hu_a2', 'hu_b0', 'hu_b1', 'hu_c1']) n;
DROP TABLE hu_a, hu_b, hu_c;
