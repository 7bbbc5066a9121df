-- Issue 15, round 4: the store computes the key hash h of its new groups in
-- C (the SQL path's hash_record(ROW(g1, ...)): each key hashed by its
-- type's hash function with its collation, NULL as 0), and the update-mode
-- target statement probes the target again for the groups its UPDATE did
-- not change, inserting those whose row is missing.
-- Checked: h of every store row equals hash_record() of its keys, over a
-- nondeterministic collation, numeric keys that compare equal but print
-- differently, and NULL keys; a target row deleted by hand is written
-- again; a target row that already holds a group's next values is not
-- written twice; store and table twins agree row for row, as text.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SELECT setseed(0.70);

CREATE COLLATION sh_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE sh_src (t text COLLATE sh_ci, v numeric, k int, b bigint);
CREATE FUNCTION sh_rows(n int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO sh_src
  SELECT (ARRAY['A', 'a', 'b', 'B', NULL, 'ß', 'SS'])[1 + (random() * 6)::int],
         (ARRAY['1.0', '1.00', '-2', 'NaN', NULL, '0', '-0.0'])[1 + (random() * 6)::int]::numeric,
         CASE WHEN random() < 0.2 THEN NULL ELSE (random() * 3)::int END,
         (random() * 1000)::bigint
    FROM generate_series(1, n)
$$;
-- state rows whose h is not hash_record() of their keys
CREATE FUNCTION sh_bad_h(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint; qid int; st regclass;
BEGIN
  SELECT id, state_table INTO qid, st FROM cq.queries WHERE name = q;
  EXECUTE format('SELECT count(*) FROM cq.state_rows(%s, NULL::%s) s '
                 'WHERE s.h IS DISTINCT FROM pg_catalog.hash_record(ROW(s.g1, s.g2, s.g3))', qid, st) INTO n;
  RETURN n;
END $$;
\i sql/include/helpers.sql
-- target rows of a query that are not the plain query's rows, or repeated
CREATE FUNCTION sh_oracle_bad(target regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((SELECT t, v, k, n, sb FROM %s EXCEPT ALL '
                 'SELECT t, v, k, count(*), sum(b) FROM sh_src GROUP BY t, v, k) '
                 'UNION ALL (SELECT t, v, k, count(*), sum(b) FROM sh_src GROUP BY t, v, k '
                 'EXCEPT ALL SELECT t, v, k, n, sb FROM %s)) z', target, target) INTO n;
  RETURN n;
END $$;

SELECT cq.create_query('sh' || s, 'SELECT t, v, k, count(*) AS n, sum(b) AS sb FROM sh_src GROUP BY t, v, k',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => st) IS NOT NULL AS created
  FROM (VALUES ('_m', 'memory'), ('_t', 'unlogged')) q(s, st) ORDER BY s;
SELECT name, state_path FROM cq.queries WHERE name LIKE 'sh\__' ORDER BY name;

-- batch 0 (new store: no lookups), then batches over existing and new groups
INSERT INTO sh_src VALUES ('b', 0, 1, 1), ('A', 1, 2, 1);
SELECT sh_rows(300);
CALL cq.run('sh_m');
CALL cq.run('sh_t');
SELECT sh_bad_h('sh_m') AS bad_h_m, sh_bad_h('sh_t') AS bad_h_t, twin_bad('sh_m', 'sh_t') AS twins,
       sh_oracle_bad('sh_m') AS oracle_m, (SELECT count(*) > 20 FROM sh_m) AS groups;
SELECT sh_rows(200);
CALL cq.run('sh_m');
CALL cq.run('sh_t');
SELECT sh_bad_h('sh_m') AS bad_h_m, sh_bad_h('sh_t') AS bad_h_t, twin_bad('sh_m', 'sh_t') AS twins,
       sh_oracle_bad('sh_m') AS oracle_m;

-- a target row deleted by hand is written again by the next batch that
-- changes its group; a row that already holds the group's next values is
-- neither updated nor inserted again; untouched groups stay as they are
DELETE FROM sh_m WHERE t = 'b' AND v = 0 AND k = 1;
DELETE FROM sh_t WHERE t = 'b' AND v = 0 AND k = 1;
UPDATE sh_m SET n = n + 1, sb = sb + 7 WHERE t = 'A' AND v = 1 AND k = 2;
UPDATE sh_t SET n = n + 1, sb = sb + 7 WHERE t = 'A' AND v = 1 AND k = 2;
INSERT INTO sh_src VALUES ('b', 0, 1, 5), ('A', 1, 2, 7), (NULL, NULL, NULL, 3);
CALL cq.run('sh_m');
CALL cq.run('sh_t');
SELECT 'sh_m' AS q, sh_oracle_bad('sh_m') AS oracle_bad,
       (SELECT count(*) FROM sh_m WHERE t = 'b' AND v = 0 AND k = 1) AS deleted_group_rows,
       (SELECT count(*) FROM sh_m WHERE t = 'A' AND v = 1 AND k = 2) AS preset_group_rows
UNION ALL
SELECT 'sh_t', sh_oracle_bad('sh_t'),
       (SELECT count(*) FROM sh_t WHERE t = 'b' AND v = 0 AND k = 1),
       (SELECT count(*) FROM sh_t WHERE t = 'A' AND v = 1 AND k = 2);
SELECT sh_bad_h('sh_m') AS bad_h_m, twin_bad('sh_m', 'sh_t') AS twins;

-- more random batches
SELECT sh_rows(150), sh_rows(150), sh_rows(150);
CALL cq.run('sh_m');
CALL cq.run('sh_t');
SELECT sh_bad_h('sh_m') AS bad_h_m, twin_bad('sh_m', 'sh_t') AS twins, sh_oracle_bad('sh_m') AS oracle_m,
       sh_oracle_bad('sh_t') AS oracle_t;

SELECT cq.drop_query('sh_m'), cq.drop_query('sh_t');
