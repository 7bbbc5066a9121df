-- Session 40 review of session 39's C reader of an incremental batch's new
-- rows (delta_scan.c): the functions of the query's keys and WHERE.  Each
-- query has a twin whose batches run the statement (cq.delta_scan_in_c
-- off); after each pair of batches the twins must be equal, and equal to
-- the plain GROUP BY over the source where the query's functions did not
-- change meanwhile.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET cq.run_in_worker = off;

\i sql/include/ds_diff.sql

-- 1. A SQL function inlined into the key calls another SQL function, inlined
-- too: the second one is not in the query tree.  Replacing it must reach
-- the C reader as it reaches the statement (planned again on the change);
-- before the fix the C reader went on grouping by the old body.
CREATE SCHEMA rv;
CREATE FUNCTION rv.inner_b(i int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT i % 2';
CREATE FUNCTION rv.outer_b(i int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT rv.inner_b(i)';
CREATE TABLE rv_src (k int, v numeric, t text, u text);
CREATE TABLE rv_c WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT rv.outer_b(k) AS b, count(*) AS n, sum(v) AS s FROM rv_src GROUP BY 1;
CREATE TABLE rv_s WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT rv.outer_b(k) AS b, count(*) AS n, sum(v) AS s FROM rv_src GROUP BY 1;
INSERT INTO rv_src SELECT g, g FROM generate_series(1, 10) g;
\set c rv_c
\set s rv_s
\i sql/include/delta_scan_pair.sql
CREATE OR REPLACE FUNCTION rv.inner_b(i int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT i % 3 + 10';
INSERT INTO rv_src SELECT g, g FROM generate_series(1, 10) g;
\i sql/include/delta_scan_pair.sql
SELECT 'rv_c' AS q, b, n, s FROM rv_c UNION ALL SELECT 'rv_s', b, n, s FROM rv_s ORDER BY 1, 2;
SELECT ds_diff('rv_c', 'TABLE rv_s') AS inlined_c_vs_sql;

-- 2. The owner's EXECUTE on the inner function revoked: the statement fails
-- (the planner does not inline a function the owner may not execute, and
-- the executor refuses it); the C reader must fail the same way and fold
-- nothing (before the fix it went on with the body inlined before).
CREATE ROLE regress_rv_owner;
GRANT CREATE, USAGE ON SCHEMA public TO regress_rv_owner;
GRANT USAGE ON SCHEMA rv TO regress_rv_owner;
CREATE TABLE rv_priv (k int, v numeric);
ALTER TABLE rv_priv OWNER TO regress_rv_owner;
SET ROLE regress_rv_owner;
CREATE TABLE rv_pc WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT rv.outer_b(k) AS b, count(*) AS n FROM rv_priv GROUP BY 1;
CREATE TABLE rv_ps WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT rv.outer_b(k) AS b, count(*) AS n FROM rv_priv GROUP BY 1;
INSERT INTO rv_priv SELECT g, g FROM generate_series(1, 10) g;
\set c rv_pc
\set s rv_ps
\i sql/include/delta_scan_pair.sql
RESET ROLE;
REVOKE EXECUTE ON FUNCTION rv.inner_b(int) FROM PUBLIC;
INSERT INTO rv_priv SELECT g, g FROM generate_series(11, 20) g;
SET ROLE regress_rv_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT 'rv_pc' AS q, b, n FROM rv_pc UNION ALL SELECT 'rv_ps', b, n FROM rv_ps ORDER BY 1, 2;
GRANT EXECUTE ON FUNCTION rv.inner_b(int) TO regress_rv_owner;
SET ROLE regress_rv_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT ds_diff('rv_pc', 'TABLE rv_ps') AS exec_c_vs_sql,
       ds_diff('rv_pc', 'SELECT rv.outer_b(k) AS b, count(*) AS n FROM rv_priv GROUP BY 1') AS exec_c_vs_groupby;

-- 3. Functions called directly by the reader (not inlined: PL/pgSQL):
-- non-strict with NULL arguments and a NULL constant, strict with a NULL
-- column, SECURITY DEFINER reading a table the owner may not read, and one
-- replaced by another body between batches.
CREATE TABLE rv_secret (k int PRIMARY KEY, label text);
INSERT INTO rv_secret VALUES (1, 'one'), (2, 'two');
CREATE FUNCTION rv.nz(i int, d int) RETURNS int LANGUAGE plpgsql IMMUTABLE CALLED ON NULL INPUT
  AS $$ BEGIN RETURN coalesce(i, d, -100); END $$;
CREATE FUNCTION rv.st(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE STRICT AS $$ BEGIN RETURN i * 10; END $$;
CREATE FUNCTION rv.label(i int) RETURNS text LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog
  AS $$ BEGIN RETURN (SELECT label FROM public.rv_secret WHERE k = i); END $$;
CREATE FUNCTION rv.tag(t text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN 'v1:' || t; END $$;
CREATE TABLE rv_fn (k int, t text, v numeric);
ALTER TABLE rv_fn OWNER TO regress_rv_owner;
SET ROLE regress_rv_owner;
SELECT * FROM rv_secret;
CREATE TABLE rv_fc WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT rv.nz(k, NULL) AS a, rv.st(k) AS b, rv.label(k) AS l, rv.tag(t) AS g, count(*) AS n, sum(v) AS s
  FROM rv_fn GROUP BY 1, 2, 3, 4;
CREATE TABLE rv_fs WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT rv.nz(k, NULL) AS a, rv.st(k) AS b, rv.label(k) AS l, rv.tag(t) AS g, count(*) AS n, sum(v) AS s
  FROM rv_fn GROUP BY 1, 2, 3, 4;
INSERT INTO rv_fn VALUES (1, 'x', 1), (NULL, 'x', 2), (2, NULL, 3), (3, 'y', NULL), (NULL, NULL, 5);
\set c rv_fc
\set s rv_fs
\i sql/include/delta_scan_pair.sql
RESET ROLE;
CREATE OR REPLACE FUNCTION rv.tag(t text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN 'v2:' || t; END $$;
INSERT INTO rv_fn VALUES (1, 'x', 10), (NULL, 'z', 20);
SET ROLE regress_rv_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT 'rv_fc' AS q, * FROM rv_fc UNION ALL SELECT 'rv_fs', * FROM rv_fs ORDER BY 1, 2, 3, 4, 5;
SELECT ds_diff('rv_fc', 'TABLE rv_fs') AS direct_c_vs_sql;

-- 4. A key function replaced by a VOLATILE one: the query's aggregation in
-- C is left (deltagg.c refuses volatile functions) on the next batch, by
-- both twins alike.
CREATE FUNCTION rv.vb(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN i % 2; END $$;
CREATE TABLE rv_vc WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT rv.vb(k) AS b, count(*) AS n FROM rv_src GROUP BY 1;
CREATE TABLE rv_vs WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT rv.vb(k) AS b, count(*) AS n FROM rv_src GROUP BY 1;
INSERT INTO rv_src SELECT g, g FROM generate_series(1, 6) g;
\set c rv_vc
\set s rv_vs
\i sql/include/delta_scan_pair.sql
CREATE OR REPLACE FUNCTION rv.vb(i int) RETURNS int LANGUAGE plpgsql VOLATILE AS $$ BEGIN RETURN i % 2 + 5; END $$;
INSERT INTO rv_src SELECT g, g FROM generate_series(1, 6) g;
\i sql/include/delta_scan_pair.sql
SELECT cq.explain('rv_vc') LIKE '%made in C (cq.delta_agg_in_c)%' AS agg_in_c_after_volatile;
SELECT ds_diff('rv_vc', 'TABLE rv_vs') AS volatile_c_vs_sql, (SELECT sum(n) FROM rv_vc) AS rows_folded;

-- 5. A cast to a domain in the key whose CHECK fails for a new row: the
-- same error both ways, nothing folded; a constraint added to the domain
-- between batches holds for the next batch.
CREATE DOMAIN rv_small AS int CHECK (VALUE < 100);
CREATE TABLE rv_dom (k int);
CREATE TABLE rv_dc WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k::rv_small AS d, count(*) AS n FROM rv_dom WHERE k IS NOT NULL GROUP BY 1;
CREATE TABLE rv_ds WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k::rv_small AS d, count(*) AS n FROM rv_dom WHERE k IS NOT NULL GROUP BY 1;
INSERT INTO rv_dom VALUES (50), (NULL), (500);
\set c rv_dc
\set s rv_ds
\i sql/include/delta_scan_pair.sql
DELETE FROM rv_dom WHERE k = 500;
ALTER DOMAIN rv_small ADD CONSTRAINT rv_not7 CHECK (VALUE <> 7) NOT VALID;
INSERT INTO rv_dom VALUES (7);
\i sql/include/delta_scan_pair.sql
DELETE FROM rv_dom WHERE k = 7;
INSERT INTO rv_dom VALUES (8), (50);
\i sql/include/delta_scan_pair.sql
SELECT 'rv_dc' AS q, * FROM rv_dc UNION ALL SELECT 'rv_ds', * FROM rv_ds ORDER BY 1, 2;
SELECT ds_diff('rv_dc', 'TABLE rv_ds') AS domain_c_vs_sql,
       ds_diff('rv_dc', 'SELECT k::rv_small AS d, count(*) AS n FROM rv_dom WHERE k IS NOT NULL GROUP BY 1') AS domain_c_vs_groupby;

-- 6. Collations: a key of a nondeterministic collation and one under "C"
-- (lower() of a non-ASCII letter): grouped as the GROUP BY groups them.
CREATE COLLATION rv_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE rv_coll (t text COLLATE rv_ci, u text);
CREATE TABLE rv_cc WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT t, lower(u COLLATE "C") AS lu, count(*) AS n FROM rv_coll GROUP BY 1, 2;
CREATE TABLE rv_cs WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT t, lower(u COLLATE "C") AS lu, count(*) AS n FROM rv_coll GROUP BY 1, 2;
INSERT INTO rv_coll VALUES ('a', 'X'), ('A', 'x'), ('b', 'Y'), ('B', 'y'), ('a', 'É'), ('A', 'é');
\set c rv_cc
\set s rv_cs
\i sql/include/delta_scan_pair.sql
SELECT ds_diff('rv_cc', 'TABLE rv_cs') AS coll_c_vs_sql,
       (SELECT count(*) FROM rv_cc) AS groups_c,
       (SELECT count(*) FROM (SELECT t, lower(u COLLATE "C") FROM rv_coll GROUP BY 1, 2) g) AS groups_groupby;

DROP TABLE rv_c, rv_s, rv_pc, rv_ps, rv_fc, rv_fs, rv_vc, rv_vs, rv_dc, rv_ds, rv_cc, rv_cs,
  rv_src, rv_priv, rv_fn, rv_secret, rv_coll, rv_dom;
DROP OWNED BY regress_rv_owner;
DROP ROLE regress_rv_owner;
DROP SCHEMA rv CASCADE;
DROP DOMAIN rv_small;
DROP COLLATION rv_ci;
DROP FUNCTION ds_diff(regclass, text);
