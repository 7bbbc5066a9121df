-- Issue 15, Build item 5: inspecting the state of a query.
-- cq.progress.state_bytes is what the state takes after each batch: in the
-- shared-memory store, the bytes cq.state_store_info shows (as the batch
-- published them); in tables, the state table with its indexes and TOAST
-- table (a join of two streams: its buffers); NULL when stateless.
-- cq.status shows the last batch's as its last column.  cq.explain of a
-- store query shows its path and why, the store now, its image, and the
-- statements a batch runs (d, the merge if not done in C, the target or the
-- complete-mode reload), each of which can be EXPLAINed.  The final view of
-- a store query reads the store as the batch's own transaction sees it.
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SET client_min_messages = warning;
SET timezone = 'UTC';

CREATE TABLE si_src (k int, t text, x int, ts timestamptz);
CREATE TABLE si_src2 (k int, y int, ts timestamptz);
-- the bytes of a table as cq.progress counts them: the main forks of the
-- table, its indexes, its TOAST table and the TOAST table's index
CREATE FUNCTION si_table_bytes(rel regclass) RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(pg_relation_size(c.oid, 'main'))::bigint
    FROM pg_class c
   WHERE c.oid IN (SELECT r FROM (VALUES (rel::oid), ((SELECT reltoastrelid FROM pg_class WHERE oid = rel))) v(r))
      OR c.oid IN (SELECT i.indexrelid FROM pg_index i
                    WHERE i.indrelid IN (rel, (SELECT reltoastrelid FROM pg_class WHERE oid = rel)))
$$;
-- the last progress row of a query
CREATE FUNCTION si_last(qname text) RETURNS cq.progress LANGUAGE sql AS $$
  SELECT * FROM cq.progress WHERE name = qname ORDER BY batch_id DESC LIMIT 1
$$;

