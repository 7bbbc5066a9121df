-- Background execution (SPEC §5, §7, §8): workers run '0' and interval queries by themselves,
-- as the query's owner (NOLOGIN owners too); cq.status; pause/resume/reset; privileges;
-- a failing query is isolated, retried, and resumed.  Every wait polls with a deadline.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

-- shared helpers: wait_until, mismatches, fingerprint
\i sql/include/helpers.sql

CREATE ROLE regress_cq_nologin NOLOGIN;
CREATE ROLE regress_cq_user LOGIN;
CREATE ROLE regress_cq_other;
GRANT CREATE ON SCHEMA public TO regress_cq_nologin, regress_cq_user;

-- the source belongs to the superuser; the owners may read it
CREATE TABLE w_src (k text, v int);
GRANT SELECT ON w_src TO regress_cq_nologin, regress_cq_user;
-- the first query over a table tracks it, which needs its owner
CREATE TABLE w_track WITH (cq.trigger = 'available_now') AS SELECT k FROM w_src WITH NO DATA;

-- a login, non-superuser owner (trigger '0', the default)
SET ROLE regress_cq_user;
CREATE TABLE w_sum WITH (cq.output_mode = 'update')
  AS SELECT k, sum(v) AS s, count(*) AS n FROM w_src GROUP BY k WITH NO DATA;
RESET ROLE;
-- a NOLOGIN owner; current_user shows whose rights the batch ran with
SET ROLE regress_cq_nologin;
CREATE TABLE w_rows WITH (cq.output_mode = 'append')
  AS SELECT k, v, current_user::text AS ran_as FROM w_src WITH NO DATA;
RESET ROLE;
-- an interval trigger and an available-now query
CREATE TABLE w_hourly WITH (cq.trigger = '1 hour') AS SELECT k FROM w_src WITH NO DATA;

-- each query's first batch (over the empty history) runs at once
SELECT wait_until($$(SELECT count(*) FROM cq.offsets WHERE name IN ('w_sum', 'w_rows', 'w_hourly')) = 3$$);

-- commits wake the workers; nobody calls cq.run
INSERT INTO w_src VALUES ('a', 1), ('b', 2);
SELECT wait_until($$(SELECT count(*) FROM w_rows) = 2 AND (SELECT sum(n) FROM w_sum) = 2$$);
SELECT * FROM w_sum ORDER BY k;
SELECT * FROM w_rows ORDER BY k;
SELECT relname, relowner::regrole FROM pg_class WHERE relname IN ('w_sum', 'w_rows') ORDER BY 1;

-- cq.status, in Spark's words
SELECT wait_until($$(SELECT message FROM cq.status WHERE name = 'w_sum') = 'Waiting for data to arrive'$$);
SELECT wait_until($$(SELECT message FROM cq.status WHERE name = 'w_hourly') = 'Waiting for next trigger'$$);
SELECT name, message, is_data_available, last_batch_id >= 0 AS has_batches
  FROM cq.status WHERE name IN ('w_sum', 'w_hourly', 'w_track') ORDER BY name;
-- workers are visible in pg_stat_activity
SELECT count(*) > 0 AS has_scheduler FROM pg_stat_activity
 WHERE backend_type = 'pg_cq scheduler' AND datname = current_database();
SELECT count(*) > 0 AS has_worker FROM pg_stat_activity
 WHERE backend_type = 'pg_cq worker' AND datname = current_database();

-- another role can neither pause, resume, reset, alter nor drop someone else's query
SET ROLE regress_cq_other;
SELECT cq.pause('w_sum');
SELECT cq.resume('w_sum');
SELECT cq.reset('w_sum');
SELECT cq.alter_query('w_sum', "trigger" => '1 minute');
SELECT cq.drop_query('w_sum');
DROP TABLE w_sum;
CALL cq.run('w_sum');
RESET ROLE;

