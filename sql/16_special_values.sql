-- Results identical to PostgreSQL's own, special values and display scale
-- included (issue 16): update and complete targets equal the plain SELECT
-- both by value and as text (format('%s', row)), for every aggregate pg_cq
-- accepts, over NaN, +-Infinity (float and numeric), -0, numerics of mixed
-- scale, int8 sums that overflow into numeric, empty (FILTER) and all-NULL
-- groups, and aggregates without GROUP BY over no rows.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET extra_float_digits = 1;
-- min() and max() of equal values that print differently (1.0 and 1.00, 0
-- and -0) return the last one read, in PostgreSQL as in pg_cq; a sorted
-- aggregate would read them in an unspecified order, a hashed one reads
-- them in table order (the sources below are never vacuumed, so table
-- order is insertion order)
SET enable_sort = off;

-- the oracle's rows, aggregated by hashing (see above)
CREATE FUNCTION sv_oracle(oracle text) RETURNS void LANGUAGE plpgsql SET enable_sort = off AS $$
BEGIN
  DROP TABLE IF EXISTS sv_o;
  EXECUTE format('CREATE TEMP TABLE sv_o AS SELECT * FROM %s', oracle);
END $$;
-- the mismatches between a target and its oracle, by value and as text
CREATE FUNCTION sv_diff(oracle text, target text) RETURNS text LANGUAGE plpgsql SET enable_sort = on AS $$
DECLARE
  by_value bigint;
  by_text bigint;
BEGIN
  PERFORM sv_oracle(oracle);
  EXECUTE format('SELECT count(*) FROM ((SELECT * FROM sv_o EXCEPT ALL SELECT * FROM %s) UNION ALL
                                        (SELECT * FROM %s EXCEPT ALL SELECT * FROM sv_o)) x',
                 target, target) INTO by_value;
  EXECUTE format('SELECT count(*) FROM ((SELECT format(''%%s'', o) FROM sv_o o EXCEPT ALL SELECT format(''%%s'', t) FROM %s t) UNION ALL
                                        (SELECT format(''%%s'', t) FROM %s t EXCEPT ALL SELECT format(''%%s'', o) FROM sv_o o)) x',
                 target, target) INTO by_text;
  DROP TABLE sv_o;
  RETURN format('%s by value, %s as text', by_value, by_text);
END $$;

------------------------------------------------------------------------------
-- The cases of the issue, by hand
------------------------------------------------------------------------------
-- stddev of numeric over NaN and infinities is NaN, as in PostgreSQL
CREATE TABLE sv_d1 (k int, x numeric);
INSERT INTO sv_d1 VALUES (1, 'NaN'), (1, 1), (2, 'Infinity'), (2, 1), (3, '-Infinity'), (4, 'Infinity'), (4, '-Infinity');
CREATE VIEW sv_d1_oracle AS
  SELECT k, stddev_pop(x) AS sp, stddev_samp(x) AS ss, stddev(x) AS sd, var_pop(x) AS vp, var_samp(x) AS vs,
         sum(x) AS s, avg(x) AS a
    FROM sv_d1 GROUP BY k;
SELECT cq.create_query('sv_d1_u', pg_get_viewdef('sv_d1_oracle'), output_mode => 'update', "trigger" => 'available_now');
CALL cq.run('sv_d1_u');
SELECT cq.create_query('sv_d1_c', pg_get_viewdef('sv_d1_oracle'), output_mode => 'complete', "trigger" => 'available_now');
CALL cq.run('sv_d1_c');
SELECT * FROM sv_d1_u ORDER BY k;
SELECT sv_diff('sv_d1_oracle', 'sv_d1_u') AS update_diff, sv_diff('sv_d1_oracle', 'sv_d1_c') AS complete_diff;
INSERT INTO sv_d1 VALUES (1, 2), (3, 5), (5, 'NaN');
CALL cq.run('sv_d1_u');
CALL cq.run('sv_d1_c');
SELECT * FROM sv_d1_c ORDER BY k;
SELECT sv_diff('sv_d1_oracle', 'sv_d1_u') AS update_diff, sv_diff('sv_d1_oracle', 'sv_d1_c') AS complete_diff;

