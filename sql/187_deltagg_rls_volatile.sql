-- Session 39 review: session 38 kept d (not the C aggregation of the new
-- rows, deltagg.c) for a query with a volatile function, because when the
-- C aggregation outgrows hash_mem its scan stops and d reads the rows
-- again.  A row-level security policy of the source is a condition of
-- that scan too, and its function was called again for the rows already
-- scanned: an audit function that counts the rows it is asked about
-- counted them twice.  A source whose policies may call a volatile
-- function keeps d as well; the calls are one a row read.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET cq.run_in_worker = off;
CREATE ROLE regress_dr_owner;
CREATE SCHEMA dr AUTHORIZATION regress_dr_owner;
SET ROLE regress_dr_owner;
CREATE SEQUENCE dr.audit_seq;
CREATE FUNCTION dr.audit() RETURNS boolean LANGUAGE sql VOLATILE
  AS $$ SELECT nextval('dr.audit_seq') > 0 $$;
CREATE TABLE dr.src (k int);
CREATE TABLE dr.src_plain (k int);
CREATE TABLE dr.t WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n FROM dr.src GROUP BY k;
CREATE TABLE dr.plain WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n FROM dr.src_plain GROUP BY k;
-- the owner is subject to the policies (FORCE)
ALTER TABLE dr.src ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY audited ON dr.src FOR SELECT USING (dr.audit());
CREATE POLICY ins ON dr.src FOR INSERT WITH CHECK (true);
-- a policy without a volatile call keeps the C aggregation
ALTER TABLE dr.src_plain ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY everything ON dr.src_plain USING (k IS NOT NULL OR k IS NULL);
INSERT INTO dr.src SELECT g FROM generate_series(1, 5000) g;
INSERT INTO dr.src_plain SELECT g FROM generate_series(1, 5000) g;
RESET ROLE;
SELECT q, cq.explain(q) LIKE '%made in C (cq.delta_agg_in_c)%' AS in_c
  FROM unnest(ARRAY['dr.t', 'dr.plain']) q;
-- 5,000 new groups, more than a 64 kB hash_mem holds
SET cq.work_mem = 64;
CALL cq.run('dr.t');
CALL cq.run('dr.plain');
RESET cq.work_mem;
-- one audit call a row read
SELECT (SELECT last_value FROM dr.audit_seq) AS audit_calls, sum(n) AS rows_counted,
       count(*) AS groups FROM dr.t;
SELECT sum(n) AS rows_counted, count(*) AS groups FROM dr.plain;
DROP SCHEMA dr CASCADE;
DROP ROLE regress_dr_owner;
