-- Session 40 review of session 39's C reader (delta_scan.c): USAGE on the
-- schemas the batch's statement names.  The statement is parsed again when a
-- schema changes, and its parse needs USAGE on the schema of its source, of
-- the functions, operators and types of its expressions, and of a function
-- an inlined SQL function calls; the C reader reads by OID.  Without the
-- check, an owner who lost USAGE on the source's schema (its own SELECT
-- refused) still had the new rows folded.  Each query has a twin whose
-- batches run the statement; both must fail alike, fold nothing, and catch
-- up once USAGE is granted again.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET cq.run_in_worker = off;
\i sql/include/ds_diff.sql
CREATE ROLE regress_rs_owner;
GRANT CREATE, USAGE ON SCHEMA public TO regress_rs_owner;
CREATE SCHEMA rs_src;
CREATE SCHEMA rs_fn;
CREATE SCHEMA rs_in;
CREATE SCHEMA rs_ty;
GRANT CREATE, USAGE ON SCHEMA rs_src TO regress_rs_owner;
GRANT USAGE ON SCHEMA rs_fn, rs_in, rs_ty TO regress_rs_owner;
CREATE FUNCTION rs_fn.bucket(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN i % 2; END $$;
CREATE FUNCTION rs_in.inner_b(i int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT i % 3';
CREATE FUNCTION rs_fn.outer_b(i int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT rs_in.inner_b(i)';
CREATE DOMAIN rs_ty.small AS int CHECK (VALUE < 1000);
CREATE TABLE rs_src.src (k int, v numeric);
ALTER TABLE rs_src.src OWNER TO regress_rs_owner;
SET ROLE regress_rs_owner;
CREATE TABLE rs_c WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM rs_src.src GROUP BY 1;
CREATE TABLE rs_s WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM rs_src.src GROUP BY 1;
CREATE TABLE rs_fc WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT rs_fn.bucket(k) AS b, count(*) AS n FROM rs_src.src GROUP BY 1;
CREATE TABLE rs_fs WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT rs_fn.bucket(k) AS b, count(*) AS n FROM rs_src.src GROUP BY 1;
CREATE TABLE rs_ic WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT rs_fn.outer_b(k) AS b, count(*) AS n FROM rs_src.src GROUP BY 1;
CREATE TABLE rs_is WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT rs_fn.outer_b(k) AS b, count(*) AS n FROM rs_src.src GROUP BY 1;
CREATE TABLE rs_tc WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k::rs_ty.small AS d, count(*) AS n FROM rs_src.src GROUP BY 1;
CREATE TABLE rs_ts WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k::rs_ty.small AS d, count(*) AS n FROM rs_src.src GROUP BY 1;
INSERT INTO rs_src.src SELECT g % 4, g FROM generate_series(1, 20) g;
SELECT cq.explain('rs_c') LIKE '%read in C (cq.delta_scan_in_c)%' AS read_in_c;
-- a batch of every pair, each C twin first
\set VERBOSITY terse
\set c rs_c
\set s rs_s
\i sql/include/delta_scan_pair.sql
\set c rs_fc
\set s rs_fs
\i sql/include/delta_scan_pair.sql
\set c rs_ic
\set s rs_is
\i sql/include/delta_scan_pair.sql
\set c rs_tc
\set s rs_ts
\i sql/include/delta_scan_pair.sql
RESET ROLE;

-- 1. USAGE on the source's schema revoked: the owner's SELECT fails, and
-- so do both twins' batches
REVOKE USAGE, CREATE ON SCHEMA rs_src FROM regress_rs_owner;
INSERT INTO rs_src.src SELECT g % 4, g FROM generate_series(21, 30) g;
SET ROLE regress_rs_owner;
SELECT count(*) FROM rs_src.src;
\set c rs_c
\set s rs_s
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT 'rs_c' AS q, sum(n) AS rows FROM rs_c UNION ALL SELECT 'rs_s', sum(n) FROM rs_s ORDER BY 1;
GRANT USAGE ON SCHEMA rs_src TO regress_rs_owner;

-- 2. USAGE on the schema of a function of the key (called directly)
REVOKE USAGE ON SCHEMA rs_fn FROM regress_rs_owner;
SET ROLE regress_rs_owner;
\set c rs_fc
\set s rs_fs
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT 'rs_fc' AS q, sum(n) AS rows FROM rs_fc UNION ALL SELECT 'rs_fs', sum(n) FROM rs_fs ORDER BY 1;
GRANT USAGE ON SCHEMA rs_fn TO regress_rs_owner;

-- 3. USAGE on the schema of a function that an inlined SQL function calls
-- (inlined too: no trace of it in the reader's expressions); the pair's
-- plan cache entries built again first (section 2 changed a schema they
-- depend on), so that only this change can make them rebuild
SET ROLE regress_rs_owner;
\set c rs_ic
\set s rs_is
\i sql/include/delta_scan_pair.sql
RESET ROLE;
INSERT INTO rs_src.src SELECT g % 4, g FROM generate_series(31, 35) g;
REVOKE USAGE ON SCHEMA rs_in FROM regress_rs_owner;
SET ROLE regress_rs_owner;
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT 'rs_ic' AS q, sum(n) AS rows FROM rs_ic UNION ALL SELECT 'rs_is', sum(n) FROM rs_is ORDER BY 1;
GRANT USAGE ON SCHEMA rs_in TO regress_rs_owner;

-- 4. USAGE on the schema of a type the key casts to
REVOKE USAGE ON SCHEMA rs_ty FROM regress_rs_owner;
SET ROLE regress_rs_owner;
\set c rs_tc
\set s rs_ts
\i sql/include/delta_scan_pair.sql
RESET ROLE;
SELECT 'rs_tc' AS q, sum(n) AS rows FROM rs_tc UNION ALL SELECT 'rs_ts', sum(n) FROM rs_ts ORDER BY 1;
GRANT USAGE ON SCHEMA rs_ty TO regress_rs_owner;

-- 5. The reader's expressions are planned when the plan cache entry is
-- built, by whoever runs the batch first in a backend: a worker (the
-- bootstrap superuser), a superuser's cq.run or cq.explain.  The planner
-- runs an immutable function of constants; the owner's function must run
-- as the owner, as the statement's planning runs it (before the fix it ran
-- as the superuser: the owner's code with the superuser's rights).
CREATE TABLE rs_audit (who text, super boolean);
GRANT INSERT ON rs_audit TO regress_rs_owner;
SET ROLE regress_rs_owner;
CREATE FUNCTION public.rs_log() RETURNS int LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  INSERT INTO public.rs_audit SELECT current_user, rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user;
  RETURN 0;
END $$;
CREATE FUNCTION public.rs_const(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN i + public.rs_log(); END $$;
CREATE TABLE rs_ec WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k + public.rs_const(100) AS b, count(*) AS n FROM rs_src.src GROUP BY 1;
RESET ROLE;
-- the superuser's batch builds the entry again (the source changed)
ALTER TABLE rs_src.src ADD COLUMN extra int;
TRUNCATE rs_audit;
CALL cq.run('rs_ec');
SELECT DISTINCT who, super FROM rs_audit;
SELECT cq.drop_query('rs_ec', drop_target => true);
DROP TABLE rs_audit;
DROP FUNCTION public.rs_const(int), public.rs_log();

-- every USAGE back: all catch up, equal to their twins and to the GROUP BY
SET ROLE regress_rs_owner;
\set c rs_c
\set s rs_s
\i sql/include/delta_scan_pair.sql
\set c rs_fc
\set s rs_fs
\i sql/include/delta_scan_pair.sql
\set c rs_ic
\set s rs_is
\i sql/include/delta_scan_pair.sql
\set c rs_tc
\set s rs_ts
\i sql/include/delta_scan_pair.sql
RESET ROLE;
\set VERBOSITY default
SELECT ds_diff('rs_c', 'TABLE rs_s') AS src_c_vs_sql,
       ds_diff('rs_c', 'SELECT k, count(*) AS n, sum(v) AS s FROM rs_src.src GROUP BY 1') AS src_c_vs_groupby,
       ds_diff('rs_fc', 'TABLE rs_fs') AS fn_c_vs_sql,
       ds_diff('rs_fc', 'SELECT rs_fn.bucket(k) AS b, count(*) AS n FROM rs_src.src GROUP BY 1') AS fn_c_vs_groupby,
       ds_diff('rs_ic', 'TABLE rs_is') AS inl_c_vs_sql,
       ds_diff('rs_ic', 'SELECT rs_fn.outer_b(k) AS b, count(*) AS n FROM rs_src.src GROUP BY 1') AS inl_c_vs_groupby,
       ds_diff('rs_tc', 'TABLE rs_ts') AS ty_c_vs_sql,
       ds_diff('rs_tc', 'SELECT k::rs_ty.small AS d, count(*) AS n FROM rs_src.src GROUP BY 1') AS ty_c_vs_groupby;

DROP TABLE rs_c, rs_s, rs_fc, rs_fs, rs_ic, rs_is, rs_tc, rs_ts;
DROP SCHEMA rs_src, rs_fn, rs_in, rs_ty CASCADE;
DROP OWNED BY regress_rs_owner;
DROP ROLE regress_rs_owner;
DROP FUNCTION ds_diff(regclass, text);