-- display scale: sum of 1.0 and then 0.00 is 1.00; max of equal values is
-- the last one read; avg of -0 is 0 (float8_accum sums from +0), max of 0
-- and -0 the last one read
CREATE TABLE sv_d2 (k int, x numeric, f float8);
CREATE VIEW sv_d2_oracle AS
  SELECT k, sum(x) AS s, max(x) AS mx, min(x) AS mn, avg(x) AS a, sum(f) AS sf, avg(f) AS af, max(f) AS mf
    FROM sv_d2 GROUP BY k;
SELECT cq.create_query('sv_d2_u', pg_get_viewdef('sv_d2_oracle'), output_mode => 'update', "trigger" => 'available_now');
CALL cq.run('sv_d2_u');
-- the issue's case: only the display scale of the sum changes
SELECT cq.create_query('sv_d2_sum', 'SELECT k, sum(x) AS s FROM sv_d2 GROUP BY k', output_mode => 'update', "trigger" => 'available_now');
CALL cq.run('sv_d2_sum');
INSERT INTO sv_d2 VALUES (1, 1.0, '-0');
CALL cq.run('sv_d2_u');
CALL cq.run('sv_d2_sum');
SELECT * FROM sv_d2_u;
INSERT INTO sv_d2 VALUES (1, 0.00, '0');
CALL cq.run('sv_d2_u');
CALL cq.run('sv_d2_sum');
SELECT * FROM sv_d2_u;
SELECT * FROM sv_d2_sum;
INSERT INTO sv_d2 VALUES (1, 1.000, '-0');
CALL cq.run('sv_d2_u');
SELECT * FROM sv_d2_u;
SELECT * FROM sv_d2_oracle;
SELECT sv_diff('sv_d2_oracle', 'sv_d2_u') AS update_diff;

-- int8 sums overflow into numeric, exactly
CREATE TABLE sv_d3 (k int, i int8);
CREATE VIEW sv_d3_oracle AS
  SELECT k, sum(i) AS s, avg(i) AS a, var_pop(i) AS vp, stddev_samp(i) AS ss, min(i) AS mn, bit_xor(i) AS bx
    FROM sv_d3 GROUP BY k;
SELECT cq.create_query('sv_d3_u', pg_get_viewdef('sv_d3_oracle'), output_mode => 'update', "trigger" => 'available_now');
CALL cq.run('sv_d3_u');
INSERT INTO sv_d3 VALUES (1, 9223372036854775807), (1, 9223372036854775806);
CALL cq.run('sv_d3_u');
INSERT INTO sv_d3 VALUES (1, 9223372036854775805), (2, -9223372036854775808);
CALL cq.run('sv_d3_u');
INSERT INTO sv_d3 VALUES (2, -9223372036854775808);
CALL cq.run('sv_d3_u');
SELECT * FROM sv_d3_u ORDER BY k;
SELECT sv_diff('sv_d3_oracle', 'sv_d3_u') AS update_diff;

-- empty groups: FILTER leaving no row, groups whose values are all NULL,
-- an aggregate without GROUP BY whose WHERE keeps nothing
CREATE TABLE sv_d4 (k int, x numeric, f float8, b bool);
CREATE VIEW sv_d4_oracle AS
  SELECT k, count(*) AS n, count(x) AS nx, sum(x) AS s, avg(f) AS af, stddev_pop(x) AS sp, var_samp(f) AS vf,
         max(x) AS mx, bool_and(b) AS ba, bit_or(k) FILTER (WHERE x > 0) AS bo,
         sum(x) FILTER (WHERE false) AS none, count(*) FILTER (WHERE false) AS nnone
    FROM sv_d4 GROUP BY k;
CREATE VIEW sv_d4_none AS
  SELECT count(*) AS n, count(x) AS nx, sum(x) AS s, avg(f) AS af, stddev_samp(x) AS ss, min(f) AS mn,
         bool_or(b) AS bo, every(b) AS ev
    FROM sv_d4 WHERE k < 0;
