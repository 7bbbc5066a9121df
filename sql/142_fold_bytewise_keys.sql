-- Session 33: the store's d statement groups its string keys under
-- deterministic collations bytewise (COLLATE "C": texteq and hashtext skip
-- their locale look-ups), which forms the same groups; keys under a
-- nondeterministic collation keep it ('a' and 'A' one group), and so do
-- the table path's statements.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET cq.run_in_worker = off;

CREATE TABLE bk_src (t text, v varchar(10), b char(4), x numeric);
CREATE TABLE bk_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT t, v, b, count(*) AS n, sum(x) AS s, max(x) AS m FROM bk_src GROUP BY t, v, b;
SELECT state_path FROM cq.queries WHERE name = 'bk_agg';
-- d's keys under "C"
SELECT cq.explain('bk_agg') LIKE '%(t COLLATE "C") AS g1%' AS text_key_c,
       cq.explain('bk_agg') LIKE '%(v COLLATE "C") AS g2%' AS varchar_key_c,
       cq.explain('bk_agg') LIKE '%(b COLLATE "C") AS g3%' AS bpchar_key_c;
-- batch 0 over rows that only the keys' own equality tells apart or not
-- (bpchar ignores trailing spaces), then incremental batches
INSERT INTO bk_src SELECT CASE g % 3 WHEN 0 THEN 'a' WHEN 1 THEN 'A' ELSE 'a ' END,
                          CASE g % 2 WHEN 0 THEN 'k' ELSE 'K' END,
                          CASE g % 4 WHEN 0 THEN 'z' WHEN 1 THEN 'z  ' WHEN 2 THEN 'Z' ELSE 'é' END,
                          g / 7.0
  FROM generate_series(1, 500) g;
CALL cq.run('bk_agg');
INSERT INTO bk_src SELECT CASE g % 5 WHEN 0 THEN 'a' WHEN 1 THEN 'b' ELSE 'A' END, 'k', 'z ', g
  FROM generate_series(1, 300) g;
CALL cq.run('bk_agg');
INSERT INTO bk_src VALUES ('é', 'é', 'é', 1), ('a', 'K', 'Z', 2);
CALL cq.run('bk_agg');
SELECT count(*) AS groups, sum(n) AS rows FROM bk_agg;
SELECT count(*) AS differing FROM (
  (SELECT t, v, b, count(*), sum(x), max(x) FROM bk_src GROUP BY t, v, b EXCEPT SELECT t, v, b, n, s, m FROM bk_agg)
  UNION ALL
  (SELECT t, v, b, n, s, m FROM bk_agg EXCEPT SELECT t, v, b, count(*), sum(x), max(x) FROM bk_src GROUP BY t, v, b)) d;

-- a nondeterministic collation: the key keeps it, 'a' and 'A' are one group
-- (batch 0 puts d's groups without look-ups: two rows of d for one group
-- would be two groups)
CREATE COLLATION bk_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE bk_ci_src (t text COLLATE bk_ci, x int);
INSERT INTO bk_ci_src SELECT CASE g % 2 WHEN 0 THEN 'a' ELSE 'A' END, g FROM generate_series(1, 10) g;
CREATE TABLE bk_ci_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT t, count(*) AS n, sum(x) AS s FROM bk_ci_src GROUP BY t;
SELECT cq.explain('bk_ci_agg') LIKE '%COLLATE "C"%' AS ci_key_c;
INSERT INTO bk_ci_src SELECT CASE g % 2 WHEN 0 THEN 'B' ELSE 'b' END, g FROM generate_series(1, 10) g;
INSERT INTO bk_ci_src VALUES ('A', 100);
CALL cq.run('bk_ci_agg');
SELECT lower(t) AS t, n, s FROM bk_ci_agg ORDER BY 1;

-- the table path keeps the keys' collation
CREATE TABLE bk_tab WITH (cq.output_mode = 'update', cq.trigger = 'available_now', cq.state_storage = 'unlogged') AS
  SELECT t, count(*) AS n FROM bk_src GROUP BY t;
SELECT state_path, cq.explain('bk_tab') LIKE '%COLLATE "C"%' AS table_key_c FROM cq.queries WHERE name = 'bk_tab';

DROP TABLE bk_tab;
DROP TABLE bk_ci_agg;
DROP TABLE bk_ci_src;
DROP COLLATION bk_ci;
DROP TABLE bk_agg;
DROP TABLE bk_src;
