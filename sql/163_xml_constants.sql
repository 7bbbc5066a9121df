-- A query's statements are printed from its tree (deparsed) and read back
-- when prepared, and again when PostgreSQL's plan cache analyzes a saved
-- statement anew (a relation it reads changed: ANALYZE), each time under
-- the settings of that moment.  An xml constant was printed as
-- '...'::xml, which xml_in reads under xmloption: a content constant
-- ('<a/>tail', not a document) read under xmloption = document failed the
-- batch ("invalid XML document"), in a session or pool worker with that
-- setting.  Since session 35 it is printed as XMLPARSE(CONTENT ...
-- PRESERVE WHITESPACE) (a document as XMLPARSE(DOCUMENT ...)), which
-- every setting reads as the same value (sql_builder.c, ready_xml).  An
-- array constant with a NULL element, printed '{1,NULL}'::integer[], was
-- read under array_nulls = off as the element "NULL" (an error for int);
-- it is printed as ARRAY[1, NULL::integer] (ready_array).  See
-- sql/152 for the other settings, t/099 for money (lc_monetary).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SELECT pause_others() AS others_paused;
SET cq.run_in_worker = off;		-- the batches run in this backend, under its settings

CREATE TABLE x163_src (k int, x xml);
CREATE DOMAIN x163_dom AS xml CHECK (VALUE IS NOT NULL);
CREATE PROCEDURE x163_rows() LANGUAGE sql AS $$
  INSERT INTO x163_src SELECT k, xmlparse(content t) FROM (VALUES (1, '<a/>tail'), (1, '<b/>'), (2, '<a/>tail'), (3, NULL)) v(k, t);
  INSERT INTO x163_src VALUES (2, xmlparse(document '<!DOCTYPE d><d/>'));
  ANALYZE x163_src;
$$;
-- a content constant, a document with a DOCTYPE, one of a domain over xml
CREATE VIEW x163_oracle AS
  SELECT k, count(*) FILTER (WHERE x::text = '<a/>tail'::xml::text) AS content_n,
            count(*) FILTER (WHERE x::text = '<!DOCTYPE d><d/>'::xml::text) AS doc_n,
            count(*) FILTER (WHERE x::text = '<b/>'::x163_dom::text) AS dom_n
    FROM x163_src GROUP BY k;
CREATE TABLE x163_q WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) FILTER (WHERE x::text = '<a/>tail'::xml::text) AS content_n,
            count(*) FILTER (WHERE x::text = '<!DOCTYPE d><d/>'::xml::text) AS doc_n,
            count(*) FILTER (WHERE x::text = '<b/>'::x163_dom::text) AS dom_n
    FROM x163_src GROUP BY k;
CALL x163_rows();
CALL cq.run('x163_q');
SELECT mismatches('x163_q', 'TABLE x163_oracle') AS mismatches;
SELECT cq.explain('x163_q') ~ 'XMLPARSE\(CONTENT ''<a/>tail''::text PRESERVE WHITESPACE\)' AS content_parsed,
       cq.explain('x163_q') ~ 'XMLPARSE\(DOCUMENT ''<!DOCTYPE d><d/>''::text PRESERVE WHITESPACE\)' AS document_parsed;

-- an array with a NULL element (array_nulls) and one of xml elements
CREATE TABLE x163_arr WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) FILTER (WHERE k = ANY ('{1,NULL}'::int[])) AS null_n,
            count(*) FILTER (WHERE x::text = ANY ('{<a/>tail,<b/>}'::xml[]::text[])) AS xmls_n,
            count(*) FILTER (WHERE 'NULL' = ANY ('{"NULL",x}'::text[])) AS quoted_n
    FROM x163_src GROUP BY k;
CREATE VIEW x163_arr_oracle AS
  SELECT k, count(*) FILTER (WHERE k = ANY ('{1,NULL}'::int[])) AS null_n,
            count(*) FILTER (WHERE x::text = ANY ('{<a/>tail,<b/>}'::xml[]::text[])) AS xmls_n,
            count(*) FILTER (WHERE 'NULL' = ANY ('{"NULL",x}'::text[])) AS quoted_n
    FROM x163_src GROUP BY k;
CALL cq.run('x163_arr');
SELECT mismatches('x163_arr', 'TABLE x163_arr_oracle') AS mismatches;
SELECT cq.explain('x163_arr') ~ E'ARRAY\\[1, NULL::integer\\]' AS null_array;

CREATE VIEW x163_check AS
  SELECT name, state, last_error,
         mismatches(name::regclass, CASE name WHEN 'x163_q' THEN 'TABLE x163_oracle' ELSE 'TABLE x163_arr_oracle' END) AS mismatches
    FROM cq.queries WHERE name LIKE 'x163%' ORDER BY name;

-- 1. the saved statements analyzed anew (ANALYZE in x163_rows) under
--    xmloption = document and array_nulls = off
SET xmloption = document;
SET array_nulls = off;
CALL x163_rows();
CALL cq.run('x163_q');
CALL cq.run('x163_arr');
TABLE x163_check;

-- 2. a new backend with those settings builds and prepares them
\c
SET client_min_messages = warning;
SET cq.run_in_worker = off;
SET xmloption = document;
SET array_nulls = off;
CALL x163_rows();
CALL cq.run('x163_arr');
CALL cq.run('x163_q');
TABLE x163_check;

DROP VIEW x163_check, x163_oracle, x163_arr_oracle;
SELECT cq.drop_query('x163_q', drop_target => true);
SELECT cq.drop_query('x163_arr', drop_target => true);
DROP PROCEDURE x163_rows();
DROP TABLE x163_src;
DROP DOMAIN x163_dom;
