-- Issue 10 part 3: DISTINCT aggregates, exactly.  The (group, value) pairs seen are kept in
-- the query's table cq_state.sd_<id>; a batch inserts the pairs not seen before and folds only
-- those.  Randomized oracle (the plain SELECT) after many batches with NULL keys and values,
-- duplicates within a batch and across batches, in update and complete mode, with a row
-- limit and without GROUP BY; windows with a watermark evict their pairs; lost unlogged
-- state is rebuilt with its pairs; errors; cq.alter_query refuses a change of DISTINCT-ness.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SELECT setseed(0.23);

CREATE TABLE da (k1 int, k2 text, i int, v numeric(8,2), t text, b boolean);

-- several DISTINCT aggregates on different arguments, with and without FILTER, sharing
-- values (count and sum of DISTINCT i), mixed with plain aggregates; min(DISTINCT) and
-- bool_or(DISTINCT) are the same without DISTINCT
CREATE VIEW da_oracle AS
  SELECT k1, k2, count(*) AS n, count(DISTINCT i) AS di, sum(DISTINCT i) AS si, avg(DISTINCT v) AS av,
         count(DISTINCT t) AS dt, sum(i) AS plain_si, count(i) AS plain_ni,
         count(DISTINCT i) FILTER (WHERE b) AS di_b, sum(DISTINCT i) FILTER (WHERE b) AS si_b,
         avg(DISTINCT i) AS ai, var_samp(DISTINCT v) AS vv, bit_xor(DISTINCT i) AS xi,
         min(DISTINCT t) AS mt, bool_or(DISTINCT b) AS ob
    FROM da GROUP BY k1, k2;

SELECT cq.create_query('da_update', pg_get_viewdef('da_oracle'), output_mode => 'update',
                       "trigger" => 'available_now');
SELECT cq.create_query('da_complete', pg_get_viewdef('da_oracle'), output_mode => 'complete',
                       complete_refresh => 'delete', "trigger" => 'available_now');
SELECT cq.create_query('da_limited', pg_get_viewdef('da_oracle'), output_mode => 'update',
                       max_rows_per_trigger => 30, state_storage => 'logged', "trigger" => 'available_now');
CREATE VIEW da_global_oracle AS
  SELECT count(DISTINCT i) AS di, sum(DISTINCT v) AS sv, count(DISTINCT k2) AS dk, count(*) AS n FROM da;
SELECT cq.create_query('da_global', pg_get_viewdef('da_global_oracle'), output_mode => 'update',
                       "trigger" => 'available_now');

-- the table of pairs: next to the state, same owner and storage
SELECT q.name, c.relname ~ '^sd_[0-9]+$' AS pairs_table, c.relpersistence,
       c.relowner = s.relowner AS same_owner, c.relpersistence = s.relpersistence AS same_storage
  FROM cq.queries q
  JOIN pg_class s ON s.oid = q.state_table
  JOIN pg_class c ON c.relnamespace = 'cq_state'::regnamespace AND c.relname = 'sd_' || q.id
 WHERE q.name LIKE 'da\_%' ORDER BY 1;

-- values from small domains: many duplicates in a batch and across batches
CREATE FUNCTION da_rows(n int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO da
  SELECT CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 4)::int END,
         CASE WHEN random() < 0.1 THEN NULL ELSE chr(97 + (random() * 2)::int) END,
         CASE WHEN random() < 0.15 THEN NULL ELSE (random() * 30)::int - 10 END,
         CASE WHEN random() < 0.15 THEN NULL ELSE round((random() * 20)::numeric, 1) END,
         CASE WHEN random() < 0.15 THEN NULL ELSE chr(65 + (random() * 25)::int) END,
         CASE WHEN random() < 0.1 THEN NULL ELSE random() < 0.5 END
    FROM generate_series(1, n)
$$;

-- mismatches between a target and an oracle view, by value and as text
CREATE FUNCTION da_diff(oracle text, target text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  d bigint;
  t bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((SELECT * FROM %s o EXCEPT ALL SELECT * FROM %s t) UNION ALL
                                        (SELECT * FROM %s t EXCEPT ALL SELECT * FROM %s o)) x', oracle, target, target, oracle)
    INTO d;
  EXECUTE format('SELECT count(*) FROM ((SELECT format(''%%s'', o) FROM %s o EXCEPT ALL SELECT format(''%%s'', t) FROM %s t) UNION ALL
                                        (SELECT format(''%%s'', t) FROM %s t EXCEPT ALL SELECT format(''%%s'', o) FROM %s o)) x',
                 oracle, target, target, oracle)
    INTO t;
  RETURN d + t;
