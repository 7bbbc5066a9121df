-- Session 34 (issue 12 goal 3): d's partial states of sum, avg, min and max
-- over numeric come from cq.numeric_sum, cq.numeric_min and cq.numeric_max
-- (src/numagg.c: the inputs read in place, the sum in an int128 while it
-- fits, numeric otherwise).  Their results must be PostgreSQL's exactly:
-- the value, its display scale and its bytes (numeric_send), NULL, NaN and
-- the infinities included.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
SET cq.run_in_worker = off;

-- every group compared with the builtin aggregates: text (display scale),
-- numeric_send (sign, weight, scale, digits) and, for the sum that
-- cq.numeric_sum builds, its size (the packed form make_result() gives);
-- min and max return an input as it is, in place (its 1-byte header kept)
CREATE FUNCTION na_check(sql text) RETURNS TABLE (groups bigint, sum_diff bigint, min_diff bigint, max_diff bigint)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format($q$
    SELECT count(*),
           count(*) FILTER (WHERE s1::text IS DISTINCT FROM s2::text OR numeric_send(s1) IS DISTINCT FROM numeric_send(s2)
                              OR pg_column_size(s1) IS DISTINCT FROM pg_column_size(s2)),
           count(*) FILTER (WHERE n1::text IS DISTINCT FROM n2::text OR numeric_send(n1) IS DISTINCT FROM numeric_send(n2)),
           count(*) FILTER (WHERE m1::text IS DISTINCT FROM m2::text OR numeric_send(m1) IS DISTINCT FROM numeric_send(m2))
      FROM (SELECT g, sum(v) s1, cq.numeric_sum(v) s2, min(v) n1, cq.numeric_min(v) n2,
                   max(v) m1, cq.numeric_max(v) m2 FROM (%s) x(g, v) GROUP BY g) y$q$, sql);
END $$;

-- edge cases, one group each; values as a table stores them (1-byte
-- headers) and as expressions make them (4-byte headers)
CREATE TABLE na_edge (g int, v numeric);
INSERT INTO na_edge VALUES
  (1, NULL), (1, NULL),                                   -- only NULLs: NULL
  (2, 'NaN'), (2, 1.5),                                   -- NaN wins
  (3, 'Infinity'), (3, 2.25), (3, NULL),                  -- +Infinity
  (4, '-Infinity'), (4, -7),                              -- -Infinity
  (5, 'Infinity'), (5, '-Infinity'),                      -- both: NaN sum
  (6, 'NaN'), (6, 'Infinity'), (6, '-Infinity'),          -- NaN above the infinities
  (7, 0.00), (7, -0.000), (7, 0),                         -- zero keeps the largest scale
  (8, 1.0), (8, 1.00), (8, 1),                            -- equal values: the later kept
  (9, 1.00), (9, 1.0),
  (10, 1.5), (10, -1.50),                                 -- a sum of zero at scale 2
  (11, 123456789012345678901234567890.123456789),         -- 39 digits: numeric part
  (11, 1), (11, -0.5),
  (12, 99999999999999999999999999999999999999),           -- 38 nines: int128 overflows
  (12, 99999999999999999999999999999999999999),
  (12, -99999999999999999999999999999999999999), (12, 0.1),
  (13, 1e-40), (13, 2e-39), (13, 3),                      -- scale 40: numeric part
  (14, 1e300), (14, -1e300), (14, 1),                     -- weight beyond the short header
  (15, round(1, 70)), (15, 2),                            -- scale 70: long header, zero digits
  (16, 5), (16, 0.123), (16, 1.2),                        -- rising scales rescale the sum
  (17, -3.14159), (17, 2.71828), (17, 1.41421),
  (18, 1e20), (18, 1e21), (18, 12345678901234567.8),      -- more than 4 digits
  (19, 170141183460469231731687303715884105727),          -- 2^127 - 1, and past it
  (19, 1), (19, -2),
  (23, 1e30), (23, 1e30), (23, 0.0000000001), (23, 5);   -- a larger scale would overflow: moved to numeric
