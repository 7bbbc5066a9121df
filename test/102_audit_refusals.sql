-- Session 43's audit, the assertions a pgTAP file makes in one transaction: for an
-- unprivileged role whose search_path puts a hostile schema first (functions, operators and
-- types named like pg_catalog's and cq's that raise when called), each new refusal has its
-- SQLSTATE and message (TABLESAMPLE, volatile functions over groups: 0A000; NULL
-- required arguments: 22004), an event-time column of a domain over timestamptz is
-- accepted, cq.xid48's functions and casts never reach the hostile schema, and
-- cq.alter_query's source refuses a same-named table of another schema.
BEGIN;
SET client_min_messages = warning;

CREATE ROLE regress_audit102;
CREATE SCHEMA s102 AUTHORIZATION regress_audit102;
CREATE SCHEMA evil102;
GRANT USAGE ON SCHEMA evil102 TO PUBLIC;
CREATE FUNCTION evil102.boom(what text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'evil102.% called', what; END $$;
CREATE FUNCTION evil102.x48(cq.xid48, cq.xid48) RETURNS boolean LANGUAGE sql AS $$SELECT evil102.boom('xid48 operator')$$;
CREATE OPERATOR evil102.= (FUNCTION = evil102.x48, LEFTARG = cq.xid48, RIGHTARG = cq.xid48);
CREATE OPERATOR evil102.< (FUNCTION = evil102.x48, LEFTARG = cq.xid48, RIGHTARG = cq.xid48);
CREATE FUNCTION evil102.x48x8(cq.xid48, xid8) RETURNS boolean LANGUAGE sql AS $$SELECT evil102.boom('xid48 xid8 operator')$$;
CREATE OPERATOR evil102.>= (FUNCTION = evil102.x48x8, LEFTARG = cq.xid48, RIGHTARG = xid8);
CREATE FUNCTION evil102.xid48(xid8) RETURNS cq.xid48 LANGUAGE plpgsql AS $$
BEGIN PERFORM evil102.boom('xid48()'); RETURN NULL; END $$;
CREATE FUNCTION evil102.xid48_to_xid8(cq.xid48) RETURNS xid8 LANGUAGE plpgsql AS $$
BEGIN PERFORM evil102.boom('xid48_to_xid8()'); RETURN NULL; END $$;
CREATE FUNCTION evil102.current_xid48() RETURNS cq.xid48 LANGUAGE plpgsql AS $$
BEGIN PERFORM evil102.boom('current_xid48()'); RETURN NULL; END $$;
CREATE FUNCTION evil102.random() RETURNS double precision LANGUAGE plpgsql AS $$
BEGIN PERFORM evil102.boom('random()'); RETURN 0; END $$;
CREATE FUNCTION evil102.big(bigint, bigint) RETURNS boolean LANGUAGE sql AS $$SELECT evil102.boom('bigint operator')$$;
CREATE OPERATOR evil102.= (FUNCTION = evil102.big, LEFTARG = bigint, RIGHTARG = bigint);
CREATE TABLE evil102.ev (ts timestamptz, k int);

SET ROLE regress_audit102;
SET search_path = evil102, s102, pg_catalog, public;
SELECT plan(13);
CREATE DOMAIN s102.tsd AS timestamptz CHECK (VALUE > '2000-01-01');
CREATE TABLE s102.ev (ts s102.tsd, k int, v int);
CREATE TABLE s102.dim (k int, name text);

SELECT throws_ok($$CREATE TABLE s102.t1 WITH (cq.trigger = '0') AS SELECT k FROM s102.ev TABLESAMPLE SYSTEM (10)$$,
  '0A000', 'TABLESAMPLE is not supported in continuous queries', 'TABLESAMPLE on the stream');
SELECT throws_ok($$SELECT cq.create_query('s102.t2', 'SELECT e.k, d.name FROM s102.ev e JOIN s102.dim d TABLESAMPLE BERNOULLI (5) ON e.k = d.k', source => 's102.ev')$$,
  '0A000', 'TABLESAMPLE is not supported in continuous queries', 'TABLESAMPLE on a static table');
SELECT throws_ok($$CREATE TABLE s102.t3 WITH (cq.output_mode = 'update') AS SELECT k, count(*) FROM s102.ev GROUP BY k HAVING pg_catalog.random() < 0.5$$,
  '0A000', 'volatile functions in HAVING are not supported in continuous queries', 'volatile HAVING');
SELECT throws_ok($$CREATE TABLE s102.t4 WITH (cq.output_mode = 'complete') AS SELECT k, count(*) * pg_catalog.random() AS r FROM s102.ev GROUP BY k$$,
  '0A000', 'volatile functions over the groups of an aggregation are not supported in continuous queries',
  'volatile select list over groups');
SELECT throws_ok($$SELECT cq.create_query(NULL, 'SELECT k FROM s102.ev')$$,
  '22004', 'continuous query name must not be null', 'create_query(NULL, ...)');
SELECT throws_ok($$SELECT cq.create_query('s102.t5', NULL)$$,
  '22004', 'query of continuous query "t5" must not be null', 'create_query(name, NULL)');

-- an event-time column of a domain over timestamptz (with a CHECK)
CREATE TABLE s102.win WITH (cq.output_mode = 'append', cq.trigger = 'available_now',
                            cq.event_time = 'ts', cq.watermark = '1 minute')
  AS SELECT w.window_start, k, count(*) AS n FROM s102.ev, LATERAL cq.window(ts, '10 minutes') w GROUP BY 1, 2;
SELECT is((SELECT event_time FROM cq.queries WHERE name OPERATOR(pg_catalog.=) 'win'), 'ts',
  'a domain over timestamptz is an event-time column');

-- cq.alter_query's source: the stream (unchanged) or nothing else
CREATE TABLE s102.counts WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT k, count(*) AS n FROM s102.ev GROUP BY k;
SELECT lives_ok($$SELECT cq.alter_query('s102.counts', source => 's102.ev')$$, 'source naming the stream');
SELECT throws_ok($$SELECT cq.alter_query('s102.counts', source => 'evil102.ev')$$,
  '0A000', 'cannot change option "source" of continuous query "counts"', 'source naming a same-named table');

-- cq.xid48: I/O, casts both ways and comparisons by OID, never the hostile schema's
SELECT is(('4294967301'::cq.xid48)::xid8, '4294967301'::xid8, 'cq.xid48 -> xid8 cast');
SELECT is(('77'::xid8)::cq.xid48 OPERATOR(cq.=) '77'::cq.xid48, true, 'xid8 -> cq.xid48 cast and cq.=');
SELECT is(cq.current_xid48() OPERATOR(cq.>=) pg_catalog.pg_current_xact_id(), true, 'cq.current_xid48()');
SELECT throws_ok($$SELECT '281474976710656'::cq.xid48$$, '54000', NULL, 'a value of 2^48 does not fit');

SELECT * FROM finish();
ROLLBACK;
