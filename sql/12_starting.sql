-- Issue 9 item 12: `starting` applies when a query starts (creation, cq.reset), as Spark's
-- startingOffsets; changed after batch 0 it waits for cq.reset.  What batch 0 read is
-- recorded (start_offset), and a rebuild of lost unlogged state refolds exactly those rows,
-- whatever the option says now.  Lost state is simulated as a crash-restart leaves it:
-- the query's row of the unlogged cq.state_sentinel gone, its unlogged state table empty.
CREATE EXTENSION IF NOT EXISTS pg_cq;

CREATE FUNCTION st_lose_state(q text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM cq.state_sentinel WHERE query_id = (SELECT id FROM cq.queries WHERE name = q);
  EXECUTE format('TRUNCATE %s', (SELECT state_table FROM cq.queries WHERE name = q));
END $$;

-- 5 rows before the query; starting = latest reads only the 3 after it
CREATE TABLE st_src (k int);
INSERT INTO st_src SELECT 1 FROM generate_series(1, 5);
CREATE TABLE st_latest WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.starting = 'latest')
  AS SELECT k, count(*) AS n FROM st_src GROUP BY k;
CREATE TABLE st_earliest WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM st_src GROUP BY k;
INSERT INTO st_src VALUES (1), (1), (1);
CALL cq.run('st_latest');
CALL cq.run('st_earliest');
SELECT 'latest' AS q, n FROM st_latest UNION ALL SELECT 'earliest', n FROM st_earliest;

-- the option changes after batch 0: noted, not applied
SELECT cq.alter_query('st_latest', starting => 'earliest');
ALTER TABLE st_earliest SET (cq.starting = 'latest');
SELECT name, starting, start_offset::text = '1:1:' AS reads_history FROM cq.queries
 WHERE name LIKE 'st\_%' ORDER BY name;
-- a crash empties the state; the rebuild refolds what the queries really processed
SELECT st_lose_state('st_latest'), st_lose_state('st_earliest');
INSERT INTO st_src VALUES (1);
CALL cq.run('st_latest');
CALL cq.run('st_earliest');
SELECT 'latest' AS q, n FROM st_latest UNION ALL SELECT 'earliest', n FROM st_earliest;

-- cq.reset starts over from the option
SELECT cq.reset('st_latest');
CALL cq.run('st_latest');
SELECT n FROM st_latest;

-- before batch 0 a change takes effect at once
CREATE TABLE st_late WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.starting = 'latest')
  AS SELECT k, count(*) AS n FROM st_src GROUP BY k WITH NO DATA;
SELECT cq.alter_query('st_late', starting => 'earliest');
CALL cq.run('st_late');
SELECT n FROM st_late;
SELECT st_lose_state('st_late');
INSERT INTO st_src VALUES (1);
CALL cq.run('st_late');
SELECT n, (SELECT count(*) FROM st_src) AS source_rows FROM st_late;

DROP TABLE st_latest, st_earliest, st_late, st_src;
DROP FUNCTION st_lose_state(text);