INSERT INTO na_edge SELECT 20 + g % 3, (g * 1.01)::numeric * 1 FROM generate_series(1, 50) g;
SELECT * FROM na_check('TABLE na_edge');
SELECT * FROM na_check('SELECT g, v * 1 FROM na_edge');
SELECT g, cq.numeric_sum(v) AS s, left(cq.numeric_min(v)::text, 24) AS mn, left(cq.numeric_max(v)::text, 24) AS mx
  FROM na_edge WHERE g < 20 GROUP BY g ORDER BY g;
SELECT cq.numeric_sum(v) IS NULL AS empty_sum_null, cq.numeric_max(v) IS NULL AS empty_max_null FROM na_edge WHERE false;

-- a compressed value (read detoasted) among plain ones
CREATE TABLE na_toast (g int, v numeric);
ALTER TABLE na_toast ALTER COLUMN v SET STORAGE main;
INSERT INTO na_toast SELECT 1, repeat('1', 8000)::numeric;
INSERT INTO na_toast VALUES (1, 2.5), (1, -1), (2, -1), (2, repeat('2', 8000)::numeric);
SELECT g, pg_column_compression(v) AS compressed FROM na_toast WHERE v > 1e10 ORDER BY g;
SELECT * FROM na_check('SELECT g, v FROM na_toast');
-- out of line (TOAST pointers): min and max keep the value, not the pointer
CREATE TABLE na_ext (g int, v numeric);
ALTER TABLE na_ext ALTER COLUMN v SET STORAGE external;
INSERT INTO na_ext VALUES (1, repeat('3', 8000)::numeric), (1, 2), (2, 1), (2, repeat('4', 8000)::numeric), (2, 0);
SELECT * FROM na_check('SELECT g, v FROM na_ext');
SELECT g, pg_column_size(cq.numeric_max(v)) = pg_column_size(max(v)) AS max_detoasted,
       length(cq.numeric_max(v)::text) AS max_digits FROM na_ext GROUP BY g ORDER BY g;
-- and a query's state keeps the values, after the source rows are gone
CREATE TABLE na_ext_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT g, sum(v) AS s, min(v) AS mn, max(v) AS mx FROM na_ext GROUP BY g;
CREATE TEMP TABLE na_ext_all AS SELECT g, v FROM na_ext;
DELETE FROM na_ext;
VACUUM na_ext;
INSERT INTO na_ext VALUES (1, 1), (2, 2);
INSERT INTO na_ext_all VALUES (1, 1), (2, 2);
CALL cq.run('na_ext_agg');
SELECT g, a.s::text = o.s AS sum_same, a.mn::text = o.mn AS min_same, a.mx::text = o.mx AS max_same
  FROM na_ext_agg a JOIN (SELECT g, sum(v)::text AS s, min(v)::text AS mn, max(v)::text AS mx
                            FROM na_ext_all GROUP BY g) o USING (g) ORDER BY g;

-- random groups: mixed scales and magnitudes, sums that leave int128 and
-- come back, a few specials
SELECT setseed(0.143);
CREATE TABLE na_rand AS
SELECT i % 61 AS g,
  CASE WHEN i % 61 = 1 AND i % 97 = 0 THEN 'NaN'::numeric
       WHEN i % 61 = 2 AND i % 89 = 0 THEN 'Infinity'
       WHEN i % 61 = 3 AND i % 83 = 0 THEN '-Infinity'
       WHEN i % 17 = 0 THEN NULL
       WHEN i % 61 % 5 = 0 THEN round((random() - 0.5)::numeric * 10::numeric ^ (random() * 40)::int, (random() * 12)::int)
       WHEN i % 61 % 5 = 1 THEN round((random() - 0.5)::numeric * 10::numeric ^ (random() * 60)::int, (random() * 70)::int)
       WHEN i % 61 % 5 = 2 THEN round((random() - 0.5)::numeric * 10::numeric ^ (random() * 37)::int, (random() * 2)::int)
       ELSE round((random() * 1000)::numeric, 2) END AS v
