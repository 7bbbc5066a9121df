-- Issue 12 goal 4 (cold first batch): a new backend's first batch reads
-- pg_cq's catalog rows (cq.queries by name and by id, the last offset in
-- cq.progress) finding their columns in the relation's descriptor, not by
-- a pg_attribute look-up per column name (about 40 in a new backend); the
-- analysis asks the type cache for btree operator classes and formats an
-- aggregate's name only for an error.  What they decide must not change.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE TABLE cc_src (k int, c text, v numeric);
SELECT cq.create_query('cc_q', 'SELECT k, c, count(*) AS n, sum(v) AS s, max(v) AS m FROM cc_src GROUP BY k, c',
                       output_mode => 'update', "trigger" => 'available_now');
INSERT INTO cc_src SELECT i % 5, 'c' || (i % 3), i FROM generate_series(1, 100) i;
CALL cq.run('cc_q');
INSERT INTO cc_src SELECT i % 5, 'c' || (i % 3), i FROM generate_series(101, 200) i;

-- the first CALL of a new backend: scans of pg_attribute's name index
-- (each a column looked up by name and missing the catalog cache); 43
-- when every catalog column was looked up by name, 4 now
\c
SET client_min_messages = warning;
BEGIN;
SELECT pg_catalog.pg_stat_get_xact_numscans('pg_catalog.pg_attribute_relid_attnam_index'::regclass) AS before \gset
CALL cq.run('cc_q');
SELECT pg_catalog.pg_stat_get_xact_numscans('pg_catalog.pg_attribute_relid_attnam_index'::regclass) - :before < 10
    AS few_attname_scans;
COMMIT;
SELECT count(*) AS differences FROM
  ((TABLE cc_q EXCEPT ALL SELECT k, c, count(*), sum(v), max(v) FROM cc_src GROUP BY k, c)
   UNION ALL (SELECT k, c, count(*), sum(v), max(v) FROM cc_src GROUP BY k, c EXCEPT ALL TABLE cc_q)) x;
SELECT batch_id, num_input_rows FROM cq.progress WHERE name = 'cc_q' ORDER BY batch_id;

-- the same decisions: aclitem has equality and hashing but no btree
-- operator class; the aggregate's name in the errors
\set VERBOSITY terse
CREATE TABLE cc_acl (a aclitem, v int);
SELECT cq.create_query('cc_bad1', 'SELECT a, count(*) AS n FROM cc_acl GROUP BY a', output_mode => 'update');
SELECT cq.create_query('cc_bad2', 'SELECT DISTINCT a FROM cc_acl');
SELECT cq.create_query('cc_bad3', 'SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY v) AS p FROM cc_acl',
                       output_mode => 'complete');
SELECT cq.create_query('cc_bad4', 'SELECT v, array_agg(v ORDER BY v) AS l FROM cc_acl GROUP BY v',
                       output_mode => 'update');
\set VERBOSITY default
-- a domain as key and as DISTINCT argument (the type cache answers for its base type)
CREATE DOMAIN cc_dom AS text;
CREATE TABLE cc_dsrc (d cc_dom, v int);
SELECT cq.create_query('cc_dq', 'SELECT d, count(DISTINCT v) AS n, count(DISTINCT d) AS nd FROM cc_dsrc GROUP BY d',
                       output_mode => 'update', "trigger" => 'available_now');
INSERT INTO cc_dsrc SELECT 'd' || (i % 4), i % 7 FROM generate_series(1, 50) i;
\c
SET client_min_messages = warning;
CALL cq.run('cc_dq');
SELECT count(*) AS differences FROM
  ((TABLE cc_dq EXCEPT ALL SELECT d, count(DISTINCT v), count(DISTINCT d) FROM cc_dsrc GROUP BY d)
   UNION ALL (SELECT d, count(DISTINCT v), count(DISTINCT d) FROM cc_dsrc GROUP BY d EXCEPT ALL TABLE cc_dq)) x;

SELECT cq.drop_query('cc_q');
SELECT cq.drop_query('cc_dq');
DROP TABLE cc_src, cc_dsrc, cc_acl, cc_q, cc_dq;
DROP DOMAIN cc_dom;
