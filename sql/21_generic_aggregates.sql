-- Issue 10 part 1: generic combinable aggregates.  Any aggregate with a
-- combine function (and serial/deserial functions when its state is
-- internal) is folded through cq.agg_partial / cq.agg_combine / cq.agg_final:
-- hll (extension, internal state), tdigest (extension, internal state,
-- three arguments), regr_slope, corr, covar_pop (built-in, two arguments,
-- float8[] state), user-defined ones (plain, internal with serialization,
-- polymorphic with a collation).  Oracle: the plain SELECT of the same query
-- after many random batches with NULLs, in update, complete and append
-- (windows, watermark) modes, and after a rebuild of lost state.
CREATE EXTENSION IF NOT EXISTS pg_cq;
CREATE EXTENSION IF NOT EXISTS hll;
CREATE EXTENSION IF NOT EXISTS tdigest;
SET client_min_messages = warning;
SET timezone = 'UTC';
SELECT setseed(0.21);

-- user-defined aggregates with a combine function: a plain int8 state; an
-- internal state with serialization (avg(int8)'s own support functions);
-- a polymorphic one over a collatable type (strict, NULL initial value)
CREATE FUNCTION ga_sumsq_step(int8, int) RETURNS int8 LANGUAGE sql IMMUTABLE
  AS 'SELECT $1 + coalesce($2::int8 * $2, 0)';
CREATE AGGREGATE ga_sumsq(int) (SFUNC = ga_sumsq_step, STYPE = int8, COMBINEFUNC = int8pl, INITCOND = '0');
CREATE AGGREGATE ga_avg8(int8) (SFUNC = int8_avg_accum, STYPE = internal, FINALFUNC = numeric_poly_avg,
  COMBINEFUNC = int8_avg_combine, SERIALFUNC = int8_avg_serialize, DESERIALFUNC = int8_avg_deserialize);
CREATE FUNCTION ga_larger(anyelement, anyelement) RETURNS anyelement LANGUAGE sql IMMUTABLE STRICT
  AS 'SELECT CASE WHEN $1 >= $2 THEN $1 ELSE $2 END';
CREATE AGGREGATE ga_max(anyelement) (SFUNC = ga_larger, STYPE = anyelement, COMBINEFUNC = ga_larger);

CREATE TABLE ga_src (k int, u text, x float8, y float8, w int, hh hll, ts timestamptz);

-- the query under test (its oracle is the same SELECT over the source)
CREATE VIEW ga_oracle AS
  SELECT k, count(*) AS n,
         hll_cardinality(hll_add_agg(hll_hash_text(u))) AS card,
         hll_cardinality(hll_union_agg(hh)) AS cardu,
         regr_slope(y, x) AS slope, corr(y, x) AS cor, covar_pop(y, x) FILTER (WHERE w > 0) AS cov,
         tdigest_percentile(x, 100, 0.95) AS p95, tdigest(x, 100) AS td,
         ga_sumsq(w) AS sumsq, ga_avg8(w) AS avg8, ga_max(u COLLATE "C") AS mx,
         ga_max(u COLLATE "C") FILTER (WHERE w % 2 = 0) AS mxeven,
         sum(w) AS sw, max(x) - min(x) AS xrange
    FROM ga_src GROUP BY k;
SELECT cq.create_query('ga_upd', pg_get_viewdef('ga_oracle'), output_mode => 'update', "trigger" => 'available_now');
SELECT cq.create_query('ga_cmp', pg_get_viewdef('ga_oracle'), output_mode => 'complete', "trigger" => 'available_now');
-- (its state table is emptied as a crash would: the table path, pinned)
SELECT cq.create_query('ga_lost', pg_get_viewdef('ga_oracle'), output_mode => 'update', "trigger" => 'available_now',
                       max_rows_per_trigger => 70, state_storage => 'unlogged');
-- tumbling windows, append mode: each window written once, when closed
CREATE VIEW ga_win_oracle AS
  SELECT w.window_start, w.window_end, count(*) AS n,
         hll_cardinality(hll_add_agg(hll_hash_text(u))) AS card, regr_count(y, x) AS rc,
         ga_sumsq(w) AS sumsq, ga_avg8(w) AS avg8
    FROM ga_src, LATERAL cq.window(ts, '10 seconds') w GROUP BY 1, 2;
SELECT cq.create_query('ga_win', pg_get_viewdef('ga_win_oracle'), output_mode => 'append', "trigger" => 'available_now',
                       event_time => 'ts', watermark => '30 seconds');

-- the state holds one cq.agg_state column per generic aggregate
SELECT a.atttypid::regtype AS state_type, count(*) AS columns
  FROM cq.queries q JOIN pg_attribute a ON a.attrelid = q.state_table::regclass
 WHERE q.name = 'ga_upd' AND a.attname LIKE 'p%' GROUP BY 1 ORDER BY 1;

-- mismatches between a target and the oracle: exact for counts, hll
-- cardinalities (unions of hll are deterministic), the int8 and numeric
-- user-defined aggregates and text; float statistics within 1e-9 relative
-- (their combine functions sum in another order); tdigest percentiles
-- within 2% of the group's range (t-digest is approximate once it merges
-- centroids, and merges partial digests in another order)
CREATE FUNCTION ga_float_ne(a float8, b float8) RETURNS boolean LANGUAGE sql IMMUTABLE AS
  'SELECT NOT ((a IS NULL AND b IS NULL) OR abs(a - b) <= 1e-9 * greatest(1, abs(b)))';