END $$;

DO $$
BEGIN
  FOR b IN 1..30 LOOP
    PERFORM da_rows((random() * 40)::int);
    COMMIT;
    PERFORM da_rows((random() * 10)::int);
    IF b % 7 = 0 THEN
      -- a transaction that rolls back is never counted, nor are its pairs kept
      BEGIN
        PERFORM da_rows(30);
        RAISE EXCEPTION 'roll back';
      EXCEPTION WHEN raise_exception THEN NULL;
      END;
    END IF;
    COMMIT;
    IF b % 3 = 0 THEN
      CALL cq.run('da_update');
      CALL cq.run('da_complete');
      CALL cq.run('da_limited');
      CALL cq.run('da_global');
      IF da_diff('da_oracle', 'da_update') <> 0 OR da_diff('da_oracle', 'da_complete') <> 0
         OR da_diff('da_oracle', 'da_limited') <> 0 OR da_diff('da_global_oracle', 'da_global') <> 0 THEN
        RAISE EXCEPTION 'target differs from the oracle after batch round %', b;
      END IF;
    END IF;
  END LOOP;
END $$;

CALL cq.run('da_update');
CALL cq.run('da_complete');
CALL cq.run('da_limited');
CALL cq.run('da_global');
SELECT (SELECT count(*) > 500 FROM da) AS enough_rows,
       (SELECT count(*) FROM cq.progress WHERE name = 'da_limited') > 20 AS many_batches,
       da_diff('da_oracle', 'da_update') AS update_diff,
       da_diff('da_oracle', 'da_complete') AS complete_diff,
       da_diff('da_oracle', 'da_limited') AS limited_diff,
       da_diff('da_global_oracle', 'da_global') AS global_diff;
-- NULL keys and groups whose DISTINCT values are all NULL
SELECT count(*) FILTER (WHERE k1 IS NULL OR k2 IS NULL) > 0 AS null_keys,
       count(*) FILTER (WHERE di <> plain_ni) > 0 AS duplicates_seen
  FROM da_update;

-- the pairs kept: one per (group, value) of each set of values, never a NULL value; the
-- DISTINCT aggregates of i share theirs (4 sets: i, v, t, i with FILTER (WHERE b)); min and
-- bool_or keep none
SELECT format('cq_state.sd_%s', id) AS pairs FROM cq.queries WHERE name = 'da_update' \gset
SELECT count(*) FILTER (WHERE num_nonnulls(v1, v2, v3, v4) <> 1) AS bad_rows,
       count(*) = (SELECT count(*) FROM (SELECT DISTINCT k1, k2, i FROM da WHERE i IS NOT NULL) x)
                + (SELECT count(*) FROM (SELECT DISTINCT k1, k2, v FROM da WHERE v IS NOT NULL) x)
                + (SELECT count(*) FROM (SELECT DISTINCT k1, k2, t FROM da WHERE t IS NOT NULL) x)
                + (SELECT count(*) FROM (SELECT DISTINCT k1, k2, i FROM da WHERE i IS NOT NULL AND b) x)
         AS one_row_per_pair,
       count(DISTINCT j) AS sets
  FROM :pairs;

