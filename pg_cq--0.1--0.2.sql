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
-- (cq.status gains the column schema, after last_batch_id, and is joined
-- with cq.offsets by schema and name: the view is replaced once, below)

-- issue 9 item 10: every row that reaches a source is stamped with the id of
-- the transaction that inserted it, whatever the statement gave cq_xid (an
-- explicit value, a copy of another table's cq_xid, NULL for want of a
-- default); an UPDATE cannot change it.  The row trigger zz_cq_stamp fires
-- after the table's other BEFORE triggers (they fire in name order), also
-- under session_replication_role = replica, and PostgreSQL clones it to
-- partitions, present and future.  Sources tracked by 0.1 get it here.
CREATE FUNCTION cq.stamp() RETURNS trigger
AS 'MODULE_PATHNAME', 'cq_stamp'
LANGUAGE C;
COMMENT ON FUNCTION cq.stamp() IS 'pg_cq internal: row trigger of tracked sources, stamps cq_xid with the inserting transaction';

DO $$
DECLARE
  r record;
BEGIN
  -- each source, and the tables inheriting from it that are not partitions
  -- (row triggers are cloned to partitions only); partitioned tables before
  -- their partitions, whose own trigger the clone replaces
  FOR r IN
    WITH RECURSIVE t(rel, root) AS (
      SELECT DISTINCT q.source::pg_catalog.oid, true FROM cq.queries q
      UNION
      SELECT i.inhrelid, false FROM pg_catalog.pg_inherits i JOIN t ON i.inhparent OPERATOR(pg_catalog.=) t.rel
    )
    SELECT c.oid::pg_catalog.regclass AS rel, c.relispartition AS part,
           (SELECT pg_catalog.count(*) FROM pg_catalog.pg_partition_ancestors(c.oid)) AS depth
      FROM t JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.rel
     WHERE c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'p']::pg_catalog."char"[])
     GROUP BY c.oid, c.relispartition
    HAVING pg_catalog.bool_or(t.root) OR NOT c.relispartition
     ORDER BY depth
  LOOP
    CONTINUE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_trigger g
                           WHERE g.tgrelid OPERATOR(pg_catalog.=) r.rel
                             AND g.tgname OPERATOR(pg_catalog.=) 'zz_cq_stamp');
    EXECUTE pg_catalog.format('CREATE TRIGGER zz_cq_stamp BEFORE INSERT OR UPDATE OR DELETE ON %s '
                              'FOR EACH ROW EXECUTE FUNCTION cq.stamp()', r.rel);
    EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER zz_cq_stamp', r.rel);
  END LOOP;
END
$$;

-- issue 9 item 18: a query's offsets are transaction ids, valid wherever its
-- sources' cq_xid values are: in this database and in a copy of its files
-- (pg_upgrade, CREATE DATABASE ... TEMPLATE, a base backup), not in a
-- restored dump.  The system identifier cannot tell them apart (pg_upgrade
-- changes it), this installation id can: pg_upgrade carries the table over
-- with the other files, while pg_dump leaves it out (it is not a
-- configuration table) and the restore's CREATE EXTENSION makes a new one.
-- cq.queries.cluster_id now holds it; rows recorded by 0.1 in this cluster
-- (cluster_id = its system identifier) are converted, rows restored from
-- another cluster keep a value that matches nothing (they start over).
CREATE TABLE cq.installation (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    id  uuid NOT NULL DEFAULT pg_catalog.gen_random_uuid()
);
COMMENT ON TABLE cq.installation IS 'pg_cq internal: identifies the installation the offsets of cq.queries belong to (kept by pg_upgrade, new after a restore)';
INSERT INTO cq.installation DEFAULT VALUES;
UPDATE cq.queries SET cluster_id = (SELECT i.id::pg_catalog.text FROM cq.installation i)
 WHERE cluster_id OPERATOR(pg_catalog.=)
       (SELECT s.system_identifier::pg_catalog.text FROM pg_catalog.pg_control_system() s);

-- issue 13 item 6: cq.explain(name) returns the SQL a batch of the query
-- runs, with the offsets as $n parameters, so that users can EXPLAIN it.
-- Only for a role with the owner's privileges, as every cq.* function.
CREATE FUNCTION cq.explain(name text) RETURNS text
AS 'MODULE_PATHNAME', 'cq_explain'
LANGUAGE C STRICT VOLATILE;
COMMENT ON FUNCTION cq.explain(text) IS 'the SQL statement a batch of a continuous query runs, offsets as $n parameters, for EXPLAIN';

-- issue 9 item 26: for a timestamp (without time zone) event-time column,
-- the event times and watermarks that cq.progress, cq.offsets and cq.status
-- show are the column's values read in the query's time zone
-- (cq.queries.timezone, its creator's), not at UTC.  Batches still compare
-- and advance them as the column's values at UTC (exact and monotone, where
-- a zone with daylight-saving changes is not): cq.offsets keeps them in
-- these two columns, which a batch reads back.  NULL for timestamptz
-- columns and for rows recorded before this update (their batch_watermark
-- and watermark are still the values at UTC).
ALTER TABLE cq.offsets ADD COLUMN batch_watermark_ntz timestamp,
                       ADD COLUMN watermark_ntz timestamp;
COMMENT ON COLUMN cq.offsets.batch_watermark_ntz IS 'timestamp (without time zone) event-time column: batch_watermark as a value of the column, exactly (what batches compare); NULL for -infinity, a timestamptz column or a row recorded before 0.2';
COMMENT ON COLUMN cq.offsets.watermark_ntz IS 'timestamp (without time zone) event-time column: watermark as a value of the column, exactly (what batches compare); NULL for -infinity, a timestamptz column or a row recorded before 0.2';

