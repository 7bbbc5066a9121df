# ALTER EXTENSION pg_cq UPDATE from the released 0.1 (DEVELOPERS "Releases and
# upgrades").  The library serves databases whose catalog is still 0.1: queries
# created under 0.1 run in the background and with CALL cq.run, in every output
# mode, while writers insert; the extension is updated mid-stream; the same
# queries go on exactly (every target equals its plain-SELECT oracle, append
# targets hold each closed window once).  Finally an updated database and a
# fresh 0.2 install have the same SQL objects.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('upgrade');
my $db = 'postgres';

$node->safe_psql($db, writers_sql() . q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq VERSION '0.1';
	CALL cq_write(1, 50, 20, 0, 0, true);
} . all_modes_sql() . q{
	CREATE TABLE run_by_hand WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
	  AS SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k;
});
is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'pg_cq'"),
	'0.1', 'the database has the 0.1 catalog');
# on the 0.1 catalog a name is unique in the database
my ($rc, $out, $err) = $node->psql($db, q{
	CREATE SCHEMA other;
	CREATE TABLE other.run_by_hand WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
	  AS SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k;});
like($err, qr/continuous query "run_by_hand" already exists/, '0.1 catalog: one name per database');
# on the 0.1 catalog an aggregate outside the fast path is refused (issue 10)
($rc, $out, $err) = $node->psql($db, q{
	CREATE TABLE generic_q WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
	  AS SELECT k, regr_count(v::float8, w::float8) AS rc, count(*) AS n FROM ev GROUP BY k;});
like($err, qr/needs version 0\.2 of extension pg_cq.*ALTER EXTENSION pg_cq UPDATE/s,
	'0.1 catalog: a generic aggregate is refused, with the way out');

# writers on the 0.1 catalog
my @writers = map { start_writer($node, $db, "CALL cq_write($_, 1000000, 30, 10, 0, true)") } (1, 2);
my $rows0 = $node->safe_psql($db, 'SELECT count(*) FROM ev');
ok($node->poll_query_until($db, qq{
	SELECT (SELECT count(*) FROM ev) > $rows0 + 2000
	   AND EXISTS (SELECT 1 FROM a_zero) AND EXISTS (SELECT 1 FROM a_tick)
	   AND (SELECT count(DISTINCT name) FROM cq.offsets
	         WHERE committed_at > now() - interval '1 second' AND batch_id > 1) = 9}),
	'0.1 catalog: writers insert, every background query runs batches');
$node->safe_psql($db, "CALL cq.run('run_by_hand')");

# a timestamp (without time zone) event-time column, created in Asia/Kolkata,
# and its oracle over timestamptz at UTC: on the 0.1 catalog the watermark
# recorded is the column's value at UTC (12:50), with no *_ntz copy
$node->safe_psql($db, q{
	SET client_min_messages = warning;
	SET timezone = 'Asia/Kolkata';
	CREATE TABLE nev (ts timestamp, v int);
	CREATE TABLE naive_win WITH (cq.output_mode = 'update', cq.trigger = 'available_now',
	                             cq.event_time = 'ts', cq.watermark = '10 minutes')
	  AS SELECT w.window_start, count(*) AS n FROM nev, LATERAL cq.window(ts, '30 minutes') AS w
	     GROUP BY 1 WITH NO DATA;
	SET timezone = 'UTC';
	CREATE TABLE onev (ts timestamptz, v int);
	CREATE TABLE naive_owin WITH (cq.output_mode = 'update', cq.trigger = 'available_now',
	                              cq.event_time = 'ts', cq.watermark = '10 minutes')
	  AS SELECT w.window_start, count(*) AS n FROM onev, LATERAL cq.window(ts, '30 minutes') AS w
	     GROUP BY 1 WITH NO DATA;
	INSERT INTO nev VALUES ('2026-06-01 12:00', 1), ('2026-06-01 13:00', 1);
	INSERT INTO onev VALUES ('2026-06-01 12:00+00', 1), ('2026-06-01 13:00+00', 1);
	CALL cq.run('naive_win');
	CALL cq.run('naive_owin');
});
is($node->safe_psql($db, q{
	SELECT watermark AT TIME ZONE 'UTC' FROM cq.offsets WHERE name = 'naive_win' ORDER BY batch_id DESC LIMIT 1}),
	'2026-06-01 12:50:00', '0.1 catalog: a timestamp column\'s watermark is recorded at UTC');

# on the 0.1 catalog the state stays in tables, whatever form created the
# query (the DDL form gives no state_storage: the store is not the default there)
is($node->safe_psql($db, "SELECT string_agg(DISTINCT state_storage, ',') FROM cq.queries WHERE name <> 'u_logged'"),
	'unlogged', '0.1 catalog: every query keeps its state in an unlogged table (u_logged asked for a logged one)');

# the update itself, while the writers and workers go on
my $t_before = $node->safe_psql($db, 'SELECT now()');
$node->safe_psql($db, 'ALTER EXTENSION pg_cq UPDATE');
is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'pg_cq'"),
	'0.2', 'updated to 0.2');