CREATE FUNCTION ga_td_median(t tdigest) RETURNS float8 LANGUAGE sql AS
  'SELECT tdigest_percentile(v, 0.5) FROM (VALUES (t)) z(v)';
CREATE FUNCTION ga_diff(target regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  d bigint;
BEGIN
  EXECUTE format($q$
    SELECT count(*) FROM ga_oracle o FULL JOIN %s t ON coalesce(t.k, -1) = coalesce(o.k, -1)
     WHERE o.n IS NULL OR t.n IS NULL
        OR (t.n, t.card, t.cardu, t.sumsq, t.avg8, t.mx, t.mxeven, t.sw)
           IS DISTINCT FROM (o.n, o.card, o.cardu, o.sumsq, o.avg8, o.mx, o.mxeven, o.sw)
        OR ga_float_ne(t.slope, o.slope) OR ga_float_ne(t.cor, o.cor) OR ga_float_ne(t.cov, o.cov)
        OR (t.p95 IS NULL) <> (o.p95 IS NULL) OR abs(t.p95 - o.p95) > 0.02 * o.xrange
        OR (t.td IS NULL) <> (o.td IS NULL)
        OR abs(ga_td_median(t.td) - ga_td_median(o.td)) > 0.02 * o.xrange$q$, target) INTO d;
  RETURN d;
END $$;

-- lost unlogged state, as a crash-restart leaves it (see 12_starting.sql)
CREATE FUNCTION ga_lose_state(q text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM cq.state_sentinel WHERE query_id = (SELECT id FROM cq.queries WHERE name = q);
  EXECUTE format('TRUNCATE %s', (SELECT state_table FROM cq.queries WHERE name = q));
END $$;

CREATE FUNCTION ga_rows(n int, t0 timestamptz) RETURNS void LANGUAGE sql AS $$
  INSERT INTO ga_src (k, u, x, y, w, hh, ts)
  SELECT k, u, x, CASE WHEN x IS NULL OR random() < 0.1 THEN NULL ELSE 2 * x + random() * 10 END, w,
         CASE WHEN w IS NULL THEN NULL ELSE hll_add(hll_empty(), hll_hash_integer(w)) END,
         t0 - random() * interval '20 seconds'
    FROM (SELECT CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 4)::int END AS k,
                 CASE WHEN random() < 0.1 THEN NULL ELSE 'user' || (random() * 300)::int END AS u,
                 CASE WHEN random() < 0.1 THEN NULL ELSE round((random() * 100)::numeric, 2)::float8 END AS x,
                 CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 200)::int - 50 END AS w
            FROM generate_series(1, n)) r
$$;

-- many random batches; one query loses its state twice on the way
DO $$
DECLARE
  t timestamptz := '2024-01-01 00:00:00+00';