SELECT cq.create_query('sv_d4_u', pg_get_viewdef('sv_d4_oracle'), output_mode => 'update', "trigger" => 'available_now');
CALL cq.run('sv_d4_u');
SELECT cq.create_query('sv_d4_c', pg_get_viewdef('sv_d4_oracle'), output_mode => 'complete', "trigger" => 'available_now');
CALL cq.run('sv_d4_c');
SELECT cq.create_query('sv_d4_nu', pg_get_viewdef('sv_d4_none'), output_mode => 'update', "trigger" => 'available_now');
CALL cq.run('sv_d4_nu');
SELECT cq.create_query('sv_d4_nc', pg_get_viewdef('sv_d4_none'), output_mode => 'complete', "trigger" => 'available_now');
CALL cq.run('sv_d4_nc');
-- batch 0 over an empty source: one row, as the plain query gives
SELECT * FROM sv_d4_nu;
SELECT sv_diff('sv_d4_none', 'sv_d4_nu') AS update_diff, sv_diff('sv_d4_none', 'sv_d4_nc') AS complete_diff;
INSERT INTO sv_d4 VALUES (1, NULL, NULL, NULL), (1, NULL, NULL, NULL), (2, 1.5, 2, true), (NULL, NULL, NULL, NULL);
CALL cq.run('sv_d4_u');
CALL cq.run('sv_d4_c');
CALL cq.run('sv_d4_nu');
CALL cq.run('sv_d4_nc');
SELECT * FROM sv_d4_u ORDER BY k;
SELECT * FROM sv_d4_nc;
SELECT sv_diff('sv_d4_oracle', 'sv_d4_u') AS update_diff, sv_diff('sv_d4_oracle', 'sv_d4_c') AS complete_diff,
       sv_diff('sv_d4_none', 'sv_d4_nu') AS none_update_diff, sv_diff('sv_d4_none', 'sv_d4_nc') AS none_complete_diff;

------------------------------------------------------------------------------
-- Randomized: every aggregate, every argument class, special values
------------------------------------------------------------------------------
SELECT setseed(0.16);
CREATE TABLE sv_src (k int, g text, i2 int2, i4 int4, i8 int8, nm numeric, f4 float4, f8 float8,
                     iv interval, m money, b bool, t text, bt bit(4))
  WITH (autovacuum_enabled = off);

-- exact aggregates: everything but the float variance family
CREATE VIEW sv_exact AS
  SELECT k, g, count(*) AS n, count(nm) AS cn, count(f8) AS cf,
         sum(i2) AS s2, sum(i4) AS s4, sum(i8) AS s8, sum(nm) AS sn, sum(f4) AS sf4, sum(f8) AS sf8,
         sum(iv) AS siv, sum(m) AS sm,
         avg(i2) AS a2, avg(i4) AS a4, avg(i8) AS a8, avg(nm) AS an, avg(f4) AS af4, avg(f8) AS af8, avg(iv) AS aiv,
         min(nm) AS mnn, max(nm) AS mxn, min(f8) AS mnf, max(f8) AS mxf, min(f4) AS mnf4, max(f4) AS mxf4,
         min(t) AS mnt, max(t) AS mxt, min(i8) AS mni, max(iv) AS mxiv, min(m) AS mnm,
         var_samp(i4) AS vs4, variance(i8) AS v8, var_pop(i2) AS vp2, var_samp(nm) AS vsn, variance(nm) AS vn,
         var_pop(nm) AS vpn, stddev_samp(i8) AS ss8, stddev(i4) AS sd4, stddev_pop(i2) AS sp2,
         stddev_samp(nm) AS ssn, stddev(nm) AS sdn, stddev_pop(nm) AS spn,
         bool_and(b) AS ba, bool_or(b) AS bo, every(b) AS ev,
         bit_and(i4) AS ba4, bit_or(i8) AS bo8, bit_xor(i2) AS bx2, bit_and(bt) AS babt, bit_or(bt) AS bobt,
         bit_xor(bt) AS bxbt,
         sum(nm) FILTER (WHERE i4 > 0) AS snpos, count(*) FILTER (WHERE b) AS nb,
         avg(f8) FILTER (WHERE false) AS afnone, stddev_pop(nm) FILTER (WHERE nm < 0) AS spneg,
         max(nm) FILTER (WHERE nm IS NOT NULL) - min(nm) AS rng
    FROM sv_src GROUP BY k, g;
