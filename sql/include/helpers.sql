\set ECHO none
-- Shared helpers of the pg_regress files, loaded with
--   \i sql/include/helpers.sql
-- (pg_regress runs psql in the repository's root, reading the test from
-- standard input).  Not echoed (ECHO none, first line): the files' expected
-- outputs show only the \i line and that one.  Functions in schema public,
-- replaced by each file that loads them, so every file works alone and in
-- any order.

-- wait_until(condition): poll every 10 ms, up to timeout_s seconds; true if
-- it became true, else a warning and false (tests of the background never sleep)
CREATE OR REPLACE FUNCTION public.wait_until(cond text, timeout_s float8 DEFAULT 30) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  t0 timestamptz := clock_timestamp();
  ok boolean;
BEGIN
  LOOP
    EXECUTE 'SELECT (' || cond || ')' INTO ok;
    IF ok THEN RETURN true; END IF;
    IF clock_timestamp() - t0 > make_interval(secs => timeout_s) THEN
      RAISE WARNING 'timed out waiting for: %', cond;
      RETURN false;
    END IF;
    PERFORM pg_sleep(0.01);
  END LOOP;
END $$;

-- mismatches(target, oracle): rows of a target that differ from the oracle
-- query, both ways (0 = equal as multisets)
CREATE OR REPLACE FUNCTION public.mismatches(target regclass, oracle text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((%s EXCEPT ALL TABLE %s) UNION ALL (TABLE %s EXCEPT ALL %s)) x',
                 oracle, target, target, oracle) INTO n;
  RETURN n;
END $$;

-- fingerprint(query name): everything a batch writes, as one value: target,
-- state, offsets, progress (equal before and after = the batch changed nothing)
CREATE OR REPLACE FUNCTION public.fingerprint(qname text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  q record;
  t text;
  s text := '-';
  o text;
BEGIN
  SELECT target, state_table INTO STRICT q FROM cq.queries WHERE name = qname;
  EXECUTE format('SELECT md5(coalesce(string_agg(x::text, ''|'' ORDER BY x::text), '''')) FROM %s x', q.target) INTO t;
  IF q.state_table IS NOT NULL THEN
    EXECUTE format('SELECT md5(coalesce(string_agg(x::text, ''|'' ORDER BY x::text), '''')) FROM %s x', q.state_table) INTO s;
  END IF;
  SELECT count(*) || ' batches, ' || md5(coalesce(string_agg(end_offset::text || watermark, '|' ORDER BY batch_id), ''))
    INTO o FROM cq.offsets WHERE name = qname;
  RETURN t || ' ' || s || ' ' || o || ' ' || (SELECT count(*) FROM cq.progress WHERE name = qname);
END $$;

-- brin_summaries(idx): the summaries of a BRIN index on xid8 (minmax), read by
-- pageinspect (which the calling file creates), placeholders left out
CREATE OR REPLACE FUNCTION public.brin_summaries(idx regclass)
RETURNS TABLE (blknum bigint, allnulls bool, hasnulls bool, lo xid8, hi xid8)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY
    SELECT i.blknum, i.allnulls, i.hasnulls,
           (regexp_match(i.value, '^\{(\d+) \.\. (\d+)\}$'))[1]::xid8,
           (regexp_match(i.value, '^\{(\d+) \.\. (\d+)\}$'))[2]::xid8
      FROM generate_series(1, pg_relation_size(idx) / current_setting('block_size')::int - 1) b,
           LATERAL brin_page_items(get_raw_page(idx::text, b::int), idx) i
     WHERE brin_page_type(get_raw_page(idx::text, b::int)) = 'regular' AND NOT i.placeholder;
END $$;

-- twin_bad(a, b): rows of relation a that are not rows of b and the other
-- way, compared as text (0 = equal as multisets; a query and its twin on
-- the other state path)
CREATE OR REPLACE FUNCTION public.twin_bad(a regclass, b regclass) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((SELECT x::text FROM %s x EXCEPT ALL SELECT y::text FROM %s y) '
                 'UNION ALL (SELECT y::text FROM %s y EXCEPT ALL SELECT x::text FROM %s x)) z', a, b, b, a) INTO n;
  RETURN n;
END $$;

-- pause_others(): pause every query not yet paused, so that no batch of
-- another file's query takes a pool worker meanwhile; true
CREATE OR REPLACE FUNCTION public.pause_others() RETURNS boolean LANGUAGE sql AS $$
  SELECT count(cq.pause(CASE WHEN schema IS NULL OR schema = 'public' THEN name
                             ELSE format('%I.%I', schema, name) END)) >= 0
    FROM cq.queries WHERE state <> 'paused'
$$;

-- pool_idle_worker(): is a pg_cq worker of this database idle (a CALL
-- cq.run would hand its batches to it)?  (Reads pg_stat_activity afresh.)
CREATE OR REPLACE FUNCTION public.pool_idle_worker() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_stat_clear_snapshot();
  RETURN EXISTS (SELECT 1 FROM pg_stat_activity
                  WHERE backend_type = 'pg_cq worker' AND datname = current_database()
                    AND coalesce(state, 'idle') = 'idle');
END $$;

-- store_left(q): what a query left: its store's rows (NULL: none in
-- memory), its target's rows, its batches
CREATE OR REPLACE FUNCTION public.store_left(q text, OUT store_rows bigint, OUT target_rows bigint,
                                             OUT batches bigint)
LANGUAGE plpgsql AS $$
BEGIN
  SELECT i.state_rows INTO store_rows FROM cq.state_store_info(q) i;
  EXECUTE format('SELECT count(*) FROM %I', q) INTO target_rows;
  SELECT count(*) INTO batches FROM cq.offsets o WHERE o.name = q;
END $$;

-- checked_rows(table): the rows of a table after bt_index_check (amcheck, which
-- the file creates) of each of its btree indexes with heapallindexed: an index
-- that lacks a row or holds one too many raises an error
CREATE OR REPLACE FUNCTION public.checked_rows(t regclass) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  PERFORM bt_index_check(i.indexrelid, true) FROM pg_index i WHERE i.indrelid = t;
  EXECUTE format('SELECT count(*) FROM %s', t) INTO n;
  RETURN n;
END $$;

-- sqlstate_of(statement): 'ok', or the error's SQLSTATE and message
CREATE OR REPLACE FUNCTION public.sqlstate_of(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE stmt;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

\set ECHO all
