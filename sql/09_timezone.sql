-- Batches run in the TimeZone of the query's creator, whoever runs them (a
-- worker runs in the server's TimeZone, a CALL in its session's).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET timezone = 'Asia/Tokyo';
CREATE TABLE tz_src (ts timestamptz);
CREATE TABLE tz_days WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT date_trunc('day', ts) AS day, count(*) AS n FROM tz_src GROUP BY 1 WITH NO DATA;
SET timezone = 'UTC';
INSERT INTO tz_src VALUES ('2024-01-01 20:00+00'), ('2024-01-01 10:00+00');  -- in Tokyo: Jan 2 05:00, Jan 1 19:00
CALL cq.run('tz_days');
SELECT day, n FROM tz_days ORDER BY day;
SELECT name, timezone FROM cq.queries WHERE name = 'tz_days';
DROP TABLE tz_days, tz_src;
