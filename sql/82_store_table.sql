-- Issue 15, a batch in a new session: the store's group table is a slot
-- array of its own (src/store_table.c: open addressing, linear probing,
-- deletion by moving later slots back) instead of a dshash, for fewer
-- shared-memory pages touched per lookup.  Exercised here: a table made
-- for batch 0's groups at once, growth over later batches (new windows of
-- up to 600 keys), deletions of many groups per batch (windows closed by
-- the watermark) and lookups of groups whose slots were moved back by
-- them, cq.reset (a new table), and a transaction whose publication is
-- discarded after the batch linked its new groups into the table (a second
-- store query of the same transaction over cq.state_memory at commit).
-- After every batch the store's rows (cq.state_rows, as the final view
-- reads them) equal its state-table twin's state rows, and the targets are
-- equal row for row.
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SET client_min_messages = warning;
SET timezone = 'UTC';
SELECT setseed(0.82);

CREATE TABLE gt_src (k int, x int, ts timestamptz);
-- n rows over up to `keys` keys, up to 8 s before t
CREATE FUNCTION gt_rows(n int, keys int, t timestamptz) RETURNS void LANGUAGE sql AS $$
  INSERT INTO gt_src
  SELECT CASE WHEN random() < 0.02 THEN NULL ELSE (random() * keys)::int END,
         (random() * 1000)::int - 500,
         t - make_interval(secs => random() * 8)
    FROM generate_series(1, n)
$$;
-- rows of the store of query m (as the final view reads them) that are not
-- the state rows of its twin t, both ways, compared as text
CREATE FUNCTION gt_state_bad(m text, t text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  mid int := (SELECT id FROM cq.queries WHERE name = m);
  tid int := (SELECT id FROM cq.queries WHERE name = t);
  n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((SELECT x::text FROM cq.state_rows(%s, NULL::cq_state.%I) x '
                 'EXCEPT ALL SELECT y::text FROM cq_state.%I y) UNION ALL (SELECT y::text FROM cq_state.%I y '
                 'EXCEPT ALL SELECT x::text FROM cq.state_rows(%s, NULL::cq_state.%I) x)) z',
                 mid, 's_' || mid, 's_' || tid, 's_' || tid, mid, 's_' || mid) INTO n;
  RETURN n;
END $$;

-- history before the queries exist: batch 0 folds ~1,200 groups
SELECT gt_rows(6000, 1200, '2024-01-01 00:00:08+00');
SELECT s.name,
       cq.create_query(s.name, 'SELECT date_bin(''10 seconds'', ts, ''2024-01-01'') AS w, k, count(*) AS n, '
                       'sum(x) AS sx, max(x) AS mx FROM gt_src GROUP BY 1, 2',
                       output_mode => 'update', "trigger" => 'available_now', event_time => 'ts',
                       watermark => '5 seconds', state_storage => s.storage) IS NOT NULL AS created
  FROM (VALUES ('gt_m', 'memory'), ('gt_t', 'unlogged')) s(name, storage)
 ORDER BY 1;
SELECT name, state_path FROM cq.queries WHERE name LIKE 'gt\__' ORDER BY name;
CALL cq.run('gt_m');
CALL cq.run('gt_t');
SELECT gt_state_bad('gt_m', 'gt_t') AS state_bad, twin_bad('gt_m', 'gt_t') AS target_bad,
       (SELECT state_rows FROM cq.state_store_info('gt_m')) > 1000 AS many_groups;

-- 30 batches: windows open and close, groups come and go
CREATE TABLE gt_log (batch int, state_bad bigint, target_bad bigint, store_rows bigint, removed bigint);
DO $$
DECLARE
  t timestamptz := '2024-01-01 00:00:08+00';
BEGIN
  FOR b IN 1 .. 30 LOOP
    t := t + interval '4 seconds';
    PERFORM gt_rows((random() * 900)::int + 100, (random() * 600)::int + 1, t);
    COMMIT;
    CALL cq.run('gt_m');
    CALL cq.run('gt_t');
    INSERT INTO gt_log
    SELECT b, gt_state_bad('gt_m', 'gt_t'), twin_bad('gt_m', 'gt_t'),
           (SELECT state_rows FROM cq.state_store_info('gt_m')),
           (SELECT num_state_rows_removed FROM cq.progress WHERE name = 'gt_m' ORDER BY batch_id DESC LIMIT 1);
    COMMIT;
  END LOOP;
END $$;
SELECT count(*) AS batches, sum(state_bad) AS state_bad, sum(target_bad) AS target_bad,
       max(store_rows) > 1000 AS store_grew, sum(removed) > 5000 AS many_removed,
       count(*) FILTER (WHERE removed > 0) >= 10 AS removed_often
  FROM gt_log;

-- a transaction whose publication is discarded after gt_m's batch linked
-- its new groups: gt_big's state is over cq.state_memory at commit
CREATE TABLE gt_big_src (k int);
INSERT INTO gt_big_src SELECT g FROM generate_series(1, 20000) g;
SELECT cq.create_query('gt_big', 'SELECT k, count(*) AS n FROM gt_big_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory') IS NOT NULL AS created;
SELECT gt_rows(800, 600, '2024-01-01 00:02:20+00');
SELECT (SELECT state_rows FROM cq.state_store_info('gt_m')) AS rows_before \gset
\set VERBOSITY sqlstate
BEGIN;
CALL cq.run('gt_m');
CALL cq.run('gt_big');
SET LOCAL cq.state_memory = '512kB';
COMMIT;
\set VERBOSITY default
SELECT (SELECT state_rows FROM cq.state_store_info('gt_m')) = :rows_before AS store_unchanged;
CALL cq.run('gt_m');
CALL cq.run('gt_t');
SELECT gt_state_bad('gt_m', 'gt_t') AS state_bad_after_discard, twin_bad('gt_m', 'gt_t') AS target_bad_after_discard;

-- cq.reset: a new table, rebuilt from the source
SELECT cq.reset('gt_m');
CALL cq.run('gt_m');
SELECT gt_rows(500, 600, '2024-01-01 00:02:24+00');
CALL cq.run('gt_m');
CALL cq.run('gt_t');
SELECT gt_state_bad('gt_m', 'gt_t') AS state_bad_after_reset, twin_bad('gt_m', 'gt_t') AS target_bad_after_reset;

SELECT cq.drop_query(name) FROM cq.queries WHERE name LIKE 'gt\_%' ORDER BY name;
DROP TABLE gt_src, gt_big_src, gt_log;
DROP FUNCTION gt_rows(int, int, timestamptz), gt_state_bad(text, text);
