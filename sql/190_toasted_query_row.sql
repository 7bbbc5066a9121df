-- A query whose cq.queries row holds a value stored out of line (its
-- query tree, TOASTed): each batch reads the row through the row cache
-- (rowcache.c) in its flattened form, the TOASTed value fetched, still
-- compressed, and compared byte for byte; never by the out-of-line pointer.
-- Whatever changes the row is seen by the next batch: pause and resume, a
-- new query text (cq.alter_query: another TOASTed tree), cq.reset (a new run
-- id), the query dropped and created again under the same name.
-- The oracle counts the rows with x < 100000 (no row before the ALTER has more).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
CREATE TABLE t190_src (k int, x int);
-- (since session 42 a row stays in line up to a page, toast_tuple_target
-- 8160: here as at PostgreSQL's default, so that this tree goes out of line)
ALTER TABLE cq.queries SET (toast_tuple_target = 128);
SELECT c.reltoastrelid::regclass AS t190_toast FROM pg_class c WHERE c.oid = 'cq.queries'::regclass \gset
SELECT count(*) AS t190_chunks FROM :t190_toast \gset
CREATE TABLE t190_q WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
SELECT k, count(*) AS n,
       sum(x * 2 + 0) AS s0,
       sum(x * 3 + 1) AS s1,
       sum(x * 4 + 2) AS s2,
       sum(x * 5 + 3) AS s3,
       sum(x * 6 + 4) AS s4,
       sum(x * 7 + 5) AS s5,
       sum(x * 8 + 6) AS s6,
       sum(x * 9 + 7) AS s7,
       sum(x * 10 + 8) AS s8,
       sum(x * 11 + 9) AS s9,
       sum(x * 12 + 10) AS s10,
       sum(x * 13 + 11) AS s11,
       sum(x * 14 + 12) AS s12,
       sum(x * 15 + 13) AS s13,
       sum(x * 16 + 14) AS s14,
       sum(x * 17 + 15) AS s15,
       sum(x * 18 + 16) AS s16,
       sum(x * 19 + 17) AS s17,
       sum(x * 20 + 18) AS s18,
       sum(x * 21 + 19) AS s19,
       sum(x * 22 + 20) AS s20,
       sum(x * 23 + 21) AS s21,
       sum(x * 24 + 22) AS s22,
       sum(x * 25 + 23) AS s23,
       sum(x * 26 + 24) AS s24,
       sum(x * 27 + 25) AS s25,
       sum(x * 28 + 26) AS s26,
       sum(x * 29 + 27) AS s27,
       sum(x * 30 + 28) AS s28,
       sum(x * 31 + 29) AS s29,
       sum(x * 32 + 30) AS s30,
       sum(x * 33 + 31) AS s31,
       sum(x * 34 + 32) AS s32,
       sum(x * 35 + 33) AS s33,
       sum(x * 36 + 34) AS s34,
       sum(x * 37 + 35) AS s35,
       sum(x * 38 + 36) AS s36,
       sum(x * 39 + 37) AS s37,
       sum(x * 40 + 38) AS s38,
       sum(x * 41 + 39) AS s39
  FROM t190_src GROUP BY k;
-- the row's query tree is stored out of line (its chunks came with the query)
SELECT count(*) > :t190_chunks AS tree_out_of_line FROM :t190_toast;
CREATE FUNCTION t190_diff() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM (
    (SELECT k, count(*) AS n, sum(x * 2 + 0), sum(x * 3 + 1), sum(x * 4 + 2), sum(x * 5 + 3), sum(x * 6 + 4), sum(x * 7 + 5), sum(x * 8 + 6), sum(x * 9 + 7), sum(x * 10 + 8), sum(x * 11 + 9), sum(x * 12 + 10), sum(x * 13 + 11), sum(x * 14 + 12), sum(x * 15 + 13), sum(x * 16 + 14), sum(x * 17 + 15), sum(x * 18 + 16), sum(x * 19 + 17), sum(x * 20 + 18), sum(x * 21 + 19), sum(x * 22 + 20), sum(x * 23 + 21), sum(x * 24 + 22), sum(x * 25 + 23), sum(x * 26 + 24), sum(x * 27 + 25), sum(x * 28 + 26), sum(x * 29 + 27), sum(x * 30 + 28), sum(x * 31 + 29), sum(x * 32 + 30), sum(x * 33 + 31), sum(x * 34 + 32), sum(x * 35 + 33), sum(x * 36 + 34), sum(x * 37 + 35), sum(x * 38 + 36), sum(x * 39 + 37), sum(x * 40 + 38), sum(x * 41 + 39)
       FROM t190_src WHERE x < 100000 GROUP BY k
     EXCEPT ALL SELECT * FROM t190_q)
    UNION ALL
    (SELECT * FROM t190_q
     EXCEPT ALL SELECT k, count(*) AS n, sum(x * 2 + 0), sum(x * 3 + 1), sum(x * 4 + 2), sum(x * 5 + 3), sum(x * 6 + 4), sum(x * 7 + 5), sum(x * 8 + 6), sum(x * 9 + 7), sum(x * 10 + 8), sum(x * 11 + 9), sum(x * 12 + 10), sum(x * 13 + 11), sum(x * 14 + 12), sum(x * 15 + 13), sum(x * 16 + 14), sum(x * 17 + 15), sum(x * 18 + 16), sum(x * 19 + 17), sum(x * 20 + 18), sum(x * 21 + 19), sum(x * 22 + 20), sum(x * 23 + 21), sum(x * 24 + 22), sum(x * 25 + 23), sum(x * 26 + 24), sum(x * 27 + 25), sum(x * 28 + 26), sum(x * 29 + 27), sum(x * 30 + 28), sum(x * 31 + 29), sum(x * 32 + 30), sum(x * 33 + 31), sum(x * 34 + 32), sum(x * 35 + 33), sum(x * 36 + 34), sum(x * 37 + 35), sum(x * 38 + 36), sum(x * 39 + 37), sum(x * 40 + 38), sum(x * 41 + 39)
       FROM t190_src WHERE x < 100000 GROUP BY k)) d
$$;
-- batches in a row (the row read from the cache after the first)
INSERT INTO t190_src SELECT g % 7, g FROM generate_series(1, 50) g;
CALL cq.run('t190_q');
INSERT INTO t190_src SELECT g % 7, g FROM generate_series(51, 60) g;
CALL cq.run('t190_q');
INSERT INTO t190_src VALUES (1, 1000);
CALL cq.run('t190_q');
SELECT t190_diff() AS differences;
SELECT batch_id, num_input_rows FROM cq.progress WHERE name = 't190_q' ORDER BY batch_id;
-- paused, then resumed: the row read says so each time
SELECT cq.pause('t190_q');
SELECT state FROM cq.queries WHERE name = 't190_q';
SELECT message FROM cq.status WHERE name = 't190_q';
SELECT cq.resume('t190_q');
INSERT INTO t190_src VALUES (2, 2001);
CALL cq.run('t190_q');
SELECT t190_diff() AS differences;
-- a new query text between batches (its tree TOASTed too): rows from now on are
-- filtered (x >= 100000 left out); the old tree would count the second row
SELECT cq.alter_query('t190_q', query => $q$SELECT k, count(*) AS n, sum(x * 2 + 0) AS s0, sum(x * 3 + 1) AS s1, sum(x * 4 + 2) AS s2, sum(x * 5 + 3) AS s3, sum(x * 6 + 4) AS s4, sum(x * 7 + 5) AS s5, sum(x * 8 + 6) AS s6, sum(x * 9 + 7) AS s7, sum(x * 10 + 8) AS s8, sum(x * 11 + 9) AS s9, sum(x * 12 + 10) AS s10, sum(x * 13 + 11) AS s11, sum(x * 14 + 12) AS s12, sum(x * 15 + 13) AS s13, sum(x * 16 + 14) AS s14, sum(x * 17 + 15) AS s15, sum(x * 18 + 16) AS s16, sum(x * 19 + 17) AS s17, sum(x * 20 + 18) AS s18, sum(x * 21 + 19) AS s19, sum(x * 22 + 20) AS s20, sum(x * 23 + 21) AS s21, sum(x * 24 + 22) AS s22, sum(x * 25 + 23) AS s23, sum(x * 26 + 24) AS s24, sum(x * 27 + 25) AS s25, sum(x * 28 + 26) AS s26, sum(x * 29 + 27) AS s27, sum(x * 30 + 28) AS s28, sum(x * 31 + 29) AS s29, sum(x * 32 + 30) AS s30, sum(x * 33 + 31) AS s31, sum(x * 34 + 32) AS s32, sum(x * 35 + 33) AS s33, sum(x * 36 + 34) AS s34, sum(x * 37 + 35) AS s35, sum(x * 38 + 36) AS s36, sum(x * 39 + 37) AS s37, sum(x * 40 + 38) AS s38, sum(x * 41 + 39) AS s39 FROM t190_src WHERE x < 100000 GROUP BY k$q$);
INSERT INTO t190_src VALUES (3, 3000), (3, 500000);
CALL cq.run('t190_q');
SELECT n FROM t190_q WHERE k = 3;
SELECT t190_diff() AS differences;
-- reset between batches: a new run id, batches from 0 again, the target rebuilt
SELECT cq.reset('t190_q');
INSERT INTO t190_src VALUES (6, 6000);
CALL cq.run('t190_q');
SELECT count(*) > 0 AS batches, bool_and(p.run_id = q.run_id) AS all_of_the_new_run
  FROM cq.progress p JOIN cq.queries q USING (schema, name) WHERE name = 't190_q';
SELECT t190_diff() AS differences;
-- dropped and created again under the same name, another tree (other sums)
SELECT cq.drop_query('t190_q', drop_target => true);
CREATE TABLE t190_q WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
SELECT k, count(*) AS n,
       sum(x * 2 - 0) AS s0,
       sum(x * 3 - 1) AS s1,
       sum(x * 4 - 2) AS s2,
       sum(x * 5 - 3) AS s3,
       sum(x * 6 - 4) AS s4,
       sum(x * 7 - 5) AS s5,
       sum(x * 8 - 6) AS s6,
       sum(x * 9 - 7) AS s7,
       sum(x * 10 - 8) AS s8,
       sum(x * 11 - 9) AS s9,
       sum(x * 12 - 10) AS s10,
       sum(x * 13 - 11) AS s11,
       sum(x * 14 - 12) AS s12,
       sum(x * 15 - 13) AS s13,
       sum(x * 16 - 14) AS s14,
       sum(x * 17 - 15) AS s15,
       sum(x * 18 - 16) AS s16,
       sum(x * 19 - 17) AS s17,
       sum(x * 20 - 18) AS s18,
       sum(x * 21 - 19) AS s19,
       sum(x * 22 - 20) AS s20,
       sum(x * 23 - 21) AS s21,
       sum(x * 24 - 22) AS s22,
       sum(x * 25 - 23) AS s23,
       sum(x * 26 - 24) AS s24,
       sum(x * 27 - 25) AS s25,
       sum(x * 28 - 26) AS s26,
       sum(x * 29 - 27) AS s27,
       sum(x * 30 - 28) AS s28,
       sum(x * 31 - 29) AS s29,
       sum(x * 32 - 30) AS s30,
       sum(x * 33 - 31) AS s31,
       sum(x * 34 - 32) AS s32,
       sum(x * 35 - 33) AS s33,
       sum(x * 36 - 34) AS s34,
       sum(x * 37 - 35) AS s35,
       sum(x * 38 - 36) AS s36,
       sum(x * 39 - 37) AS s37,
       sum(x * 40 - 38) AS s38,
       sum(x * 41 - 39) AS s39
  FROM t190_src WHERE x < 100000 GROUP BY k;
INSERT INTO t190_src VALUES (4, 4000);
CALL cq.run('t190_q');
INSERT INTO t190_src VALUES (5, 5000);
CALL cq.run('t190_q');
SELECT count(*) FROM (
    (SELECT k, count(*) AS n, sum(x * 2 - 0), sum(x * 3 - 1), sum(x * 4 - 2), sum(x * 5 - 3), sum(x * 6 - 4), sum(x * 7 - 5), sum(x * 8 - 6), sum(x * 9 - 7), sum(x * 10 - 8), sum(x * 11 - 9), sum(x * 12 - 10), sum(x * 13 - 11), sum(x * 14 - 12), sum(x * 15 - 13), sum(x * 16 - 14), sum(x * 17 - 15), sum(x * 18 - 16), sum(x * 19 - 17), sum(x * 20 - 18), sum(x * 21 - 19), sum(x * 22 - 20), sum(x * 23 - 21), sum(x * 24 - 22), sum(x * 25 - 23), sum(x * 26 - 24), sum(x * 27 - 25), sum(x * 28 - 26), sum(x * 29 - 27), sum(x * 30 - 28), sum(x * 31 - 29), sum(x * 32 - 30), sum(x * 33 - 31), sum(x * 34 - 32), sum(x * 35 - 33), sum(x * 36 - 34), sum(x * 37 - 35), sum(x * 38 - 36), sum(x * 39 - 37), sum(x * 40 - 38), sum(x * 41 - 39)
       FROM t190_src WHERE x < 100000 GROUP BY k
     EXCEPT ALL SELECT * FROM t190_q)
    UNION ALL
    (SELECT * FROM t190_q
     EXCEPT ALL SELECT k, count(*) AS n, sum(x * 2 - 0), sum(x * 3 - 1), sum(x * 4 - 2), sum(x * 5 - 3), sum(x * 6 - 4), sum(x * 7 - 5), sum(x * 8 - 6), sum(x * 9 - 7), sum(x * 10 - 8), sum(x * 11 - 9), sum(x * 12 - 10), sum(x * 13 - 11), sum(x * 14 - 12), sum(x * 15 - 13), sum(x * 16 - 14), sum(x * 17 - 15), sum(x * 18 - 16), sum(x * 19 - 17), sum(x * 20 - 18), sum(x * 21 - 19), sum(x * 22 - 20), sum(x * 23 - 21), sum(x * 24 - 22), sum(x * 25 - 23), sum(x * 26 - 24), sum(x * 27 - 25), sum(x * 28 - 26), sum(x * 29 - 27), sum(x * 30 - 28), sum(x * 31 - 29), sum(x * 32 - 30), sum(x * 33 - 31), sum(x * 34 - 32), sum(x * 35 - 33), sum(x * 36 - 34), sum(x * 37 - 35), sum(x * 38 - 36), sum(x * 39 - 37), sum(x * 40 - 38), sum(x * 41 - 39)
       FROM t190_src WHERE x < 100000 GROUP BY k)) d;
SELECT cq.drop_query('t190_q', drop_target => true);
DROP FUNCTION t190_diff();
DROP TABLE t190_src;
ALTER TABLE cq.queries SET (toast_tuple_target = 8160);