FROM generate_series(1, 40000) i;
SELECT * FROM na_check('TABLE na_rand');

-- through a continuous query: d uses them (store and table path), and the
-- targets equal the plain query as text (display scales included), over
-- batches that add rows to existing groups
CREATE TABLE na_src (k int, v numeric(12, 3), w numeric);
CREATE TABLE na_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a, min(v) AS mn, max(v) AS mx,
         sum(w) AS sw, max(w) AS mw, var_samp(w) AS vw FROM na_src GROUP BY k;
CREATE TABLE na_tab WITH (cq.output_mode = 'update', cq.trigger = 'available_now', cq.state_storage = 'unlogged') AS
  SELECT k, sum(v) AS s, avg(w) AS a, min(w) AS mn FROM na_src GROUP BY k;
SELECT name, state_storage FROM cq.queries WHERE name IN ('na_agg', 'na_tab') ORDER BY name;
SELECT cq.explain('na_agg') LIKE '%cq.numeric_sum(i.x1)%cq.numeric_min(i.x1)%cq.numeric_max(i.x1)%' AS store_d_uses_them,
       cq.explain('na_tab') LIKE '%cq.numeric_sum(i.x1)%cq.numeric_min(i.x2)%' AS table_d_uses_them;
INSERT INTO na_src SELECT g % 7, g / 3.0, g / 7.0 FROM generate_series(1, 300) g;
CALL cq.run('na_agg');
CALL cq.run('na_tab');
INSERT INTO na_src SELECT g % 9, -g / 11.0, (g * 1.5)::numeric(10, 1) FROM generate_series(1, 300) g;
INSERT INTO na_src VALUES (20, NULL, NULL), (21, 1, 'NaN'), (22, 2, 'Infinity'), (22, 3, '-Infinity'), (1, 1e8, 1e30);
CALL cq.run('na_agg');
CALL cq.run('na_tab');
INSERT INTO na_src VALUES (20, NULL, 0.000), (21, 5, 1), (3, 0.5, 0.25);
CALL cq.run('na_agg');
CALL cq.run('na_tab');
SELECT count(*) AS differing FROM (
  (SELECT k::text, count(*)::text, sum(v)::text, avg(v)::text, min(v)::text, max(v)::text,
          sum(w)::text, max(w)::text, var_samp(w)::text FROM na_src GROUP BY k
   EXCEPT SELECT k::text, n::text, s::text, a::text, mn::text, mx::text, sw::text, mw::text, vw::text FROM na_agg)
  UNION ALL
  (SELECT k::text, n::text, s::text, a::text, mn::text, mx::text, sw::text, mw::text, vw::text FROM na_agg
   EXCEPT SELECT k::text, count(*)::text, sum(v)::text, avg(v)::text, min(v)::text, max(v)::text,
          sum(w)::text, max(w)::text, var_samp(w)::text FROM na_src GROUP BY k)) d;
SELECT count(*) AS differing FROM (
  (SELECT k::text, sum(v)::text, avg(w)::text, min(w)::text FROM na_src GROUP BY k
   EXCEPT SELECT k::text, s::text, a::text, mn::text FROM na_tab)
  UNION ALL
  (SELECT k::text, s::text, a::text, mn::text FROM na_tab
   EXCEPT SELECT k::text, sum(v)::text, avg(w)::text, min(w)::text FROM na_src GROUP BY k)) d;
SELECT k, s, sw, mw FROM na_agg WHERE k >= 20 ORDER BY k;

-- integer arguments keep PostgreSQL's aggregates
CREATE TABLE na_int (k int, i int, b bigint);
CREATE TABLE na_int_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, sum(i) AS si, sum(b) AS sb, max(b) AS mb FROM na_int GROUP BY k;
SELECT cq.explain('na_int_agg') LIKE '%cq.numeric_%' AS int_uses_them;

DROP TABLE na_int_agg, na_int, na_agg, na_tab, na_src, na_rand, na_ext_agg, na_ext, na_toast, na_edge;
DROP FUNCTION na_check(text);
