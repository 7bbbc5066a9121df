-- Every rejected query shape and bad option: SQLSTATE and message.
BEGIN;
SET client_min_messages = warning;
SELECT plan(63);

CREATE TABLE ev (ts timestamptz, k text, v numeric, i int);
CREATE TABLE dim (k text, label text);
CREATE VIEW ev_view AS SELECT * FROM ev;
CREATE TEMP TABLE ev_temp (k text);
CREATE TABLE wrong_target (x int);

-- output modes (Spark's rules)
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'complete') AS SELECT k, v FROM ev$$,
  '0A000', 'complete output mode is not supported when there are no streaming aggregations',
  'complete without aggregation');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'append') AS SELECT k, count(*) FROM ev GROUP BY k$$,
  '0A000', 'append output mode is not supported for streaming aggregations without a watermark',
  'append aggregation without watermark');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'append') AS SELECT count(*) FROM ev$$,
  '0A000', 'append output mode is not supported for streaming aggregations without a watermark',
  'append is the default and a global aggregate needs a watermark too');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT count(*) FROM ev GROUP BY k$$,
  '0A000', 'update output mode needs every GROUP BY expression in the select list',
  'update with an unselected grouping key');

-- query shapes
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT k, array_agg(DISTINCT v) FROM ev GROUP BY k$$,
  '0A000', 'aggregate array_agg(DISTINCT ...) is not supported in continuous queries', 'DISTINCT of an aggregate without DISTINCT support');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'append') AS SELECT k, row_number() OVER () FROM ev$$,
  '0A000', 'window functions are not supported in continuous queries', 'window function');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'append') AS SELECT k FROM ev LIMIT 10$$,
  '0A000', 'LIMIT and OFFSET are not supported in continuous queries', 'LIMIT');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'append') AS SELECT k FROM (SELECT k FROM ev) s$$,
  '0A000', 'subqueries in FROM over the streaming table are not supported', 'subquery in FROM over the stream');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'append') AS SELECT ev.k, dim.label FROM ev, dim WHERE ev.k = dim.k$$,
  '0A000', 'continuous query "t1" reads more than one table', 'two tables without the source option');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'append') AS SELECT a.k FROM ev a JOIN ev b ON a.k = b.k$$,
  '0A000', 'the streaming table "ev" appears more than once in the query', 'stream-stream self join');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'append', cq.source = 'ev') AS SELECT ev.k, dim.label FROM dim LEFT JOIN ev ON ev.k = dim.k$$,
  '0A000', 'LEFT JOIN with the streaming table on the nullable side is not supported', 'stream on the nullable side');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'append', cq.source = 'ev') AS SELECT ev.k, dim.label FROM ev FULL JOIN dim ON ev.k = dim.k$$,
  '0A000', 'FULL JOIN with the streaming table on the nullable side is not supported', 'full join');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'append') AS SELECT k FROM ev WHERE v > (SELECT 1)$$,
  '0A000', 'subqueries in expressions are not supported in continuous queries', 'sublink');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT k, percentile_cont(0.5) WITHIN GROUP (ORDER BY v) FROM ev GROUP BY k$$,
  '0A000', 'ordered-set aggregate percentile_cont(double precision,double precision) is not supported in continuous queries',
  'ordered-set aggregate');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT k, string_agg(k, ',') FROM ev GROUP BY k$$,
  '0A000', 'aggregate string_agg(text,text) is not supported in continuous queries', 'aggregate without a combine function');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT k, array_agg(v ORDER BY ts) FROM ev GROUP BY k$$,
  '0A000', 'aggregate array_agg(anynonarray) with ORDER BY is not supported in continuous queries', 'ordered aggregate');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'complete') AS SELECT DISTINCT k FROM ev$$,
  '0A000', 'complete output mode is not supported for SELECT DISTINCT', 'SELECT DISTINCT in complete mode');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT k, count(*) FROM ev GROUP BY k HAVING percentile_cont(0.5) WITHIN GROUP (ORDER BY v) > 1$$,
  '0A000', 'ordered-set aggregate percentile_cont(double precision,double precision) is not supported in continuous queries',
  'HAVING: its aggregates are checked as the select list''s');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'append') AS SELECT k FROM ev UNION ALL SELECT k FROM ev$$,
  '0A000', 'UNION, INTERSECT and EXCEPT are not supported in continuous queries', 'UNION');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'append') AS WITH w AS (SELECT k FROM ev) SELECT k FROM w$$,
  '0A000', 'WITH queries are not supported in continuous queries', 'WITH');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT k, count(*) FROM ev GROUP BY k ORDER BY k$$,
  '0A000', 'ORDER BY is supported only in complete output mode', 'ORDER BY in update mode');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT k, generate_series(1, count(*)::int) FROM ev GROUP BY k$$,
  '0A000', 'set-returning functions in the select list of an aggregation are not supported in continuous queries',
  'SRF in the select list of an aggregation');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'append') AS SELECT 1 AS one$$,
  '0A000', 'continuous query "t1" has no streaming source', 'no table');

