-- Session 36: the changed groups of an incremental batch on the store are
-- written to the target from C (store_update.c, cq.target_update_in_c)
-- instead of by the upsert statement.  Twin queries over one source, the
-- _c one run with the setting on, the _s one with it off: after every
-- batch their targets must be equal byte for byte (the text of every row,
-- which shows numeric's display scale), equal to the plain GROUP BY, the
-- batches must count the same output rows (cq.progress), and amcheck must
-- find every row's entry in each target's indexes (heapallindexed).
-- Over updates, NULL keys, two keys of one hash (a collision in the
-- target's index), HAVING transitions (out, NULL, back in), a group whose
-- row does not change, outputs that are all keys, a key output twice,
-- rows deleted, changed and duplicated by hand, a rolled-back batch; and
-- targets that take the statement (a row trigger, row-level security, a
-- second index; t/100 shows which batches were written from C, revoked
-- privileges and concurrent writers).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS amcheck;
SET cq.run_in_worker = off;
\i sql/include/helpers.sql
SELECT pause_others() AS others_paused;

CREATE TABLE tu_src (k int, t text, v int, x numeric);
-- two keys whose hash (hash_record of the one key: hashint4) is the same
SELECT hashint4(2775) = hashint4(131913) AS keys_collide;
INSERT INTO tu_src VALUES (1, 'a', 1, 1.0), (1, 'b', 2, 2), (NULL, 'a', 3, NULL), (2, NULL, 4, 0.5),
  (NULL, NULL, 5, 5), (2775, 'c', 1, 1), (131913, 'c', 2, 2), (3, 'd', -1, 1), (4, 'e', 7, 7);

-- q1: NULL keys, numeric display scale, the colliding keys
-- q2: HAVING (false and NULL take a group out)
-- q3: outputs that are all keys
-- q4: a key output twice, keys after a non-key, HAVING on a count
-- q5: a changed group whose row may stay the same (max)
CREATE FUNCTION tu_create(q text, sel text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TABLE %I WITH (cq.output_mode = ''update'', cq.trigger = ''available_now'') AS %s', q || '_c', sel);
  EXECUTE format('CREATE TABLE %I WITH (cq.output_mode = ''update'', cq.trigger = ''available_now'') AS %s', q || '_s', sel);
END $$;
CREATE TABLE tu_queries (q text PRIMARY KEY, sel text);
INSERT INTO tu_queries VALUES
  ('tu1', 'SELECT k, t, count(*) AS n, sum(v) AS s, sum(x) AS sx FROM tu_src GROUP BY k, t'),
  ('tu2', 'SELECT k, count(*) AS n, sum(v) AS s FROM tu_src GROUP BY k HAVING sum(v) > 0'),
  ('tu3', 'SELECT t, k % 3 AS g FROM tu_src GROUP BY 1, 2'),
  ('tu4', 'SELECT count(*) AS n, k % 3 AS g, k % 3 AS g2, max(t) AS mt FROM tu_src GROUP BY 2 HAVING count(*) > 2'),
  ('tu5', 'SELECT k % 5 AS g, max(v) AS mx FROM tu_src GROUP BY 1');
SELECT count(tu_create(q, sel)) FROM tu_queries;
SELECT name, state_storage FROM cq.queries WHERE name ~ '^tu[0-9]_' ORDER BY name;

-- a batch of every query, the _s twins with the setting off
\set run_all 'CALL cq.run(''tu1_c''); CALL cq.run(''tu2_c''); CALL cq.run(''tu3_c''); CALL cq.run(''tu4_c''); CALL cq.run(''tu5_c''); SET cq.target_update_in_c = off; CALL cq.run(''tu1_s''); CALL cq.run(''tu2_s''); CALL cq.run(''tu3_s''); CALL cq.run(''tu4_s''); CALL cq.run(''tu5_s''); RESET cq.target_update_in_c;'
-- per query: same (targets equal byte for byte), oracle (mismatches with
-- the GROUP BY, both twins), counted (the same output rows per batch),
-- indexes checked (amcheck, both twins)
CREATE FUNCTION tu_check() RETURNS TABLE (q text, same text, oracle bigint, counted text, indexes_checked bigint)
LANGUAGE plpgsql AS $$
DECLARE r record; c text; s text; oc text; os text; n bigint;
BEGIN
  FOR r IN SELECT * FROM tu_queries ORDER BY 1 LOOP
    EXECUTE format('SELECT coalesce(string_agg(x::text, ''|'' ORDER BY x::text), '''') FROM %I x', r.q || '_c') INTO c;
    EXECUTE format('SELECT coalesce(string_agg(x::text, ''|'' ORDER BY x::text), '''') FROM %I x', r.q || '_s') INTO s;
    SELECT string_agg(num_output_rows::text, ',' ORDER BY batch_id) INTO oc FROM cq.progress WHERE name = r.q || '_c';
    SELECT string_agg(num_output_rows::text, ',' ORDER BY batch_id) INTO os FROM cq.progress WHERE name = r.q || '_s';
    SELECT count(bt_index_parent_check(i.indexrelid, true)) INTO n FROM pg_index i
      WHERE i.indrelid IN ((r.q || '_c')::regclass, (r.q || '_s')::regclass);
    q := r.q;
    same := CASE WHEN c = s THEN 'same' ELSE 'C: ' || c || ' SQL: ' || s END;
    oracle := mismatches((r.q || '_c')::regclass, r.sel) + mismatches((r.q || '_s')::regclass, r.sel);
    counted := CASE WHEN oc = os THEN oc ELSE 'C: ' || oc || ' SQL: ' || os END;
    indexes_checked := n;
    RETURN NEXT;
  END LOOP;
END $$;

:run_all
SELECT * FROM tu_check();

-- existing groups: updates, NULL keys, both colliding keys; numeric 1.0 +
-- 0.00 keeps the value and changes its display (the row is rewritten);
-- group 3 stays out of HAVING (sum -1 + -5), max(v) of k % 5 = 4 unchanged
INSERT INTO tu_src VALUES (1, 'a', 10, 0.00), (NULL, 'a', 1, 1), (2, NULL, 1, NULL), (NULL, NULL, 1, 1),
  (2775, 'c', 5, 5), (131913, 'c', 7, 7.5), (3, 'd', -5, 0), (4, 'e', 1, 1);
:run_all
SELECT * FROM tu_check();

-- new and existing groups together; group 3 back into HAVING; NULL sums
-- (sum(v) of only NULLs: HAVING NULL)
INSERT INTO tu_src VALUES (5, 'f', 1, 1), (6, 'g', NULL, NULL), (3, 'd', 20, 1), (1, 'b', 1, 1),
  (7, 'h', NULL, 2), (2775, 'c', 1, 0.000);
:run_all
SELECT * FROM tu_check();
INSERT INTO tu_src VALUES (3, 'd', -100, 1), (7, 'h', NULL, 2), (11, 'h', NULL, 2);
:run_all
SELECT * FROM tu_check();

-- rows changed by hand in both twins: a row deleted (inserted again), a
-- value changed (rewritten), a row duplicated (both copies updated, the
-- oracle then counts the copy), a row of a group out of HAVING (deleted)
CREATE FUNCTION tu_by_hand() RETURNS void LANGUAGE plpgsql AS $$
DECLARE tw text;
BEGIN
  FOREACH tw IN ARRAY ARRAY['_c', '_s'] LOOP
    EXECUTE format('DELETE FROM %I WHERE k = 1 AND t = ''a''', 'tu1' || tw);
    EXECUTE format('UPDATE %I SET s = -1 WHERE k IS NULL AND t IS NULL', 'tu1' || tw);
    EXECUTE format('INSERT INTO %I SELECT * FROM %I WHERE k = 2', 'tu1' || tw, 'tu1' || tw);
    EXECUTE format('DELETE FROM %I WHERE g = 1 AND t = ''a''', 'tu3' || tw);
    EXECUTE format('INSERT INTO %I VALUES (6, 0, 0)', 'tu2' || tw);
    EXECUTE format('UPDATE %I SET mt = ''zz'' WHERE g = 1', 'tu4' || tw);
  END LOOP;
END $$;
SELECT tu_by_hand();
INSERT INTO tu_src VALUES (1, 'a', 1, 1), (NULL, NULL, 1, 1), (2, NULL, 1, 1), (4, 'e', 1, 1), (1, 'x', 1, 1),
  (6, 'g', NULL, NULL);
:run_all
SELECT * FROM tu_check();
DELETE FROM tu1_c t WHERE k = 2 AND ctid <> (SELECT min(ctid) FROM tu1_c WHERE k = 2);
DELETE FROM tu1_s t WHERE k = 2 AND ctid <> (SELECT min(ctid) FROM tu1_s WHERE k = 2);

-- a rolled-back batch: the target and the store as before it
INSERT INTO tu_src VALUES (1, 'a', 100, 100), (131913, 'c', 100, 100), (12, 'k', 1, 1);
BEGIN;
CALL cq.run('tu1_c');
SELECT s FROM tu1_c WHERE k = 131913;
ROLLBACK;
SELECT s FROM tu1_c WHERE k = 131913;
:run_all
SELECT * FROM tu_check();

-- targets that take the statement, on both twins: a row trigger, row-level
-- security, a second index
CREATE TABLE tu_fired (tg text, n int);
CREATE FUNCTION tu_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.tu_fired VALUES (TG_TABLE_NAME, 1);
  RETURN NULL;
END $$;
CREATE TRIGGER tu_row AFTER UPDATE ON tu1_c FOR EACH ROW EXECUTE FUNCTION tu_note();
CREATE TRIGGER tu_row AFTER UPDATE ON tu1_s FOR EACH ROW EXECUTE FUNCTION tu_note();
ALTER TABLE tu2_c ENABLE ROW LEVEL SECURITY;
ALTER TABLE tu2_s ENABLE ROW LEVEL SECURITY;
CREATE POLICY p ON tu2_c USING (true);
CREATE POLICY p ON tu2_s USING (true);
CREATE INDEX ON tu5_c (mx);
CREATE INDEX ON tu5_s (mx);
INSERT INTO tu_src VALUES (1, 'a', 1, 1), (1, 'b', 1, 1), (2, 'x', 3, 1), (4, 'e', 100, 1), (9, 'e', 1, 1);
:run_all
SELECT * FROM tu_check();
SELECT tg, sum(n) AS fired FROM tu_fired GROUP BY tg ORDER BY tg;

-- many batches of a few rows each, every target plain again
DROP TRIGGER tu_row ON tu1_c;
DROP TRIGGER tu_row ON tu1_s;
ALTER TABLE tu2_c DISABLE ROW LEVEL SECURITY;
ALTER TABLE tu2_s DISABLE ROW LEVEL SECURITY;
DROP INDEX tu5_c_mx_idx, tu5_s_mx_idx;
CREATE PROCEDURE tu_many(n int) LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. n LOOP
    INSERT INTO tu_src SELECT CASE WHEN g % 9 = 0 THEN NULL ELSE (i * 7 + g * 13) % 17 END,
                              CASE WHEN g % 5 = 0 THEN NULL ELSE 'm' || (g % 3) END,
                              CASE WHEN g % 7 = 0 THEN NULL ELSE (i * g) % 11 - 4 END,
                              round((i + g) / 3.0, g % 3)
                         FROM generate_series(1, 4) g;
    -- committed first: a batch in the transaction that inserted into its
    -- source sees those rows or not depending on what ran before it in
    -- that transaction (found here, with either path; not this test's subject)
    COMMIT;
    CALL cq.run('tu1_c'); CALL cq.run('tu2_c'); CALL cq.run('tu3_c'); CALL cq.run('tu4_c'); CALL cq.run('tu5_c');
    PERFORM set_config('cq.target_update_in_c', 'off', false);
    CALL cq.run('tu1_s'); CALL cq.run('tu2_s'); CALL cq.run('tu3_s'); CALL cq.run('tu4_s'); CALL cq.run('tu5_s');
    PERFORM set_config('cq.target_update_in_c', 'on', false);
    COMMIT;
  END LOOP;
END $$;
CALL tu_many(25);
SELECT * FROM tu_check();

SELECT count(cq.drop_query(name, drop_target => true)) FROM cq.queries WHERE name ~ '^tu[0-9]_';
DROP PROCEDURE tu_many(int);
DROP FUNCTION tu_check(), tu_create(text, text), tu_by_hand(), tu_note();
DROP TABLE tu_src, tu_queries, tu_fired;
DROP EXTENSION amcheck;
