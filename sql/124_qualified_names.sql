-- Names in generated batch SQL (session 31).  A batch's SQL is deparsed
-- from the analyzed query and runs under search_path = pg_catalog, pg_temp:
-- every object of another schema must be printed schema-qualified, and
-- every operator that the SQL text names only implicitly must come out as
-- the one the query was analyzed with.  PostgreSQL prints
--   a IS DISTINCT FROM b, NULLIF(a, b), CASE a WHEN b ..., JOIN ... USING (a)
-- without their equality operator, which parsing the text finds again by
-- name through the search_path: under the pinned path a type's "=" of
-- another schema was not found (the query failed) or, for a type with an
-- implicit cast to text (citext), text's "=" was: case-sensitive results.
--
-- The probe: a case-insensitive text type ci with its operators and
-- operator classes, a domain, an enum, a function, an operator and an
-- aggregate, all in schema cq124_lib; queries over them in every output
-- mode and state storage (WHERE, select list, GROUP BY, HAVING, window
-- bounds, DISTINCT ON, join conditions), created by a plain role.  Then a
-- hostile role puts same-named functions, operators, aggregates and types
-- in a schema that callers put first in their search_path, and a temporary
-- schema gets its own; the batches run through CALL cq.run with that
-- search_path and must equal the queries run as plain SELECTs, never
-- calling the hostile code (which raises an error).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
\i sql/include/helpers.sql