-- lost unlogged state (as a crash-restart leaves it: the sentinel row gone, state and
-- pairs empty) is rebuilt with its pairs before the next batch
CREATE FUNCTION da_lose_state(q text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM cq.state_sentinel WHERE query_id = (SELECT id FROM cq.queries WHERE name = q);
  EXECUTE format('TRUNCATE %s, cq_state.sd_%s', (SELECT state_table FROM cq.queries WHERE name = q),
                 (SELECT id FROM cq.queries WHERE name = q));
END $$;
SELECT da_lose_state('da_update');
SELECT da_lose_state('da_global');
SELECT da_rows(60);
CALL cq.run('da_update');
CALL cq.run('da_global');
SELECT name, state_rebuilt_at IS NOT NULL AS rebuilt FROM cq.queries WHERE name IN ('da_update', 'da_global') ORDER BY 1;
SELECT da_diff('da_oracle', 'da_update') AS update_diff, da_diff('da_global_oracle', 'da_global') AS global_diff;
SELECT da_rows(60);
CALL cq.run('da_update');
CALL cq.run('da_global');
SELECT da_diff('da_oracle', 'da_update') AS update_diff, da_diff('da_global_oracle', 'da_global') AS global_diff;

-- cq.alter_query: DISTINCT-ness is part of the state, refused either way (min too, although
-- its state would be the same); a filter change keeps the state and its pairs
SELECT cq.alter_query('da_global', query => 'SELECT count(i) AS di, sum(DISTINCT v) AS sv, count(DISTINCT k2) AS dk, count(*) AS n FROM da');
SELECT cq.alter_query('da_global', query => 'SELECT count(DISTINCT i) AS di, sum(v) AS sv, count(DISTINCT k2) AS dk, count(*) AS n FROM da');
CREATE TABLE da_m WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k1, min(DISTINCT i) AS mi FROM da GROUP BY k1;
SELECT cq.alter_query('da_m', query => 'SELECT k1, min(i) AS mi FROM da GROUP BY k1');
SELECT count(*) AS pairs_of_min FROM pg_class
 WHERE relnamespace = 'cq_state'::regnamespace AND relname = (SELECT 'sd_' || id FROM cq.queries WHERE name = 'da_m');
SELECT di AS di_before, n AS n_before FROM da_global \gset
SELECT cq.alter_query('da_global', query => 'SELECT count(DISTINCT i) AS di, sum(DISTINCT v) AS sv, count(DISTINCT k2) AS dk, count(*) AS n FROM da WHERE i > 0 OR i IS NULL');
-- two new values, one filtered out, one seen twice, and NULL
INSERT INTO da (i) VALUES (-100), (1000), (1000), (NULL);
CALL cq.run('da_global');
SELECT di - :di_before AS new_distinct, n - :n_before AS new_rows FROM da_global;

-- errors: DISTINCT of an aggregate pg_cq cannot merge, of a value that cannot be a column
SELECT cq.create_query('da_bad', 'SELECT k1, array_agg(DISTINCT i) FROM da GROUP BY k1', output_mode => 'update');
SELECT cq.create_query('da_bad', 'SELECT k1, count(DISTINCT (i, t)) FROM da GROUP BY k1', output_mode => 'update');

-- cq.reset empties the pairs; dropping the query drops them
SELECT cq.reset('da_update');
SELECT count(*) AS pairs_after_reset FROM :pairs;
CALL cq.run('da_update');
SELECT da_diff('da_oracle', 'da_update') AS update_diff_after_reset;
DROP TABLE da_update;
SELECT to_regclass(:'pairs') IS NULL AS pairs_dropped;

-- windows with a watermark: distinct users per window and key; no row is late (out of
-- order by less than the delay), so update targets equal the oracle, append emits each
-- closed window once; the pairs of closed windows leave with their state
SET timezone = 'UTC';
CREATE TABLE dw (ts timestamptz, k int, u int);
CREATE VIEW dw_slide_oracle AS
  SELECT w.window_start, w.window_end, k, count(DISTINCT u) AS du, sum(DISTINCT u) AS su, count(*) AS n
    FROM dw, LATERAL cq.window(ts, '10 seconds', '5 seconds') w GROUP BY 1, 2, 3;
CREATE VIEW dw_bin_oracle AS
  SELECT date_bin('10 seconds', ts, '2024-01-01') AS b, k, count(DISTINCT u) AS du,
         avg(DISTINCT u) FILTER (WHERE u % 2 = 0) AS aeven, count(*) AS n
    FROM dw GROUP BY 1, 2;
SELECT cq.create_query('dw_slide_u', pg_get_viewdef('dw_slide_oracle'), output_mode => 'update',
                       "trigger" => 'available_now', event_time => 'ts', watermark => '30 seconds');
SELECT cq.create_query('dw_bin_a', pg_get_viewdef('dw_bin_oracle'), output_mode => 'append',
                       "trigger" => 'available_now', event_time => 'ts', watermark => '30 seconds');
CREATE TABLE dw_sizes (id serial, name text, pairs bigint);
CREATE FUNCTION dw_pairs(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM cq_state.sd_%s', (SELECT id FROM cq.queries WHERE name = q)) INTO n;
  RETURN n;
END $$;
-- pairs of windows the watermark closed (none may stay)
CREATE FUNCTION dw_closed_pairs(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM cq_state.sd_%s WHERE e <= $1', (SELECT id FROM cq.queries WHERE name = q))
    INTO n USING (SELECT watermark FROM cq.offsets WHERE name = q ORDER BY batch_id DESC LIMIT 1);
  RETURN n;
END $$;

DO $$
DECLARE
  t timestamptz := '2024-01-01 00:00:00+00';
BEGIN
  FOR r IN 1..80 LOOP
    t := t + random() * interval '8 seconds';
    INSERT INTO dw
    SELECT t - random() * interval '20 seconds', (random() * 2)::int,
           CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 12)::int END
      FROM generate_series(1, (random() * 15)::int);
    COMMIT;
    IF r % 3 = 0 THEN
      CALL cq.run('dw_slide_u');
      CALL cq.run('dw_bin_a');
      INSERT INTO dw_sizes (name, pairs) VALUES ('dw_slide_u', dw_pairs('dw_slide_u')), ('dw_bin_a', dw_pairs('dw_bin_a'));
      IF dw_closed_pairs('dw_slide_u') <> 0 OR dw_closed_pairs('dw_bin_a') <> 0 THEN
        RAISE EXCEPTION 'pairs of closed windows kept after round %', r;
      END IF;
    END IF;
  END LOOP;
END $$;
CALL cq.run('dw_slide_u');
CALL cq.run('dw_bin_a');
SELECT (SELECT sum(num_rows_dropped_by_watermark) FROM cq.progress WHERE name LIKE 'dw\_%') AS dropped,
       da_diff('dw_slide_oracle', 'dw_slide_u') AS slide_diff,
       da_diff(format('(SELECT * FROM dw_bin_oracle WHERE b + interval ''10 seconds'' <= %L)', w), 'dw_bin_a') AS bin_append_diff,
       (SELECT count(*) FROM dw_bin_a) > 10 AS many_windows
  FROM (SELECT watermark AS w FROM cq.offsets WHERE name = 'dw_bin_a' ORDER BY batch_id DESC LIMIT 1) a;
-- the pairs stay bounded: only open windows keep theirs, a fraction of all pairs seen (one per
-- distinct value of a window and key), and their number goes down as windows close
SELECT s.name, max(s.pairs) * 2 < CASE s.name WHEN 'dw_slide_u' THEN (SELECT sum(du) FROM dw_slide_oracle)
                                              ELSE (SELECT sum(du) FROM dw_bin_oracle) END AS pairs_bounded,
       bool_or(s.pairs < s.prev) AS pairs_shrank, dw_closed_pairs(s.name) AS closed_pairs
  FROM (SELECT name, pairs, lag(pairs) OVER (PARTITION BY name ORDER BY id) AS prev FROM dw_sizes) s
 GROUP BY s.name ORDER BY 1;

-- a late row with a new value: dropped, and its pair is not kept
SELECT dw_pairs('dw_slide_u') AS pairs_before \gset
INSERT INTO dw VALUES ('2024-01-01 00:00:01+00', 0, 999);
CALL cq.run('dw_slide_u');
SELECT num_rows_dropped_by_watermark AS dropped, dw_pairs('dw_slide_u') - :pairs_before AS new_pairs,
       (SELECT count(*) FROM dw_slide_u WHERE su >= 999) AS in_target
  FROM cq.progress WHERE name = 'dw_slide_u' ORDER BY batch_id DESC LIMIT 1;

-- lost state of a windowed query: rebuilt with the pairs of the open windows only
SELECT da_lose_state('dw_slide_u');
INSERT INTO dw SELECT ts + interval '3 seconds', k, u FROM dw WHERE ts > (SELECT max(ts) - interval '15 seconds' FROM dw);
CALL cq.run('dw_slide_u');
SELECT state_rebuilt_at IS NOT NULL AS rebuilt, dw_closed_pairs('dw_slide_u') AS closed_pairs,
       da_diff('(SELECT * FROM dw_slide_oracle WHERE NOT (window_start <= ''2024-01-01 00:00:01+00'' AND k = 0))',
               '(SELECT * FROM dw_slide_u WHERE NOT (window_start <= ''2024-01-01 00:00:01+00'' AND k = 0))') AS slide_diff
  FROM cq.queries WHERE name = 'dw_slide_u';
