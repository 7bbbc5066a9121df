-- Stream-static joins in every mode (issue 9 item 15), grouping keys of
-- extension types (item 16), grouping values of any size (item 20), and the
-- per-backend caches of analyses and plans (item 30).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

-- shared helpers: wait_until, mismatches, fingerprint
\i sql/include/helpers.sql

------------------------------------------------------------------------------
-- Item 15: stream-static joins, every mode, CTAS and cq.create_query,
-- cq.run and the background workers
------------------------------------------------------------------------------
CREATE TABLE jk_st (value int, extra text);
CREATE TABLE jk_small (number int, word text);
INSERT INTO jk_small VALUES (1, 'one'), (2, 'two'), (3, 'three');
INSERT INTO jk_st VALUES (1, 'a'), (2, 'b'), (4, 'd');

-- stateless (append), by CTAS and by function
CREATE TABLE jk_rows WITH (cq.source = 'jk_st', cq.trigger = 'available_now')
  AS SELECT value, number, word FROM jk_st JOIN jk_small ON value = number;
SELECT cq.create_query('jk_rows_f', 'SELECT value, number, word FROM jk_st JOIN jk_small ON value = number',
                       source => 'jk_st', output_mode => 'update', "trigger" => 'available_now');
-- aggregations: update by CTAS, complete by function, a left join with the
-- stream on the preserved side
CREATE TABLE jk_words WITH (cq.source = 'jk_st', cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT word, count(*) AS n, max(extra) AS mx FROM jk_st JOIN jk_small ON value = number GROUP BY word;
SELECT cq.create_query('jk_words_c',
  'SELECT coalesce(word, ''?'') AS word, count(*) AS n FROM jk_st LEFT JOIN jk_small ON value = number GROUP BY 1',
  source => 'jk_st', output_mode => 'complete', "trigger" => 'available_now');
-- in the background (a static table of its own, which does not change)
CREATE TABLE jk_small_bg (number int, word text);
INSERT INTO jk_small_bg VALUES (1, 'one'), (3, 'three'), (5, 'five');
SELECT cq.create_query('jk_words_bg',
  'SELECT word, sum(value) AS s FROM jk_small_bg, jk_st WHERE value = number GROUP BY word',
  source => 'jk_st', output_mode => 'update');

INSERT INTO jk_st VALUES (1, 'e'), (3, 'f'), (5, 'g');
INSERT INTO jk_st VALUES (3, 'h');
CALL cq.run('jk_rows');
CALL cq.run('jk_rows_f');
CALL cq.run('jk_words');
CALL cq.run('jk_words_c');
-- the static table is read as it is at each batch: (4, 'd') found no
-- number when it was processed, (4, 'i') finds one
INSERT INTO jk_small VALUES (4, 'four');
INSERT INTO jk_st VALUES (4, 'i');
CALL cq.run('jk_rows');
CALL cq.run('jk_rows_f');
CALL cq.run('jk_words');
CALL cq.run('jk_words_c');
SELECT * FROM jk_rows ORDER BY value, word;
SELECT * FROM jk_words ORDER BY word;
SELECT * FROM jk_words_c ORDER BY word;
SELECT mismatches('jk_rows_f', 'TABLE jk_rows') AS function_form_differs,
       mismatches('jk_rows', $$SELECT value, number, word FROM jk_st JOIN jk_small ON value = number
                                   AND (value, extra) <> (4, 'd')$$) AS append_mismatches,
       mismatches('jk_words', $$SELECT word, count(*), max(extra) FROM jk_st JOIN jk_small ON value = number
                                    AND (value, extra) <> (4, 'd') GROUP BY word$$) AS update_mismatches,
       mismatches('jk_words_c', $$SELECT coalesce(word, '?'), count(*) FROM jk_st LEFT JOIN jk_small ON value = number
                                      AND (value, extra) <> (4, 'd') GROUP BY 1$$) AS complete_mismatches;
SELECT wait_until($$mismatches('jk_words_bg', 'SELECT word, sum(value) FROM jk_st JOIN jk_small_bg ON value = number
                                                    GROUP BY word') = 0$$) AS background_caught_up;
SELECT name, state, last_error FROM cq.queries WHERE name LIKE 'jk\_%' ORDER BY name;
-- a join query can be changed (a filter here)
SELECT cq.alter_query('jk_words', query => $$SELECT word, count(*) AS n, max(extra) AS mx FROM jk_st JOIN jk_small ON value = number
                                             WHERE extra <> 'x' GROUP BY word$$);
INSERT INTO jk_st VALUES (2, 'x'), (2, 'c');
CALL cq.run('jk_words');
SELECT * FROM jk_words ORDER BY word;
SELECT cq.drop_query('jk_words_bg');

------------------------------------------------------------------------------
-- Item 16: grouping keys of extension types compare with their own
-- equality (citext 'A' and 'a' are one group, as in GROUP BY)
------------------------------------------------------------------------------
CREATE EXTENSION IF NOT EXISTS citext;
CREATE EXTENSION IF NOT EXISTS ltree;
CREATE EXTENSION IF NOT EXISTS hstore;
CREATE EXTENSION IF NOT EXISTS isn;
CREATE TABLE jk_ext (c citext, l ltree, h hstore, i isbn13, v int);
CREATE TABLE jk_by_citext WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT c, count(*) AS n, sum(v) AS s FROM jk_ext GROUP BY c;
CREATE TABLE jk_by_ltree WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT l, count(*) AS n, sum(v) AS s FROM jk_ext GROUP BY l;
CREATE TABLE jk_by_hstore WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT h, count(*) AS n, sum(v) AS s FROM jk_ext GROUP BY h;
CREATE TABLE jk_by_isbn WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT i, count(*) AS n, sum(v) AS s FROM jk_ext GROUP BY i;
-- (ltree has no hash operator class: this one keeps a unique index, on every key output)
CREATE TABLE jk_by_all WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT c, l, h, i, l AS l2, count(*) AS n FROM jk_ext GROUP BY c, l, h, i;
-- values of such types, not only keys: a changed row is found by its binary image
CREATE TABLE jk_ext_values WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT v % 2 AS odd, ('top.' || max(v))::ltree AS ml, min(c::text)::citext AS mc, count(*) AS n FROM jk_ext GROUP BY 1;
INSERT INTO jk_ext VALUES ('Apple', 'a.b', 'x=>1', '978-0-306-40615-7', 1), ('pear', 'a', 'x=>1, y=>2', '9780306406157', 2),
                          (NULL, NULL, NULL, NULL, 3);
DO $$
DECLARE q text;
BEGIN
  FOREACH q IN ARRAY '{jk_by_citext,jk_by_ltree,jk_by_hstore,jk_by_isbn,jk_by_all,jk_ext_values}'::text[] LOOP
    CALL cq.run(q);
  END LOOP;
END $$;
-- the same groups again, written differently where the type allows it
INSERT INTO jk_ext VALUES ('APPLE', 'a.b', 'x=>"1"', '9780306406157', 10), ('Pear', 'a', 'y=>2, x=>1', '978-0-306-40615-7', 20),
                          (NULL, NULL, NULL, NULL, 30);
DO $$
DECLARE q text;
BEGIN
  FOREACH q IN ARRAY '{jk_by_citext,jk_by_ltree,jk_by_hstore,jk_by_isbn,jk_by_all,jk_ext_values}'::text[] LOOP
    CALL cq.run(q);
  END LOOP;
END $$;
SELECT * FROM jk_by_citext ORDER BY c;
SELECT * FROM jk_by_ltree ORDER BY l;
SELECT * FROM jk_by_hstore ORDER BY h;
SELECT * FROM jk_by_isbn ORDER BY i;
SELECT mismatches('jk_by_citext', 'SELECT c, count(*), sum(v) FROM jk_ext GROUP BY c') AS citext_mismatches,
       mismatches('jk_by_ltree', 'SELECT l, count(*), sum(v) FROM jk_ext GROUP BY l') AS ltree_mismatches,
       mismatches('jk_by_hstore', 'SELECT h, count(*), sum(v) FROM jk_ext GROUP BY h') AS hstore_mismatches,
       mismatches('jk_by_isbn', 'SELECT i, count(*), sum(v) FROM jk_ext GROUP BY i') AS isbn_mismatches,
       mismatches('jk_by_all', 'SELECT c, l, h, i, l, count(*) FROM jk_ext GROUP BY c, l, h, i') AS all_mismatches,
       mismatches('jk_ext_values', $$SELECT v % 2, ('top.' || max(v))::ltree, min(c::text)::citext, count(*) FROM jk_ext GROUP BY 1$$) AS values_mismatches;
SELECT * FROM jk_ext_values ORDER BY odd;

------------------------------------------------------------------------------
-- Item 20: a grouping value of any size (a 10 kB key that does not
-- compress), in update and complete mode, with GROUP BY's equality
------------------------------------------------------------------------------
CREATE TABLE jk_big (k text, x numeric, v int);
CREATE FUNCTION jk_big_key(seed int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT string_agg(md5(seed::text || '/' || g::text), '') FROM generate_series(1, 320) g
$$;
CREATE TABLE jk_big_u WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT k, x, count(*) AS n, sum(v) AS s FROM jk_big GROUP BY k, x;
CREATE TABLE jk_big_c WITH (cq.output_mode = 'complete', cq.trigger = 'available_now')
  AS SELECT k, count(*) AS n, sum(v) AS s FROM jk_big GROUP BY k;
INSERT INTO jk_big VALUES (jk_big_key(1), 1.0, 1), (jk_big_key(2), 2, 2), ('small', NULL, 3);
CALL cq.run('jk_big_u');
CALL cq.run('jk_big_c');
-- the same keys again (numeric 1.00 = 1.0: one group, as in GROUP BY), and a new one
INSERT INTO jk_big VALUES (jk_big_key(1), 1.00, 10), (jk_big_key(3), 3, 30), ('small', NULL, 30), (jk_big_key(1), 1, 100);
CALL cq.run('jk_big_u');
CALL cq.run('jk_big_c');
SELECT length(k) AS key_length, x, n, s FROM jk_big_u ORDER BY s;
SELECT mismatches('jk_big_u', 'SELECT k, x, count(*), sum(v) FROM jk_big GROUP BY k, x') AS update_mismatches,
       mismatches('jk_big_c', 'SELECT k, count(*), sum(v) FROM jk_big GROUP BY k') AS complete_mismatches;
SELECT state, last_error FROM cq.queries WHERE name = 'jk_big_u';

------------------------------------------------------------------------------
-- Item 30: the per-backend caches.  An error while a query's analysis is
-- rebuilt leaves no broken entry behind (create, break, retry); the cached
-- analysis and the saved plans of a dropped query are freed.
------------------------------------------------------------------------------
-- The caches are this backend's: its batches run here, not in a pool
-- worker (cq.run_in_worker hands them to one, sql/91_run_handoff.sql).
SET cq.run_in_worker = off;
CREATE TABLE jk_cache_src (k int, v int);
CREATE TABLE jk_cache_other (k int, v int);
CREATE TABLE jk_cache WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT k, sum(v) AS s FROM jk_cache_src GROUP BY k;
CREATE TABLE jk_cache_o WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT k, sum(v) AS s FROM jk_cache_other GROUP BY k;
INSERT INTO jk_cache_src VALUES (1, 1);
INSERT INTO jk_cache_other VALUES (1, 1);
CALL cq.run('jk_cache');
CALL cq.run('jk_cache_o');
-- break: the batch cannot be planned while the final view is missing
SELECT 'f_' || id AS fview FROM cq.queries WHERE name = 'jk_cache' \gset
ALTER VIEW cq_state.:"fview" RENAME TO jk_cache_away;
INSERT INTO jk_cache_src VALUES (1, 10);
\set VERBOSITY terse
CALL cq.run('jk_cache');
\set VERBOSITY default
-- retry: the same backend plans the query again and catches up
ALTER VIEW cq_state.jk_cache_away RENAME TO :"fview";
CALL cq.run('jk_cache');
SELECT state, last_error, (SELECT s FROM jk_cache WHERE k = 1) AS s FROM cq.queries WHERE name = 'jk_cache';
-- this backend holds the analysis and the saved plans of both queries ...
SELECT count(*) FILTER (WHERE name = 'pg_cq analysis') >= 2 AS analyses_cached,
       count(*) FILTER (WHERE name = 'CachedPlanSource' AND ident LIKE '%jk_cache_src%') > 0 AS plans_saved
  FROM pg_backend_memory_contexts;
SELECT count(*) AS analyses_before FROM pg_backend_memory_contexts WHERE name = 'pg_cq analysis' \gset
-- ... and frees those of the dropped one at the next batch of any query:
-- the drop invalidated a relation of its entry, after which the next look-up
-- in the cache sweeps out the entries of dropped queries (plan.c's
-- sweep_dropped), whether it builds one or not
DROP TABLE jk_cache;
INSERT INTO jk_cache_other VALUES (1, 10);
CALL cq.run('jk_cache_o');
SELECT count(*) FILTER (WHERE name = 'pg_cq analysis') = :analyses_before - 1 AS analysis_freed,
       count(*) FILTER (WHERE name = 'CachedPlanSource' AND ident LIKE '%jk_cache_src%') AS plans_left
  FROM pg_backend_memory_contexts;
SELECT * FROM jk_cache_o;
