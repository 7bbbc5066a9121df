-- The shared-memory store keeps a query's state across transactions: a
-- value it keeps must be the value, never a TOAST pointer into a source
-- table, whose chunks VACUUM removes once the source row is deleted.  d
-- passes a source value through as it was read (a group key; min or max of
-- a group with one row, whose transition value nodeAgg copies from the
-- input; cq.numeric_max; the merge's greatest/least of a stored state and a
-- new one): before session 35 the store kept the pointer, and the next
-- batch of the group failed ("missing chunk number 0 for toast value") or
-- read another value.  Each path that puts a row into the store: batch 0's
-- rows formed in their nodes (put_built), a new group of a later batch (the
-- overlay), a merged row (merge_row), the merge statement's rows.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SELECT pause_others() AS others_paused;
SET cq.run_in_worker = off;

-- values stored out of line (no compression): 8,000 digits, 9,600 characters
CREATE TABLE st161_src (k text, g int, v numeric, t text);
ALTER TABLE st161_src ALTER COLUMN k SET STORAGE external,
  ALTER COLUMN v SET STORAGE external, ALTER COLUMN t SET STORAGE external;
CREATE FUNCTION st161_long(c text, n int) RETURNS text LANGUAGE sql
  AS $$ SELECT c || (SELECT string_agg(md5(i::text || c), '') FROM generate_series(1, n) i) $$;
-- every row, also those deleted from the source
CREATE TABLE st161_all (k text, g int, v numeric, t text);
-- the TOAST chunks of the source (none left after DELETE and VACUUM: the
-- store's values must not need them)
CREATE FUNCTION st161_chunks() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM %s', (SELECT reltoastrelid::regclass FROM pg_class WHERE oid = 'st161_src'::regclass)) INTO n;
  RETURN n;
END $$;
CREATE PROCEDURE st161_add(rows text) LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE 'INSERT INTO st161_src ' || rows;
  EXECUTE 'INSERT INTO st161_all ' || rows;
END $$;

-- by key (a long key: its group's key in the store), and by g with sums
CREATE TABLE st161_k WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, min(t) AS mn, max(t) AS mx, max(v) AS mv FROM st161_src GROUP BY k;
CREATE TABLE st161_g WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT g, count(*) AS n, sum(v) AS s, min(v) AS mn, max(v) AS mx, max(t) AS mt FROM st161_src GROUP BY g;
SELECT name, state_storage FROM cq.queries WHERE name LIKE 'st161%' ORDER BY name;
CREATE VIEW st161_check AS
  SELECT 'st161_k' AS name, mismatches('st161_k',
           'SELECT k, count(*), min(t), max(t), max(v) FROM st161_all GROUP BY k') AS mismatches
  UNION ALL
  SELECT 'st161_g', mismatches('st161_g',
           'SELECT g, count(*), sum(v), min(v), max(v), max(t) FROM st161_all GROUP BY g');

-- batch 0: groups of one row each, their values out of line
CALL st161_add($$SELECT st161_long('a', 300), 1, repeat('3', 8000)::numeric, st161_long('m', 300)$$);
CALL st161_add($$SELECT st161_long('b', 300), 2, repeat('4', 8000)::numeric, st161_long('n', 300)$$);
SELECT st161_chunks() > 0 AS out_of_line;
CALL cq.run('st161_k');
CALL cq.run('st161_g');
TABLE st161_check;
-- the source rows deleted and vacuumed away (their TOAST chunks too)
DELETE FROM st161_src;
VACUUM st161_src;
SELECT st161_chunks() AS chunks_left;

-- batch 1: the stored groups again (merged) and a new group with one row
-- (the overlay), each with a value out of line that the merge keeps
CALL st161_add($$VALUES (st161_long('a', 300), 1, 1, 'a'), (st161_long('b', 300), 2, repeat('5', 8000)::numeric, st161_long('z', 300)),
                        (st161_long('c', 300), 3, repeat('6', 8000)::numeric, st161_long('o', 300))$$);
CALL cq.run('st161_k');
CALL cq.run('st161_g');
TABLE st161_check;
-- the source rows deleted and vacuumed away (their TOAST chunks too)
DELETE FROM st161_src;
VACUUM st161_src;
SELECT st161_chunks() AS chunks_left;

-- batch 2: every group again; each reads the stored values of batches 0 and 1
CALL st161_add($$VALUES (st161_long('a', 300), 1, 2, 'b'), (st161_long('b', 300), 2, 3, 'c'), (st161_long('c', 300), 3, 4, 'd')$$);
CALL cq.run('st161_k');
CALL cq.run('st161_g');
TABLE st161_check;
SELECT name, state, last_error FROM cq.queries WHERE name LIKE 'st161%' ORDER BY name;
SELECT k = st161_long('b', 300) AS key_b, n, length(mx) AS mx_len, left(mv::text, 3) AS mv FROM st161_k ORDER BY k;
SELECT g, n, length(s::text) AS s_len, length(mx::text) AS mx_len, left(mt, 1) AS mt FROM st161_g ORDER BY g;

DROP VIEW st161_check;
SELECT cq.drop_query('st161_k', drop_target => true);
SELECT cq.drop_query('st161_g', drop_target => true);
DROP PROCEDURE st161_add(text);
DROP FUNCTION st161_long(text, int), st161_chunks();
DROP TABLE st161_src, st161_all;
