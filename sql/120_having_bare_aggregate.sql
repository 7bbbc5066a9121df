-- Found by the randomized differential test (t/062_fuzz.pl, seed 102): a
-- HAVING clause that is an aggregate itself (HAVING bool_or(ok), HAVING
-- every(ok)), not selected.  The analysis walked HAVING below its root,
-- so that aggregate never became a state column and the creation failed
-- with the internal error "pg_cq: aggregate not found in analysis"
-- (HAVING bool_or(ok) IS TRUE worked).  Each query here must be created,
-- run its batches and equal its query: update (groups enter and leave),
-- complete, append with a watermark, a session window, no GROUP BY, on
-- the shared-memory store and on a state table.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET timezone = 'UTC';
CREATE TABLE hb (k int, v int, ok boolean, ts timestamptz);
CREATE VIEW hb_u_q AS SELECT k, count(*) AS n FROM hb GROUP BY k HAVING bool_or(ok);
CREATE VIEW hb_c_q AS SELECT k, sum(v) AS s FROM hb GROUP BY k HAVING every(ok);
CREATE VIEW hb_g_q AS SELECT count(*) AS n FROM hb HAVING bool_and(v > 0);
SELECT cq.create_query('hb_u', pg_get_viewdef('hb_u_q'), output_mode => 'update', "trigger" => 'available_now',
                       state_storage => 'memory');
SELECT cq.create_query('hb_t', pg_get_viewdef('hb_u_q'), output_mode => 'update', "trigger" => 'available_now',
                       state_storage => 'unlogged');
SELECT cq.create_query('hb_c', pg_get_viewdef('hb_c_q'), output_mode => 'complete', "trigger" => 'available_now');
SELECT cq.create_query('hb_g', pg_get_viewdef('hb_g_q'), output_mode => 'update', "trigger" => 'available_now');
SELECT cq.create_query('hb_a', 'SELECT date_bin(''10 seconds'', ts, ''2026-01-01'') AS w, count(*) AS n FROM hb
                                 GROUP BY 1 HAVING bool_or(ok)',
                       output_mode => 'append', event_time => 'ts', watermark => '10 seconds',
                       "trigger" => 'available_now');
SELECT cq.create_query('hb_s', 'SELECT k, s.session_start, s.session_end, count(*) AS n
                                  FROM hb, LATERAL cq.session_window(ts, interval ''5 seconds'') AS s
                                 GROUP BY k, s.session_start, s.session_end HAVING bool_or(ok)',
                       output_mode => 'update', "trigger" => 'available_now');
-- three rounds: groups whose bool_or turns true, every() turning false
INSERT INTO hb VALUES (1, 1, false, '2026-01-01 00:00:01'), (2, 2, true, '2026-01-01 00:00:02'),
                      (3, 3, NULL, '2026-01-01 00:00:03');
CALL cq.run('hb_u'); CALL cq.run('hb_t'); CALL cq.run('hb_c'); CALL cq.run('hb_g'); CALL cq.run('hb_a'); CALL cq.run('hb_s');
SELECT 'round 1' AS round, (SELECT string_agg(format('%s', h), ' ' ORDER BY k) FROM hb_u h) AS u,
       (SELECT string_agg(format('%s', h), ' ' ORDER BY k) FROM hb_c h) AS c, (SELECT n FROM hb_g) AS g;
INSERT INTO hb VALUES (1, 4, true, '2026-01-01 00:00:04'), (2, -5, false, '2026-01-01 00:00:12'),
                      (3, 6, true, '2026-01-01 00:00:25');
CALL cq.run('hb_u'); CALL cq.run('hb_t'); CALL cq.run('hb_c'); CALL cq.run('hb_g'); CALL cq.run('hb_a'); CALL cq.run('hb_s');
SELECT 'round 2' AS round, (SELECT string_agg(format('%s', h), ' ' ORDER BY k) FROM hb_u h) AS u,
       (SELECT string_agg(format('%s', h), ' ' ORDER BY k) FROM hb_c h) AS c, (SELECT n FROM hb_g) AS g;
INSERT INTO hb VALUES (4, 7, false, '2026-01-01 00:00:40'), (4, 8, false, '2026-01-01 00:00:41');
CALL cq.run('hb_u'); CALL cq.run('hb_t'); CALL cq.run('hb_c'); CALL cq.run('hb_g'); CALL cq.run('hb_a'); CALL cq.run('hb_s');
-- each target equals its query (append: the windows the watermark closed)
SELECT count(*) AS u_diff FROM ((TABLE hb_u_q EXCEPT ALL TABLE hb_u) UNION ALL (TABLE hb_u EXCEPT ALL TABLE hb_u_q)) x;
SELECT count(*) AS t_diff FROM ((TABLE hb_u_q EXCEPT ALL TABLE hb_t) UNION ALL (TABLE hb_t EXCEPT ALL TABLE hb_u_q)) x;
SELECT count(*) AS c_diff FROM ((TABLE hb_c_q EXCEPT ALL TABLE hb_c) UNION ALL (TABLE hb_c EXCEPT ALL TABLE hb_c_q)) x;
SELECT count(*) AS g_diff FROM ((TABLE hb_g_q EXCEPT ALL TABLE hb_g) UNION ALL (TABLE hb_g EXCEPT ALL TABLE hb_g_q)) x;
SELECT w, n FROM hb_a ORDER BY w;
SELECT k, session_start, session_end, n FROM hb_s ORDER BY k, session_start;
SELECT name, state, last_error FROM cq.queries WHERE name LIKE 'hb\_%' ORDER BY name;
SELECT cq.drop_query(name, drop_target => true) FROM cq.queries WHERE name LIKE 'hb\_%' ORDER BY name;
DROP VIEW hb_u_q, hb_c_q, hb_g_q;
DROP TABLE hb;
