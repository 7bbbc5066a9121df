-- Adversarial audit of DDL on sources (session 42).  The tracking column
-- cq_xid and the event-time column of each stream are kept while a query
-- reads the source, even when the query does not mention them, by
-- dependencies of the query view (docs/guarantees.md, "DDL on sources and
-- targets").  Two holes:
--  1. the dependency on cq_xid was the view's own, a kind ALTER TABLE ...
--     ALTER COLUMN ... TYPE does not expect: changing cq_xid's type raised
--     XX000 "unexpected object depending on column: view cq_state.q_N"
--     instead of core's 0A000 for a column a view uses;
--  2. cq.alter_query replaces the view's rule, which drops the rule's
--     dependencies, and the one on the event-time column was not recorded
--     again: after a filter change the event-time column could be dropped
--     or change type, and every later batch failed.
-- Now both are the rule's, recorded again whenever the rule is replaced, for
-- both streams of a join.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
CREATE SCHEMA au211;
SET search_path = au211, public;
SET cq.run_in_worker = off;
\set VERBOSITY terse

CREATE TABLE src (k int, ts timestamptz, v int);
CREATE TABLE q WITH (cq.output_mode = 'append', cq.trigger = 'available_now',
                     cq.event_time = 'ts', cq.watermark = '1 minute')
  AS SELECT k, v FROM src;
-- 1. the tracking column: 0A000 as for any column a view uses (was XX000)
ALTER TABLE src ALTER COLUMN cq_xid TYPE text;
ALTER TABLE src DROP COLUMN cq_xid;
-- the event-time column, which the query does not mention
ALTER TABLE src ALTER COLUMN ts TYPE timestamp;
ALTER TABLE src DROP COLUMN ts;
-- 2. after a filter change, the same
SELECT cq.alter_query('q', query => 'SELECT k, v FROM au211.src WHERE v > 0');
ALTER TABLE src ALTER COLUMN cq_xid TYPE text;
ALTER TABLE src DROP COLUMN ts;
ALTER TABLE src ALTER COLUMN ts TYPE timestamp;
-- and the query still runs
INSERT INTO src VALUES (1, '2026-01-01 00:00+00', 1), (2, '2026-01-01 00:00+00', -1);
CALL cq.run('q');
SELECT state, last_error FROM cq.queries WHERE name = 'q';
SELECT mismatches('q', 'SELECT k, v FROM au211.src WHERE v > 0') AS q_mismatches;
-- a column the changed query no longer reads may go
ALTER TABLE src ADD COLUMN extra int;
ALTER TABLE q ADD COLUMN extra int;
SELECT cq.alter_query('q', query => 'SELECT k, v, extra FROM au211.src WHERE v > 0');
SELECT cq.alter_query('q', query => 'SELECT k, v, NULL::int AS extra FROM au211.src WHERE v > 0');
ALTER TABLE src DROP COLUMN extra;

-- a join of two streams: both streams' columns, also after a filter change
CREATE TABLE a (id int, ts timestamptz);
CREATE TABLE b (id int, ts timestamptz, x int);
CREATE TABLE j WITH (cq.trigger = 'available_now', cq.source = 'a, b', cq.event_time = 'ts, ts',
                     cq.watermark = '1 minute, 1 minute')
  AS SELECT a.id, b.x FROM a JOIN b ON a.id = b.id AND b.ts BETWEEN a.ts AND a.ts + interval '1 minute';
ALTER TABLE b ALTER COLUMN cq_xid TYPE text;
ALTER TABLE b ALTER COLUMN ts TYPE timestamp;
SELECT cq.alter_query('j', query => $$SELECT a.id, b.x FROM au211.a JOIN au211.b
  ON a.id = b.id AND b.ts BETWEEN a.ts AND a.ts + interval '1 minute' WHERE b.x > 0$$);
ALTER TABLE a ALTER COLUMN cq_xid TYPE text;
ALTER TABLE b ALTER COLUMN cq_xid TYPE text;
ALTER TABLE b DROP COLUMN cq_xid;
ALTER TABLE a DROP COLUMN ts;
ALTER TABLE b DROP COLUMN ts;

-- DROP COLUMN ... CASCADE drops the query (its target stays), as before
CREATE TABLE c WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
  AS SELECT k, count(*) AS n FROM src GROUP BY k;
ALTER TABLE src DROP COLUMN cq_xid CASCADE;
SELECT name FROM cq.queries WHERE schema = 'au211' ORDER BY 1;
SELECT to_regclass('au211.c') IS NOT NULL AS target_stays;

RESET search_path;
SELECT cq.drop_query(format('au211.%I', name)) FROM cq.queries WHERE schema = 'au211';
DROP SCHEMA au211 CASCADE;