# the queries keep their storage, and say why (issue 15)
is($node->safe_psql($db, q{
	SELECT string_agg(DISTINCT state_storage || ' ' || coalesce(state_path, 'stateless'), ',')
	  FROM cq.queries WHERE state_table IS NOT NULL OR state_path IS NOT NULL}),
	'logged table: created before pg_cq 0.2,unlogged table: created before pg_cq 0.2',
	'the 0.1 queries keep their state tables, cq.queries says why');
my $t_update = $node->safe_psql($db, 'SELECT now()');
ok($node->poll_query_until($db, qq{
	SELECT count(DISTINCT name) = 9 FROM cq.progress WHERE started_at > '$t_update'}),
	'0.2 catalog: every background query runs batches after the update');
# cq.progress.state_bytes (issue 15): NULL in the rows 0.1 recorded; from
# the update on, the state's bytes for every query with state (its table's
# size here), NULL for stateless ones
is($node->safe_psql($db, qq{
	SELECT count(*) FILTER (WHERE p.started_at < '$t_before' AND p.state_bytes IS NOT NULL) || ' ' ||
	       count(*) FILTER (WHERE p.started_at > '$t_update'
	                          AND (p.state_bytes IS NULL) <> (q.state_table IS NULL)) || ' ' ||
	       (count(*) FILTER (WHERE p.started_at > '$t_update' AND p.state_bytes > 0) > 0)
	  FROM cq.progress p JOIN cq.queries q ON q.schema = p.schema AND q.name = p.name}),
	'0 0 true', '0.1 rows have no state_bytes, 0.2 rows have those of the queries with state');
# writers stop at a row in cq_stop; wait for their backends to end
$node->safe_psql($db, 'INSERT INTO cq_stop VALUES (true)');
ok(end_writers($node, $db, @writers), 'writers stopped');
$node->safe_psql($db, 'TRUNCATE cq_stop');

$node->safe_psql($db, 'CALL cq_write(3, 20, 20, 10, 0, true)');

# the timestamp query goes on from the watermark 0.1 recorded (12:10 is
# late: its window ended at 12:30 <= 12:50), as its oracle does; what 0.2
# records shows in the creator's zone, with the exact *_ntz copy
$node->safe_psql($db, q{
	INSERT INTO nev VALUES ('2026-06-01 12:10', 1), ('2026-06-01 14:00', 1);
	INSERT INTO onev VALUES ('2026-06-01 12:10+00', 1), ('2026-06-01 14:00+00', 1);
	CALL cq.run('naive_win');
	CALL cq.run('naive_owin');
});
is(mismatches($node, $db, q{SELECT window_start AT TIME ZONE 'UTC', n FROM naive_owin}, 'naive_win'),
	'0', 'timestamp event-time query across the update equals its timestamptz oracle');
is($node->safe_psql($db, q{
	SELECT string_agg(name || ':' || num_rows_dropped_by_watermark, ',' ORDER BY name)
	  FROM (SELECT name, sum(num_rows_dropped_by_watermark) AS num_rows_dropped_by_watermark
	          FROM cq.progress WHERE name IN ('naive_win', 'naive_owin') GROUP BY name) p}),
	'naive_owin:1,naive_win:1', 'the row late after the update is dropped by both');
is($node->safe_psql($db, q{
	SELECT string_agg(format('%s %s %s', batch_id, watermark AT TIME ZONE 'Asia/Kolkata',
	                         coalesce(watermark_ntz::text, '-')), ',' ORDER BY batch_id)
	  FROM cq.offsets WHERE name = 'naive_win' AND batch_id >= 2}),
	'2 2026-06-01 13:50:00 2026-06-01 13:50:00,3 2026-06-01 13:50:00 2026-06-01 13:50:00',
	'0.2 records a timestamp column\'s watermark in the creator\'s zone, and exactly');
$node->safe_psql($db, "CALL cq.run('run_by_hand')");
wait_caught_up($node, $db, 'ev', 'after the update', @ALL_MODES);
check_all_modes($node, $db, 'after the update');
is(mismatches($node, $db, 'SELECT k, count(*), sum(v) FROM ev GROUP BY k', 'run_by_hand'),
	'0', 'available-now query run before and after the update equals its oracle');
is($node->safe_psql($db, "SELECT count(*) FROM cq.queries WHERE state <> 'active' OR last_error IS NOT NULL"),
	'0', 'no query failed across the update');

# the update put every query in its target's schema, its offsets and
# progress with it; now a name is unique in its schema only (issue 9 item 27)
is($node->safe_psql($db, q{
	SELECT (SELECT count(*) FROM cq.queries WHERE schema IS DISTINCT FROM 'public') +
	       (SELECT count(*) FROM cq.offsets WHERE schema IS DISTINCT FROM 'public') +
	       (SELECT count(*) FROM cq.progress WHERE schema IS DISTINCT FROM 'public')}),
	'0', 'queries, offsets and progress of the 0.1 queries are in schema public');