-- on the store (the default), on a table (its twin), stateless; an append
-- window with a watermark; merges not done in C; complete mode; a join
SELECT cq.create_query('si_mem', 'SELECT k, count(*) AS n, sum(x) AS sx FROM si_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
SELECT cq.create_query('si_tab', 'SELECT k, count(*) AS n, sum(x) AS sx FROM si_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'unlogged') IS NOT NULL AS created;
SELECT cq.create_query('si_none', 'SELECT k, x FROM si_src WHERE x > 0', "trigger" => 'available_now') IS NOT NULL AS created;
SELECT cq.create_query('si_win', 'SELECT w.window_start, w.window_end, count(*) AS n '
                                 'FROM si_src, LATERAL cq.window(ts, ''10 seconds'') w GROUP BY 1, 2',
                       "trigger" => 'available_now', event_time => 'ts', watermark => '5 seconds') IS NOT NULL AS created;
SELECT cq.create_query('si_gen', 'SELECT k, bool_or(x > 40) AS big, stddev(x::float8) AS sd FROM si_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
SELECT cq.create_query('si_cmp', 'SELECT t, count(*) AS n FROM si_src GROUP BY t',
                       output_mode => 'complete', "trigger" => 'available_now') IS NOT NULL AS created;
SELECT cq.create_query('si_join', 'SELECT a.k, a.x, b.y FROM si_src a JOIN si_src2 b ON a.k = b.k '
                                  'AND b.ts BETWEEN a.ts AND a.ts + interval ''1 minute''',
                       source => 'si_src, si_src2', event_time => 'si_src.ts, si_src2.ts', watermark => '1 minute',
                       "trigger" => 'available_now') IS NOT NULL AS created;
SELECT name, state_path FROM cq.queries WHERE name LIKE 'si\_%' ORDER BY name;

-- 1. cq.progress.state_bytes
-- batch 0: ten groups
INSERT INTO si_src SELECT i % 10, 't' || (i % 3), i, '2024-01-01 00:00:00+00'::timestamptz + make_interval(secs => i % 7)
  FROM generate_series(1, 50) i;
INSERT INTO si_src2 SELECT i % 10, i, '2024-01-01 00:00:30+00' FROM generate_series(1, 20) i;
CALL cq.run('si_mem'); CALL cq.run('si_tab'); CALL cq.run('si_none'); CALL cq.run('si_win');
CALL cq.run('si_gen'); CALL cq.run('si_cmp'); CALL cq.run('si_join');
-- the store's bytes are cq.state_store_info's; the table's its size; none without state
SELECT (si_last('si_mem')).state_bytes > 0 AS store_has_bytes,
       (si_last('si_mem')).state_bytes = i.state_bytes AS store_bytes_match,
       (si_last('si_mem')).num_state_rows_total = i.state_rows AS store_rows_match
  FROM cq.state_store_info('si_mem') i;
SELECT (si_last('si_tab')).state_bytes > 0 AS table_has_bytes,
       (si_last('si_tab')).state_bytes = si_table_bytes(state_table) AS table_bytes_match
  FROM cq.queries WHERE name = 'si_tab';
SELECT (si_last('si_none')).state_bytes IS NULL AS stateless_null;
-- a join of two streams: both buffers
SELECT (si_last('si_join')).state_bytes > 0 AS join_has_bytes,
       (si_last('si_join')).state_bytes = si_table_bytes(format('cq_state.jl_%s', id)) + si_table_bytes(format('cq_state.jr_%s', id))
         AS join_bytes_match
  FROM cq.queries WHERE name = 'si_join';
CREATE TABLE si_bytes AS SELECT 0 AS step, name, num_state_rows_total AS rows, state_bytes AS bytes
  FROM cq.progress WHERE name LIKE 'si\_%';
-- batch 1: the same ten groups again (fixed-size state rows: the same bytes)
INSERT INTO si_src SELECT i % 10, 't' || (i % 3), i, '2024-01-01 00:00:00+00' FROM generate_series(1, 30) i;
CALL cq.run('si_mem');
INSERT INTO si_bytes SELECT 1, name, num_state_rows_total, state_bytes FROM cq.progress WHERE name = 'si_mem' AND batch_id = 1;
-- batch 2: a hundred new groups: more bytes, in proportion to the rows
INSERT INTO si_src SELECT 100 + i, 't' || (i % 3), i, '2024-01-01 00:00:00+00' FROM generate_series(1, 100) i;
CALL cq.run('si_mem');
INSERT INTO si_bytes SELECT 2, name, num_state_rows_total, state_bytes FROM cq.progress WHERE name = 'si_mem' AND batch_id = 2;
SELECT step, rows, bytes = first_value(bytes) OVER w AS same_bytes, bytes > first_value(bytes) OVER w AS more_bytes,
       bytes / rows = first_value(bytes / rows) OVER w AS same_bytes_per_row
  FROM si_bytes WHERE name = 'si_mem' WINDOW w AS (ORDER BY step) ORDER BY step;
SELECT (si_last('si_mem')).state_bytes = (cq.state_store_info('si_mem')).state_bytes AS still_matches;
-- a closed window leaves the store, and its bytes with it (caught up
-- first: then one batch opens a second window, a no-data batch closes the
-- first; window rows are all of one size)
CALL cq.run('si_win');
CREATE TABLE si_win_from AS SELECT max(batch_id) AS b FROM cq.progress WHERE name = 'si_win';
INSERT INTO si_src VALUES (1, 't', 1, '2024-01-01 00:01:00+00');
CALL cq.run('si_win');
SELECT p.batch_id - f.b AS batch, num_state_rows_total AS open_windows, num_state_rows_removed AS closed,
       state_bytes > 0 AS has_bytes, state_bytes / num_state_rows_total = first_value(state_bytes) OVER w AS one_window_each
  FROM cq.progress p, si_win_from f WHERE name = 'si_win' AND batch_id >= f.b
WINDOW w AS (ORDER BY batch_id) ORDER BY batch_id;
SELECT (si_last('si_win')).state_bytes = (cq.state_store_info('si_win')).state_bytes AS bytes_match;

-- 2. cq.status: state_bytes, the last batch's, as its last column
SELECT string_agg(attname, ', ' ORDER BY attnum) AS status_columns
  FROM pg_attribute WHERE attrelid = 'cq.status'::regclass AND attnum > 0;
SELECT s.name, s.state_path, s.state_bytes IS NOT DISTINCT FROM (si_last(s.name)).state_bytes AS last_batch_bytes,
       s.state_bytes > 0 AS has_bytes
  FROM cq.status s WHERE s.name LIKE 'si\_%' ORDER BY s.name;

-- 3. cq.explain of a store query: its path, the store now, its image and
-- its statements (internal numbers and the store's figures masked)
CREATE FUNCTION si_explain(qname text) RETURNS text LANGUAGE sql AS $$
  SELECT regexp_replace(regexp_replace(regexp_replace(regexp_replace(cq.explain(qname),
           '(cq_state\.[a-z]+_)\d+', '\1<id>', 'g'),
           'store now: batch \d+, \d+ rows, \d+ bytes', 'store now: batch <b>, <r> rows, <n> bytes'),
           '-- image: [^\n]*', '-- image: <...>'),
           '/\* state \d+ \*/', '/* state <oid> */')
$$;
\pset format unaligned
\pset tuples_only on
SELECT si_explain('si_mem');
\pset format aligned
\pset tuples_only off
-- the figures are cq.state_store_info's
SELECT regexp_match(cq.explain('si_mem'), 'store now: batch (\d+), (\d+) rows, (\d+) bytes')::bigint[]
       = ARRAY[i.batch_id, i.state_rows, i.state_bytes] AS figures_match
  FROM cq.state_store_info('si_mem') i;
-- statement 1, d, is prepared and explained as the table path's statement is
DO $$
DECLARE
  n int := 0;
  l text;
BEGIN
  EXECUTE 'PREPARE si_d(xid8, xid8, pg_snapshot, pg_snapshot) AS ' || split_part(cq.explain('si_mem'), E';\n', 1);
  FOR l IN EXECUTE $x$EXPLAIN EXECUTE si_d('1', '10', '10:10:', '1:1:')$x$ LOOP
    n := n + 1;
  END LOOP;
  RAISE WARNING 'EXPLAIN of d: % plan lines', CASE WHEN n > 3 THEN 'several' ELSE n::text END;
END
$$;
DEALLOCATE si_d;
-- every statement explains, those that read the relations a batch passes
-- once these are made as the text says
CREATE FUNCTION si_explain_all(qname text) RETURNS TABLE (step text, explains boolean)
LANGUAGE plpgsql AS $$
DECLARE
  txt text := cq.explain(qname);
  make text;
  s text;
  n int;
  l text;
BEGIN
  FOR make IN SELECT m[1] FROM regexp_matches(regexp_replace(txt, E'\n-- ', ' ', 'g'),
                                              '(CREATE TEMP TABLE .*? WITH NO DATA)', 'g') AS m LOOP
    EXECUTE make;
  END LOOP;
  FOR i IN 1 .. array_length(string_to_array(txt, E';\n'), 1) - 1 LOOP
    s := split_part(txt, E';\n', i);
    step := substring(s FROM E'\n-- (\\d\\. [^:]*):');
    n := 0;
    IF i = 1 THEN
      EXECUTE 'PREPARE si_p(xid8, xid8, pg_snapshot, pg_snapshot) AS ' || s;
      s := $x$EXECUTE si_p('1', '10', '10:10:', '1:1:')$x$;
    END IF;
    FOR l IN EXECUTE 'EXPLAIN ' || s LOOP
      n := n + 1;
    END LOOP;
    IF i = 1 THEN
      DEALLOCATE si_p;
    END IF;
    explains := n > 0;
    RETURN NEXT;
  END LOOP;
  DROP TABLE IF EXISTS pg_temp.m, pg_temp.x, pg_temp.cq_mp, pg_temp.cq_all;
END $$;
SELECT * FROM si_explain_all('si_mem');
-- a merge not done in C (bool_or, float8 stddev): the merge statement over cq_mp
\pset format unaligned
\pset tuples_only on
SELECT si_explain('si_gen');
\pset format aligned
\pset tuples_only off
SELECT * FROM si_explain_all('si_gen');
-- complete mode: the reload from cq_all
SELECT line FROM regexp_split_to_table(si_explain('si_cmp'), E'\n') AS line
 WHERE line ~ '^-- (state|\d\.|To EXPLAIN|in C)' OR line ~ '^INSERT';
SELECT * FROM si_explain_all('si_cmp');
-- a watermark: applied in C, late groups and closed windows
SELECT line FROM regexp_split_to_table(si_explain('si_win'), E'\n') AS line
 WHERE line ~ '^--  ' OR line ~ '^-- (applied|in C|watermark|store)';
SELECT * FROM si_explain_all('si_win');
-- with an image: the batch it holds and its end offset
SET cq.state_image_batches = 1;
INSERT INTO si_src VALUES (3, 't', 3, '2024-01-01 00:00:00+00');
CALL cq.run('si_mem');
RESET cq.state_image_batches;
SELECT (regexp_match(cq.explain('si_mem'), '-- image: the store of batch (\d+) \(end offset ([0-9:,]+)\), written at '))
       = ARRAY[i.batch_id::text, i.end_offset::text] AS image_shown
  FROM cq.state_images i JOIN cq.queries q ON q.id = i.query_id WHERE q.name = 'si_mem';
-- before the first batch: the store is not in memory yet
SELECT cq.create_query('si_new', 'SELECT k, max(x) AS mx FROM si_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
SELECT line FROM regexp_split_to_table(si_explain('si_new'), E'\n') AS line WHERE line ~ '^-- (state|store now|image)';
-- the table path: where the state is and why, then its one statement
SELECT line FROM regexp_split_to_table(si_explain('si_tab'), E'\n') AS line WHERE line ~ '^-- (state|store|image)';
SELECT cq.explain('si_tab') !~ E'\n-- \\d\\. ' AS one_statement, cq.explain('si_tab') ~ 'UPDATE cq_state\.s_' AS updates_the_table;
-- a join of two streams: its state is in tables, and why
SELECT line FROM regexp_split_to_table(si_explain('si_join'), E'\n') AS line WHERE line ~ '^-- state';
-- a stateless query has no state line
SELECT cq.explain('si_none') !~ '-- state' AS no_state_line;

-- 4. The final view reads the store as the transaction sees it: in the
-- transaction of a batch, the batch's state (as the target and the table
-- path's final view show it); after a rollback, the store as it was
INSERT INTO si_src SELECT i % 20, 't' || (i % 5), i, '2024-01-01 00:00:00+00' FROM generate_series(1, 40) i;
BEGIN;
CALL cq.run('si_mem');
CALL cq.run('si_tab');
CALL cq.run('si_cmp');
SELECT mismatches(format('cq_state.f_%s', id)::regclass, 'SELECT k, count(*), sum(x) FROM si_src GROUP BY k')
         AS final_view_mismatches,
       mismatches(format('cq_state.f_%s', id)::regclass, 'TABLE si_mem') AS final_view_vs_target
  FROM cq.queries WHERE name = 'si_mem';
SELECT mismatches(format('cq_state.f_%s', id)::regclass, 'SELECT k, count(*), sum(x) FROM si_src GROUP BY k')
         AS table_twin_final_view_mismatches
  FROM cq.queries WHERE name = 'si_tab';
SELECT mismatches(format('cq_state.f_%s', id)::regclass, 'SELECT t, count(*) FROM si_src GROUP BY t')
         AS complete_final_view_mismatches,
       mismatches('si_cmp', 'SELECT t, count(*) FROM si_src GROUP BY t') AS complete_target_mismatches
  FROM cq.queries WHERE name = 'si_cmp';
ROLLBACK;
SELECT mismatches(format('cq_state.f_%s', id)::regclass, 'TABLE si_mem') AS final_view_vs_target_after_rollback,
       mismatches(format('cq_state.f_%s', id)::regclass, 'SELECT k, count(*), sum(x) FROM si_src GROUP BY k') > 0
         AS behind_the_source
  FROM cq.queries WHERE name = 'si_mem';
-- committed: the final views, targets and source agree
CALL cq.run('si_mem');
CALL cq.run('si_cmp');
SELECT mismatches(format('cq_state.f_%s', id)::regclass, 'SELECT k, count(*), sum(x) FROM si_src GROUP BY k')
         AS final_view_mismatches,
       mismatches('si_mem', 'SELECT k, count(*), sum(x) FROM si_src GROUP BY k') AS target_mismatches
  FROM cq.queries WHERE name = 'si_mem';
SELECT mismatches(format('cq_state.f_%s', id)::regclass, 'SELECT t, count(*) FROM si_src GROUP BY t')
         AS complete_final_view_mismatches,
       mismatches('si_cmp', 'SELECT t, count(*) FROM si_src GROUP BY t') AS complete_target_mismatches
  FROM cq.queries WHERE name = 'si_cmp';

-- 5. The batch that outgrows cq.state_memory moves the query to its state
-- table: its bytes are the table's from that batch on
SET cq.state_memory = '64kB';
CREATE TABLE si_big (k int, x int);
SELECT cq.create_query('si_bigq', 'SELECT k, count(*) AS n FROM si_big GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now') IS NOT NULL AS created;
INSERT INTO si_big SELECT i % 10, i FROM generate_series(1, 100) i;
CALL cq.run('si_bigq');
INSERT INTO si_big SELECT i, i FROM generate_series(1, 3000) i;
CALL cq.run('si_bigq');
RESET cq.state_memory;
SELECT p.batch_id, q.state_path ~ '^table: moved after exceeding cq.state_memory' AS moved,
       p.state_bytes = si_table_bytes(q.state_table) AS table_bytes,
       cq.state_store_info('si_bigq') IS NULL AS store_gone
  FROM cq.queries q, si_last('si_bigq') p WHERE q.name = 'si_bigq';

-- clean up
SELECT count(*) AS dropped FROM (SELECT cq.drop_query(name, drop_target => true) FROM cq.queries WHERE name LIKE 'si\_%') d;
DROP TABLE si_src, si_src2, si_big, si_bytes, si_win_from;
DROP FUNCTION si_table_bytes(regclass), si_last(text), si_explain(text), si_explain_all(text);
