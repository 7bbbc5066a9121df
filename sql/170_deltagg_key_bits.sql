-- Session 36 review of deltagg.c (cq.delta_agg_in_c): a by-value grouping
-- key was hashed and compared by its whole Datum, but equal values do not
-- always have equal Datums: an int4 relabeled from an oid (the cast
-- oid -> int4 is binary-coercible) keeps the oid's Datum, zero-extended,
-- where an int4 column's is sign-extended.  With both in one key (CASE),
-- the two -1 were two groups of the batch, where d's int4 equality makes
-- one (and a plain GROUP BY): the key's Datum is now made as its type's
-- macro makes it (norm_key).  Also: an oid key the other way round
-- (int4 -> oid relabeled, sign-extended, and oidin's, zero-extended), and
-- the setting off for comparison.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET cq.run_in_worker = off;
\i sql/include/helpers.sql

CREATE TABLE kb_src (i int, t text);
INSERT INTO kb_src VALUES (7, NULL);
CREATE TABLE kb_c WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT CASE WHEN t IS NULL THEN i ELSE t::oid::int4 END AS k, count(*) AS n, sum(i) AS s
  FROM kb_src GROUP BY 1;
CREATE TABLE kb_o WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT CASE WHEN t IS NULL THEN i::oid ELSE t::oid END AS k, count(*) AS n
  FROM kb_src GROUP BY 1;
CREATE VIEW kb_c_oracle AS
  SELECT CASE WHEN t IS NULL THEN i ELSE t::oid::int4 END AS k, count(*) AS n, sum(i) AS s
  FROM kb_src GROUP BY 1;
CREATE VIEW kb_o_oracle AS
  SELECT CASE WHEN t IS NULL THEN i::oid ELSE t::oid END AS k, count(*) AS n
  FROM kb_src GROUP BY 1;
SELECT name, state_path FROM cq.queries WHERE name LIKE 'kb\_%' ORDER BY name;
SELECT cq.explain('kb_c') LIKE '%made in C (cq.delta_agg_in_c)%' AS kb_c_in_c,
       cq.explain('kb_o') LIKE '%made in C (cq.delta_agg_in_c)%' AS kb_o_in_c;
CALL cq.run('kb_c');
CALL cq.run('kb_o');

-- one batch: -1 of an int4 column and of '4294967295'::oid::int4 (kb_c);
-- the oid 4294967295 of -1::oid and of '4294967295'::oid (kb_o)
INSERT INTO kb_src VALUES (-1, NULL), (0, '4294967295'), (-1, NULL), (3, '3'), (2, NULL);
CALL cq.run('kb_c');
CALL cq.run('kb_o');
SELECT * FROM kb_c ORDER BY k;
SELECT * FROM kb_o ORDER BY k;
SELECT mismatches('kb_c', 'TABLE kb_c_oracle') AS kb_c_mismatches,
       mismatches('kb_o', 'TABLE kb_o_oracle') AS kb_o_mismatches;

-- the same rows again, with the setting off (d's aggregation)
SET cq.delta_agg_in_c = off;
INSERT INTO kb_src VALUES (-1, NULL), (0, '4294967295');
CALL cq.run('kb_c');
RESET cq.delta_agg_in_c;
SELECT mismatches('kb_c', 'TABLE kb_c_oracle') AS kb_c_mismatches_off;
SELECT name, state, last_error FROM cq.queries WHERE name LIKE 'kb\_%' ORDER BY name;

DROP VIEW kb_c_oracle, kb_o_oracle;
DROP TABLE kb_c, kb_o;
DROP TABLE kb_src;