$node->safe_psql($db, q{
	SET client_min_messages = warning;
	CREATE TABLE other.run_by_hand WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
	  AS SELECT k, count(*) AS n, sum(v) AS s FROM ev WHERE k = 1 GROUP BY k WITH NO DATA;
	CALL cq.run('other.run_by_hand');
	CALL cq.run('run_by_hand');
});
is($node->safe_psql($db, 'SELECT count(*) FROM other.run_by_hand'), '1', 'it has its one group');
is(mismatches($node, $db, 'SELECT k, count(*), sum(v) FROM ev WHERE k = 1 GROUP BY k', 'other.run_by_hand'),
	'0', 'a query of the same name in another schema runs on its own');
is(mismatches($node, $db, 'SELECT k, count(*), sum(v) FROM ev GROUP BY k', 'run_by_hand'),
	'0', 'and so does the query created on the 0.1 catalog');

# the generic aggregate path on the updated catalog (issue 10)
$node->safe_psql($db, q{
	SET client_min_messages = warning;
	CREATE TABLE generic_q WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
	  AS SELECT k, regr_count(v::float8, w::float8) AS rc, count(*) AS n FROM ev GROUP BY k;
	CALL cq_write(4, 20, 20, 10, 0, true);
	CALL cq.run('generic_q');
});
is(mismatches($node, $db, 'SELECT k, regr_count(v::float8, w::float8), count(*) FROM ev GROUP BY k', 'generic_q'),
	'0', 'updated catalog: a generic aggregate equals its oracle');
# queries created after the update keep their state in the shared-memory
# store by default; those created before still do not (issue 15)
is($node->safe_psql($db, q{
	SELECT string_agg(format('%s %s %s', schema || '.' || name, state_storage, state_path), ',' ORDER BY schema, name)
	  FROM cq.queries WHERE name IN ('generic_q', 'run_by_hand')}),
	'other.run_by_hand memory memory,public.generic_q memory memory,public.run_by_hand unlogged table: created before pg_cq 0.2',
	'updated catalog: new queries on the store by default, the 0.1 ones on their tables');
is($node->safe_psql($db, q{
	SELECT string_agg(DISTINCT state_path, ',') FROM cq.status WHERE name IN ('generic_q', 'run_by_hand')}),
	'memory,table: created before pg_cq 0.2', 'cq.status says the same');
# the settings batches run with beside TimeZone (sessions 41, 42): recorded for
# the queries created after the update, NULL for the 0.1 ones (whose
# batches take the runner's, as before; they went on above)
my $pinned = 'DateStyle IntervalStyle extra_float_digits bytea_output lc_monetary lc_numeric lc_time '
  . 'xmloption xmlbinary array_nulls default_text_search_config timezone_abbreviations quote_all_identifiers';
is($node->safe_psql($db, q{
	SELECT string_agg(format('%s %s', schema || '.' || name,
	                         CASE WHEN settings IS NULL THEN 'NULL' ELSE
	                           array_to_string(ARRAY(SELECT split_part(e, '=', 1) FROM unnest(settings) e), ' ') END),
	                  ',' ORDER BY schema, name)
	  FROM cq.queries WHERE name IN ('generic_q', 'run_by_hand')}),
	join(',', map { "$_ $pinned" } 'other.run_by_hand', 'public.generic_q') . ',public.run_by_hand NULL',
	'updated catalog: new queries record their creator\'s settings, the 0.1 ones none');

# a fresh 0.2 install has the same objects as the updated one
$node->safe_psql($db, 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION pg_cq');
my $objects = q{
	SELECT string_agg(d, E'\n' ORDER BY d) FROM (
	  SELECT pg_describe_object(classid, objid, objsubid) AS d
	    FROM pg_depend
	   WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
	     AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_cq')
	  UNION ALL
	  SELECT format('%s.%s %s %s default %s', table_schema, table_name, column_name, data_type,
	                column_default)
	    FROM information_schema.columns WHERE table_schema = 'cq'
	  UNION ALL
	  SELECT format('policy %s.%s %s %s', schemaname, tablename, policyname, qual)
	    FROM pg_policies WHERE schemaname = 'cq'
	  UNION ALL
	  SELECT format('acl %s %s', c.oid::regclass, c.relacl)
	    FROM pg_class c WHERE c.relnamespace = 'cq'::regnamespace
	  UNION ALL
	  SELECT format('view %s %s', c.oid::regclass, pg_get_viewdef(c.oid))
	    FROM pg_class c WHERE c.relnamespace = 'cq'::regnamespace AND c.relkind = 'v'
	  UNION ALL
	  SELECT format('function %s %s', p.oid::regprocedure, md5(pg_get_functiondef(p.oid)))
	    FROM pg_proc p WHERE p.pronamespace = 'cq'::regnamespace AND p.prokind IN ('f', 'p')
	) x};
is($node->safe_psql($db, $objects), $node->safe_psql('fresh', $objects),
	'an updated database and a fresh 0.2 install have the same objects');

$node->stop;
done_testing();