BEGIN
  FOR b IN 1..30 LOOP
    t := t + random() * interval '15 seconds';
    PERFORM ga_rows((random() * 80)::int, t);
    COMMIT;
    IF b % 9 = 0 THEN
      BEGIN
        PERFORM ga_rows(40, t);
        RAISE EXCEPTION 'roll back';
      EXCEPTION WHEN raise_exception THEN NULL;
      END;
    END IF;
    IF b % 10 = 0 THEN
      PERFORM ga_lose_state('ga_lost');
      COMMIT;
    END IF;
    IF b % 2 = 0 THEN
      CALL cq.run('ga_upd');
      CALL cq.run('ga_cmp');
      CALL cq.run('ga_lost');
      CALL cq.run('ga_win');
      IF ga_diff('ga_upd') <> 0 OR ga_diff('ga_cmp') <> 0 OR ga_diff('ga_lost') <> 0 THEN
        RAISE EXCEPTION 'target differs from the oracle after round %: %, %, %', b,
          ga_diff('ga_upd'), ga_diff('ga_cmp'), ga_diff('ga_lost');
      END IF;
    END IF;
  END LOOP;
END $$;
CALL cq.run('ga_upd');
CALL cq.run('ga_cmp');
CALL cq.run('ga_lost');
CALL cq.run('ga_win');

SELECT (SELECT count(*) > 1000 FROM ga_src) AS enough_rows,
       ga_diff('ga_upd') AS update_diff, ga_diff('ga_cmp') AS complete_diff, ga_diff('ga_lost') AS rebuilt_diff,
       (SELECT count(*) FROM ga_upd WHERE k IS NULL) = 1 AS null_key_group,
       (SELECT count(*) FROM cq.progress WHERE name = 'ga_lost') > 20 AS many_batches,
       (SELECT count(*) FROM cq.progress WHERE name = 'ga_lost' AND durations ? 'stateRebuild') AS rebuilds;
-- the comparison is not vacuous: the values are there and of the right size
SELECT bool_and(card > 50) AS cards, bool_and(abs(slope - 2) < 0.2) AS slopes,
       bool_and(p95 > 80) AS percentiles, bool_and(mx LIKE 'user%') AS maxima,
       count(*) FILTER (WHERE mxeven IS NOT NULL) = count(*) AS filtered
  FROM ga_upd;
-- a polymorphic transition value of a collatable type: the state's collation is kept
SELECT mx = (SELECT max(u COLLATE "C") FROM ga_src s WHERE s.k IS NOT DISTINCT FROM t.k) AS c_collation
  FROM ga_upd t WHERE k = 1;

-- append: exactly the windows closed by the last watermark, each once
SELECT count(*) AS win_diff, (SELECT count(*) FROM ga_win) > 10 AS many_windows
  FROM ((SELECT * FROM ga_win_oracle o
          WHERE o.window_end <= (SELECT watermark FROM cq.offsets WHERE name = 'ga_win' ORDER BY batch_id DESC LIMIT 1)
         EXCEPT ALL SELECT * FROM ga_win)
        UNION ALL
        (SELECT * FROM ga_win
         EXCEPT ALL SELECT * FROM ga_win_oracle o
          WHERE o.window_end <= (SELECT watermark FROM cq.offsets WHERE name = 'ga_win' ORDER BY batch_id DESC LIMIT 1))) x;

