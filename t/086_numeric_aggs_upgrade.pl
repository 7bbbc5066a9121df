# Session 34 (issue 12 goal 3): d's partial states of sum, avg, min and max
# of numeric come from cq.numeric_sum, cq.numeric_min and cq.numeric_max,
# which only the 0.2 catalog has.  Queries created on a 0.1 catalog with
# numeric aggregates (in the background and run by hand) keep PostgreSQL's
# aggregates there; ALTER EXTENSION pg_cq UPDATE mid-stream switches their
# SQL to the new aggregates, and every target goes on equal to its oracle as
# text (display scales included), NaN and the infinities included.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('numagg');
my $db = 'postgres';

# the oracles, as text
my %oracle = (
	nu_bg => q{SELECT k::text, count(*)::text, sum(v)::text, avg(v)::text, min(v)::text, max(v)::text,
	                  sum(w)::text, max(w)::text FROM ns GROUP BY k},
	nu_hand => q{SELECT k::text, sum(w)::text, avg(w)::text, min(w)::text, var_samp(v)::text FROM ns GROUP BY k},
);
my %target = (
	nu_bg => q{SELECT k::text, n::text, s::text, a::text, mn::text, mx::text, sw::text, mw::text FROM nu_bg},
	nu_hand => q{SELECT k::text, sw::text, aw::text, mnw::text, vv::text FROM nu_hand},
);
sub differing
{
	my ($q) = @_;
	return $node->safe_psql($db,
		"SELECT count(*) FROM (($oracle{$q} EXCEPT ALL $target{$q}) UNION ALL ($target{$q} EXCEPT ALL $oracle{$q})) x");
}

# rows of mixed scales, a few specials, sums past an int128 now and then
my $insert = q{
	INSERT INTO ns SELECT g % 11, round((random() - 0.5)::numeric * 10000, (random() * 3)::int),
	       CASE WHEN g % 500 = 1 THEN 'NaN'::numeric
	            WHEN g % 11 = 3 AND g % 97 = 0 THEN 'Infinity'
	            WHEN g % 11 = 4 AND g % 89 = 0 THEN '-Infinity'
	            WHEN g % 11 = 5 THEN round(random()::numeric * 1e37, (random() * 2)::int)
	            WHEN g % 13 = 0 THEN NULL
	            ELSE round(random()::numeric * 1000, (random() * 4)::int) END
	  FROM generate_series(1, %d) g;
};

$node->safe_psql($db, q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq VERSION '0.1';
	CREATE TABLE ns (k int, v numeric(12, 3), w numeric);
	CREATE TABLE nu_bg WITH (cq.output_mode = 'update')
	  AS SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a, min(v) AS mn, max(v) AS mx,
	            sum(w) AS sw, max(w) AS mw FROM ns GROUP BY k;
	CREATE TABLE nu_hand WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
	  AS SELECT k, sum(w) AS sw, avg(w) AS aw, min(w) AS mnw, var_samp(v) AS vv FROM ns GROUP BY k;
} . sprintf($insert, 2000) . q{ CALL cq.run('nu_hand');});
is($node->safe_psql($db, q{
	SELECT extversion || ' ' || (to_regprocedure('cq.numeric_sum(numeric)') IS NULL)
	  FROM pg_extension WHERE extname = 'pg_cq'}),
	'0.1 true', 'the 0.1 catalog has no cq.numeric_sum');
ok($node->poll_query_until($db, caught_up_sql('ns', 'nu_bg')), '0.1 catalog: the background query caught up');
is(differing('nu_bg'), '0', '0.1 catalog: background query equals its oracle');
is(differing('nu_hand'), '0', '0.1 catalog: query run by hand equals its oracle');

# a writer goes on while the catalog is updated
my $writer = start_writer($node, $db, q{
	DO $$BEGIN FOR i IN 1 .. 100000 LOOP
	  EXIT WHEN EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_cq' AND extversion = '0.2')
	        AND (SELECT count(*) FROM ns) > 8000;
	  INSERT INTO ns SELECT g % 11, g / 7.0, (g / 3.0)::numeric(20, 5) FROM generate_series(1, 20) g;
	  COMMIT;
	  PERFORM pg_sleep(0.002);
	END LOOP; END $$});
ok($node->poll_query_until($db, 'SELECT count(*) > 3000 FROM ns'), 'the writer inserts');
$node->safe_psql($db, sprintf($insert, 1000) . q{ CALL cq.run('nu_hand');});
$node->safe_psql($db, 'ALTER EXTENSION pg_cq UPDATE');
is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'pg_cq'"), '0.2', 'updated to 0.2');
$node->safe_psql($db, sprintf($insert, 2000) . q{ CALL cq.run('nu_hand');});
ok($node->poll_query_until($db, q{
	SELECT count(*) > 8000 AND NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE query LIKE 'DO $$BEGIN FOR i IN%' AND pid <> pg_backend_pid())
	  FROM ns}), 'the writer went on after the update, and ended');
stop_writers($writer);
$node->safe_psql($db, sprintf($insert, 500) . q{
	INSERT INTO ns VALUES (1, 0.5, 'NaN'), (2, 1.25, 'Infinity'), (3, -2, '-Infinity'), (20, NULL, NULL);
	CALL cq.run('nu_hand');});

# the SQL of both queries now uses the new aggregates
is($node->safe_psql($db, q{
	SELECT string_agg(name || ':' || (cq.explain(name) LIKE '%cq.numeric_sum(%')::text, ',' ORDER BY name)
	  FROM cq.queries}),
	'nu_bg:true,nu_hand:true', '0.2 catalog: d sums numerics with cq.numeric_sum');
ok($node->poll_query_until($db, caught_up_sql('ns', 'nu_bg')), '0.2 catalog: the background query caught up');
is(differing('nu_bg'), '0', 'background query across the update equals its oracle');
is(differing('nu_hand'), '0', 'query run by hand across the update equals its oracle');
is($node->safe_psql($db, "SELECT count(*) FROM cq.queries WHERE state <> 'active' OR last_error IS NOT NULL"),
	'0', 'no query failed across the update');
is($node->safe_psql($db, q{SELECT count(*) FILTER (WHERE sw = 'NaN') > 0 AND count(*) FILTER (WHERE k = 20) = 1 FROM nu_bg}),
	't', 'the special values and a NULL-only group reached the target');

# a query created on the updated catalog (the shared-memory store) as well
$node->safe_psql($db, q{
	SET client_min_messages = warning;
	CREATE TABLE nu_new WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
	  AS SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a, min(v) AS mn, max(v) AS mx,
	            sum(w) AS sw, max(w) AS mw FROM ns GROUP BY k;
} . sprintf($insert, 1000) . q{ CALL cq.run('nu_new');});
$target{nu_new} = $target{nu_bg} =~ s/FROM nu_bg/FROM nu_new/r;
$oracle{nu_new} = $oracle{nu_bg};
is($node->safe_psql($db, "SELECT state_storage FROM cq.queries WHERE name = 'nu_new'"), 'memory', 'new query on the store');
is(differing('nu_new'), '0', 'a query created after the update equals its oracle');

done_testing();