-- sources and targets
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'append') AS SELECT k FROM ev_view$$,
  '42809', 'source "ev_view" is not a table', 'view as source');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'append') AS SELECT k FROM ev_temp$$,
  '42809', 'source "ev_temp" is a temporary table', 'temporary source');
SELECT throws_ok($$SELECT cq.create_query('wrong_target', 'SELECT k, v FROM ev')$$,
  '42P16', 'target table "wrong_target" does not match continuous query "wrong_target"', 'target with other columns');
CREATE TABLE full_target (k text, v numeric);
INSERT INTO full_target VALUES ('x', 1);
SELECT throws_ok($$SELECT cq.create_query('full_target', 'SELECT k, v FROM ev')$$,
  '55000', 'target table "full_target" is not empty', 'non-empty existing target');
SELECT throws_ok($$SELECT cq.create_query('q1', 'DELETE FROM ev')$$,
  '42809', 'a continuous query must be a SELECT statement', 'not a SELECT');
SELECT throws_ok($$SELECT cq.create_query('q1', 'SELECT k FROM ev; SELECT 1')$$,
  '22023', 'query of continuous query "q1" must be exactly one SELECT statement', 'two statements');
SELECT throws_ok($$SELECT cq.create_query('q1', '')$$,
  '22023', 'query of continuous query "q1" must not be empty', 'empty query');
SELECT throws_ok($$SELECT cq.create_query('', 'SELECT k FROM ev')$$,
  '22023', 'continuous query name must not be empty', 'empty name');
SELECT throws_ok($$SELECT cq.create_query(NULL, 'SELECT k FROM ev')$$,
  '22004', 'continuous query name must not be null', 'NULL name');
SELECT throws_ok($$SELECT cq.create_query(repeat('x', 64), 'SELECT k FROM ev')$$,
  '42622', NULL, 'overlong name');

-- quotes and semicolons are data, never SQL (a name is read as an
-- identifier, as regclass input reads a table's: quoted, it is kept as is)
SELECT throws_ok($$SELECT cq.create_query('a"; DROP TABLE ev; --', 'SELECT k, v FROM ev')$$,
  '42602', 'invalid name syntax', 'a name is an identifier');
SELECT lives_ok($$SELECT cq.create_query('"a""; DROP TABLE ev; --"', 'SELECT k, v FROM ev')$$,
  'a name with quotes and a semicolon is just a name');
SELECT is((SELECT target::text FROM cq.queries WHERE name = 'a"; DROP TABLE ev; --'),
  '"a""; DROP TABLE ev; --"', 'the target is the table of exactly that name');
SELECT has_table('ev', 'the source survived');
SELECT throws_ok($$SELECT cq.create_query('q2', 'SELECT k FROM ev', "trigger" => repeat('9', 5000))$$,
  '22023', 'invalid value for continuous query option "trigger": "' || repeat('9', 64) || '..."',
  'an absurd value is cut in the message');

-- options
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.color = 'blue') AS SELECT k FROM ev$$,
  '22023', 'unrecognized continuous query option "color"', 'unknown option');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'sideways') AS SELECT k FROM ev$$,
  '22023', 'invalid value for continuous query option "output_mode": "sideways"', 'bad output mode');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.trigger = 'soon') AS SELECT k FROM ev$$,
  '22023', 'invalid value for continuous query option "trigger": "soon"', 'bad trigger');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.trigger = '-5 seconds') AS SELECT k FROM ev$$,
  '22023', 'invalid value for continuous query option "trigger": "-5 seconds"', 'negative trigger');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.trigger = '1 month') AS SELECT k FROM ev$$,
  '22023', 'invalid value for continuous query option "trigger": "1 month"', 'trigger in months');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.watermark = '10 minutes') AS SELECT k FROM ev$$,
  '22023', 'continuous query option "watermark" requires "event_time"', 'watermark without event_time');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.event_time = 'ts', cq.watermark = '-1 minute') AS SELECT k FROM ev$$,
  '22023', 'invalid value for continuous query option "watermark": "-1 minute"', 'negative watermark');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.event_time = 'nope') AS SELECT k FROM ev$$,
  '42703', 'event_time column "nope" does not exist in source "ev"', 'event_time not a column');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.event_time = 'k') AS SELECT k FROM ev$$,
  '42804', 'event_time column "k" must be of type timestamp with time zone or timestamp', 'event_time not a timestamp');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.max_rows_per_trigger = 'many') AS SELECT k FROM ev$$,
  '22023', 'invalid value for continuous query option "max_rows_per_trigger": "many"', 'bad row limit');