-- a global aggregate without GROUP BY, and the empty input: the aggregate's
-- own value of no rows (regr_count of nothing is 0, hll_add_agg's NULL)
CREATE TABLE ga_empty (x float8, y float8, u text);
SELECT cq.create_query('ga_glob', 'SELECT regr_count(y, x) AS rc, hll_add_agg(hll_hash_text(u)) AS h, ga_sumsq(x::int) AS ss FROM ga_empty',
                       output_mode => 'complete', "trigger" => 'available_now');
CALL cq.run('ga_glob');
SELECT * FROM ga_glob;
SELECT regr_count(y, x) AS rc, hll_add_agg(hll_hash_text(u)) AS h, ga_sumsq(x::int) AS ss FROM ga_empty;
INSERT INTO ga_empty VALUES (1, 2, 'a'), (2, NULL, 'b'), (3, 5, NULL);
CALL cq.run('ga_glob');
SELECT rc, hll_cardinality(h) AS card, ss FROM ga_glob;

-- cq.alter_query: the filter may change, an aggregate or its arguments may
-- not (the state signature names each aggregate with its arguments)
CREATE FUNCTION ga_alter(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM cq.alter_query('ga_glob', query => q);
  RETURN 'accepted';
EXCEPTION WHEN OTHERS THEN
  RETURN 'refused: ' || SQLERRM;
END $$;
SELECT ga_alter('SELECT regr_count(y, x) AS rc, hll_add_agg(hll_hash_text(u)) AS h, ga_sumsq(x::int) AS ss FROM ga_empty WHERE x > 0') AS new_filter;
SELECT ga_alter('SELECT regr_count(x, y) AS rc, hll_add_agg(hll_hash_text(u)) AS h, ga_sumsq(x::int) AS ss FROM ga_empty') AS arguments_swapped;
SELECT ga_alter('SELECT regr_count(y, x) AS rc, hll_add_agg(hll_hash_text(u), 12) AS h, ga_sumsq(x::int) AS ss FROM ga_empty') AS other_hll_agg;
SELECT ga_alter('SELECT regr_sxx(y, x) AS rc, hll_add_agg(hll_hash_text(u)) AS h, ga_sumsq(x::int) AS ss FROM ga_empty') AS other_regr_agg;
SELECT ga_alter('SELECT regr_count(y, x) AS rc, hll_add_agg(hll_hash_text(u)) AS h, ga_sumsq(x::int) FILTER (WHERE x > 1) AS ss FROM ga_empty') AS new_agg_filter;
-- the new filter applies from the next batch
INSERT INTO ga_empty VALUES (-1, -2, 'c');
CALL cq.run('ga_glob');
SELECT rc, hll_cardinality(h) AS card, ss FROM ga_glob;

-- refused: no combine function (user-defined, and built-ins of PostgreSQL
-- 15 such as array_agg and string_agg), internal state without
-- serialization, ordered-set aggregates, ORDER BY in an aggregate
CREATE AGGREGATE ga_nocomb(int) (SFUNC = ga_sumsq_step, STYPE = int8, INITCOND = '0');
CREATE AGGREGATE ga_noserial(int8) (SFUNC = int8_avg_accum, STYPE = internal, FINALFUNC = numeric_poly_avg,
  COMBINEFUNC = int8_avg_combine);
\set VERBOSITY default
SELECT cq.create_query('ga_bad', 'SELECT k, ga_nocomb(w) FROM ga_src GROUP BY k', output_mode => 'update');
SELECT cq.create_query('ga_bad', 'SELECT k, array_agg(w) FROM ga_src GROUP BY k', output_mode => 'update');
SELECT cq.create_query('ga_bad', 'SELECT k, string_agg(u, '','') FROM ga_src GROUP BY k', output_mode => 'update');
SELECT cq.create_query('ga_bad', 'SELECT k, ga_noserial(w) FROM ga_src GROUP BY k', output_mode => 'update');
SELECT cq.create_query('ga_bad', 'SELECT k, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM ga_src GROUP BY k', output_mode => 'update');
SELECT cq.create_query('ga_bad', 'SELECT k, ga_sumsq(w ORDER BY w) FROM ga_src GROUP BY k', output_mode => 'update');
SELECT count(*) AS bad_queries FROM cq.queries WHERE name = 'ga_bad';

-- misuse of the functions by a role without rights: clear errors, no crash
CREATE ROLE ga_nobody;
REVOKE EXECUTE ON FUNCTION ga_sumsq(int) FROM PUBLIC;
SET ROLE ga_nobody;
SELECT cq.agg_partial('sum(int4)'::regprocedure, true, 1::int8);
SELECT cq.agg_partial('corr(float8, float8)'::regprocedure, true, 1.0::float8);
SELECT cq.agg_partial('corr(float8, float8)'::regprocedure, true, VARIADIC ARRAY[1.0::float8, 2.0]);
SELECT cq.agg_partial(NULL, true, 1);
SELECT cq.agg_partial(0, true, 1);
SELECT cq.agg_partial('lower(text)'::regprocedure, true, 'a'::text);
SELECT cq.agg_partial('array_agg(anynonarray)'::regprocedure, true, 1);
SELECT cq.agg_partial(f, true, 1) FROM (VALUES ('sum(int4)'::regprocedure::oid), ('max(int4)'::regprocedure)) v(f);
SELECT cq.agg_partial('ga_sumsq(int)'::regprocedure, true, 1);
SELECT cq.agg_final(NULL, NULL::int8, 'ga_sumsq(int)'::regprocedure, NULL::int);
-- states made only by pg_cq: text input gives a value that holds none
SELECT 'anything'::cq.agg_state AS from_text;
SELECT cq.agg_combine('x'::cq.agg_state, 'y');
SELECT cq.agg_final('x'::cq.agg_state, NULL::int8, 'sum(int4)'::regprocedure, NULL::int4);
-- states of different aggregates, wrong result or input types, NULLs
SELECT cq.agg_combine(cq.agg_partial('sum(int4)'::regprocedure, true, 1), cq.agg_partial('sum(int8)'::regprocedure, true, 1::int8));
SELECT cq.agg_final(cq.agg_partial('sum(int4)'::regprocedure, true, 1), NULL::int8, 'sum(int8)'::regprocedure, NULL::int8);
SELECT cq.agg_final(cq.agg_partial('sum(int4)'::regprocedure, true, 1), NULL::int4, 'sum(int4)'::regprocedure, NULL::int4);
SELECT cq.agg_final(cq.agg_partial('avg(int4)'::regprocedure, true, 1), NULL::numeric, 'avg(int4)'::regprocedure, NULL::int8);
SELECT cq.agg_final(cq.agg_partial('avg(int4)'::regprocedure, true, 1), NULL::numeric, 'avg(int4)'::regprocedure);
SELECT cq.agg_final(cq.agg_partial('sum(int4)'::regprocedure, true, 1), NULL::int8, NULL, NULL::int4);
SELECT cq.agg_combine(NULL, NULL) IS NULL AS null_combine;
-- and what they are for, by anyone: partial states of two halves merged
SELECT cq.agg_final(cq.agg_combine(a, b), NULL::numeric, 'avg(int4)'::regprocedure, NULL::int4) AS avg_1_to_10
  FROM (SELECT cq.agg_partial('avg(int4)'::regprocedure, true, x) FILTER (WHERE x <= 4) AS a,
               cq.agg_partial('avg(int4)'::regprocedure, x > 4, x) AS b
          FROM generate_series(1, 10) x) s;
SELECT cq.agg_final(cq.agg_partial('regr_count(float8, float8)'::regprocedure, false, 1.0::float8, 2.0::float8),
                    NULL::int8, 'regr_count(float8, float8)'::regprocedure, NULL::float8, NULL::float8) AS no_rows_passed;
RESET ROLE;

-- on a 0.1 catalog (before ALTER EXTENSION pg_cq UPDATE) the generic path is refused
SELECT current_database() AS ga_db \gset
CREATE DATABASE ga_old;
\c ga_old
SET client_min_messages = warning;
CREATE EXTENSION pg_cq VERSION '0.1';
CREATE TABLE ga_o (x float8, y float8);
SELECT cq.create_query('ga_o_q', 'SELECT regr_slope(y, x) AS s, count(*) AS n FROM ga_o', output_mode => 'update');
ALTER EXTENSION pg_cq UPDATE;
SELECT cq.create_query('ga_o_q', 'SELECT regr_slope(y, x) AS s, count(*) AS n FROM ga_o', output_mode => 'update',
                       "trigger" => 'available_now');
INSERT INTO ga_o VALUES (1, 3), (2, 5), (3, 7);
CALL cq.run('ga_o_q');
SELECT * FROM ga_o_q;
\c :ga_db
DROP DATABASE ga_old WITH (FORCE);

SELECT cq.drop_query(name, drop_target => true) FROM cq.queries WHERE name LIKE 'ga\_%' ORDER BY name;
DROP ROLE ga_nobody;