-- the float variance family (float8_accum's running sums depend on the
-- order of the rows, so finite results agree to rounding; special values
-- and NULLs exactly)
CREATE VIEW sv_fvar AS
  SELECT k, g, var_samp(f8) AS vs8, variance(f4) AS v4, var_pop(f8) AS vp8, var_pop(f4) AS vp4,
         stddev_samp(f4) AS ss4, stddev(f8) AS sd8, stddev_pop(f8) AS sp8, stddev_pop(f4) FILTER (WHERE b) AS sp4b
    FROM sv_src GROUP BY k, g;
-- without GROUP BY
CREATE VIEW sv_global AS
  SELECT count(*) AS n, sum(i8) AS s8, sum(nm) AS sn, sum(f8) AS sf8, avg(nm) AS an, avg(f4) AS af4,
         avg(iv) AS aiv, min(nm) AS mnn, max(f8) AS mxf, stddev_pop(nm) AS spn, var_samp(i8) AS vs8,
         bool_or(b) AS bo, bit_xor(i4) AS bx4, sum(m) AS sm
    FROM sv_src;
CREATE VIEW sv_global_fvar AS
  SELECT var_pop(f8) AS vp8, stddev_samp(f4) AS ss4, var_samp(f8) FILTER (WHERE k IN (0, 4, 5)) AS vsf
    FROM sv_src;

SELECT cq.create_query('sv_exact_u', pg_get_viewdef('sv_exact'), output_mode => 'update', "trigger" => 'available_now');
SELECT cq.create_query('sv_exact_c', pg_get_viewdef('sv_exact'), output_mode => 'complete', "trigger" => 'available_now');
SELECT cq.create_query('sv_fvar_u', pg_get_viewdef('sv_fvar'), output_mode => 'update', "trigger" => 'available_now');
SELECT cq.create_query('sv_fvar_c', pg_get_viewdef('sv_fvar'), output_mode => 'complete', "trigger" => 'available_now');
SELECT cq.create_query('sv_global_u', pg_get_viewdef('sv_global'), output_mode => 'update', "trigger" => 'available_now');
SELECT cq.create_query('sv_global_c', pg_get_viewdef('sv_global'), output_mode => 'complete', "trigger" => 'available_now');
SELECT cq.create_query('sv_gfvar_u', pg_get_viewdef('sv_global_fvar'), output_mode => 'update', "trigger" => 'available_now');
SELECT cq.create_query('sv_gfvar_c', pg_get_viewdef('sv_global_fvar'), output_mode => 'complete', "trigger" => 'available_now');

-- float results: equal, both NULL, both NaN, or within 1e-12 relative
CREATE FUNCTION sv_near(a float8, b float8) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT a IS NOT DISTINCT FROM b
      OR (a <> 'NaN' AND b <> 'NaN' AND abs(a - b) <= 1e-12 * greatest(abs(a), abs(b)))
