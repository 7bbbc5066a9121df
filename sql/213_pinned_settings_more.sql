-- Session 42: beside DateStyle, IntervalStyle, extra_float_digits and
-- bytea_output (sql/204), every setting that changes what an expression
-- returns while a batch runs is pinned to the creator's
-- (src/settings_pin.c): xmloption (xml_is_well_formed, text::xml),
-- xmlbinary (bytea in xmlelement), array_nulls (NULL in text read as an
-- array), default_text_search_config (to_tsvector(text)),
-- timezone_abbreviations ('IST' read as +02 or +05:30),
-- quote_all_identifiers (quote_ident, %I) and the lc_* settings (their
-- locales are the server's: t/113_pinned_locales.pl).  Before, each of the
-- keys below was computed with the settings of whoever ran the batch: the
-- background worker's (the database's) wrote other groups than the
-- creator's session.  As an unprivileged role.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SELECT pause_others();
CREATE ROLE pin213_user;
CREATE SCHEMA pin213 AUTHORIZATION pin213_user;
SET ROLE pin213_user;
CREATE TABLE pin213.src (x text, b bytea, arr text, doc text, abbr text, id text);
CREATE PROCEDURE pin213.add() LANGUAGE sql AS $$
  INSERT INTO pin213.src VALUES ('<a/><b/>', '\x41', '{a,NULL}', 'The cats', '2026-01-02 10:00 IST', 'abc');
$$;
CALL pin213.add();

-- the keys under the database's settings (what a background worker has)
SELECT xml_is_well_formed(x) AS wf, xmlelement(name e, b)::text AS xb, (arr::text[])[2] IS NULL AS arr_null,
       to_tsvector(doc)::text AS tsv, abbr::timestamptz AT TIME ZONE 'UTC' AS ts_utc, quote_ident(id) AS qi
  FROM pin213.src;

-- the creator's settings: none the database's
SET xmloption = document;
SET xmlbinary = hex;
SET array_nulls = off;
SET default_text_search_config = 'simple';
SET timezone_abbreviations = 'India';
SET quote_all_identifiers = on;
SELECT cq.create_query('keys',
  $$SELECT xml_is_well_formed(x) AS wf, xmlelement(name e, b)::text AS xb, (arr::text[])[2] IS NULL AS arr_null,
           to_tsvector(doc)::text AS tsv, abbr::timestamptz AT TIME ZONE 'UTC' AS ts_utc, quote_ident(id) AS qi,
           count(*) AS n
      FROM pin213.src GROUP BY 1, 2, 3, 4, 5, 6$$,
  output_mode => 'update', "trigger" => 'available_now', target => 'pin213.keys') IS NOT NULL AS created;
SELECT s FROM cq.queries, unnest(settings) s WHERE schema = 'pin213' AND name = 'keys'
   AND split_part(s, '=', 1) IN ('xmloption', 'xmlbinary', 'array_nulls', 'default_text_search_config',
                                 'timezone_abbreviations', 'quote_all_identifiers') ORDER BY 1;
-- the same keys under them
SELECT xml_is_well_formed(x) AS wf, xmlelement(name e, b)::text AS xb, (arr::text[])[2] IS NULL AS arr_null,
       to_tsvector(doc)::text AS tsv, abbr::timestamptz AT TIME ZONE 'UTC' AS ts_utc, quote_ident(id) AS qi
  FROM pin213.src;
RESET xmloption; RESET xmlbinary; RESET array_nulls; RESET default_text_search_config;
RESET timezone_abbreviations; RESET quote_all_identifiers;

-- batch 0 in this process, under the database's settings: the creator's keys
SET cq.run_in_worker = off;
CALL cq.run('pin213.keys');
SELECT current_setting('xmloption') AS xmloption, current_setting('array_nulls') AS array_nulls,
       current_setting('quote_all_identifiers') AS quote_all_identifiers;
SELECT * FROM pin213.keys;

-- then a background worker with the database's settings: the same group
CALL pin213.add();
SELECT cq.alter_query('pin213.keys', "trigger" => '0') IS NOT NULL AS altered;
SELECT wait_until($$(SELECT sum(n) FROM pin213.keys) = 2$$) AS background_ran;
SELECT cq.pause('pin213.keys') IS NOT NULL AS paused;
SELECT * FROM pin213.keys;

-- text::xml is accepted or refused by xmloption: a filter that reads
-- content as xml runs under the creator's CONTENT, never the runner's
SET xmloption = content;
SELECT cq.create_query('xmlin', $$SELECT x::xml::text AS doc FROM pin213.src$$,
  "trigger" => 'available_now', target => 'pin213.xmlin') IS NOT NULL AS created;
RESET xmloption;
SET xmloption = document;
SELECT xml_is_well_formed('<a/><b/>') AS accepted_here;
CALL cq.run('pin213.xmlin');
SELECT * FROM pin213.xmlin;
RESET xmloption;

-- cq.explain's header shows them
SELECT l ~ 'xmloption = ''document''.*quote_all_identifiers = ''on'' \(its creator''s\)' AS explained
  FROM regexp_split_to_table(cq.explain('pin213.keys'), E'\n') l WHERE l LIKE '-- DateStyle%';

RESET ROLE;
SELECT cq.drop_query('pin213.keys');
SELECT cq.drop_query('pin213.xmlin');
DROP SCHEMA pin213 CASCADE;
DROP ROLE pin213_user;
