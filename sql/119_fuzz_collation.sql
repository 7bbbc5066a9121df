-- Found by the randomized differential test (t/062_fuzz.pl, seed 101): a
-- query over a column whose collation lives in a schema other than
-- pg_catalog.  The batch statements spelled it unqualified ("COLLATE
-- fz_c"), as ruleutils names it while the creator's search_path shows it,
-- when the batch's SQL is built in a session whose search_path shows it
-- (CALL cq.run with cq.run_in_worker off, the creator's session), and a
-- batch runs under a pinned search_path (pg_catalog, pg_temp): it failed
-- with "collation "fz_c" for encoding "UTF8" does not exist" and the
-- query stopped.  Every shape that spells a collation is run here:
-- DISTINCT aggregates (their value sets and the batch's union), min/max
-- state columns, session windows, SELECT DISTINCT and DISTINCT ON, update
-- targets (keys) and a join of two streams; each must run its batches and
-- equal its query.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET timezone = 'UTC';
SET cq.run_in_worker = off;
CREATE SCHEMA fzs;
CREATE COLLATION fzs.fz_c (provider = libc, locale = 'C');
SET search_path = fzs, public;
CREATE TABLE fz_src (k int, c text COLLATE fz_c, ts timestamptz);
CREATE TABLE fz_other (k int, c text COLLATE fz_c, ts timestamptz);
INSERT INTO fz_src SELECT g % 3, chr(97 + g % 5), timestamptz '2026-01-01' + g * interval '7 seconds'
  FROM generate_series(1, 40) g;
INSERT INTO fz_other SELECT g % 3, chr(97 + g % 4), timestamptz '2026-01-01' + g * interval '5 seconds'
  FROM generate_series(1, 30) g;
SELECT cq.create_query('fz_dist', 'SELECT k, count(DISTINCT c) AS dc, min(c) AS mn, max(c) AS mx FROM fz_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now');
SELECT cq.create_query('fz_keys', 'SELECT c, count(*) AS n, max(c) AS mx FROM fz_src GROUP BY c',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'unlogged');
SELECT cq.create_query('fz_keys_store', 'SELECT c, count(*) AS n, min(c) AS mn FROM fz_src GROUP BY c',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory');
SELECT cq.create_query('fz_sess', 'SELECT c, s.session_start, s.session_end, count(*) AS n, max(c) AS mx
                         FROM fz_src, LATERAL cq.session_window(ts, interval ''30 seconds'') AS s
                        GROUP BY c, s.session_start, s.session_end',
                       output_mode => 'update', "trigger" => 'available_now');
SELECT cq.create_query('fz_dedup', 'SELECT DISTINCT c FROM fz_src', "trigger" => 'available_now');
SELECT cq.create_query('fz_dedup_on', 'SELECT DISTINCT ON (c) c, k FROM fz_src', "trigger" => 'available_now',
                       event_time => 'ts', watermark => '1 minute');
SELECT cq.create_query('fz_join', 'SELECT a.c, a.ts AS ta, b.ts AS tb FROM fz_src a JOIN fz_other b
                          ON a.c = b.c AND b.ts BETWEEN a.ts AND a.ts + interval ''20 seconds''',
                       source => 'fz_src, fz_other', event_time => 'fz_src.ts, fz_other.ts',
                       watermark => '10 minutes', "trigger" => 'available_now');
-- new rows, then a batch of each, from the session whose search_path shows fzs
INSERT INTO fz_src SELECT g % 4, chr(97 + g % 7), timestamptz '2026-01-01' + g * interval '3 seconds'
  FROM generate_series(41, 60) g;
INSERT INTO fz_other SELECT g % 4, chr(97 + g % 7), timestamptz '2026-01-01' + g * interval '3 seconds'
  FROM generate_series(31, 60) g;
CALL cq.run('fzs.fz_dist');
CALL cq.run('fzs.fz_keys');
CALL cq.run('fzs.fz_keys_store');
CALL cq.run('fzs.fz_sess');
CALL cq.run('fzs.fz_dedup');
CALL cq.run('fzs.fz_dedup_on');
CALL cq.run('fzs.fz_join');
SELECT name, state, last_error FROM cq.queries WHERE schema = 'fzs' ORDER BY name;
-- each equals its query (the session windows: at least one row per key; the
-- join: the pairs of both batches)
SELECT count(*) AS dist_diff FROM ((SELECT k, count(DISTINCT c), min(c), max(c) FROM fzs.fz_src GROUP BY k
                                    EXCEPT ALL TABLE fzs.fz_dist)
                       UNION ALL (TABLE fzs.fz_dist EXCEPT ALL
                                  SELECT k, count(DISTINCT c), min(c), max(c) FROM fzs.fz_src GROUP BY k)) x;
SELECT count(*) AS keys_diff FROM ((SELECT c, count(*), max(c) FROM fzs.fz_src GROUP BY c EXCEPT ALL TABLE fzs.fz_keys)
                       UNION ALL (TABLE fzs.fz_keys EXCEPT ALL SELECT c, count(*), max(c) FROM fzs.fz_src GROUP BY c)) x;
SELECT count(*) AS store_diff FROM ((SELECT c, count(*), min(c) FROM fzs.fz_src GROUP BY c EXCEPT ALL TABLE fzs.fz_keys_store)
                       UNION ALL (TABLE fzs.fz_keys_store EXCEPT ALL SELECT c, count(*), min(c) FROM fzs.fz_src GROUP BY c)) x;
SELECT (SELECT sum(n) FROM fzs.fz_sess) = (SELECT count(*) FROM fzs.fz_src) AS sess_all_rows;
SELECT count(*) AS dedup_diff FROM ((SELECT DISTINCT c FROM fzs.fz_src EXCEPT ALL TABLE fzs.fz_dedup)
                       UNION ALL (TABLE fzs.fz_dedup EXCEPT ALL SELECT DISTINCT c FROM fzs.fz_src)) x;
SELECT count(*) AS dedup_on_diff FROM ((SELECT DISTINCT c FROM fzs.fz_src EXCEPT ALL SELECT c FROM fzs.fz_dedup_on)
                       UNION ALL (SELECT c FROM fzs.fz_dedup_on EXCEPT ALL SELECT DISTINCT c FROM fzs.fz_src)) x;
SELECT count(*) AS join_diff FROM ((SELECT a.c, a.ts, b.ts FROM fzs.fz_src a JOIN fzs.fz_other b
                                      ON a.c = b.c AND b.ts BETWEEN a.ts AND a.ts + interval '20 seconds'
                                    EXCEPT ALL TABLE fzs.fz_join)
                       UNION ALL (TABLE fzs.fz_join EXCEPT ALL SELECT a.c, a.ts, b.ts FROM fzs.fz_src a JOIN fzs.fz_other b
                                      ON a.c = b.c AND b.ts BETWEEN a.ts AND a.ts + interval '20 seconds')) x;
SELECT cq.drop_query(name, drop_target => true) FROM cq.queries WHERE schema = 'fzs' ORDER BY name;
RESET search_path;
DROP SCHEMA fzs CASCADE;