$$;
-- mismatches of the float variance targets: a column that differs beyond
-- rounding, or rows missing on either side
CREATE FUNCTION sv_fvar_diff(target text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  d bigint;
  n_o bigint;
  n_t bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM sv_fvar o LEFT JOIN %s t ON t.k IS NOT DISTINCT FROM o.k AND t.g IS NOT DISTINCT FROM o.g
                   WHERE NOT (sv_near(o.vs8, t.vs8) AND sv_near(o.v4, t.v4) AND sv_near(o.vp8, t.vp8) AND sv_near(o.vp4, t.vp4)
                              AND sv_near(o.ss4, t.ss4) AND sv_near(o.sd8, t.sd8) AND sv_near(o.sp8, t.sp8)
                              AND sv_near(o.sp4b, t.sp4b))', target) INTO d;
  EXECUTE format('SELECT (SELECT count(*) FROM sv_fvar), (SELECT count(*) FROM %s)', target) INTO n_o, n_t;
  RETURN d + abs(n_o - n_t);
END $$;
CREATE FUNCTION sv_gfvar_diff(target text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  d bigint;
  n_t bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM sv_global_fvar o, %s t
                   WHERE NOT (sv_near(o.vp8, t.vp8) AND sv_near(o.ss4, t.ss4) AND sv_near(o.vsf, t.vsf))', target) INTO d;
  EXECUTE format('SELECT count(*) FROM %s', target) INTO n_t;
  RETURN d + abs(1 - n_t);
END $$;

-- a value of a list, picked at random
CREATE FUNCTION sv_pick(vals text[]) RETURNS text LANGUAGE sql VOLATILE AS $$
  SELECT vals[1 + floor(random() * array_length(vals, 1))::int]
$$;

-- n random rows.  Keys 0-5 and NULL; the groups of key 1 get numeric and
-- float NaN, key 2 +Infinity, key 3 both infinities (their sums are NaN),
-- key NULL any of them, keys 0, 4 and 5 only finite values; key 7 rows have
-- no values at all.  Finite floats are multiples of 1/4, so that their sums
-- are exact in any order; numerics have 0 to 4 decimals (1.0, 1.00 and
-- 1.000 included); int8 values near its limits overflow in sums.
CREATE FUNCTION sv_rows(n int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO sv_src (k, g, i2, i4, i8, nm, f4, f8, iv, m, b, t, bt)
  SELECT k, g,
         CASE WHEN k = 7 OR random() < 0.1 THEN NULL ELSE (random() * 60000 - 30000)::int END,
         CASE WHEN k = 7 OR random() < 0.1 THEN NULL ELSE (random() * 4e9 - 2e9)::int8 END,
         CASE WHEN k = 7 OR random() < 0.1 THEN NULL
              WHEN random() < 0.3 THEN sv_pick('{9223372036854775807,9223372036854775000,-9223372036854775808,-9223372036854770000}')::int8
              ELSE (random() * 2e6 - 1e6)::int8 END,
         CASE WHEN k = 7 OR random() < 0.1 THEN NULL
              WHEN random() < 0.15 AND (k IS NULL OR k IN (1, 2, 3)) THEN
                   sv_pick(CASE k WHEN 1 THEN '{NaN}' WHEN 2 THEN '{Infinity}' WHEN 3 THEN '{Infinity,-Infinity}'
                                  ELSE '{NaN,Infinity,-Infinity}' END::text[])::numeric
              WHEN random() < 0.3 THEN sv_pick('{1.0,1.00,1,1.000,0.00,-0.0,-2.50,-2.5,100.0000}')::numeric
              ELSE round((random() * 200 - 100)::numeric, (random() * 4)::int) END,
         CASE WHEN k = 7 OR random() < 0.1 THEN NULL
              WHEN random() < 0.15 AND (k IS NULL OR k IN (1, 2, 3)) THEN
                   sv_pick(CASE k WHEN 1 THEN '{NaN}' WHEN 2 THEN '{Infinity}' WHEN 3 THEN '{Infinity,-Infinity}'
                                  ELSE '{NaN,Infinity,-Infinity}' END::text[])::float4
              WHEN random() < 0.2 THEN sv_pick('{0,-0}')::float4
              ELSE (floor(random() * 2001) - 1000) / 4.0 END,
         CASE WHEN k = 7 OR random() < 0.1 THEN NULL
              WHEN random() < 0.15 AND (k IS NULL OR k IN (1, 2, 3)) THEN
                   sv_pick(CASE k WHEN 1 THEN '{NaN}' WHEN 2 THEN '{Infinity}' WHEN 3 THEN '{Infinity,-Infinity}'
                                  ELSE '{NaN,Infinity,-Infinity}' END::text[])::float8
              WHEN random() < 0.2 THEN sv_pick('{0,-0}')::float8
              ELSE (floor(random() * 200001) - 100000) / 4.0 END,
         CASE WHEN k = 7 OR random() < 0.1 THEN NULL
              ELSE make_interval(days => (random() * 20 - 10)::int, secs => round((random() * 1e5)::numeric, 3)::float8) END,
         CASE WHEN k = 7 OR random() < 0.1 THEN NULL ELSE ((random() * 2e5 - 1e5)::int / 100.0)::numeric::money END,
         CASE WHEN k = 7 OR random() < 0.1 THEN NULL ELSE random() < 0.7 END,
         CASE WHEN k = 7 OR random() < 0.1 THEN NULL ELSE sv_pick('{A,a,b,B,ab,""}') END,
         CASE WHEN k = 7 OR random() < 0.1 THEN NULL ELSE sv_pick('{0000,0101,1111,1000,0110}')::bit(4) END
    FROM (SELECT CASE WHEN random() < 0.1 THEN NULL WHEN random() < 0.07 THEN 7 ELSE (random() * 5)::int END AS k,
                 CASE WHEN random() < 0.1 THEN NULL ELSE sv_pick('{x,y}') END AS g
            FROM generate_series(1, n)) r
$$;

-- batches of random size; every few rounds all queries run and are compared
CREATE TABLE sv_log (round int, query text, diff text);
DO $$
DECLARE
  r int;
  q text;
BEGIN
  FOR r IN 1..24 LOOP
    PERFORM sv_rows((random() * 30)::int);
    COMMIT;
    IF r % 5 = 0 THEN
      PERFORM sv_rows(1);
      COMMIT;
    END IF;
    IF r % 3 = 0 THEN
      FOREACH q IN ARRAY '{sv_exact_u,sv_exact_c,sv_fvar_u,sv_fvar_c,sv_global_u,sv_global_c,sv_gfvar_u,sv_gfvar_c}'::text[] LOOP
        CALL cq.run(q);
      END LOOP;
      INSERT INTO sv_log
      VALUES (r, 'sv_exact_u', sv_diff('sv_exact', 'sv_exact_u')),
             (r, 'sv_exact_c', sv_diff('sv_exact', 'sv_exact_c')),
             (r, 'sv_global_u', sv_diff('sv_global', 'sv_global_u')),
             (r, 'sv_global_c', sv_diff('sv_global', 'sv_global_c')),
             (r, 'sv_fvar_u', sv_fvar_diff('sv_fvar_u') || ' beyond rounding'),
             (r, 'sv_fvar_c', sv_fvar_diff('sv_fvar_c') || ' beyond rounding'),
             (r, 'sv_gfvar_u', sv_gfvar_diff('sv_gfvar_u') || ' beyond rounding'),
             (r, 'sv_gfvar_c', sv_gfvar_diff('sv_gfvar_c') || ' beyond rounding');
      COMMIT;
    END IF;
  END LOOP;
END $$;

-- every comparison of every round found no difference
SELECT query, count(*) AS rounds, string_agg(DISTINCT diff, '; ') AS diffs
  FROM sv_log GROUP BY query ORDER BY query;

-- the special values were there: the targets hold them
SELECT count(*) FILTER (WHERE sn = 'NaN') > 0 AS numeric_nan,
       count(*) FILTER (WHERE sn = 'Infinity') > 0 AS numeric_inf,
       count(*) FILTER (WHERE mnn = '-Infinity') > 0 AS numeric_minus_inf,
       count(*) FILTER (WHERE spn = 'NaN') > 0 AS stddev_nan,
       count(*) FILTER (WHERE sf8 = 'NaN') > 0 AND count(*) FILTER (WHERE sf8 = 'Infinity') > 0 AS float_specials,
       count(*) FILTER (WHERE s8 > 9223372036854775807 OR s8 < -9223372036854775808) > 0 AS int8_overflow,
       count(DISTINCT scale(mxn)) > 2 AS mixed_scales,
       count(*) FILTER (WHERE k = 7 AND n > 0 AND s2 IS NULL AND an IS NULL AND vsn IS NULL AND ba IS NULL) > 0 AS all_null_group,
       count(*) FILTER (WHERE afnone IS NULL) = count(*) AS empty_filter
  FROM sv_exact_u;
SELECT count(*) FILTER (WHERE vp8 = 'NaN') > 0 AS float_var_nan,
       count(*) FILTER (WHERE vp8 > 0 AND vp8 <> 'NaN') > 0 AS float_var_finite,
       (SELECT vsf > 0 AND vsf <> 'NaN' FROM sv_gfvar_c) AS global_float_var_finite
  FROM sv_fvar_u;
SELECT sum(num_input_rows) = (SELECT count(*) FROM sv_src) AS every_row_once, count(*) > 5 AS batches
  FROM cq.progress WHERE name = 'sv_exact_u';
