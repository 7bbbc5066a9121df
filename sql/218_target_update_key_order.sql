-- Session 43: the C writer (store_update.c) can take a batch's changed
-- groups sorted by their key hash, the order of the target's index
-- (cq.target_update_order: "auto", the default, where they are at least
-- 1,024, at least half as many as the index's pages and the index has at
-- least 1,024 pages; "key" in every batch, as here; "store" never).  Twin
-- queries over one source, the _k one run with "key", the _a one with
-- "store": after every batch their targets must be equal byte for byte
-- (the text of every row), equal to the plain GROUP BY, the batches must
-- count the same output rows, and amcheck must find every row's entry in
-- each target's index.  Batches of ~1,500 changed groups of ~3,000 (t/115
-- shows from the server log which batches took which order, and "auto"
-- on a target large enough), over: float8 sums that are -0, then 0, then
-- NaN (binary images that differ where the values compare equal),
-- numeric display scale, a case-insensitive nondeterministic collation
-- (one group for 'AB', 'Ab' and 'ab'), texts stored out of line (TOAST),
-- two keys of one hash (a collision in the index), HAVING taking groups
-- out and back in (rows deleted, then inserted again), rows deleted and
-- duplicated by hand (a group with no visible row left, one with two),
-- and a rolled-back batch.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS amcheck;
SET cq.run_in_worker = off;
\i sql/include/helpers.sql
SELECT pause_others() AS others_paused;

CREATE COLLATION ko_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE ko_src (k int NOT NULL, t text COLLATE ko_ci, v int, f float8, x numeric, big text);
-- two keys whose hash (hash_record of the one key) is the same
SELECT hash_record(ROW(2775)) = hash_record(ROW(131913)) AS keys_collide;
-- ~3,000 groups of k; t: 30 groups, 'AB' and 'ab' one of them
INSERT INTO ko_src
SELECT i % 3000, CASE WHEN i % 2 = 0 THEN 'AB' || (i % 30) ELSE 'ab' || (i % 30) END, i % 7 - 2,
       CASE WHEN i % 3000 < 500 THEN '-0'::float8 ELSE (i % 11)::float8 END,
       (i % 5)::numeric(10, 2), NULL
FROM generate_series(1, 6000) i;
INSERT INTO ko_src VALUES (2775, 'c', 1, 1, 1, NULL), (131913, 'c', 2, 2, 2, NULL);

