-- Session 43: an event-time column whose type is a domain over timestamptz or timestamp is
-- read as its base type (it was refused: "must be of type timestamp with time zone or
-- timestamp"), in every shape that uses event time: a watermark over a window, the column
-- itself as a key (on the store, which evicts by it, and on the table path), date_bin, a
-- deduplication within the watermark, session windows and a join of two streams.  The
-- domain's CHECK stays the source's own: a row it refuses never reaches a query.  Each
-- target equals its query run as a plain SELECT over the rows the watermark kept.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET cq.run_in_worker = off;
SET TimeZone = 'UTC';
CREATE DOMAIN etd_tz AS timestamptz;
CREATE DOMAIN etd_tzc AS timestamptz CHECK (VALUE >= '2020-01-01' AND VALUE < '2030-01-01');
CREATE DOMAIN etd_ts AS timestamp NOT NULL;
CREATE TABLE etd_a (ts etd_tzc, k text);
CREATE TABLE etd_b (ts etd_tz, k text);
CREATE TABLE etd_c (ts etd_ts, k text);
INSERT INTO etd_a VALUES ('2020-01-01 00:00+00', 'a'), ('2020-01-01 00:05+00', 'b');
INSERT INTO etd_b VALUES ('2020-01-01 00:00:30+00', 'a'), ('2020-01-01 00:06+00', 'b');
INSERT INTO etd_c VALUES ('2020-01-01 00:00', 'a'), ('2020-01-01 00:07', 'b');

CREATE TABLE etd_win WITH (cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '1 minute',
                           cq.trigger = 'available_now')
  AS SELECT w.window_start, w.window_end, k, count(*) AS n
       FROM etd_a, LATERAL cq.window(ts, '10 minutes') AS w GROUP BY 1, 2, 3;
CREATE TABLE etd_key WITH (cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '1 minute',
                           cq.trigger = 'available_now')
  AS SELECT ts, count(*) AS n FROM etd_a GROUP BY ts;
CREATE TABLE etd_key_t WITH (cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '1 minute',
                             cq.trigger = 'available_now', cq.state_storage = 'unlogged')
  AS SELECT ts, k, count(*) AS n FROM etd_b GROUP BY ts, k;
CREATE TABLE etd_bin WITH (cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '1 minute',
                           cq.trigger = 'available_now')
  AS SELECT date_bin('5 minutes', ts, '2000-01-01') AS b, count(*) AS n FROM etd_c GROUP BY 1;
CREATE TABLE etd_dedup WITH (cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '1 minute',
                             cq.trigger = 'available_now')
  AS SELECT DISTINCT k, ts FROM etd_a;
CREATE TABLE etd_sess WITH (cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '1 minute',
                            cq.trigger = 'available_now')
  AS SELECT k, s.session_start, s.session_end, count(*) AS n
       FROM etd_b, LATERAL cq.session_window(ts, interval '2 minutes') AS s GROUP BY 1, 2, 3;
CREATE TABLE etd_join WITH (cq.output_mode = 'append', cq.source = 'etd_a, etd_b',
                            cq.event_time = 'etd_a.ts, etd_b.ts', cq.watermark = '1 minute',
                            cq.trigger = 'available_now')
  AS SELECT a.k, a.ts AS a_ts, b.ts AS b_ts FROM etd_a a JOIN etd_b b
       ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + interval '10 minutes';
SELECT name, event_time, state_path FROM cq.queries WHERE name LIKE 'etd\_%' ORDER BY name;

-- later rows (after the watermarks of batch 0), and one the domain refuses
INSERT INTO etd_a VALUES ('2020-01-01 00:08+00', 'a'), ('2020-01-01 01:00+00', 'c');
INSERT INTO etd_b VALUES ('2020-01-01 00:09+00', 'a'), ('2020-01-01 01:00+00', 'c');
INSERT INTO etd_c VALUES ('2020-01-01 00:09', 'a'), ('2020-01-01 01:00', 'c');
INSERT INTO etd_a VALUES ('2019-06-01', 'refused');
DO $$
DECLARE q text;
BEGIN
  FOREACH q IN ARRAY ARRAY['etd_win', 'etd_key', 'etd_key_t', 'etd_bin', 'etd_dedup', 'etd_sess', 'etd_join'] LOOP
    CALL cq.run(q);
  END LOOP;
END $$;
-- late rows after the watermark passed them
INSERT INTO etd_a VALUES ('2020-01-01 00:01+00', 'late');
INSERT INTO etd_b VALUES ('2020-01-01 00:01+00', 'late');
INSERT INTO etd_c VALUES ('2020-01-01 00:01', 'late');
DO $$
DECLARE q text;
BEGIN
  FOREACH q IN ARRAY ARRAY['etd_win', 'etd_key', 'etd_key_t', 'etd_bin', 'etd_dedup', 'etd_sess', 'etd_join'] LOOP
    CALL cq.run(q);
  END LOOP;
END $$;
SELECT name, watermark FROM cq.status WHERE name LIKE 'etd\_%' ORDER BY name;

TABLE etd_win ORDER BY 1, 3;
TABLE etd_key ORDER BY 1;
TABLE etd_key_t ORDER BY 1, 2;
TABLE etd_bin ORDER BY 1;
TABLE etd_dedup ORDER BY 2, 1;
TABLE etd_sess ORDER BY 1, 2;
TABLE etd_join ORDER BY 1, 2, 3;
-- the plain queries over the rows the watermark kept (all but the late ones)
SELECT NOT EXISTS (SELECT ts, n FROM etd_key EXCEPT SELECT ts, count(*) FROM etd_a WHERE k <> 'late' GROUP BY ts)
   AND NOT EXISTS (SELECT ts, count(*) FROM etd_a WHERE k <> 'late' GROUP BY ts EXCEPT SELECT ts, n FROM etd_key)
       AS key_equal,
       NOT EXISTS (SELECT k, ts FROM etd_dedup EXCEPT SELECT DISTINCT k, ts FROM etd_a WHERE k <> 'late')
   AND NOT EXISTS (SELECT DISTINCT k, ts FROM etd_a WHERE k <> 'late' EXCEPT SELECT k, ts FROM etd_dedup)
       AS dedup_equal,
       (SELECT count(*) FROM etd_join) = (SELECT count(*) FROM etd_a a JOIN etd_b b
            ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + interval '10 minutes'
         WHERE a.k <> 'late' AND b.k <> 'late') AS join_equal;

DO $$
DECLARE q text;
BEGIN
  FOREACH q IN ARRAY ARRAY['etd_win', 'etd_key', 'etd_key_t', 'etd_bin', 'etd_dedup', 'etd_sess', 'etd_join'] LOOP
    PERFORM cq.drop_query(q, drop_target => true);
  END LOOP;
END $$;
-- a domain over another type is still refused, naming the domain
CREATE DOMAIN etd_int AS int;
CREATE TABLE etd_d (ts etd_int);
SELECT cq.create_query('etd_bad', 'SELECT ts, count(*) FROM etd_d GROUP BY ts', output_mode => 'update',
                       event_time => 'ts', watermark => '1 minute');
DROP TABLE etd_a, etd_b, etd_c, etd_d;
DROP DOMAIN etd_tz, etd_tzc, etd_ts, etd_int;
