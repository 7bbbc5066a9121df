-- Session 41's audit of the documented rejections (docs/semantics.md, "Query
-- shapes" and "Options"; docs/reference.md) that test/errors.sql and the
-- regress files did not assert: SQLSTATE and message of each, raised for an
-- unprivileged role whose search_path puts a hostile schema before
-- pg_catalog (functions and operators named like pg_catalog's that raise
-- when called: pg_cq's own SQL must never reach them).  Then a query of each
-- kind is created on that path.
BEGIN;
SET client_min_messages = warning;

CREATE ROLE regress_spec99;
CREATE SCHEMA s99 AUTHORIZATION regress_spec99;
CREATE SCHEMA evil99;
GRANT USAGE ON SCHEMA evil99 TO PUBLIC;
CREATE FUNCTION evil99.boom(what text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'evil99.% called', what; END $$;
CREATE FUNCTION evil99.hash_record(record) RETURNS int LANGUAGE plpgsql AS $$
BEGIN PERFORM evil99.boom('hash_record'); RETURN 0; END $$;
CREATE FUNCTION evil99.record_image_ne(record, record) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RETURN evil99.boom('record_image_ne'); END $$;
CREATE FUNCTION evil99.now() RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN PERFORM evil99.boom('now'); RETURN NULL; END $$;
CREATE FUNCTION evil99.big(bigint, bigint) RETURNS boolean LANGUAGE sql AS $$SELECT evil99.boom('bigint operator')$$;
CREATE OPERATOR evil99.= (FUNCTION = evil99.big, LEFTARG = bigint, RIGHTARG = bigint);
CREATE OPERATOR evil99.< (FUNCTION = evil99.big, LEFTARG = bigint, RIGHTARG = bigint);
CREATE OPERATOR evil99.>= (FUNCTION = evil99.big, LEFTARG = bigint, RIGHTARG = bigint);
CREATE FUNCTION evil99.x8(xid8, xid8) RETURNS boolean LANGUAGE sql AS $$SELECT evil99.boom('xid8 operator')$$;
CREATE OPERATOR evil99.= (FUNCTION = evil99.x8, LEFTARG = xid8, RIGHTARG = xid8);
CREATE OPERATOR evil99.< (FUNCTION = evil99.x8, LEFTARG = xid8, RIGHTARG = xid8);
CREATE OPERATOR evil99.>= (FUNCTION = evil99.x8, LEFTARG = xid8, RIGHTARG = xid8);
CREATE FUNCTION evil99.oo(oid, oid) RETURNS boolean LANGUAGE sql AS $$SELECT evil99.boom('oid operator')$$;
CREATE OPERATOR evil99.= (FUNCTION = evil99.oo, LEFTARG = oid, RIGHTARG = oid);
-- a variadic aggregate with a combine function, for the role to try
CREATE FUNCTION s99.vsum(int8, VARIADIC int[]) RETURNS int8 LANGUAGE sql IMMUTABLE
  AS $$SELECT $1 + coalesce((SELECT sum(v) FROM unnest($2) v), 0)$$;
CREATE AGGREGATE s99.vagg(VARIADIC int[]) (SFUNC = s99.vsum, STYPE = int8, COMBINEFUNC = int8pl, INITCOND = '0');

SET ROLE regress_spec99;
SET search_path = s99, evil99, pg_catalog, public;
SELECT plan(21);   -- pgTAP's tables belong to the role
SET cq.run_in_worker = off;
CREATE TABLE ev (ts timestamptz, k int, v numeric, t text);
CREATE MATERIALIZED VIEW ev_mv AS SELECT * FROM ev;
CREATE TABLE typed_target (k int, n text);

-- query shapes (docs/semantics.md, "Rejected with a clear error")
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.trigger = '0') AS SELECT k FROM ev FOR UPDATE$$,
  '0A000', 'FOR UPDATE and FOR SHARE are not supported in continuous queries', 'FOR UPDATE');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT k, t, count(*) FROM ev GROUP BY GROUPING SETS ((k), (t))$$,
  '0A000', 'GROUPING SETS, ROLLUP and CUBE are not supported in continuous queries', 'GROUPING SETS');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT k, count(*) FROM ev GROUP BY ROLLUP (k)$$,
  '0A000', 'GROUPING SETS, ROLLUP and CUBE are not supported in continuous queries', 'ROLLUP');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.trigger = '0') AS SELECT k FROM ev_mv$$,
  '42809', 'source "ev_mv" is not a table', 'materialized view as source');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT k, s99.vagg(k, k) FROM ev GROUP BY k$$,
  '0A000', 'aggregate vagg(integer[]) is not supported in continuous queries', 'variadic aggregate');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT k, mode() WITHIN GROUP (ORDER BY t) FROM ev GROUP BY k$$,
  '0A000', 'ordered-set aggregate mode(anyelement) is not supported in continuous queries', 'ordered-set aggregate');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT k, string_agg(t, ',') FROM ev GROUP BY k$$,
  '0A000', 'aggregate string_agg(text,text) is not supported in continuous queries', 'string_agg has no combine function');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT k, count(DISTINCT (k, t)) FROM ev GROUP BY k$$,
  '0A000', 'cannot use count(DISTINCT ...) on type record in a continuous query', 'DISTINCT over a record');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT k, unnest(ARRAY[min(v), max(v)]) FROM ev GROUP BY k$$,
  '0A000', 'set-returning functions in the select list of an aggregation are not supported in continuous queries',
  'SRF in the select list of an aggregation');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.trigger = '0') AS SELECT DISTINCT k, count(*) FROM ev GROUP BY k, t$$,
  '0A000', 'SELECT DISTINCT over an aggregation is not supported in continuous queries', 'SELECT DISTINCT over an aggregation');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '1 minute')
                   AS SELECT s.session_start, s.session_end, count(*) FROM ev, LATERAL cq.session_window(ts, interval '1 minute') s GROUP BY 1, 2$$,
  '0A000', 'global aggregation with session window in streaming query is not supported', 'session window without another key');
