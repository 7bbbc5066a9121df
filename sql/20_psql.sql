-- Psql-friendly objects (issue 13 item 6): pg_cq comments a query's target
-- with what feeds it (\dt+ and obj_description show it), keeps a comment
-- the table's owner wrote, and cq.explain(name) returns the SQL a batch
-- runs, with the offsets as $n parameters, for EXPLAIN.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
CREATE ROLE regress_cq_psql_owner;
CREATE ROLE regress_cq_psql_other;
CREATE SCHEMA regress_cq_psql AUTHORIZATION regress_cq_psql_owner;
SET ROLE regress_cq_psql_owner;
SET search_path = regress_cq_psql;
-- the table path's one statement (sql/69_store_inspect.sql explains the
-- shared-memory store's statements)
SET cq.default_state_storage = 'unlogged';

CREATE TABLE clicks (ts timestamptz, page text, ms int);

-- update mode through CREATE TABLE ... AS: the target says what feeds it
CREATE TABLE page_ms WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
AS SELECT page, sum(ms) AS total_ms, count(*) AS n FROM clicks GROUP BY page;
SELECT obj_description('page_ms'::regclass, 'pg_class');

-- changed options: the comment follows
ALTER TABLE page_ms SET (cq.trigger = '0');
SELECT obj_description('page_ms'::regclass, 'pg_class');
SELECT cq.alter_query('page_ms', "trigger" => '5 seconds', max_rows_per_trigger => 10);
SELECT obj_description('page_ms'::regclass, 'pg_class');

-- a comment of the table's owner is kept; without one, pg_cq's comes back
COMMENT ON TABLE page_ms IS 'latency per page, for the dashboard';
SELECT cq.alter_query('page_ms', "trigger" => 'available_now');
SELECT obj_description('page_ms'::regclass, 'pg_class');
COMMENT ON TABLE page_ms IS NULL;
SELECT cq.alter_query('page_ms', "trigger" => 'available_now');
SELECT obj_description('page_ms'::regclass, 'pg_class');

-- through cq.create_query, with event time: append mode, a watermark
SELECT cq.create_query('views_10m',
    'SELECT w.window_start, w.window_end, page, count(*) AS n
       FROM clicks, LATERAL cq.window(ts, ''10 minutes'') AS w GROUP BY 1, 2, 3',
    output_mode => 'append', "trigger" => 'available_now',
    event_time => 'ts', watermark => '10 minutes');
SELECT obj_description('views_10m'::regclass, 'pg_class');
-- \dt+ lists it as the table's description
SELECT c.relname, d.description
  FROM pg_class c JOIN pg_description d ON d.objoid = c.oid AND d.classoid = 'pg_class'::regclass
 WHERE c.relnamespace = 'regress_cq_psql'::regnamespace ORDER BY 1;

-- cq.explain: the batch statement, with what each parameter is (the
-- internal objects' numbers depend on the queries created before)
\pset format unaligned
\pset tuples_only on
SELECT regexp_replace(cq.explain('page_ms'), '(cq_state\.[a-z]+_)\d+', '\1<id>', 'g');
SELECT regexp_replace(cq.explain('regress_cq_psql.views_10m'), '(cq_state\.[a-z]+_)\d+', '\1<id>', 'g');
\pset format aligned
\pset tuples_only off

-- the statement is valid SQL with those parameters: prepare it and EXPLAIN it
-- with literal offsets (the plan itself is not shown: it depends on statistics)
DO $$
DECLARE
  n int := 0;
  l text;
BEGIN
  EXECUTE 'PREPARE page_ms_batch(xid8, xid8, pg_snapshot, pg_snapshot, timestamptz) AS '
          || cq.explain('page_ms');
  FOR l IN EXECUTE $x$EXPLAIN EXECUTE page_ms_batch('1', '10', '10:10:', '1:1:', NULL)$x$ LOOP
    n := n + 1;
  END LOOP;
  RAISE WARNING 'EXPLAIN of the batch statement: % plan lines', CASE WHEN n > 5 THEN 'several' ELSE n::text END;
END
$$;
DEALLOCATE page_ms_batch;

-- only a role with the owner's privileges may explain a query
RESET ROLE;
GRANT USAGE ON SCHEMA regress_cq_psql TO regress_cq_psql_other;
SET ROLE regress_cq_psql_other;
SELECT cq.explain('regress_cq_psql.page_ms');
RESET ROLE;
GRANT regress_cq_psql_owner TO regress_cq_psql_other;
SET ROLE regress_cq_psql_other;
SELECT length(cq.explain('regress_cq_psql.page_ms')) > 0 AS member_may_explain;
SELECT cq.explain('regress_cq_psql.no_such_query');
SELECT cq.explain(NULL) IS NULL AS null_in_null_out;
RESET ROLE;

-- clean up
SET search_path = public;
DROP SCHEMA regress_cq_psql CASCADE;
DROP ROLE regress_cq_psql_other;
DROP ROLE regress_cq_psql_owner;