CREATE TABLE ko_queries (q text PRIMARY KEY, sel text);
INSERT INTO ko_queries VALUES
  -- -0, 0 and NaN sums, numeric scale, the colliding keys, long texts
  ('ko1', 'SELECT k, count(*) AS n, sum(f) AS sf, sum(x) AS sx, max(big) AS mb FROM ko_src GROUP BY k'),
  -- HAVING: groups leave (deleted) and come back (inserted)
  ('ko2', 'SELECT k, sum(v) AS s FROM ko_src GROUP BY k HAVING sum(v) > 0'),
  -- two keys, one of them under a nondeterministic collation (the
  -- batches spell the groups' texts in other cases)
  ('ko3', 'SELECT k, t, count(*) AS n, max(v) AS mx FROM ko_src GROUP BY k, t');
CREATE FUNCTION ko_create(q text, sel text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TABLE %I WITH (cq.output_mode = ''update'', cq.trigger = ''available_now'') AS %s', q || '_k', sel);
  EXECUTE format('CREATE TABLE %I WITH (cq.output_mode = ''update'', cq.trigger = ''available_now'') AS %s', q || '_a', sel);
END $$;
SELECT count(ko_create(q, sel)) FROM ko_queries;
SELECT name, state_storage FROM cq.queries WHERE name ~ '^ko[0-9]_' ORDER BY name;

\set run_all 'SET cq.target_update_order = key; CALL cq.run(''ko1_k''); CALL cq.run(''ko2_k''); CALL cq.run(''ko3_k''); SET cq.target_update_order = store; CALL cq.run(''ko1_a''); CALL cq.run(''ko2_a''); CALL cq.run(''ko3_a''); RESET cq.target_update_order;'
-- per query: same (targets equal byte for byte), oracle (mismatches with
-- the GROUP BY, both twins), counted (the same output rows per batch),
-- indexes checked (amcheck, both twins)
CREATE FUNCTION ko_check() RETURNS TABLE (q text, same text, oracle bigint, counted text, indexes_checked bigint)
LANGUAGE plpgsql AS $$
DECLARE r record; c text; s text; oc text; os text; n bigint;
BEGIN
  FOR r IN SELECT * FROM ko_queries ORDER BY 1 LOOP
    EXECUTE format('SELECT md5(coalesce(string_agg(x::text, ''|'' ORDER BY x::text COLLATE "C"), '''')) FROM %I x', r.q || '_k') INTO c;
    EXECUTE format('SELECT md5(coalesce(string_agg(x::text, ''|'' ORDER BY x::text COLLATE "C"), '''')) FROM %I x', r.q || '_a') INTO s;
    SELECT string_agg(num_output_rows::text, ',' ORDER BY batch_id) INTO oc FROM cq.progress WHERE name = r.q || '_k';
    SELECT string_agg(num_output_rows::text, ',' ORDER BY batch_id) INTO os FROM cq.progress WHERE name = r.q || '_a';
    SELECT count(bt_index_parent_check(i.indexrelid, true)) INTO n FROM pg_index i
      WHERE i.indrelid IN ((r.q || '_k')::regclass, (r.q || '_a')::regclass);
    q := r.q;
    same := CASE WHEN c = s THEN 'same' ELSE 'differ' END;
    oracle := mismatches((r.q || '_k')::regclass, r.sel) + mismatches((r.q || '_a')::regclass, r.sel);
    counted := CASE WHEN oc = os THEN oc ELSE 'key order: ' || oc || ' store order: ' || os END;
    indexes_checked := n;
    RETURN NEXT;
  END LOOP;
END $$;
-- a batch of ~1,500 existing and 10% new groups of k; first its values
CREATE FUNCTION ko_batch(b int, f float8, big boolean) RETURNS void LANGUAGE sql AS $$
  INSERT INTO ko_src
  SELECT k, CASE WHEN i % 3 = 0 THEN 'Ab' ELSE 'aB' END || (k % 30), CASE WHEN i % 4 = 0 THEN -9 ELSE 3 END,
         f, 0.001 * (i % 3),
         CASE WHEN big AND i % 10 = 0 THEN (SELECT string_agg(md5(i::text || '-' || j || '-' || b), '') FROM generate_series(1, 80) j) END
  FROM (SELECT i, (b * 7919 + i * 2) % 3000 AS k FROM generate_series(1, 1350) i) s
  UNION ALL
  SELECT 3000 + b * 1000 + i, 'n' || i, 1, f, 1, NULL FROM generate_series(1, 150) i
$$;

:run_all
SELECT * FROM ko_check();

-- batch 1: sums of -0 become 0 (+0 added: same value, another image);
-- long texts (stored out of line); the colliding keys; HAVING out for
-- groups that get -9
SELECT ko_batch(1, '0', true);
INSERT INTO ko_src VALUES (2775, 'C', 5, 0, 0, NULL), (131913, 'c', -7, 0, 0, NULL);
:run_all
SELECT * FROM ko_check();
SELECT count(*) FILTER (WHERE sf::text = '-0') AS negative_zero, count(*) FILTER (WHERE sf::text = '0') AS zero,
       count(*) FILTER (WHERE octet_length(mb) > 2000) AS long_texts,
       (SELECT pg_relation_size(reltoastrelid) > 0 FROM pg_class WHERE oid = 'ko1_k'::regclass) AS toasted
FROM ko1_k;

-- batch 2: NaN sums; rows deleted by hand (their groups get a row again
-- from the batch), rows duplicated by hand (both copies updated); HAVING
-- back in for some groups; every group named here is in the batch
DELETE FROM ko1_k WHERE k BETWEEN 99 AND 171 AND k % 3 = 0;
DELETE FROM ko1_a WHERE k BETWEEN 99 AND 171 AND k % 3 = 0;
DELETE FROM ko2_k WHERE k % 150 = 0 AND k < 3000;
DELETE FROM ko2_a WHERE k % 150 = 0 AND k < 3000;
INSERT INTO ko1_k SELECT * FROM ko1_k WHERE k IN (2775, 6);
INSERT INTO ko1_a SELECT * FROM ko1_a WHERE k IN (2775, 6);
SELECT ko_batch(2, 'NaN', false);
INSERT INTO ko_src SELECT k, 'x', 20, 1, 1, NULL FROM generate_series(0, 2999, 3) k;
:run_all
SELECT q, same, counted, indexes_checked FROM ko_check();
-- the duplicated rows: both copies hold the group's new values; the rest
-- of the targets equals the GROUP BY
SELECT k, count(*) AS copies, count(DISTINCT (n, sf, sx, mb)) AS distinct_values FROM ko1_k WHERE k IN (2775, 6) GROUP BY k ORDER BY k;
SELECT k, count(*) AS copies, count(DISTINCT (n, sf, sx, mb)) AS distinct_values FROM ko1_a WHERE k IN (2775, 6) GROUP BY k ORDER BY k;
DELETE FROM ko1_k t WHERE k IN (2775, 6) AND ctid <> (SELECT min(ctid) FROM ko1_k u WHERE u.k = t.k);
DELETE FROM ko1_a t WHERE k IN (2775, 6) AND ctid <> (SELECT min(ctid) FROM ko1_a u WHERE u.k = t.k);
SELECT q, oracle FROM ko_check();
SELECT count(*) FILTER (WHERE sf::text = 'NaN') > 1000 AS nan_sums FROM ko1_k;

-- a rolled-back batch: the target as before it; the next one catches up
SELECT ko_batch(3, '2', true);
SELECT fingerprint('ko1_k') AS before_k \gset
BEGIN;
CALL cq.run('ko1_k');
ROLLBACK;
SELECT fingerprint('ko1_k') = :'before_k' AS rolled_back_unchanged;
:run_all
SELECT * FROM ko_check();
DROP TABLE ko1_k, ko1_a, ko2_k, ko2_a, ko3_k, ko3_a;
DROP FUNCTION ko_create(text, text);
DROP FUNCTION ko_check();
DROP FUNCTION ko_batch(int, float8, boolean);
DROP TABLE ko_queries, ko_src;
DROP COLLATION ko_ci;
DROP EXTENSION amcheck;
