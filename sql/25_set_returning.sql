-- Set-returning functions (issue 10 part 5), Spark's explode: SRFs in the select list of a
-- stateless query (PostgreSQL's lock-step semantics for several of them), in LATERAL in
-- FROM (plain, CROSS JOIN LATERAL, LEFT JOIN LATERAL ... ON true, WITH ORDINALITY), and as
-- the input of an aggregation (update and complete modes, windows with a watermark in
-- update and append modes).  Oracle: the plain SELECT of the same query, after many random
-- batches of NULL arrays, empty arrays, NULL elements and missing jsonb keys.  A batch
-- reads each new source row once, so each row's expansion is written exactly once.  An SRF
-- over the result rows of an aggregation is refused; an SRF that fails on a row (jsonb that
-- is not an array) fails its batch like any poison row (sql/07_poison_rows.sql).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET timezone = 'UTC';
-- errors without the generated statement as context
\set VERBOSITY terse

-- shared helpers: wait_until, mismatches, fingerprint
\i sql/include/helpers.sql

SELECT setseed(0.25);
CREATE TABLE srf_src (id int, ts timestamptz, tags text[], payload jsonb, csv text);
INSERT INTO srf_src VALUES
  (1, '2024-01-01 00:00:01', '{a,b}', '{"items": [{"k": "x", "v": 1}, {"k": "y", "v": 2}]}', 'p,q'),
  (2, '2024-01-01 00:00:02', NULL, '{"items": []}', NULL),
  (3, '2024-01-01 00:00:03', '{}', '{}', ''),
  (4, '2024-01-01 00:00:04', '{c,NULL,a}', NULL, 'r');

------------------------------------------------------------------------------
-- 1. Stateless queries: SRFs in the select list and in LATERAL, append and update (= append)
------------------------------------------------------------------------------
CREATE TABLE srf_sel WITH (cq.trigger = 'available_now')
  AS SELECT id, unnest(tags) AS tag FROM srf_src;
-- several SRFs in one select list run in lock step, the shorter ones padded with NULLs
SELECT cq.create_query('srf_multi',
  $$SELECT id, unnest(tags) AS tag, regexp_split_to_table(csv, ',') AS part, generate_series(1, 2) AS g FROM srf_src$$,
  output_mode => 'update', "trigger" => 'available_now');
CREATE TABLE srf_json WITH (cq.trigger = 'available_now')
  AS SELECT id, jsonb_array_elements(payload->'items') AS item FROM srf_src;
CREATE TABLE srf_lat WITH (cq.trigger = 'available_now')
  AS SELECT s.id, t.tag, t.n FROM srf_src s, LATERAL unnest(s.tags) WITH ORDINALITY AS t(tag, n);
CREATE TABLE srf_cross WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT s.id, e->>'k' AS k, (e->>'v')::int AS v
       FROM srf_src s CROSS JOIN LATERAL jsonb_array_elements(s.payload->'items') AS e;
-- rows without elements are kept, with NULL
CREATE TABLE srf_left WITH (cq.trigger = 'available_now')
  AS SELECT s.id, t.tag FROM srf_src s LEFT JOIN LATERAL unnest(s.tags) AS t(tag) ON true;
TABLE srf_left ORDER BY id, tag;

------------------------------------------------------------------------------
-- 2. Aggregation over unnested rows: update and complete
------------------------------------------------------------------------------
CREATE TABLE srf_tag_u WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT tag, count(*) AS n, sum(id) AS s FROM srf_src, unnest(tags) tag GROUP BY tag;
SELECT cq.create_query('srf_tag_c',
  'SELECT tag, count(*) AS n, max(ts) AS last FROM srf_src CROSS JOIN LATERAL unnest(tags) AS tag GROUP BY tag ORDER BY tag',
  output_mode => 'complete', "trigger" => 'available_now');
CREATE TABLE srf_item_u WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT e->>'k' AS k, count(*) AS n, sum((e->>'v')::int) AS v
       FROM srf_src, LATERAL jsonb_array_elements(payload->'items') e GROUP BY 1;
-- windows with a watermark over unnested rows: update, and append (closed windows only)
CREATE VIEW srf_win_oracle AS
  SELECT w.window_start, w.window_end, tag, count(*) AS n, min(id) AS first_id
    FROM srf_src, LATERAL unnest(tags) AS tag, LATERAL cq.window(ts, '10 seconds') AS w GROUP BY 1, 2, 3;
CREATE VIEW srf_bin_oracle AS
  SELECT date_bin('7 seconds', ts, '2024-01-01') AS b, e->>'k' AS k, sum((e->>'v')::int) AS v
    FROM srf_src LEFT JOIN LATERAL jsonb_array_elements(payload->'items') AS e ON true GROUP BY 1, 2;
SELECT cq.create_query('srf_win_u', pg_get_viewdef('srf_win_oracle'), output_mode => 'update', "trigger" => 'available_now',
                       event_time => 'ts', watermark => '30 seconds');
SELECT cq.create_query('srf_win_a', pg_get_viewdef('srf_win_oracle'), output_mode => 'append', "trigger" => 'available_now',
                       event_time => 'ts', watermark => '30 seconds');
SELECT cq.create_query('srf_bin_a', pg_get_viewdef('srf_bin_oracle'), output_mode => 'append', "trigger" => 'available_now',
                       event_time => 'ts', watermark => '30 seconds', max_rows_per_trigger => 7);
DO $$
DECLARE
  q text;
BEGIN
  FOR q IN SELECT name FROM cq.queries WHERE name LIKE 'srf%' ORDER BY name LOOP
    CALL cq.run(q);
  END LOOP;
END $$;
TABLE srf_multi ORDER BY id, g;
TABLE srf_tag_u ORDER BY tag;
TABLE srf_item_u ORDER BY k;

-- every query against its oracle: the plain SELECT of its own text (for append-mode windows,
-- the windows closed by the watermark of its last batch)
CREATE FUNCTION srf_mismatches() RETURNS TABLE (name text, mismatches bigint) LANGUAGE sql AS $$
  SELECT q.name, mismatches(q.target, format('SELECT * FROM (%s) o WHERE %s', rtrim(q.query, '; ' || chr(10)),
           CASE q.name WHEN 'srf_win_a' THEN format('window_end <= %L', w.watermark)
                       WHEN 'srf_bin_a' THEN format('b + interval ''7 seconds'' <= %L', w.watermark)
                       ELSE 'true' END))
    FROM cq.queries q
    LEFT JOIN LATERAL (SELECT o.watermark FROM cq.offsets o WHERE o.name = q.name
                        ORDER BY o.batch_id DESC LIMIT 1) w ON true
   WHERE q.name LIKE 'srf%' ORDER BY q.name
$$;
SELECT * FROM srf_mismatches();

------------------------------------------------------------------------------
-- 3. Random batches: NULL and empty arrays, NULL elements, jsonb without items or with
-- an empty array, empty and NULL strings; event time advances with disorder below the delay
------------------------------------------------------------------------------
-- a volatile SRF is evaluated once per source row, by the batch that reads the row: no
-- oracle for its values, but each row's expansion is there once (1..n without gaps or repeats)
CREATE TABLE vol_srf WITH (cq.trigger = 'available_now')
  AS SELECT id, generate_series(1, 1 + (random() * 2)::int) AS g FROM srf_src;
CREATE TABLE srf_bad_rounds (round int, name text, mismatches bigint);
DO $$
DECLARE
  t timestamptz := '2024-01-01 00:00:10+00';
  r int;
  n int;
  id int := 100;
  q text;
BEGIN
  FOR r IN 1..40 LOOP
    t := t + random() * interval '8 seconds';
    FOR n IN 1..(random() * 6)::int LOOP
      id := id + 1;
      INSERT INTO srf_src VALUES (
        id,
        t - random() * interval '10 seconds',
        CASE WHEN random() < 0.1 THEN NULL
             WHEN random() < 0.15 THEN '{}'::text[]
             ELSE (SELECT array_agg((ARRAY['a', 'b', 'c', 'd', NULL])[1 + (random() * 4.99)::int])
                     FROM generate_series(1, 1 + (random() * 3)::int)) END,
        CASE WHEN random() < 0.1 THEN NULL
             WHEN random() < 0.1 THEN '{}'::jsonb
             ELSE jsonb_build_object('items', (SELECT coalesce(jsonb_agg(jsonb_build_object('k', 'k' || (random() * 2)::int,
                                                                                      'v', (random() * 9)::int)), '[]')
                                                 FROM generate_series(1, (random() * 3)::int))) END,
        CASE WHEN random() < 0.1 THEN NULL
             WHEN random() < 0.1 THEN ''
             ELSE (SELECT string_agg(chr(97 + (random() * 5)::int), ',') FROM generate_series(1, 1 + (random() * 3)::int)) END);
    END LOOP;
    COMMIT;
    FOR q IN SELECT name FROM cq.queries WHERE name LIKE 'srf%' ORDER BY name LOOP
      CALL cq.run(q);
    END LOOP;
    CALL cq.run('vol_srf');
    INSERT INTO srf_bad_rounds SELECT r, m.name, m.mismatches FROM srf_mismatches() m WHERE m.mismatches <> 0;
    COMMIT;
  END LOOP;
END $$;
-- no mismatch after any batch, no late row, and the data had every kind of value
SELECT count(*) AS bad_rounds FROM srf_bad_rounds;
SELECT * FROM srf_mismatches();
SELECT (SELECT sum(num_rows_dropped_by_watermark) FROM cq.progress WHERE name LIKE 'srf%') AS dropped,
       count(*) FILTER (WHERE tags IS NULL) > 0 AS null_arrays,
       count(*) FILTER (WHERE tags = '{}') > 0 AS empty_arrays,
       count(*) FILTER (WHERE array_position(tags, NULL) IS NOT NULL) > 0 AS null_elements,
       count(*) FILTER (WHERE payload->'items' IS NULL) > 0 AS no_items,
       count(*) FILTER (WHERE payload->'items' = '[]') > 0 AS empty_items,
       (SELECT count(*) FROM srf_win_a) > 20 AS many_windows
  FROM srf_src;
-- each source row once in num_input_rows (not once per element), and each expansion once
SELECT name, sum(num_input_rows) = (SELECT count(*) FROM srf_src) AS input_rows_are_source_rows
  FROM cq.progress WHERE name IN ('srf_sel', 'srf_multi', 'srf_json', 'srf_lat', 'srf_tag_u') GROUP BY name ORDER BY name;
SELECT count(*) = count(DISTINCT (id, n)) AS no_duplicates FROM srf_lat;
SELECT count(*) = (SELECT count(*) FROM srf_src) AS every_row_once,
       bool_and(n = mx AND mx BETWEEN 1 AND 3) AS one_expansion_each, count(DISTINCT mx) > 1 AS volatile
  FROM (SELECT id, count(*) AS n, max(g) AS mx, count(DISTINCT g) AS d FROM vol_srf GROUP BY id) v
 WHERE n = d;

------------------------------------------------------------------------------
-- 4. A row the function fails on (jsonb that is not an array) is a poison row: the batch
-- fails and changes nothing, the query is 'failed' with PostgreSQL's error, the other
-- queries go on; a filter (cq.alter_query) lets it catch up exactly
------------------------------------------------------------------------------
CREATE TABLE srf_poison (id int, payload jsonb);
INSERT INTO srf_poison VALUES (1, '{"items": [{"k": "x", "v": 1}]}'), (2, '{}');
CREATE TABLE poison_srf_json WITH (cq.trigger = 'available_now')
  AS SELECT id, jsonb_array_elements(payload->'items') AS item FROM srf_poison;
CREATE TABLE poison_srf_item WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT e->>'k' AS k, count(*) AS n, sum((e->>'v')::int) AS v
       FROM srf_poison, LATERAL jsonb_array_elements(payload->'items') e GROUP BY 1;
CREATE TABLE poison_srf_tag WITH (cq.trigger = 'available_now')
  AS SELECT id, jsonb_object_keys(payload) AS key FROM srf_poison;
SELECT fingerprint('poison_srf_json') AS fp_json, fingerprint('poison_srf_item') AS fp_item \gset
INSERT INTO srf_poison VALUES (3, '{"items": [{"k": "y", "v": 2}]}'), (4, '{"items": {"k": "x"}}'), (5, '{"items": 7}');
CALL cq.run('poison_srf_json');
CALL cq.run('poison_srf_item');
CALL cq.run('poison_srf_tag');
SELECT name, state, last_error FROM cq.queries WHERE name LIKE 'poison_srf%' ORDER BY name;
SELECT fingerprint('poison_srf_json') = :'fp_json' AS json_unchanged, fingerprint('poison_srf_item') = :'fp_item' AS item_unchanged,
       mismatches('poison_srf_tag', 'SELECT id, jsonb_object_keys(payload) FROM srf_poison') AS tag_mismatches;
SELECT cq.alter_query('poison_srf_json',
  query => $$SELECT id, jsonb_array_elements(payload->'items') AS item FROM srf_poison WHERE jsonb_typeof(payload->'items') = 'array'$$);
SELECT cq.alter_query('poison_srf_item',
  query => $$SELECT e->>'k' AS k, count(*) AS n, sum((e->>'v')::int) AS v
               FROM srf_poison, LATERAL jsonb_array_elements(payload->'items') e
              WHERE jsonb_typeof(payload->'items') = 'array' GROUP BY 1$$);
CALL cq.run('poison_srf_json');
CALL cq.run('poison_srf_item');
SELECT name, state, last_error, mismatches(target, query) AS mismatches
  FROM cq.queries WHERE name LIKE 'poison_srf%' ORDER BY name;
TABLE poison_srf_item ORDER BY k;

-- event-time statistics count the rows the FROM clause keeps (as for joins): a row whose
-- LATERAL expansion is empty does not move the watermark; with a select-list SRF every row counts
CREATE TABLE srf_et (ts timestamptz, tags text[]);
INSERT INTO srf_et VALUES ('2024-01-01 00:00:01', '{a}'), ('2024-01-01 00:10:00', '{}');
SELECT cq.create_query('et_srf_lateral', 'SELECT t, count(*) AS n FROM srf_et, LATERAL unnest(tags) t GROUP BY t',
                       output_mode => 'update', event_time => 'ts', watermark => '1 second', "trigger" => 'available_now');
SELECT cq.create_query('et_srf_select', 'SELECT ts, unnest(tags) AS t FROM srf_et',
                       event_time => 'ts', watermark => '1 second', "trigger" => 'available_now');
CALL cq.run('et_srf_lateral');
CALL cq.run('et_srf_select');
SELECT name, num_input_rows, num_output_rows, event_time_max FROM cq.progress WHERE name LIKE 'et_srf%' ORDER BY name;

------------------------------------------------------------------------------
-- 5. Rejections, each with its own error and hint
------------------------------------------------------------------------------
\set VERBOSITY default
-- an SRF over the result rows of an aggregation
CREATE TABLE srf_bad WITH (cq.output_mode = 'update')
  AS SELECT id % 2 AS k, unnest(ARRAY[min(id), max(id)]) AS m FROM srf_src GROUP BY 1;
SELECT cq.create_query('srf_bad', 'SELECT count(*) AS n, generate_series(1, count(*)::int) AS i FROM srf_src', output_mode => 'complete');
-- a stateless query has no complete mode, with or without SRFs
SELECT cq.create_query('srf_bad', 'SELECT id, unnest(tags) AS tag FROM srf_src', output_mode => 'complete');
-- the stream on the nullable side of a join with a function
SELECT cq.create_query('srf_bad', 'SELECT g, s.id FROM generate_series(1, 3) g LEFT JOIN srf_src s ON s.id = g');
-- changing the FROM clause of a query is refused as before
SELECT cq.alter_query('srf_sel', query => 'SELECT s.id, t FROM srf_src s, LATERAL unnest(s.tags) t');
\set VERBOSITY terse
