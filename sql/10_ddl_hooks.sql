-- DDL hooks (issue 9, items 17 and 28).
-- 17. Dropping another extension keeps pg_cq's drop hook on: a query whose
--     query uses that extension's function is forgotten with it.
-- 28. A cq.* option given twice in one statement is refused, as core refuses
--     a repeated storage parameter (same SQLSTATE, same words).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

-- 17
CREATE EXTENSION pg_trgm;
CREATE TABLE x_words (w text);
CREATE TABLE x_similar WITH (cq.trigger = 'available_now')
  AS SELECT w, similarity(w, 'word') AS sim FROM x_words WITH NO DATA;
INSERT INTO x_words VALUES ('word'), ('ward');
CALL cq.run('x_similar');
SELECT w, sim FROM x_similar ORDER BY w;
SELECT name, state FROM cq.queries WHERE name = 'x_similar';
DROP EXTENSION pg_trgm CASCADE;
-- the query went with the function; its target stays, as with DROP ... CASCADE of a source
SELECT count(*) AS left_behind FROM cq.queries WHERE name = 'x_similar';
SELECT w, sim FROM x_similar ORDER BY w;
-- and dropping pg_cq itself still steps aside (tested by t/001_workers.pl)
DROP TABLE x_similar, x_words;

-- 28
CREATE TABLE x_src (k int, v int);
-- core's rule, for comparison
CREATE TABLE x_core (a int) WITH (fillfactor = 10, fillfactor = 20);
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE x_dup WITH (cq.trigger = '1 hour', cq.trigger = 'available_now')
  AS SELECT k FROM x_src WITH NO DATA;
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE x_dup WITH (cq.trigger = 'available_now', fillfactor = 50, cq.output_mode = 'update',
                         cq.output_mode = 'complete')
  AS SELECT k, count(*) AS n FROM x_src GROUP BY k WITH NO DATA;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS created FROM pg_class WHERE relname = 'x_dup';
CREATE TABLE x_ok WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM x_src GROUP BY k WITH NO DATA;
ALTER TABLE x_ok SET (cq.max_rows_per_trigger = 1, cq.max_rows_per_trigger = 2);
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE x_ok SET (cq.max_rows_per_trigger = 1), SET (cq.max_rows_per_trigger = 2);
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE x_ok SET (cq.complete_refresh = 'delete'), RESET (cq.complete_refresh);
\echo :LAST_ERROR_SQLSTATE
-- nothing changed; one of each is fine
SELECT max_rows_per_trigger, complete_refresh FROM cq.queries WHERE name = 'x_ok';
ALTER TABLE x_ok SET (cq.max_rows_per_trigger = 2, cq.complete_refresh = 'delete');
SELECT max_rows_per_trigger, complete_refresh FROM cq.queries WHERE name = 'x_ok';
DROP TABLE x_ok, x_src;
