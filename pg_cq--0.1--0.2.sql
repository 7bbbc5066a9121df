-- pg_cq 0.1 -> 0.2
-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_cq UPDATE TO '0.2'" to load this file. \quit

-- pg_cq--0.2.sql is built from pg_cq--0.1.sql followed by this file (see
-- Makefile), so a new install and an upgraded one have the same objects.
-- Each change below says which issue item it belongs to.

-- issue 9 item 4: each role sees the queries of the roles whose privileges it
-- has (pg_has_role(owner, 'USAGE'), the rule cq.* functions apply to change a
-- query), superusers all.  pg_cq reads and writes its catalog as superuser.
ALTER TABLE cq.queries ENABLE ROW LEVEL SECURITY;
ALTER TABLE cq.offsets ENABLE ROW LEVEL SECURITY;
ALTER TABLE cq.progress ENABLE ROW LEVEL SECURITY;
CREATE POLICY queries_of_my_roles ON cq.queries FOR SELECT
    USING (pg_catalog.pg_has_role(owner::pg_catalog.oid, 'USAGE'));
CREATE POLICY offsets_of_my_roles ON cq.offsets FOR SELECT
    USING (EXISTS (SELECT 1 FROM cq.queries q WHERE q.name OPERATOR(pg_catalog.=) offsets.name));
CREATE POLICY progress_of_my_roles ON cq.progress FOR SELECT
    USING (EXISTS (SELECT 1 FROM cq.queries q WHERE q.name OPERATOR(pg_catalog.=) progress.name));
-- the view reads the tables with its caller's rights, so their policies apply
ALTER VIEW cq.status SET (security_invoker = true);