-- pause: no batch until resume (a paused query's batch is refused under its row lock)
SET ROLE regress_cq_user;
SELECT cq.pause('w_sum');
RESET ROLE;
SELECT wait_until($$(SELECT message FROM cq.status WHERE name = 'w_sum') = 'Stopped'$$);
INSERT INTO w_src VALUES ('a', 10);
SELECT wait_until($$(SELECT count(*) FROM w_rows) = 3$$);
SELECT state FROM cq.queries WHERE name = 'w_sum';
SELECT * FROM w_sum ORDER BY k;
SET ROLE regress_cq_user;
SELECT cq.resume('w_sum');
RESET ROLE;
SELECT wait_until($$(SELECT sum(n) FROM w_sum) = 3$$);
SELECT * FROM w_sum ORDER BY k;

-- a revoked right makes the query fail (never read as superuser); others keep running
REVOKE SELECT ON w_src FROM regress_cq_nologin;
INSERT INTO w_src VALUES ('c', 5);
SELECT wait_until($$(SELECT state FROM cq.queries WHERE name = 'w_rows') = 'failed'$$);
SELECT state, last_error FROM cq.queries WHERE name = 'w_rows';
SELECT wait_until($$(SELECT sum(n) FROM w_sum) = 4$$);
SELECT message FROM cq.status WHERE name = 'w_rows';
-- the failed batch changed nothing
SELECT count(*) FROM w_rows;
SELECT count(*) FROM cq.progress WHERE name = 'w_rows';
-- retried with backoff: once the right is back, it recovers by itself
GRANT SELECT ON w_src TO regress_cq_nologin;
SELECT wait_until($$(SELECT state FROM cq.queries WHERE name = 'w_rows') = 'active'
                    AND (SELECT count(*) FROM w_rows) = 4$$);
SELECT state, last_error FROM cq.queries WHERE name = 'w_rows';
-- fail again; cq.resume clears the error at once and runs it
REVOKE SELECT ON w_src FROM regress_cq_nologin;
INSERT INTO w_src VALUES ('d', 6);
SELECT wait_until($$(SELECT state FROM cq.queries WHERE name = 'w_rows') = 'failed'$$);
GRANT SELECT ON w_src TO regress_cq_nologin;
SET ROLE regress_cq_nologin;
SELECT cq.resume('w_rows');
RESET ROLE;
SELECT state, last_error FROM cq.queries WHERE name = 'w_rows';
SELECT wait_until($$(SELECT count(*) FROM w_rows) = 5$$);
-- every row exactly once
SELECT k, v, ran_as FROM w_rows ORDER BY k, v;

-- reset: forget offsets and state, empty the target, start over with a new run id
SELECT run_id AS old_run FROM cq.queries WHERE name = 'w_sum' \gset
SET ROLE regress_cq_user;
SELECT cq.reset('w_sum');
RESET ROLE;
SELECT wait_until($$(SELECT sum(n) FROM w_sum) = (SELECT count(*) FROM w_src)$$);
SELECT * FROM w_sum ORDER BY k;
SELECT run_id <> :'old_run' AS new_run, state FROM cq.queries WHERE name = 'w_sum';
SELECT min(batch_id) AS first_batch, count(DISTINCT run_id) AS runs FROM cq.progress WHERE name = 'w_sum';

-- the owner drops its queries
SET ROLE regress_cq_user;
DROP TABLE w_sum;
RESET ROLE;
SET ROLE regress_cq_nologin;
SELECT cq.drop_query('w_rows', drop_target => true);
RESET ROLE;
SELECT name FROM cq.queries WHERE name LIKE 'w\_%' ORDER BY name;
DROP TABLE w_hourly, w_track, w_src;
REVOKE CREATE ON SCHEMA public FROM regress_cq_nologin, regress_cq_user;
DROP ROLE regress_cq_nologin, regress_cq_user, regress_cq_other;

-- a trigger '0' windowed append: the no-data batch that emits a window closed
-- by the watermark runs at once, not at the next poll (cq.naptime, 5 s)
CREATE TABLE w_ev (ts timestamptz, k text);
CREATE TABLE w_windows WITH (cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '1 second')
  AS SELECT date_bin('1 second', ts, '2024-01-01') AS sec, count(*) AS n FROM w_ev GROUP BY 1;
INSERT INTO w_ev (ts, k) VALUES ('2024-01-01 00:00:00.5', 'a'), ('2024-01-01 00:00:03', 'b');
SELECT wait_until($$EXISTS (SELECT 1 FROM w_windows)$$, 2.5);
SELECT sec, n FROM w_windows ORDER BY sec;
DROP TABLE w_windows, w_ev;