-- issue 10 part 1: generic combinable aggregates.  Any aggregate with a
-- combine function (and serial/deserial functions for an internal state)
-- is folded through a cq.agg_state column: cq.agg_partial computes a
-- batch's partial state, cq.agg_combine merges it into the stored one,
-- cq.agg_final finalizes.  States are made only by these functions (text
-- input yields a value holding no state), so they are safe for PUBLIC.
CREATE TYPE cq.agg_state;
CREATE FUNCTION cq.agg_state_in(pg_catalog.cstring) RETURNS cq.agg_state
AS 'MODULE_PATHNAME', 'cq_agg_state_in'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION cq.agg_state_out(cq.agg_state) RETURNS pg_catalog.cstring
AS 'MODULE_PATHNAME', 'cq_agg_state_out'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE TYPE cq.agg_state (
    INPUT = cq.agg_state_in,
    OUTPUT = cq.agg_state_out,
    INTERNALLENGTH = VARIABLE,
    ALIGNMENT = int4,
    STORAGE = extended
);
COMMENT ON TYPE cq.agg_state IS 'pg_cq internal: partial state of a generic aggregate (its transition value); made only by cq.agg_partial and cq.agg_combine';

CREATE FUNCTION cq.agg_partial_trans(pg_catalog.internal, pg_catalog.oid, pg_catalog.bool, VARIADIC "any")
RETURNS pg_catalog.internal
AS 'MODULE_PATHNAME', 'cq_agg_partial_trans'
LANGUAGE C VOLATILE;
CREATE FUNCTION cq.agg_partial_final(pg_catalog.internal) RETURNS cq.agg_state
AS 'MODULE_PATHNAME', 'cq_agg_partial_final'
LANGUAGE C VOLATILE;
CREATE AGGREGATE cq.agg_partial(pg_catalog.oid, pg_catalog.bool, VARIADIC "any") (
    SFUNC = cq.agg_partial_trans,
    STYPE = pg_catalog.internal,
    FINALFUNC = cq.agg_partial_final
);
COMMENT ON AGGREGATE cq.agg_partial(pg_catalog.oid, pg_catalog.bool, VARIADIC "any") IS 'pg_cq internal: partial state of aggregate $1 over the rows where $2 is true';

CREATE FUNCTION cq.agg_combine(cq.agg_state, cq.agg_state) RETURNS cq.agg_state
AS 'MODULE_PATHNAME', 'cq_agg_combine'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION cq.agg_combine(cq.agg_state, cq.agg_state) IS 'pg_cq internal: two partial states of one aggregate merged by its combine function';

CREATE FUNCTION cq.agg_final(cq.agg_state, anyelement, pg_catalog.oid, VARIADIC "any") RETURNS anyelement
AS 'MODULE_PATHNAME', 'cq_agg_final'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION cq.agg_final(cq.agg_state, anyelement, pg_catalog.oid, VARIADIC "any") IS 'pg_cq internal: final value of a partial state of aggregate $3 (result type of $2, input types of the rest)';

