-- pg_cq 0.1: continuous queries over growing tables.
-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pg_cq" to load this file. \quit

-- Schema cq holds the public API and catalog; cq_state holds one state table per query.
CREATE SCHEMA cq_state;
COMMENT ON SCHEMA cq_state IS 'pg_cq internal: partial-aggregate state of continuous queries';
GRANT USAGE ON SCHEMA cq TO PUBLIC;
GRANT USAGE ON SCHEMA cq_state TO PUBLIC;

----------------------------------------------------------------------------
-- Catalog
----------------------------------------------------------------------------
CREATE SEQUENCE cq.queries_id_seq AS integer;

CREATE TABLE cq.queries (
    name                 text PRIMARY KEY,
    query_id             uuid NOT NULL DEFAULT pg_catalog.gen_random_uuid(),
    owner                regrole NOT NULL,
    source               regclass NOT NULL,
    target               regclass NOT NULL,
    query                text NOT NULL,
    output_mode          text NOT NULL,
    "trigger"            text NOT NULL,
    event_time           text,
    watermark_delay      interval,
    max_rows_per_trigger bigint,
    starting             text NOT NULL,
    state_storage        text NOT NULL,
    complete_refresh     text NOT NULL,
    state                text NOT NULL DEFAULT 'active'
                         CHECK (state IN ('active', 'paused', 'failed')),
    last_error           text,
    created_at           timestamptz NOT NULL DEFAULT pg_catalog.now(),
    -- internal columns
    id                   integer NOT NULL DEFAULT pg_catalog.nextval('cq.queries_id_seq') UNIQUE,
    run_id               uuid NOT NULL DEFAULT pg_catalog.gen_random_uuid(),
    query_tree           text NOT NULL,        -- nodeToString() of the analyzed query
    state_table          regclass,             -- NULL for stateless queries
    start_offset         pg_snapshot NOT NULL, -- offset batch 0 starts from
    state_rebuilt_at     timestamptz,          -- last rebuild of lost unlogged state
    state_rebuild_ms     double precision,     -- and how long it took
    cluster_id           text NOT NULL,        -- system identifier of the cluster its offsets belong to
    timezone             text NOT NULL DEFAULT 'UTC'  -- TimeZone its batches run in (the creator's)
);
ALTER SEQUENCE cq.queries_id_seq OWNED BY cq.queries.id;
-- query definitions are dumped with the database (offsets are not: they are
-- transaction ids of this cluster; a restored query starts over, see README)
SELECT pg_catalog.pg_extension_config_dump('cq.queries', '');
SELECT pg_catalog.pg_extension_config_dump('cq.queries_id_seq', '');
COMMENT ON TABLE cq.queries IS 'continuous queries: definition, options, owner and state';

CREATE TABLE cq.offsets (
    name         text NOT NULL REFERENCES cq.queries (name) ON DELETE CASCADE ON UPDATE CASCADE,
    batch_id     bigint NOT NULL,
    start_offset pg_snapshot NOT NULL,
    end_offset   pg_snapshot NOT NULL,
    batch_watermark timestamptz,           -- watermark in effect for the batch (NULL = -infinity)
    watermark    timestamptz,              -- watermark after the batch, in effect for the next
    committed_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    state_rows   bigint NOT NULL DEFAULT 0,   -- rows in the state table after the batch
    PRIMARY KEY (name, batch_id)
);
COMMENT ON TABLE cq.offsets IS 'one row per committed batch: the source snapshot range it covered';

CREATE TABLE cq.progress (
    name                          text NOT NULL REFERENCES cq.queries (name) ON DELETE CASCADE ON UPDATE CASCADE,
    batch_id                      bigint NOT NULL,
    run_id                        uuid NOT NULL,
    started_at                    timestamptz NOT NULL,
    duration_ms                   double precision NOT NULL,
    durations                     jsonb NOT NULL,
    num_input_rows                bigint NOT NULL,
    input_rows_per_second         double precision,
    processed_rows_per_second     double precision,
    event_time_min                timestamptz,
    event_time_max                timestamptz,
    event_time_avg                timestamptz,
    watermark                     timestamptz,
    num_state_rows_total          bigint NOT NULL,
    num_state_rows_updated        bigint NOT NULL,
    num_state_rows_removed        bigint NOT NULL,
    num_rows_dropped_by_watermark bigint NOT NULL,
    num_output_rows               bigint NOT NULL,
    start_offset                  pg_snapshot NOT NULL,
    end_offset                    pg_snapshot NOT NULL,
    PRIMARY KEY (name, batch_id)
);
COMMENT ON TABLE cq.progress IS 'per-batch metrics (Spark StreamingQueryProgress), last 100 batches per query';

-- One row per query with unlogged state.  Any crash-restart empties every
-- unlogged table at once, this one included: a missing row means the
-- query's state is gone and must be rebuilt before its next batch.
CREATE UNLOGGED TABLE cq.state_sentinel (
    query_id integer PRIMARY KEY
);
COMMENT ON TABLE cq.state_sentinel IS 'pg_cq internal: detects unlogged state lost in a crash';

GRANT SELECT ON cq.queries, cq.offsets, cq.progress TO PUBLIC;

----------------------------------------------------------------------------
-- Source tracking: a BRIN operator class for xid8 (core has none in 15)
----------------------------------------------------------------------------
CREATE OPERATOR CLASS cq.xid8_minmax_ops DEFAULT FOR TYPE xid8 USING brin AS
    OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >,
    FUNCTION 1 pg_catalog.brin_minmax_opcinfo(internal),
    FUNCTION 2 pg_catalog.brin_minmax_add_value(internal, internal, internal, internal),
    FUNCTION 3 pg_catalog.brin_minmax_consistent(internal, internal, internal),
    FUNCTION 4 pg_catalog.brin_minmax_union(internal, internal, internal);

----------------------------------------------------------------------------
-- Partial-state helper for the float variance family: PostgreSQL's own
-- float8 transition state {N, Sx, Sxx}, merged with float8_combine.
----------------------------------------------------------------------------
CREATE AGGREGATE cq.float8_state(float8) (
    sfunc = pg_catalog.float8_accum,
    stype = float8[],
    combinefunc = pg_catalog.float8_combine,
    initcond = '{0,0,0}',
    parallel = safe
);
COMMENT ON AGGREGATE cq.float8_state(float8) IS 'pg_cq internal: float8 variance transition state';

----------------------------------------------------------------------------
-- Event time
----------------------------------------------------------------------------
CREATE FUNCTION cq."window"(ts timestamptz, size interval, slide interval DEFAULT NULL,
                            origin timestamptz DEFAULT '1970-01-01 00:00:00+00',
                            OUT window_start timestamptz, OUT window_end timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'cq_window'
LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 2;
COMMENT ON FUNCTION cq."window"(timestamptz, interval, interval, timestamptz)
  IS 'time windows [window_start, window_end) containing ts; sliding when slide < size';

CREATE FUNCTION cq."window"(ts timestamp, size interval, slide interval DEFAULT NULL,
                            origin timestamp DEFAULT '1970-01-01 00:00:00',
                            OUT window_start timestamp, OUT window_end timestamp)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'cq_window'
LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 2;
COMMENT ON FUNCTION cq."window"(timestamp, interval, interval, timestamp)
  IS 'time windows [window_start, window_end) containing ts; sliding when slide < size';
GRANT EXECUTE ON FUNCTION cq."window"(timestamptz, interval, interval, timestamptz),
                          cq."window"(timestamp, interval, interval, timestamp) TO PUBLIC;

----------------------------------------------------------------------------
-- API
----------------------------------------------------------------------------
CREATE FUNCTION cq.create_query(
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
    state_storage        text DEFAULT 'unlogged',
    complete_refresh     text DEFAULT 'truncate')
RETURNS regclass
AS 'MODULE_PATHNAME', 'cq_create_query'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
COMMENT ON FUNCTION cq.create_query IS 'define a continuous query; returns its target table';

CREATE FUNCTION cq.drop_query(name text, drop_target boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'cq_drop_query'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
COMMENT ON FUNCTION cq.drop_query IS 'drop a continuous query (the target table is kept unless drop_target)';

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
    query                text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'cq_alter_query'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
COMMENT ON FUNCTION cq.alter_query IS 'change options or the query text of a continuous query (NULL = keep)';

CREATE PROCEDURE cq.run(name text, once boolean DEFAULT false)
AS 'MODULE_PATHNAME', 'cq_run'
LANGUAGE C;
COMMENT ON PROCEDURE cq.run IS 'available-now: process everything committed before the call, one transaction per batch';

----------------------------------------------------------------------------
-- Background execution (issue 4): commit wake-ups, live status, control
----------------------------------------------------------------------------
CREATE FUNCTION cq.wakeup() RETURNS trigger
AS 'MODULE_PATHNAME', 'cq_wakeup'
LANGUAGE C;
COMMENT ON FUNCTION cq.wakeup() IS 'pg_cq internal: statement trigger of tracked sources, wakes trigger ''0'' queries at commit';

CREATE FUNCTION cq.status_slots(
    OUT query_id integer, OUT message text, OUT is_data_available boolean,
    OUT is_trigger_active boolean, OUT worker_pid integer, OUT watermark timestamptz,
    OUT last_batch_id bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'cq_status_slots'
LANGUAGE C STRICT VOLATILE;
COMMENT ON FUNCTION cq.status_slots() IS 'pg_cq internal: live status of this database''s queries, from shared memory';

CREATE VIEW cq.status AS
SELECT q.name,
       CASE WHEN q.state <> 'active' OR q."trigger" = 'available_now' THEN 'Stopped'
            ELSE coalesce(s.message, 'Stopped') END AS message,
       coalesce(s.is_data_available, false) AS is_data_available,
       coalesce(s.is_trigger_active, false) AS is_trigger_active,
       s.worker_pid,
       coalesce(s.watermark, o.watermark) AS watermark,
       coalesce(s.last_batch_id, o.batch_id) AS last_batch_id
  FROM cq.queries q
  LEFT JOIN cq.status_slots() s ON s.query_id = q.id
  LEFT JOIN LATERAL (SELECT batch_id, watermark FROM cq.offsets
                      WHERE offsets.name = q.name ORDER BY batch_id DESC LIMIT 1) o ON true;
COMMENT ON VIEW cq.status IS 'live status of continuous queries (Spark''s StreamingQueryStatus)';
GRANT SELECT ON cq.status TO PUBLIC;

CREATE FUNCTION cq.pause(name text) RETURNS void
AS 'MODULE_PATHNAME', 'cq_pause'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
COMMENT ON FUNCTION cq.pause(text) IS 'stop running a continuous query in the background until cq.resume';

CREATE FUNCTION cq.resume(name text) RETURNS void
AS 'MODULE_PATHNAME', 'cq_resume'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
COMMENT ON FUNCTION cq.resume(text) IS 'run a paused or failed continuous query again (clears last_error)';

CREATE FUNCTION cq.reset(name text) RETURNS void
AS 'MODULE_PATHNAME', 'cq_reset'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
COMMENT ON FUNCTION cq.reset(text) IS 'start a continuous query over: forget offsets and state, empty the target, new run id';
