-- Constants printed into a query's statements read back under the settings
-- of the session that parses them (a pool worker, the plan cache's new
-- analysis after ANALYZE): sql/163 made xml constants and one-dimensional
-- arrays with NULL elements independent of xmloption and array_nulls.
-- Session 36: the same for an array of several dimensions
-- ('{{1,NULL},{2,3}}', printed as ARRAY[ARRAY[...], ...]), an array whose
-- lower bound is not 1 ('[0:2]={1,NULL,3}', printed as array_cat of an
-- array_fill with that bound and the others: its subscripts keep their
-- values), and a composite constant holding either or xml ('(...)'::type
-- read each column by its input function; printed as ROW(...)::type).
-- Under array_nulls = off each read NULL as an int ("invalid input
-- syntax"), under xmloption = document the content '<a/>tail' failed.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SELECT pause_others() AS others_paused;
SET cq.run_in_worker = off;		-- the batches run in this backend, under its settings

CREATE TYPE c092 AS (a int, b int[], x xml);
CREATE TABLE c092_src (k int);
CREATE PROCEDURE c092_rows() LANGUAGE sql AS $$
  INSERT INTO c092_src VALUES (0), (1), (2), (3), (4);
  ANALYZE c092_src;
$$;
CREATE VIEW c092_oracle AS
  SELECT k, count(*) FILTER (WHERE k = ANY ('{{1,NULL},{2,3}}'::int[])) AS md_n,
            count(*) FILTER (WHERE k = ('[0:2]={1,NULL,3}'::int[])[0]) AS lb0_n,
            count(*) FILTER (WHERE k = ('[-1:0]={NULL,2}'::int[])[0]) AS lbm_n,
            count(*) FILTER (WHERE k = (('(4,"{4,NULL}",<a/>tail)'::c092).b)[1]
                               AND (('(4,"{4,NULL}",<a/>tail)'::c092).x)::text = '<a/>tail') AS row_n
    FROM c092_src GROUP BY k;
CREATE TABLE c092_q WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) FILTER (WHERE k = ANY ('{{1,NULL},{2,3}}'::int[])) AS md_n,
            count(*) FILTER (WHERE k = ('[0:2]={1,NULL,3}'::int[])[0]) AS lb0_n,
            count(*) FILTER (WHERE k = ('[-1:0]={NULL,2}'::int[])[0]) AS lbm_n,
            count(*) FILTER (WHERE k = (('(4,"{4,NULL}",<a/>tail)'::c092).b)[1]
                               AND (('(4,"{4,NULL}",<a/>tail)'::c092).x)::text = '<a/>tail') AS row_n
    FROM c092_src GROUP BY k;
CALL c092_rows();
CALL cq.run('c092_q');
SELECT mismatches('c092_q', 'TABLE c092_oracle') AS mismatches;
SELECT * FROM c092_q ORDER BY k;
SELECT cq.explain('c092_q') ~ E'ARRAY\\[ARRAY\\[1, NULL::integer\\], ARRAY\\[2, 3\\]\\]' AS md_array,
       cq.explain('c092_q') ~ E'array_cat\\(array_fill\\(1, ARRAY\\[1\\], ARRAY\\[0\\]\\), ARRAY\\[NULL::integer, 3\\]\\)' AS lb_array,
       cq.explain('c092_q') ~ E'ROW\\(4, ARRAY\\[4, NULL::integer\\], XMLPARSE\\(CONTENT' AS row_const;

CREATE VIEW c092_check AS
  SELECT name, state, last_error, mismatches(name::regclass, 'TABLE c092_oracle') AS mismatches
    FROM cq.queries WHERE name = 'c092_q';

-- 1. the saved statements analyzed anew (ANALYZE in c092_rows) under
--    array_nulls = off and xmloption = document
SET array_nulls = off;
SET xmloption = document;
CALL c092_rows();
CALL cq.run('c092_q');
TABLE c092_check;

-- 2. a new backend with those settings builds and prepares them
\c
SET client_min_messages = warning;
SET cq.run_in_worker = off;
SET array_nulls = off;
SET xmloption = document;
CALL c092_rows();
CALL cq.run('c092_q');
TABLE c092_check;
RESET array_nulls;
RESET xmloption;

DROP VIEW c092_check, c092_oracle;
SELECT cq.drop_query('c092_q', drop_target => true);
DROP PROCEDURE c092_rows();
DROP TABLE c092_src;
DROP TYPE c092;