CREATE FUNCTION public.cq124_try(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE stmt;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

CREATE ROLE regress_cq124;
CREATE ROLE regress_cq124_evil;
CREATE SCHEMA cq124_lib AUTHORIZATION regress_cq124;
CREATE SCHEMA cq124_evil AUTHORIZATION regress_cq124_evil;
GRANT USAGE ON SCHEMA cq124_evil TO PUBLIC;
GRANT USAGE ON SCHEMA cq124_lib TO PUBLIC;

-- ci: text compared case-insensitively (citext's design, in SQL), with an
-- implicit cast to text; its I/O functions are text's (superuser only)
CREATE TYPE cq124_lib.ci;
CREATE FUNCTION cq124_lib.ci_in(cstring) RETURNS cq124_lib.ci LANGUAGE internal IMMUTABLE STRICT AS 'textin';
CREATE FUNCTION cq124_lib.ci_out(cq124_lib.ci) RETURNS cstring LANGUAGE internal IMMUTABLE STRICT AS 'textout';
CREATE FUNCTION cq124_lib.ci_recv(internal) RETURNS cq124_lib.ci LANGUAGE internal IMMUTABLE STRICT AS 'textrecv';
CREATE FUNCTION cq124_lib.ci_send(cq124_lib.ci) RETURNS bytea LANGUAGE internal IMMUTABLE STRICT AS 'textsend';
CREATE TYPE cq124_lib.ci (INPUT = cq124_lib.ci_in, OUTPUT = cq124_lib.ci_out,
                         RECEIVE = cq124_lib.ci_recv, SEND = cq124_lib.ci_send, LIKE = text);
ALTER TYPE cq124_lib.ci OWNER TO regress_cq124;
CREATE CAST (cq124_lib.ci AS text) WITHOUT FUNCTION AS IMPLICIT;
CREATE CAST (text AS cq124_lib.ci) WITHOUT FUNCTION AS ASSIGNMENT;

SET ROLE regress_cq124;
CREATE FUNCTION cq124_lib.ci_cmp(a cq124_lib.ci, b cq124_lib.ci) RETURNS int LANGUAGE sql IMMUTABLE STRICT
  AS 'SELECT pg_catalog.bttextcmp(pg_catalog.lower(a::pg_catalog.text), pg_catalog.lower(b::pg_catalog.text))';
CREATE FUNCTION cq124_lib.ci_eq(a cq124_lib.ci, b cq124_lib.ci) RETURNS boolean LANGUAGE sql IMMUTABLE STRICT
  AS 'SELECT cq124_lib.ci_cmp(a, b) OPERATOR(pg_catalog.=) 0';
CREATE FUNCTION cq124_lib.ci_ne(a cq124_lib.ci, b cq124_lib.ci) RETURNS boolean LANGUAGE sql IMMUTABLE STRICT
  AS 'SELECT cq124_lib.ci_cmp(a, b) OPERATOR(pg_catalog.<>) 0';
CREATE FUNCTION cq124_lib.ci_lt(a cq124_lib.ci, b cq124_lib.ci) RETURNS boolean LANGUAGE sql IMMUTABLE STRICT
  AS 'SELECT cq124_lib.ci_cmp(a, b) OPERATOR(pg_catalog.<) 0';
CREATE FUNCTION cq124_lib.ci_le(a cq124_lib.ci, b cq124_lib.ci) RETURNS boolean LANGUAGE sql IMMUTABLE STRICT
  AS 'SELECT cq124_lib.ci_cmp(a, b) OPERATOR(pg_catalog.<=) 0';
CREATE FUNCTION cq124_lib.ci_gt(a cq124_lib.ci, b cq124_lib.ci) RETURNS boolean LANGUAGE sql IMMUTABLE STRICT
  AS 'SELECT cq124_lib.ci_cmp(a, b) OPERATOR(pg_catalog.>) 0';
CREATE FUNCTION cq124_lib.ci_ge(a cq124_lib.ci, b cq124_lib.ci) RETURNS boolean LANGUAGE sql IMMUTABLE STRICT
  AS 'SELECT cq124_lib.ci_cmp(a, b) OPERATOR(pg_catalog.>=) 0';
CREATE FUNCTION cq124_lib.ci_hash(a cq124_lib.ci) RETURNS int LANGUAGE sql IMMUTABLE STRICT
  AS 'SELECT pg_catalog.hashtext(pg_catalog.lower(a::pg_catalog.text))';
CREATE FUNCTION cq124_lib.ci_hash_ext(a cq124_lib.ci, seed bigint) RETURNS bigint LANGUAGE sql IMMUTABLE STRICT
  AS 'SELECT pg_catalog.hashtextextended(pg_catalog.lower(a::pg_catalog.text), seed)';
CREATE OPERATOR cq124_lib.= (LEFTARG = cq124_lib.ci, RIGHTARG = cq124_lib.ci, FUNCTION = cq124_lib.ci_eq,
                             COMMUTATOR = OPERATOR(cq124_lib.=), NEGATOR = OPERATOR(cq124_lib.<>),
                             RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES);
CREATE OPERATOR cq124_lib.<> (LEFTARG = cq124_lib.ci, RIGHTARG = cq124_lib.ci, FUNCTION = cq124_lib.ci_ne,
                              COMMUTATOR = OPERATOR(cq124_lib.<>), NEGATOR = OPERATOR(cq124_lib.=));
CREATE OPERATOR cq124_lib.< (LEFTARG = cq124_lib.ci, RIGHTARG = cq124_lib.ci, FUNCTION = cq124_lib.ci_lt);
CREATE OPERATOR cq124_lib.<= (LEFTARG = cq124_lib.ci, RIGHTARG = cq124_lib.ci, FUNCTION = cq124_lib.ci_le);
CREATE OPERATOR cq124_lib.> (LEFTARG = cq124_lib.ci, RIGHTARG = cq124_lib.ci, FUNCTION = cq124_lib.ci_gt);
CREATE OPERATOR cq124_lib.>= (LEFTARG = cq124_lib.ci, RIGHTARG = cq124_lib.ci, FUNCTION = cq124_lib.ci_ge);
RESET ROLE;
-- (operator classes need a superuser)
CREATE OPERATOR CLASS cq124_lib.ci_ops DEFAULT FOR TYPE cq124_lib.ci USING btree AS
  OPERATOR 1 cq124_lib.<, OPERATOR 2 cq124_lib.<=, OPERATOR 3 cq124_lib.=,
  OPERATOR 4 cq124_lib.>=, OPERATOR 5 cq124_lib.>, FUNCTION 1 cq124_lib.ci_cmp(cq124_lib.ci, cq124_lib.ci);
CREATE OPERATOR CLASS cq124_lib.ci_hash_ops DEFAULT FOR TYPE cq124_lib.ci USING hash AS
  OPERATOR 1 cq124_lib.=, FUNCTION 1 cq124_lib.ci_hash(cq124_lib.ci),
  FUNCTION 2 cq124_lib.ci_hash_ext(cq124_lib.ci, bigint);

SET ROLE regress_cq124;
CREATE DOMAIN cq124_lib.pos AS int CHECK (VALUE > 0);
CREATE TYPE cq124_lib.color AS ENUM ('red', 'green', 'blue');
CREATE FUNCTION cq124_lib.twice(x int) RETURNS int LANGUAGE sql IMMUTABLE STRICT
  AS 'SELECT x OPERATOR(pg_catalog.*) 2';
CREATE FUNCTION cq124_lib.plus(a int, b int) RETURNS int LANGUAGE sql IMMUTABLE STRICT
  AS 'SELECT a OPERATOR(pg_catalog.+) b';
CREATE OPERATOR cq124_lib.<+> (LEFTARG = int, RIGHTARG = int, FUNCTION = cq124_lib.plus);
CREATE FUNCTION cq124_lib.acc(s bigint, x int) RETURNS bigint LANGUAGE sql IMMUTABLE
  AS 'SELECT COALESCE(s, 0) OPERATOR(pg_catalog.+) COALESCE(x, 0)';
CREATE FUNCTION cq124_lib.comb(a bigint, b bigint) RETURNS bigint LANGUAGE sql IMMUTABLE
  AS 'SELECT COALESCE(a, 0) OPERATOR(pg_catalog.+) COALESCE(b, 0)';
CREATE AGGREGATE cq124_lib.total(int) (SFUNC = cq124_lib.acc, STYPE = bigint, COMBINEFUNC = cq124_lib.comb);

CREATE TABLE cq124_lib.src (k cq124_lib.ci, v int, d cq124_lib.pos, c cq124_lib.color, ts timestamptz);
CREATE TABLE cq124_lib.dim (k cq124_lib.ci, label text);
INSERT INTO cq124_lib.dim VALUES ('A', 'first'), ('b', 'second');

INSERT INTO cq124_lib.src
SELECT k::cq124_lib.ci, i, (i % 3 + 1)::cq124_lib.pos, (ARRAY['red', 'green', 'blue'])[i % 3 + 1]::cq124_lib.color,
       '2026-01-01 00:00:00+00'::timestamptz + i * interval '17 minutes'
  FROM unnest(ARRAY['a', 'A', 'b', 'B', 'c', 'x', 'X', NULL, 'zz', 'ZZ']) WITH ORDINALITY AS u(k, i);

-- the queries and their oracles: each query is its own oracle
CREATE TABLE cq124_lib.queries (name text PRIMARY KEY, mode text, storage text, query text,
                                source text);
INSERT INTO cq124_lib.queries VALUES
  ('stateless', 'append', NULL,
   $q$SELECT k, v, twice(v) AS t, v <+> 1 AS p, NULLIF(k, 'x') AS nk,
             CASE k WHEN 'a' THEN 'is a' ELSE 'not a' END AS wa, k IS DISTINCT FROM 'B' AS not_b,
             d::int AS di, c, d::pos AS dd
        FROM src WHERE k IS DISTINCT FROM 'zz' AND k IN ('a', 'b', 'c', 'x') AND twice(v) <+> 0 > 0$q$, NULL),
  ('by_key_memory', 'update', 'memory',
   $q$SELECT k, count(*) AS n, sum(v) AS s, total(v) AS t, count(NULLIF(k, 'c')) AS nd
        FROM src WHERE k IS DISTINCT FROM 'zz' GROUP BY k HAVING total(v) > 0 AND twice(count(*)::int) > 0$q$, NULL),
  ('by_key_table', 'update', 'unlogged',
   $q$SELECT k, count(*) AS n, sum(v) AS s, total(v) AS t, count(DISTINCT NULLIF(k, 'c')) AS nd
        FROM src WHERE k IS DISTINCT FROM 'zz' GROUP BY k HAVING total(v) > 0 AND twice(count(*)::int) > 0$q$, NULL),
  ('complete', 'complete', NULL,
   $q$SELECT c, d, CASE k WHEN 'a' THEN true ELSE false END AS is_a, count(*) AS n, total(twice(v)) AS t
        FROM src GROUP BY c, d, 3$q$, NULL),
  ('windows', 'update', NULL,
   $q$SELECT w.window_start, NULLIF(k, 'b') AS k, count(*) AS n, total(v <+> 1) AS t
        FROM src, LATERAL cq.window(ts, interval '1 hour') AS w
       WHERE k IS DISTINCT FROM 'x' GROUP BY 1, 2$q$, NULL),
  ('join_using', 'append', NULL,
   $q$SELECT k, label, v FROM src JOIN dim USING (k)$q$, 'src'),
  ('join_on', 'append', NULL,
   $q$SELECT s.k, d.label, s.v FROM src s JOIN dim d ON s.k = d.k AND s.k IS NOT DISTINCT FROM d.k$q$, 'src'),
  ('distinct_keys', 'append', NULL,
   $q$SELECT DISTINCT NULLIF(k, 'a') AS k FROM src WHERE k IS NOT NULL$q$, NULL);

-- created by the owner with its own search_path
SET search_path = cq124_lib, pg_catalog;
SELECT q.name, public.cq124_try(format(
         'SELECT cq.create_query(%L, %L, output_mode => %L, "trigger" => %L%s)',
         'cq124_lib.' || q.name, q.query, q.mode, 'available_now',
         CASE WHEN q.storage IS NOT NULL THEN format(', state_storage => %L', q.storage) ELSE '' END ||
         CASE WHEN q.source IS NOT NULL THEN format(', source => %L', q.source) ELSE '' END)) AS created
  FROM cq124_lib.queries q ORDER BY q.name;
RESET search_path;
RESET ROLE;

-- the hostile role's objects: same names, earlier in callers' search_path
SET ROLE regress_cq124_evil;
CREATE FUNCTION cq124_evil.boom(anyelement) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'hostile code called by %', current_user; END $$;
CREATE FUNCTION cq124_evil.twice(x int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN PERFORM cq124_evil.boom(x); RETURN 0; END $$;
CREATE FUNCTION cq124_evil.plus(a int, b int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN PERFORM cq124_evil.boom(a); RETURN 0; END $$;
CREATE FUNCTION cq124_evil.eq_int(a int, b int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RETURN cq124_evil.boom(a); END $$;
CREATE FUNCTION cq124_evil.eq_bigint(a bigint, b bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RETURN cq124_evil.boom(a); END $$;
CREATE FUNCTION cq124_evil.eq_text(a text, b text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RETURN cq124_evil.boom(a); END $$;
CREATE FUNCTION cq124_evil.eq_ci(a cq124_lib.ci, b cq124_lib.ci) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RETURN cq124_evil.boom(a); END $$;
CREATE FUNCTION cq124_evil.lower(a text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM cq124_evil.boom(a); RETURN a; END $$;
CREATE FUNCTION cq124_evil.acc(s bigint, x int) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN PERFORM cq124_evil.boom(x); RETURN 0; END $$;
CREATE AGGREGATE cq124_evil.total(int) (SFUNC = cq124_evil.acc, STYPE = bigint);
CREATE AGGREGATE cq124_evil.count(int) (SFUNC = cq124_evil.acc, STYPE = bigint);
CREATE AGGREGATE cq124_evil.sum(int) (SFUNC = cq124_evil.acc, STYPE = bigint);
CREATE OPERATOR cq124_evil.<+> (LEFTARG = int, RIGHTARG = int, FUNCTION = cq124_evil.plus);
CREATE OPERATOR cq124_evil.= (LEFTARG = int, RIGHTARG = int, FUNCTION = cq124_evil.eq_int);
CREATE OPERATOR cq124_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = cq124_evil.eq_text);
CREATE OPERATOR cq124_evil.= (LEFTARG = cq124_lib.ci, RIGHTARG = cq124_lib.ci, FUNCTION = cq124_evil.eq_ci);
CREATE OPERATOR cq124_evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = cq124_evil.eq_bigint);
CREATE DOMAIN cq124_evil.ci AS text;
CREATE DOMAIN cq124_evil.pos AS int;
CREATE TYPE cq124_evil.color AS ENUM ('blue');
RESET ROLE;

-- new rows, run by the owner with the hostile search_path and temporary
-- objects of the same names
INSERT INTO cq124_lib.src
SELECT k::cq124_lib.ci, 100 + i, (i % 2 + 1)::cq124_lib.pos, (ARRAY['red', 'green', 'blue'])[i % 3 + 1]::cq124_lib.color,
       '2026-01-01 03:00:00+00'::timestamptz + i * interval '7 minutes'
  FROM unnest(ARRAY['B', 'b', 'C', 'x', NULL, 'Zz', 'a']) WITH ORDINALITY AS u(k, i);
SET ROLE regress_cq124;
CREATE TEMP TABLE src (k text, v int, d int, c text, ts timestamptz);
CREATE TEMP TABLE dim (k text, label text);
CREATE DOMAIN pg_temp.ci AS text;
CREATE DOMAIN pg_temp.pos AS int;
SET search_path = cq124_evil, pg_temp, cq124_lib, pg_catalog;
SELECT q.name, public.cq124_try(format('CALL cq.run(%L)', 'cq124_lib.' || q.name)) AS ran
  FROM cq124_lib.queries q ORDER BY q.name;
RESET search_path;
DROP TABLE pg_temp.src, pg_temp.dim;
DROP DOMAIN pg_temp.ci, pg_temp.pos;
-- no hostile code ran; each target equals its query run as a plain SELECT
SET search_path = cq124_lib, pg_catalog;
SELECT q.name, public.mismatches(format('cq124_lib.%I', q.name)::regclass, q.query) AS mismatches,
       public.cq124_try(format('SELECT count(*) FROM cq124_lib.%I', q.name)) AS readable
  FROM cq124_lib.queries q ORDER BY q.name;
SELECT lower(k::text) AS k, n, s, t, nd FROM by_key_memory ORDER BY 1 NULLS LAST;
RESET search_path;
RESET ROLE;

-- refused at creation, with a hint: a volatile argument, which the
-- spelled-out comparison would evaluate twice, and a USING join with an
-- alias; over pg_catalog's types nothing is rewritten (the query's view
-- keeps its NULLIF)
SET ROLE regress_cq124;
SET search_path = cq124_lib, pg_catalog;
\set VERBOSITY default
SELECT cq.create_query('cq124_lib.volatile', 'SELECT NULLIF(k, (random() * 0)::int::text::ci) AS n FROM src',
                       "trigger" => 'available_now');
SELECT cq.create_query('cq124_lib.aliased', 'SELECT j.k, v FROM src JOIN dim USING (k) AS j',
                       "trigger" => 'available_now', source => 'src');
\set VERBOSITY terse
SELECT cq.create_query('cq124_lib.builtin', 'SELECT NULLIF(v, 3) AS n, v IS DISTINCT FROM 4 AS d FROM src',
                       "trigger" => 'available_now') IS NOT NULL AS created;
SELECT pg_get_viewdef(format('cq_state.q_%s', id)::regclass) ~ 'NULLIF.*IS DISTINCT FROM' AS kept
  FROM cq.queries WHERE name = 'builtin';
SELECT cq.drop_query('cq124_lib.builtin', drop_target => true);
RESET search_path;
RESET ROLE;

SET client_min_messages = warning;
SELECT count(cq.drop_query('cq124_lib.' || name, drop_target => true)) AS dropped FROM cq124_lib.queries;
DROP SCHEMA cq124_evil CASCADE;
DROP SCHEMA cq124_lib CASCADE;
DROP FUNCTION public.cq124_try(text);
DROP ROLE regress_cq124_evil;
DROP ROLE regress_cq124;
