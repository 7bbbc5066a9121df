-- cq.stamp_type = 'xid48' (docs/design-stamp.md step 2) as an unprivileged owner on a
-- hostile search_path: its own schema first, with operators of cq's names on
-- (cq.xid48, xid8) that always say true.  Tracking gives the source a cq.xid48 cq_xid
-- with cq.xid48's BRIN operator class; the stamp trigger keeps it; a column of another
-- type is refused as before; the setting takes only its two values; cq.xid48_new
-- answers as cq.xid_new.
BEGIN;
SET client_min_messages = warning;
SELECT plan(12);

SELECT throws_ok($$SET cq.stamp_type = 'xid16'$$, '22023', NULL, 'cq.stamp_type takes xid8 or xid48 only');
SELECT is(current_setting('cq.stamp_type'), 'xid8', 'the default is xid8');

CREATE ROLE regress_t101_owner;
GRANT CREATE ON SCHEMA public TO regress_t101_owner;
CREATE SCHEMA t101_evil AUTHORIZATION regress_t101_owner;
SET LOCAL ROLE regress_t101_owner;
CREATE FUNCTION t101_evil.yes(cq.xid48, xid8) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE OPERATOR t101_evil.>= (LEFTARG = cq.xid48, RIGHTARG = xid8, FUNCTION = t101_evil.yes);
CREATE OPERATOR t101_evil.< (LEFTARG = cq.xid48, RIGHTARG = xid8, FUNCTION = t101_evil.yes);
SET LOCAL search_path = t101_evil, public, cq, pg_catalog;
SET LOCAL cq.stamp_type = 'xid48';
CREATE TABLE public.t101_src (k int, v int);
SELECT lives_ok($$SELECT cq.create_query('t101_q', 'SELECT k, count(*) AS n FROM public.t101_src GROUP BY k',
                                         output_mode => 'update', "trigger" => 'available_now')$$,
                'an unprivileged owner tracks its table with cq.stamp_type = xid48');
SELECT is((SELECT atttypid FROM pg_catalog.pg_attribute
            WHERE attrelid = 'public.t101_src'::pg_catalog.regclass AND attname = 'cq_xid'),
          'cq.xid48'::pg_catalog.regtype::pg_catalog.oid, 'cq_xid is a cq.xid48');
SELECT is((SELECT o.opcname::text FROM pg_catalog.pg_index i JOIN pg_catalog.pg_opclass o ON o.oid = i.indclass[0]
            WHERE i.indrelid = 'public.t101_src'::pg_catalog.regclass),
          'xid48_minmax_ops', 'its BRIN index has cq.xid48''s operator class');
SELECT ok((SELECT d.adbin::text LIKE '{FUNCEXPR :funcid ' || 'cq.current_xid48()'::pg_catalog.regprocedure::pg_catalog.oid || ' %'
             FROM pg_catalog.pg_attrdef d WHERE d.adrelid = 'public.t101_src'::pg_catalog.regclass),
          'its default is cq.current_xid48()');

INSERT INTO public.t101_src (k, v, cq_xid) VALUES (1, 1, '3'), (2, 2, DEFAULT);
SELECT is((SELECT pg_catalog.count(*) FROM public.t101_src
            WHERE cq_xid::pg_catalog.xid8 OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id()),
          2::bigint, 'every row carries the transaction''s id, a given value replaced');
SELECT throws_ok($$UPDATE public.t101_src SET cq_xid = '5'$$, '428C9', NULL,
                 'the stamp cannot be changed');
SELECT is((SELECT pg_catalog.count(*) FROM public.t101_src WHERE cq_xid OPERATOR(cq.>=) '1'::pg_catalog.xid8),
          2::bigint, 'cq''s own operators find the rows');

CREATE TABLE public.t101_bad (k int, cq_xid int);
SELECT throws_ok($$SELECT cq.create_query('t101_bad_q', 'SELECT k, count(*) AS n FROM public.t101_bad GROUP BY k',
                                          output_mode => 'update')$$,
                 '42804', NULL, 'a cq_xid of another type is refused');
RESET ROLE;

-- cq.xid48_new answers as cq.xid_new, ids below, in and above the snapshots
SELECT is((SELECT pg_catalog.count(*) FROM pg_catalog.generate_series(1, 12) g
            WHERE cq.xid48_new(g::text::cq.xid48, '8:10:8'::pg_snapshot, '3:5:4'::pg_snapshot)
                  IS DISTINCT FROM cq.xid_new(g::text::xid8, '8:10:8'::pg_snapshot, '3:5:4'::pg_snapshot)),
          0::bigint, 'cq.xid48_new(cq.xid48, ...) = cq.xid_new(xid8, ...)');
SELECT is((SELECT pg_catalog.count(*) FROM pg_catalog.generate_series(1, 12) g
            WHERE cq.xid48_new(g::text::cq.xid48, '8:10:8'::pg_snapshot, '3:5:4'::pg_snapshot)),
          5::bigint, 'and says new for 4, 5, 6, 7 and 9');

SELECT * FROM finish();
ROLLBACK;
