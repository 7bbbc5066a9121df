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

-- issue 9 item 27: a query lives in its target's schema, and its name is
-- unique there only, as a table's: cq.queries, cq.offsets and cq.progress
-- get a schema column (the name of the target's schema, kept in step by
-- ALTER TABLE ... SET SCHEMA and ALTER SCHEMA ... RENAME) and are keyed by
-- (schema, name).  cq.queries is altered first (the library reads the
-- catalog version under a lock on it, see cq_catalog_version()).
ALTER TABLE cq.queries ADD COLUMN schema name;
UPDATE cq.queries q SET schema = n.nspname
  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
 WHERE c.oid = q.target;
ALTER TABLE cq.queries ALTER COLUMN schema SET NOT NULL;
ALTER TABLE cq.offsets ADD COLUMN schema name;
ALTER TABLE cq.progress ADD COLUMN schema name;
UPDATE cq.offsets o SET schema = q.schema FROM cq.queries q WHERE q.name = o.name;
UPDATE cq.progress p SET schema = q.schema FROM cq.queries q WHERE q.name = p.name;
ALTER TABLE cq.offsets ALTER COLUMN schema SET NOT NULL,
    DROP CONSTRAINT offsets_name_fkey, DROP CONSTRAINT offsets_pkey;
ALTER TABLE cq.progress ALTER COLUMN schema SET NOT NULL,
    DROP CONSTRAINT progress_name_fkey, DROP CONSTRAINT progress_pkey;
ALTER TABLE cq.queries DROP CONSTRAINT queries_pkey,
    ADD CONSTRAINT queries_pkey PRIMARY KEY (schema, name);
ALTER TABLE cq.offsets ADD CONSTRAINT offsets_pkey PRIMARY KEY (schema, name, batch_id),
    ADD CONSTRAINT offsets_schema_name_fkey FOREIGN KEY (schema, name)
        REFERENCES cq.queries (schema, name) ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE cq.progress ADD CONSTRAINT progress_pkey PRIMARY KEY (schema, name, batch_id),
    ADD CONSTRAINT progress_schema_name_fkey FOREIGN KEY (schema, name)
        REFERENCES cq.queries (schema, name) ON DELETE CASCADE ON UPDATE CASCADE;
COMMENT ON COLUMN cq.queries.schema IS 'schema the query lives in: its target''s';
ALTER POLICY offsets_of_my_roles ON cq.offsets
    USING (EXISTS (SELECT 1 FROM cq.queries q WHERE q.schema OPERATOR(pg_catalog.=) offsets.schema
                                                AND q.name OPERATOR(pg_catalog.=) offsets.name));
ALTER POLICY progress_of_my_roles ON cq.progress
    USING (EXISTS (SELECT 1 FROM cq.queries q WHERE q.schema OPERATOR(pg_catalog.=) progress.schema
                                                AND q.name OPERATOR(pg_catalog.=) progress.name));
CREATE OR REPLACE VIEW cq.status WITH (security_invoker = true) AS
SELECT q.name,
       CASE WHEN q.state <> 'active' OR q."trigger" = 'available_now' THEN 'Stopped'
            ELSE coalesce(s.message, 'Stopped') END AS message,
       coalesce(s.is_data_available, false) AS is_data_available,
       coalesce(s.is_trigger_active, false) AS is_trigger_active,
       s.worker_pid,
       coalesce(s.watermark, o.watermark) AS watermark,
       coalesce(s.last_batch_id, o.batch_id) AS last_batch_id,
       q.schema
  FROM cq.queries q
  LEFT JOIN cq.status_slots() s ON s.query_id = q.id
  LEFT JOIN LATERAL (SELECT batch_id, watermark FROM cq.offsets
                      WHERE offsets.schema = q.schema AND offsets.name = q.name
                      ORDER BY batch_id DESC LIMIT 1) o ON true;