SELECT throws_ok($$SELECT cq.create_query('typed_target', 'SELECT k, count(*) AS n FROM s99.ev GROUP BY k', output_mode => 'update')$$,
  '42P16', 'target table "typed_target" does not match continuous query "typed_target"', 'target column of another type');

-- options (docs/reference.md, "Options")
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.trigger = '400 days') AS SELECT k FROM ev$$,
  '22023', 'invalid value for continuous query option "trigger": "400 days"', 'trigger beyond 365 days');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.event_time = 'ts', cq.watermark = '106751992 days') AS SELECT k FROM ev$$,
  '22023', 'invalid value for continuous query option "watermark": "106751992 days"', 'delay beyond the timestamp range');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.trigger = '0', cq.trigger = '1 second') AS SELECT k FROM ev$$,
  '22023', 'parameter "cq.trigger" specified more than once', 'an option given twice');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.max_rows_per_trigger = '9223372036854775808') AS SELECT k FROM ev$$,
  '22023', 'invalid value for continuous query option "max_rows_per_trigger": "9223372036854775808"', 'row limit beyond bigint');

-- a query of each kind: options that cannot change or be reset, NULL names
CREATE TABLE counts WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k;
SELECT throws_ok($$ALTER TABLE counts RESET (cq.trigger)$$,
  '0A000', 'cannot reset continuous query option "cq.trigger"', 'RESET of an option');
SELECT throws_ok($$SELECT cq.alter_query('counts', output_mode => 'complete')$$,
  '0A000', 'cannot change option "output_mode" of continuous query "counts"', 'output mode cannot change');
SELECT throws_ok($$SELECT cq.pause(NULL)$$, '22004', 'continuous query name must not be null', 'pause(NULL)');
SELECT throws_ok($$CALL cq.run(NULL)$$, '22004', 'continuous query name must not be null', 'run(NULL)');

CREATE TABLE closed WITH (cq.output_mode = 'append', cq.trigger = 'available_now', cq.event_time = 'ts', cq.watermark = '1 minute')
  AS SELECT w.window_start, k, count(*) AS n FROM ev, LATERAL cq.window(ts, '10 minutes') w GROUP BY 1, 2;
CREATE TABLE firsts WITH (cq.trigger = 'available_now', cq.event_time = 'ts', cq.watermark = '1 minute')
  AS SELECT DISTINCT ON (k) k, t FROM ev;
CREATE TABLE sessions WITH (cq.output_mode = 'update', cq.trigger = 'available_now', cq.event_time = 'ts', cq.watermark = '1 minute')
  AS SELECT k, s.session_start, s.session_end, count(*) AS n FROM ev, LATERAL cq.session_window(ts, interval '5 minutes') s GROUP BY 1, 2, 3;
CREATE TABLE whole WITH (cq.output_mode = 'complete', cq.trigger = 'available_now')
  AS SELECT t, count(*) AS n FROM ev GROUP BY t;
RESET ROLE;
RESET search_path;   -- pgTAP's is() compares with = on the path
SELECT is((SELECT count(*) FROM cq.queries WHERE owner::text = 'regress_spec99'), 5::bigint,
  'every kind of query is created on the hostile path (batch 0 included)');
-- (their batches over rows are not run here: a batch inside this test's
-- transaction cannot read rows the transaction wrote; sql/145 and sql/124
-- run batches on a hostile path)

SELECT * FROM finish();
ROLLBACK;