-- issue 11 part: session windows.  cq.session_window(ts, gap) gives a row
-- its own session [ts, ts + gap) (no row for a NULL or infinite ts, or
-- when ts + gap leaves the timestamp range); a continuous query that groups
-- by it merges the sessions of a key that overlap or touch, as Spark's
-- session_window does.  Run as a plain SELECT it groups each row alone.
-- cq.float8_merge and cq.agg_merge merge any number of partial states (of
-- float8 variance and of generic aggregates) into one, in their ORDER BY
-- order, when a row bridges sessions.
CREATE FUNCTION cq.session_window(ts timestamptz, gap interval,
                                  OUT session_start timestamptz, OUT session_end timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'cq_session_window'
LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 1;
COMMENT ON FUNCTION cq.session_window(timestamptz, interval)
  IS 'the session [ts, ts + gap) of one row; a continuous query grouping by it merges overlapping sessions of a key';
CREATE FUNCTION cq.session_window(ts timestamp, gap interval,
                                  OUT session_start timestamp, OUT session_end timestamp)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'cq_session_window'
LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 1;
COMMENT ON FUNCTION cq.session_window(timestamp, interval)
  IS 'the session [ts, ts + gap) of one row; a continuous query grouping by it merges overlapping sessions of a key';
GRANT EXECUTE ON FUNCTION cq.session_window(timestamptz, interval),
                          cq.session_window(timestamp, interval) TO PUBLIC;

CREATE AGGREGATE cq.float8_merge(pg_catalog.float8[]) (
    SFUNC = pg_catalog.float8_combine,
    STYPE = pg_catalog.float8[]
);
COMMENT ON AGGREGATE cq.float8_merge(pg_catalog.float8[]) IS 'pg_cq internal: float8 variance states merged by float8_combine, in input order';
CREATE AGGREGATE cq.agg_merge(cq.agg_state) (
    SFUNC = cq.agg_combine,
    STYPE = cq.agg_state
);
COMMENT ON AGGREGATE cq.agg_merge(cq.agg_state) IS 'pg_cq internal: partial states of one generic aggregate merged by cq.agg_combine, in input order';

-- issue 11 part: stream-stream joins.  A query joining two streams records
-- the second stream, its event-time column and its watermark delay next to
-- the first's (source, event_time, watermark_delay); cq.offsets keeps the
-- watermark of each stream after a batch (the query's watermark is their
-- minimum, Spark's default policy), cq.progress the buffered rows and the
-- rows dropped as late of each stream, in the order of the source option.
-- NULL for every other query.
ALTER TABLE cq.queries ADD COLUMN join_source regclass,
    ADD COLUMN join_event_time text,
    ADD COLUMN join_watermark_delay interval;
COMMENT ON COLUMN cq.queries.join_source IS 'the second stream of a join of two streams (source is the first), or NULL';
COMMENT ON COLUMN cq.queries.join_event_time IS 'event-time column of join_source';
COMMENT ON COLUMN cq.queries.join_watermark_delay IS 'watermark delay of join_source';
ALTER TABLE cq.offsets ADD COLUMN source_watermarks timestamptz[];
COMMENT ON COLUMN cq.offsets.source_watermarks IS 'join of two streams: the watermark of each stream after the batch (NULL = none yet); watermark is their minimum';
ALTER TABLE cq.progress ADD COLUMN num_state_rows_per_source bigint[],
    ADD COLUMN num_rows_dropped_per_source bigint[];
COMMENT ON COLUMN cq.progress.num_state_rows_per_source IS 'join of two streams: rows buffered for each stream after the batch';
COMMENT ON COLUMN cq.progress.num_rows_dropped_per_source IS 'join of two streams: rows of each stream dropped as late in the batch';

-- issue 15 part: images of the shared-memory state store
-- One row per query with state_storage = 'memory' whose state table holds an
-- image of its store: the batch (of run run_id) the image reflects and that
-- batch's end offset.  Unlogged, as the state tables are: a crash-restart
-- empties both at once, so a row never describes an emptied table.
CREATE UNLOGGED TABLE cq.state_images (
    query_id   integer PRIMARY KEY,
    run_id     uuid NOT NULL,
    batch_id   bigint NOT NULL,
    end_offset pg_snapshot NOT NULL,
    written_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
COMMENT ON TABLE cq.state_images IS 'pg_cq internal: which batch the state table of a query with state in shared memory reflects';

-- issue 15 part: the rows of a query's shared-memory state store, as rows of
-- its state table's type (the final view of such a query reads them)
CREATE FUNCTION cq.state_rows(query_id integer, row_type anyelement) RETURNS SETOF anyelement
AS 'MODULE_PATHNAME', 'cq_state_rows'
LANGUAGE C STABLE;
COMMENT ON FUNCTION cq.state_rows(integer, anyelement) IS 'pg_cq internal: state rows of a query with state_storage ''memory'' (its final view reads them)';

-- issue 15 part: size of a query's shared-memory state store
CREATE FUNCTION cq.state_store_info(name text, OUT batch_id bigint, OUT state_rows bigint, OUT state_bytes bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'cq_state_store_info'
LANGUAGE C STRICT STABLE;
COMMENT ON FUNCTION cq.state_store_info(text) IS 'the batch, rows and bytes of the shared-memory state store of a query with state_storage ''memory'' (no row: none in memory now)';

-- issue 11 part: session windows, cost per row.  cq.session_window becomes a
-- SQL function over cq.session_end (same results, same errors), which the
-- planner inlines into the query: a batch then evaluates one scalar call
-- per row instead of a function scan (a tuplestore) per row.  Not STRICT
-- (an inlined set-returning function must not be): a NULL ts or gap gives
-- a NULL end, hence no row, as before.
CREATE FUNCTION cq.session_end(ts timestamptz, gap interval) RETURNS timestamptz
AS 'MODULE_PATHNAME', 'cq_session_end'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION cq.session_end(timestamptz, interval)
  IS 'pg_cq internal: ts + gap, the end of the own session of a row (NULL: none), for cq.session_window';
CREATE FUNCTION cq.session_end(ts timestamp, gap interval) RETURNS timestamp
AS 'MODULE_PATHNAME', 'cq_session_end'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION cq.session_end(timestamp, interval)
  IS 'pg_cq internal: ts + gap, the end of the own session of a row (NULL: none), for cq.session_window';
GRANT EXECUTE ON FUNCTION cq.session_end(timestamptz, interval), cq.session_end(timestamp, interval) TO PUBLIC;
CREATE OR REPLACE FUNCTION cq.session_window(ts timestamptz, gap interval,
                                             OUT session_start timestamptz, OUT session_end timestamptz)
RETURNS SETOF record
LANGUAGE sql IMMUTABLE PARALLEL SAFE ROWS 1
AS $$ SELECT $1, x.e FROM (SELECT cq.session_end($1, $2) AS e) x WHERE x.e IS NOT NULL $$;
CREATE OR REPLACE FUNCTION cq.session_window(ts timestamp, gap interval,
                                             OUT session_start timestamp, OUT session_end timestamp)
RETURNS SETOF record
LANGUAGE sql IMMUTABLE PARALLEL SAFE ROWS 1
AS $$ SELECT $1, x.e FROM (SELECT cq.session_end($1, $2) AS e) x WHERE x.e IS NOT NULL $$;

-- issue 15 part: the shared-memory state store is the default.  A new query
-- that does not give state_storage takes cq.default_state_storage ('memory'
-- unless set otherwise); one the store cannot hold keeps its state in an
-- unlogged table instead.  cq.queries.state_path says where a query keeps
-- its state and why, and cq.status shows it: 'memory', 'memory: requested',
-- or 'table: ' and the reason ('requested', 'not supported by the store
-- (...)', 'moved after exceeding cq.state_memory (...) at batch N', ...);
-- NULL for a stateless query.  Queries created before this update keep
-- their storage.
-- cq.create_query's state_storage defaults to NULL (the setting) instead of
-- 'unlogged'.
CREATE OR REPLACE FUNCTION cq.create_query(
    name                 text,
    query                text,
    output_mode          text DEFAULT 'append',
    "trigger"            text DEFAULT '0',
    target               text DEFAULT NULL,
    event_time           text DEFAULT NULL,
    watermark            text DEFAULT NULL,
    max_rows_per_trigger bigint DEFAULT NULL,
    starting             text DEFAULT 'earliest',
    source               text DEFAULT NULL,
    state_storage        text DEFAULT NULL,
    complete_refresh     text DEFAULT 'truncate')
RETURNS regclass
AS 'MODULE_PATHNAME', 'cq_create_query'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
ALTER TABLE cq.queries ADD COLUMN state_path text;
COMMENT ON COLUMN cq.queries.state_path IS 'where the query keeps its state and why: memory (the shared-memory store) or table, with the reason; NULL for a stateless query';
UPDATE cq.queries SET state_path = CASE WHEN state_storage OPERATOR(pg_catalog.=) 'memory'
                                        THEN 'memory: requested'
                                        ELSE 'table: created before pg_cq 0.2' END
 WHERE state_table IS NOT NULL;
-- (cq.status gains state_path as its column after schema: the view is
-- replaced once, below, with state_bytes)

-- issue 14 part: Citus hash-distributed tables as sources, in the
-- coordinator's transaction-id space (docs/scale-out.md).  The cq_xid default
-- of a distributed source: the coordinator's pg_current_xact_id(), an error
-- on any other node (writes issued on a worker, INSERT ... SELECT that Citus
-- repartitions), whose transaction ids the coordinator's snapshots cannot
-- order.  STABLE like pg_current_xact_id(), so that Citus evaluates it on
-- the coordinator and ships the value to the shards.
CREATE FUNCTION cq.coordinator_xact_id() RETURNS pg_catalog.xid8
AS 'MODULE_PATHNAME', 'cq_coordinator_xact_id'
LANGUAGE C STABLE PARALLEL UNSAFE;
COMMENT ON FUNCTION cq.coordinator_xact_id()
  IS 'pg_cq internal: the cq_xid default of a Citus distributed source, the coordinator''s transaction id (an error on other nodes)';
GRANT EXECUTE ON FUNCTION cq.coordinator_xact_id() TO PUBLIC;

-- issue 15 part: state_storage 'logged' on the shared-memory store.  An
-- aggregation the store can hold keeps its state there with either value;
-- with 'logged' its state table image is a logged table, and the row saying
-- which batch the image reflects lives here, logged too: a crash-restart
-- keeps both, so recovery loads the image and refolds only the rows committed
-- after it (cq.state_images, unlogged, is emptied with its images).
CREATE TABLE cq.logged_state_images (
    query_id   integer PRIMARY KEY REFERENCES cq.queries (id) ON DELETE CASCADE,
    run_id     uuid NOT NULL,
    batch_id   bigint NOT NULL,
    end_offset pg_snapshot NOT NULL,
    written_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
COMMENT ON TABLE cq.logged_state_images IS 'pg_cq internal: which batch the logged state table image of a query with state_storage ''logged'' in shared memory reflects';
COMMENT ON COLUMN cq.queries.state_path IS 'where the query keeps its state and why: memory (the shared-memory store; ''memory: logged image'' for state_storage ''logged'') or table, with the reason; NULL for a stateless query';
-- the image rows of a dropped query go with it
ALTER TABLE cq.state_images ADD FOREIGN KEY (query_id) REFERENCES cq.queries (id) ON DELETE CASCADE;

-- issue 15 part: state bytes in cq.progress/cq.status
-- cq.progress.state_bytes: the bytes the query's state takes after the batch
-- (Spark's stateOperators.memoryUsedBytes), beside num_state_rows_total: in
-- the shared-memory store, what its rows take there (cq.state_store_info's
-- state_bytes as the batch published it); in tables, the size of the state
-- table with its indexes and TOAST table (pg_total_relation_size less the
-- free space and visibility maps; a join of two streams: both buffers and
-- the groups of an aggregation over it).  NULL for a stateless query and
-- for rows recorded before this update.  cq.status shows the last batch's,
-- as its last column (columns are only added at the end of the view).
ALTER TABLE cq.progress ADD COLUMN state_bytes bigint;
COMMENT ON COLUMN cq.progress.state_bytes IS 'bytes the state takes after the batch: in the shared-memory store (cq.state_store_info) or its state table with indexes and TOAST; NULL for a stateless query';
CREATE OR REPLACE VIEW cq.status WITH (security_invoker = true) AS
SELECT q.name,
       CASE WHEN q.state <> 'active' OR q."trigger" = 'available_now' THEN 'Stopped'
            ELSE coalesce(s.message, 'Stopped') END AS message,
       coalesce(s.is_data_available, false) AS is_data_available,
       coalesce(s.is_trigger_active, false) AS is_trigger_active,
       s.worker_pid,
       coalesce(s.watermark, o.watermark) AS watermark,
       coalesce(s.last_batch_id, o.batch_id) AS last_batch_id,
       q.schema,
       q.state_path,
       o.state_bytes
  FROM cq.queries q
  LEFT JOIN cq.status_slots() s ON s.query_id = q.id
  LEFT JOIN LATERAL (SELECT offsets.batch_id, offsets.watermark,
                            (SELECT p.state_bytes FROM cq.progress p
                              WHERE p.schema = offsets.schema AND p.name = offsets.name
                                AND p.batch_id = offsets.batch_id) AS state_bytes
                       FROM cq.offsets
                      WHERE offsets.schema = q.schema AND offsets.name = q.name
                      ORDER BY batch_id DESC LIMIT 1) o ON true;

-- issue 14 part: per-node offsets.  On a Citus cluster each row of a
-- hash-distributed source is stamped where it is stored: the shards' row
-- trigger sets cq_xid to the storing node's transaction id and cq_node to
-- that node's identity (its system identifier, cq.node_id()), and a batch
-- reads the rows of each node against that node's own snapshots.  An offset
-- of such a query is a map "node=snapshot;node=snapshot..." (nodes in
-- ascending order); cq.offsets and cq.progress keep the coordinator's
-- snapshot, the maps are kept here: batch_id -1 is the offset batch 0
-- starts from, then the end offset of the last batches.
CREATE TABLE cq.node_offsets (
    query_id   integer NOT NULL REFERENCES cq.queries (id) ON DELETE CASCADE,
    batch_id   bigint NOT NULL,
    end_offset text NOT NULL,
    PRIMARY KEY (query_id, batch_id)
);
COMMENT ON TABLE cq.node_offsets IS 'pg_cq internal: per-node offsets of queries over Citus distributed sources (batch -1: the start)';

CREATE FUNCTION cq.node_id() RETURNS bigint
AS 'MODULE_PATHNAME', 'cq_node_id'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION cq.node_id()
  IS 'this node''s identity in per-node offsets: its system identifier (the same on its streaming replicas)';
GRANT EXECUTE ON FUNCTION cq.node_id() TO PUBLIC;

-- the visibility test of a row stamped on node `node` with transaction `xid`
-- in a per-node offset: pg_visible_in_snapshot with that node's snapshot
-- (false for a node the offset does not know).  Evaluated on the workers,
-- with the offset a constant.
CREATE FUNCTION cq.node_visible(pg_catalog.text, bigint, pg_catalog.xid8) RETURNS boolean
AS 'MODULE_PATHNAME', 'cq_node_visible'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cq.node_visible(pg_catalog.text, bigint, pg_catalog.xid8)
  IS 'pg_cq internal: is transaction xid of node node visible in the per-node offset?';
GRANT EXECUTE ON FUNCTION cq.node_visible(pg_catalog.text, bigint, pg_catalog.xid8) TO PUBLIC;

-- issue 12 part: the per-row test of a batch's new rows in one call
-- (pg_visible_in_snapshot(xid, cur) AND NOT pg_visible_in_snapshot(xid, prev))
CREATE FUNCTION cq.xid_new(pg_catalog.xid8, pg_catalog.pg_snapshot, pg_catalog.pg_snapshot) RETURNS boolean
AS 'MODULE_PATHNAME', 'cq_xid_new'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cq.xid_new(pg_catalog.xid8, pg_catalog.pg_snapshot, pg_catalog.pg_snapshot)
  IS 'pg_cq internal: is transaction xid visible in snapshot cur and not in snapshot prev?';
GRANT EXECUTE ON FUNCTION cq.xid_new(pg_catalog.xid8, pg_catalog.pg_snapshot, pg_catalog.pg_snapshot) TO PUBLIC;

-- issue 14 part: reference tables and Citus local tables as sources.  A batch
-- reads the coordinator's own copy of such a source (its shard placed in
-- group 0) as a plain local table; the copy a query began to read is kept
-- here, so that a batch fails clearly when that copy was dropped or replaced
-- (docs/scale-out.md).  NULL for every other source.
ALTER TABLE cq.queries ADD COLUMN read_relation oid;
COMMENT ON COLUMN cq.queries.read_relation IS 'pg_cq internal: the coordinator''s copy (shard) of a Citus reference or local source that batches read, or NULL';

-- issue 12 goal 3: sum, min and max of numeric for the partial states of a
-- batch (the generated statements' d), with exactly the results of
-- PostgreSQL's own: the inputs read in place (no copy of each 1-byte-header
-- numeric), the sum in an int128 while it fits (src/numagg.c).  Internal;
-- chosen by the generated SQL when present.
CREATE FUNCTION cq.numeric_sum_accum(internal, pg_catalog.numeric) RETURNS internal
AS 'MODULE_PATHNAME', 'cq_numeric_sum_accum'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION cq.numeric_sum_final(internal) RETURNS pg_catalog.numeric
AS 'MODULE_PATHNAME', 'cq_numeric_sum_final'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE AGGREGATE cq.numeric_sum(pg_catalog.numeric) (
    sfunc = cq.numeric_sum_accum,
    stype = internal,
    sspace = 48,
    finalfunc = cq.numeric_sum_final,
    parallel = safe
);
COMMENT ON AGGREGATE cq.numeric_sum(pg_catalog.numeric)
  IS 'pg_cq internal: sum(numeric), the partial state of a batch';
CREATE FUNCTION cq.numeric_larger(pg_catalog.numeric, pg_catalog.numeric) RETURNS pg_catalog.numeric
AS 'MODULE_PATHNAME', 'cq_numeric_larger'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION cq.numeric_smaller(pg_catalog.numeric, pg_catalog.numeric) RETURNS pg_catalog.numeric
AS 'MODULE_PATHNAME', 'cq_numeric_smaller'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE AGGREGATE cq.numeric_max(pg_catalog.numeric) (
    sfunc = cq.numeric_larger,
    stype = pg_catalog.numeric,
    combinefunc = cq.numeric_larger,
    parallel = safe
);
COMMENT ON AGGREGATE cq.numeric_max(pg_catalog.numeric)
  IS 'pg_cq internal: max(numeric), the partial state of a batch';
CREATE AGGREGATE cq.numeric_min(pg_catalog.numeric) (
    sfunc = cq.numeric_smaller,
    stype = pg_catalog.numeric,
    combinefunc = cq.numeric_smaller,
    parallel = safe
);
COMMENT ON AGGREGATE cq.numeric_min(pg_catalog.numeric)
  IS 'pg_cq internal: min(numeric), the partial state of a batch';
COMMENT ON FUNCTION cq.numeric_sum_accum(internal, pg_catalog.numeric) IS 'pg_cq internal: transition function of cq.numeric_sum';
COMMENT ON FUNCTION cq.numeric_sum_final(internal) IS 'pg_cq internal: final function of cq.numeric_sum';
COMMENT ON FUNCTION cq.numeric_larger(pg_catalog.numeric, pg_catalog.numeric) IS 'pg_cq internal: numeric_larger without copies';
COMMENT ON FUNCTION cq.numeric_smaller(pg_catalog.numeric, pg_catalog.numeric) IS 'pg_cq internal: numeric_smaller without copies';

-- Session 41: the settings that change how values are written as text or
-- read from it are pinned per query, as TimeZone is.  cq.create_query
-- records its creator's DateStyle, IntervalStyle, extra_float_digits and
-- bytea_output as 'name=value' elements; every batch (background worker,
-- CALL cq.run in the caller or in a pool worker) and a complete/update
-- rewrite after cq.alter_query runs with them.  More settings may be added
-- to the list without a catalog change.  NULL for queries created before
-- this update: their batches keep the settings of whoever runs them.
ALTER TABLE cq.queries ADD COLUMN settings text[];
COMMENT ON COLUMN cq.queries.settings IS 'settings its batches run with beside TimeZone, its creator''s (or, for a text replaced before its first batch, its alterer''s): ''name=value'' elements (DateStyle, IntervalStyle, extra_float_digits, bytea_output, lc_monetary, lc_numeric, lc_time, xmloption, xmlbinary, array_nulls, default_text_search_config, timezone_abbreviations, quote_all_identifiers); NULL for a query created before pg_cq 0.2 (the settings of the session running a batch)';

-- Session 42: the query view's dependencies on the tracking column (cq_xid)
-- of its sources, which keep it from being dropped, are the view's rule's,
-- as its dependencies on the columns the query reads and on the event-time
-- column are: a dependency of the view itself made ALTER TABLE ... ALTER
-- COLUMN cq_xid TYPE fail with an internal error (core expects none)
-- instead of "cannot alter type of a column used by a view or rule".  Move
-- those of existing queries to the rule.
UPDATE pg_catalog.pg_depend d
   SET classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass, objid = r.oid
  FROM pg_catalog.pg_class v, pg_catalog.pg_rewrite r
 WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
   AND d.objid OPERATOR(pg_catalog.=) v.oid
   AND d.objsubid OPERATOR(pg_catalog.=) 0
   AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
   AND d.refobjsubid OPERATOR(pg_catalog.>) 0
   AND d.deptype OPERATOR(pg_catalog.=) 'n'
   AND v.relnamespace OPERATOR(pg_catalog.=) 'cq_state'::pg_catalog.regnamespace
   AND v.relkind OPERATOR(pg_catalog.=) 'v'
   AND v.relname OPERATOR(pg_catalog.~) '^q_[0-9]+$'
   AND r.ev_class OPERATOR(pg_catalog.=) v.oid
   AND r.rulename OPERATOR(pg_catalog.=) '_RETURN';

-- issue 12 goal 1, docs/design-stamp.md step 1: the type cq.xid48, an
-- xid8's value (transaction id with epoch) in 6 bytes, exact below 2^48,
-- for a narrower cq_xid column (src/xid48.c).  Nothing tracks with it yet.
-- Bytes little-endian, aligned to 1 (no padding before it), stored plain.
-- Text and binary I/O are xid8's; xid8 -> cq.xid48 (assignment) fails with
-- "does not fit" from 2^48 on, cq.xid48 -> xid8 (implicit) never fails.
CREATE TYPE cq.xid48;
CREATE FUNCTION cq.xid48_in(pg_catalog.cstring) RETURNS cq.xid48
AS 'MODULE_PATHNAME', 'cq_xid48_in'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION cq.xid48_out(cq.xid48) RETURNS pg_catalog.cstring
AS 'MODULE_PATHNAME', 'cq_xid48_out'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION cq.xid48_recv(pg_catalog.internal) RETURNS cq.xid48
AS 'MODULE_PATHNAME', 'cq_xid48_recv'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION cq.xid48_send(cq.xid48) RETURNS pg_catalog.bytea
AS 'MODULE_PATHNAME', 'cq_xid48_send'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE TYPE cq.xid48 (
    INPUT = cq.xid48_in,
    OUTPUT = cq.xid48_out,
    RECEIVE = cq.xid48_recv,
    SEND = cq.xid48_send,
    INTERNALLENGTH = 6,
    ALIGNMENT = char,
    STORAGE = plain
);
COMMENT ON TYPE cq.xid48 IS 'transaction id with epoch (an xid8''s value) in 6 bytes, for values below 2^48';
COMMENT ON FUNCTION cq.xid48_in(pg_catalog.cstring) IS 'pg_cq internal: text input of cq.xid48 (decimal, as xid8)';
COMMENT ON FUNCTION cq.xid48_out(cq.xid48) IS 'pg_cq internal: text output of cq.xid48 (decimal, as xid8)';
COMMENT ON FUNCTION cq.xid48_recv(pg_catalog.internal) IS 'pg_cq internal: binary input of cq.xid48 (an 8-byte integer, as xid8)';
COMMENT ON FUNCTION cq.xid48_send(cq.xid48) IS 'pg_cq internal: binary output of cq.xid48 (an 8-byte integer, as xid8)';

CREATE FUNCTION cq.xid48(pg_catalog.xid8) RETURNS cq.xid48
AS 'MODULE_PATHNAME', 'cq_xid48'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cq.xid48(pg_catalog.xid8) IS 'the transaction id as cq.xid48 (an error from 2^48 on)';
CREATE FUNCTION cq.xid48_to_xid8(cq.xid48) RETURNS pg_catalog.xid8
AS 'MODULE_PATHNAME', 'cq_xid48_to_xid8'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cq.xid48_to_xid8(cq.xid48) IS 'the transaction id as xid8';
CREATE CAST (pg_catalog.xid8 AS cq.xid48) WITH FUNCTION cq.xid48(pg_catalog.xid8) AS ASSIGNMENT;
CREATE CAST (cq.xid48 AS pg_catalog.xid8) WITH FUNCTION cq.xid48_to_xid8(cq.xid48) AS IMPLICIT;

-- the column default of a cq.xid48 stamp, pg_current_xact_id()'s value.
-- Stable and parallel unsafe as pg_current_xact_id() is: a volatile default
-- makes COPY insert row by row (no multi-insert: +920 instructions and 2.2x
-- the WAL a row, session 42), and assigning the transaction its id is refused
-- in parallel mode, which a parallel restricted function may run in.
CREATE FUNCTION cq.current_xid48() RETURNS cq.xid48
AS 'MODULE_PATHNAME', 'cq_current_xid48'
LANGUAGE C STABLE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION cq.current_xid48() IS 'the current transaction''s id (pg_current_xact_id()) as cq.xid48, assigning one if it has none';

-- comparisons: (cq.xid48, cq.xid48), (cq.xid48, xid8), (xid8, cq.xid48):
-- the functions cq.xid48_{eq,ne,lt,le,gt,ge,cmp}, cq.xid48_xid8_* and
-- cq.xid8_xid48_* (C: cq_xid48_eq, ...) and the operators cq.= cq.<> cq.<
-- cq.<= cq.> cq.>= of each pair
DO $$
DECLARE
  pair text[];
  op text[];
BEGIN
  FOREACH pair SLICE 1 IN ARRAY ARRAY[
      ['xid48', 'cq.xid48', 'cq.xid48', 'cq.xid48, cq.xid48'],
      ['xid48_xid8', 'cq.xid48', 'pg_catalog.xid8', 'cq.xid48, pg_catalog.xid8'],
      ['xid8_xid48', 'pg_catalog.xid8', 'cq.xid48', 'pg_catalog.xid8, cq.xid48']] LOOP
    EXECUTE format('CREATE FUNCTION cq.%s_cmp(%s) RETURNS integer AS %L, %L LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE',
                   pair[1], pair[4], 'MODULE_PATHNAME', 'cq_' || pair[1] || '_cmp');
    EXECUTE format('COMMENT ON FUNCTION cq.%s_cmp(%s) IS %L', pair[1], pair[4],
                   format('pg_cq internal: btree comparison of %s', pair[4]));
    -- name, function suffix, commutator, negator, selectivity, join selectivity
    FOREACH op SLICE 1 IN ARRAY ARRAY[
        ['=', 'eq', '=', '<>', 'eqsel', 'eqjoinsel'],
        ['<>', 'ne', '<>', '=', 'neqsel', 'neqjoinsel'],
        ['<', 'lt', '>', '>=', 'scalarltsel', 'scalarltjoinsel'],
        ['<=', 'le', '>=', '>', 'scalarlesel', 'scalarlejoinsel'],
        ['>', 'gt', '<', '<=', 'scalargtsel', 'scalargtjoinsel'],
        ['>=', 'ge', '<=', '<', 'scalargesel', 'scalargejoinsel']] LOOP
      EXECUTE format('CREATE FUNCTION cq.%s_%s(%s) RETURNS boolean AS %L, %L LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE',
                     pair[1], op[2], pair[4], 'MODULE_PATHNAME', 'cq_' || pair[1] || '_' || op[2]);
      EXECUTE format('COMMENT ON FUNCTION cq.%s_%s(%s) IS %L', pair[1], op[2], pair[4],
                     format('pg_cq internal: operator %s of %s', op[1], pair[4]));
      EXECUTE format('CREATE OPERATOR cq.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = cq.%s_%s, '
                     'COMMUTATOR = OPERATOR(cq.%s), NEGATOR = OPERATOR(cq.%s), '
                     'RESTRICT = pg_catalog.%s, JOIN = pg_catalog.%s%s)',
                     op[1], pair[2], pair[3], pair[1], op[2], op[3], op[4], op[5], op[6],
                     CASE op[1] WHEN '=' THEN ', HASHES, MERGES' ELSE '' END);
      EXECUTE format('COMMENT ON OPERATOR cq.%s (%s) IS %L', op[1], pair[4],
                     CASE op[2] WHEN 'eq' THEN 'equal' WHEN 'ne' THEN 'not equal'
                       WHEN 'lt' THEN 'less than' WHEN 'le' THEN 'less than or equal'
                       WHEN 'gt' THEN 'greater than' ELSE 'greater than or equal' END);
    END LOOP;
  END LOOP;
END $$;

CREATE FUNCTION cq.xid48_sortsupport(pg_catalog.internal) RETURNS void
AS 'MODULE_PATHNAME', 'cq_xid48_sortsupport'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cq.xid48_sortsupport(pg_catalog.internal) IS 'pg_cq internal: btree sort support of cq.xid48';
CREATE FUNCTION cq.xid48_hash(cq.xid48) RETURNS integer
AS 'MODULE_PATHNAME', 'cq_xid48_hash'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cq.xid48_hash(cq.xid48) IS 'pg_cq internal: hash of cq.xid48, equal to the hash of its xid8 value';
CREATE FUNCTION cq.xid48_hash_extended(cq.xid48, bigint) RETURNS bigint
AS 'MODULE_PATHNAME', 'cq_xid48_hash_extended'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cq.xid48_hash_extended(cq.xid48, bigint) IS 'pg_cq internal: seeded hash of cq.xid48, equal to that of its xid8 value';

-- btree: one family for both types, xid8's own operators included, so that
-- the planner can prove and combine bounds across them
CREATE OPERATOR CLASS cq.xid48_ops DEFAULT FOR TYPE cq.xid48 USING btree AS
    OPERATOR 1 cq.<, OPERATOR 2 cq.<=, OPERATOR 3 cq.=, OPERATOR 4 cq.>=, OPERATOR 5 cq.>,
    FUNCTION 1 cq.xid48_cmp(cq.xid48, cq.xid48),
    FUNCTION 2 cq.xid48_sortsupport(pg_catalog.internal),
    FUNCTION 4 pg_catalog.btequalimage(pg_catalog.oid);
ALTER OPERATOR FAMILY cq.xid48_ops USING btree ADD
    OPERATOR 1 cq.< (cq.xid48, pg_catalog.xid8), OPERATOR 2 cq.<= (cq.xid48, pg_catalog.xid8),
    OPERATOR 3 cq.= (cq.xid48, pg_catalog.xid8), OPERATOR 4 cq.>= (cq.xid48, pg_catalog.xid8),
    OPERATOR 5 cq.> (cq.xid48, pg_catalog.xid8),
    FUNCTION 1 (cq.xid48, pg_catalog.xid8) cq.xid48_xid8_cmp(cq.xid48, pg_catalog.xid8),
    OPERATOR 1 cq.< (pg_catalog.xid8, cq.xid48), OPERATOR 2 cq.<= (pg_catalog.xid8, cq.xid48),
    OPERATOR 3 cq.= (pg_catalog.xid8, cq.xid48), OPERATOR 4 cq.>= (pg_catalog.xid8, cq.xid48),
    OPERATOR 5 cq.> (pg_catalog.xid8, cq.xid48),
    FUNCTION 1 (pg_catalog.xid8, cq.xid48) cq.xid8_xid48_cmp(pg_catalog.xid8, cq.xid48),
    OPERATOR 1 pg_catalog.< (pg_catalog.xid8, pg_catalog.xid8),
    OPERATOR 2 pg_catalog.<= (pg_catalog.xid8, pg_catalog.xid8),
    OPERATOR 3 pg_catalog.= (pg_catalog.xid8, pg_catalog.xid8),
    OPERATOR 4 pg_catalog.>= (pg_catalog.xid8, pg_catalog.xid8),
    OPERATOR 5 pg_catalog.> (pg_catalog.xid8, pg_catalog.xid8),
    FUNCTION 1 (pg_catalog.xid8, pg_catalog.xid8) pg_catalog.xid8cmp(pg_catalog.xid8, pg_catalog.xid8),
    FUNCTION 4 (pg_catalog.xid8, pg_catalog.xid8) pg_catalog.btequalimage(pg_catalog.oid);
COMMENT ON OPERATOR FAMILY cq.xid48_ops USING btree IS 'cq.xid48 and xid8 ordered by value';

-- hash: cq.xid48 hashes as its xid8 value, so the family holds the
-- cross-type equalities and xid8's (hash joins of the two types)
CREATE OPERATOR CLASS cq.xid48_ops DEFAULT FOR TYPE cq.xid48 USING hash AS
    OPERATOR 1 cq.=,
    FUNCTION 1 cq.xid48_hash(cq.xid48),
    FUNCTION 2 cq.xid48_hash_extended(cq.xid48, bigint);
ALTER OPERATOR FAMILY cq.xid48_ops USING hash ADD
    OPERATOR 1 cq.= (cq.xid48, pg_catalog.xid8),
    OPERATOR 1 cq.= (pg_catalog.xid8, cq.xid48),
    OPERATOR 1 pg_catalog.= (pg_catalog.xid8, pg_catalog.xid8),
    FUNCTION 1 (pg_catalog.xid8, pg_catalog.xid8) pg_catalog.hashint8(bigint),
    FUNCTION 2 (pg_catalog.xid8, pg_catalog.xid8) pg_catalog.hashint8extended(bigint, bigint);
COMMENT ON OPERATOR FAMILY cq.xid48_ops USING hash IS 'cq.xid48 and xid8 hashed by value';

-- BRIN minmax: brin_minmax_consistent looks operators up by the scan key's
-- type, so the family holds (cq.xid48, xid8) too: cq_xid >= $1::xid8 is
-- indexable
CREATE OPERATOR CLASS cq.xid48_minmax_ops DEFAULT FOR TYPE cq.xid48 USING brin AS
    OPERATOR 1 cq.<, OPERATOR 2 cq.<=, OPERATOR 3 cq.=, OPERATOR 4 cq.>=, OPERATOR 5 cq.>,
    FUNCTION 1 pg_catalog.brin_minmax_opcinfo(pg_catalog.internal),
    FUNCTION 2 pg_catalog.brin_minmax_add_value(pg_catalog.internal, pg_catalog.internal,
                                                pg_catalog.internal, pg_catalog.internal),
    FUNCTION 3 pg_catalog.brin_minmax_consistent(pg_catalog.internal, pg_catalog.internal,
                                                 pg_catalog.internal),
    FUNCTION 4 pg_catalog.brin_minmax_union(pg_catalog.internal, pg_catalog.internal,
                                            pg_catalog.internal);
ALTER OPERATOR FAMILY cq.xid48_minmax_ops USING brin ADD
    OPERATOR 1 cq.< (cq.xid48, pg_catalog.xid8), OPERATOR 2 cq.<= (cq.xid48, pg_catalog.xid8),
    OPERATOR 3 cq.= (cq.xid48, pg_catalog.xid8), OPERATOR 4 cq.>= (cq.xid48, pg_catalog.xid8),
    OPERATOR 5 cq.> (cq.xid48, pg_catalog.xid8);
COMMENT ON OPERATOR FAMILY cq.xid48_minmax_ops USING brin IS 'cq.xid48 by value, bounds of type cq.xid48 or xid8';

-- Session 42: the settings array (13 'name=value' elements) took a typical
-- query's row past the 2 kB at which PostgreSQL compresses or moves values
-- out of line: its query tree was then stored in TOAST, and every read of
-- the row (two a batch) fetched and flattened it (+40k instructions a
-- batch, bench/batch_cg.sh).  Rows up to a page stay in line.
ALTER TABLE cq.queries SET (toast_tuple_target = 8160);

-- Session 42: cq.alter_query takes the source option, as SPEC §1 lists it
-- among the options cq.alter_query changes; the option the state depends
-- on is refused (0A000) unless it names the stream the query reads, as
-- ALTER TABLE target SET (cq.source = ...) is.  Without it,
-- cq.alter_query(name, source => ...) failed with "function does not
-- exist".  Added last, so that positional calls keep their meaning.
DROP FUNCTION cq.alter_query(text, text, text, text, text, bigint, text, text, text, text);
CREATE FUNCTION cq.alter_query(
    name                 text,
    output_mode          text DEFAULT NULL,
    "trigger"            text DEFAULT NULL,
    event_time           text DEFAULT NULL,
    watermark            text DEFAULT NULL,
    max_rows_per_trigger bigint DEFAULT NULL,
    starting             text DEFAULT NULL,
    state_storage        text DEFAULT NULL,
    complete_refresh     text DEFAULT NULL,
    query                text DEFAULT NULL,
    source               text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'cq_alter_query'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
COMMENT ON FUNCTION cq.alter_query IS 'change options or the query text of a continuous query (NULL = keep)';

-- issue 12 goal 1, docs/design-stamp.md step 2: sources tracked with a
-- cq.xid48 cq_xid (cq.stamp_type = 'xid48'): the per-row test of a batch's
-- new rows reads the column's 6 bytes without a cast to xid8 a row.  A name of its
-- own: an overload of cq.xid_new would make cq.xid_new('15', ...) ambiguous.
CREATE FUNCTION cq.xid48_new(cq.xid48, pg_catalog.pg_snapshot, pg_catalog.pg_snapshot) RETURNS boolean
AS 'MODULE_PATHNAME', 'cq_xid48_new'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cq.xid48_new(cq.xid48, pg_catalog.pg_snapshot, pg_catalog.pg_snapshot)
  IS 'pg_cq internal: is transaction xid (cq.xid48) visible in snapshot cur and not in snapshot prev?';
GRANT EXECUTE ON FUNCTION cq.xid48_new(cq.xid48, pg_catalog.pg_snapshot, pg_catalog.pg_snapshot) TO PUBLIC;