SELECT throws_ok($$SELECT cq.create_query('q1', 'SELECT k FROM ev', max_rows_per_trigger => -1)$$,
  '22023', 'invalid value for continuous query option "max_rows_per_trigger": -1', 'negative row limit');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.starting = 'now') AS SELECT k FROM ev$$,
  '22023', 'invalid value for continuous query option "starting": "now"', 'bad starting');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.state_storage = 'disk') AS SELECT k FROM ev$$,
  '22023', 'invalid value for continuous query option "state_storage": "disk"', 'bad state_storage');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.complete_refresh = 'swap') AS SELECT k FROM ev$$,
  '22023', 'invalid value for continuous query option "complete_refresh": "swap"', 'bad complete_refresh');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.source = 'nosuch') AS SELECT k FROM ev$$,
  '42P01', 'source table "nosuch" does not exist', 'source option names no table');
SELECT throws_ok($$ALTER TABLE dim SET (cq.trigger = '1 minute')$$,
  '42809', 'table "dim" is not the target of a continuous query', 'cq option on a plain table');

-- event time
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '1 minute') AS SELECT k, count(*) FROM ev GROUP BY k$$,
  '0A000', 'append output mode is not supported for streaming aggregations without a watermark',
  'append with a watermark on no grouping key');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT w.window_start, count(*) FROM ev, LATERAL cq.window(ts, '0 seconds') w GROUP BY 1$$,
  '22023', 'window size must be positive', 'window size zero');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT w.window_start, count(*) FROM ev, LATERAL cq.window(ts, '10 seconds', '20 seconds') w GROUP BY 1$$,
  '22023', 'window slide must be positive and at most the window size', 'slide larger than size');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT w.window_start, count(*) FROM ev, LATERAL cq.window(ts, '1 month') w GROUP BY 1$$,
  '0A000', 'window size cannot contain months or years', 'window in months');
SELECT throws_ok($$CREATE TABLE t1 WITH (cq.output_mode = 'update') AS SELECT date_bin('-1 minute', ts, '2000-01-01'), count(*) FROM ev GROUP BY 1$$,
  '22023', 'window size must be positive', 'negative date_bin stride');

-- nothing was created by the failures above
SELECT is((SELECT count(*) FROM cq.queries), 1::bigint, 'only the quoted-name query was registered');

-- running and dropping unknown queries
SELECT throws_ok($$CALL cq.run('nosuch')$$, '42704', 'continuous query "nosuch" does not exist', 'run unknown');
SELECT throws_ok($$SELECT cq.drop_query('nosuch')$$, '42704', 'continuous query "nosuch" does not exist', 'drop unknown');

-- a query exists only once; its stored options cannot change under its state
CREATE TABLE counts WITH (cq.output_mode = 'update') AS SELECT k, count(*) FROM ev GROUP BY k;
SELECT throws_ok($$SELECT cq.create_query('counts', 'SELECT k, count(*) FROM ev GROUP BY k', output_mode => 'update')$$,
  '42710', 'continuous query "counts" already exists', 'duplicate name');

SELECT * FROM finish();
ROLLBACK;
