# Session 35's code under a hostile search_path (session 36 review): a
# database owned by a plain role who sets search_path = attacker,
# pg_catalog for the database, with operators, functions, aggregates and
# types of schema attacker shadowing pg_catalog's (CqTest::attacker_sql),
# and queries of that role on the store in the shapes whose new rows
# deltagg.c aggregates in C (integer, text, timestamptz and bool keys;
# count, sum of int4, numeric's sum, min and max of integers and
# timestamps), run by the role: batch 0 (the target load from C,
# store_load.c), a batch of new groups only (written from C,
# cq_target_load_new), a batch of new and existing groups (the upsert),
# with the recheck dropped from d's plan (delta_plan.c) and with
# cq.delta_agg_in_c off.  None of the attacker's objects may ever run,
# and every target equals the plain GROUP BY.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('hostile_c_writes', 'cq.run_in_worker = off');

$node->safe_psql('postgres', q{
	CREATE ROLE dbowner LOGIN;
	CREATE DATABASE hostile OWNER dbowner;
});
$node->safe_psql('hostile', q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE SCHEMA attacker AUTHORIZATION dbowner;
	CREATE SCHEMA app AUTHORIZATION dbowner;
});
$node->safe_psql('hostile', 'SET ROLE dbowner;' . attacker_sql('dbowner') . q{
	ALTER DATABASE hostile SET search_path = attacker, pg_catalog;
});
is($node->safe_psql('hostile', 'SHOW search_path'), 'attacker, pg_catalog',
	'new sessions get the hostile search_path');

sub log_says
{
	return $node->safe_psql('hostile', q{
		SET search_path = public, pg_catalog;
		SELECT coalesce(string_agg(DISTINCT who || ' ' || su || ' ' || what, ', '), 'nothing')
		FROM attacker.log});
}

my %q = (
	by_k => q{SELECT k, b, pg_catalog.count(*) AS n, pg_catalog.count(v) AS nv, pg_catalog.sum(i) AS si,
		pg_catalog.sum(v) AS sv, pg_catalog.min(i) AS lo, pg_catalog.max(ts) AS last_ts, pg_catalog.max(v) AS hi
		FROM app.src GROUP BY k, b},
	by_t => q{SELECT t, pg_catalog.date_trunc('minute', ts) AS minute, pg_catalog.count(*) AS n,
		pg_catalog.min(v) AS lo FROM app.src GROUP BY 1, 2},
);
$node->safe_psql('hostile', q{
	SET client_min_messages = warning;
	SET ROLE dbowner;
	CREATE TABLE app.src (k pg_catalog.int4, b pg_catalog.bool, t pg_catalog.text, i pg_catalog.int4,
	  v pg_catalog.numeric, ts pg_catalog.timestamptz);
	INSERT INTO app.src SELECT g % 7, g % 2 OPERATOR(pg_catalog.=) 0, 'h' || (g % 3), g, g / 10.0, '2024-01-01'::timestamptz + g * interval '1 second'
	  FROM pg_catalog.generate_series(1, 300) g;
} . join('', map { qq{
	SELECT cq.create_query('$_', \$q\$$q{$_}\$q\$, output_mode => 'update', "trigger" => 'available_now',
	  starting => 'earliest', target => 'app.$_');
} } sort keys %q));
is($node->safe_psql('hostile', q{
	SET search_path = public, pg_catalog;
	SELECT string_agg(name || ' ' || state_path, ', ' ORDER BY name) FROM cq.queries}),
	'by_k memory, by_t memory', 'the queries are on the store');
like($node->safe_psql('hostile', q{SELECT cq.explain('app.by_k') OPERATOR(pg_catalog.||) cq.explain('app.by_t')}),
	qr/made in C \(cq\.delta_agg_in_c\).*made in C \(cq\.delta_agg_in_c\)/s, 'both aggregate their new rows in C');

my $check = join(" || ' ' || ", map { qq{(SELECT pg_catalog.count(*) FROM ((($q{$_}) EXCEPT ALL TABLE app.$_)
	UNION ALL (TABLE app.$_ EXCEPT ALL ($q{$_}))) x)} } sort keys %q);

# each step: rows, then a batch of each query by the plain role (DEBUG1 to the client)
my @steps = (
	[ 'batch 0', '' ],
	[ 'new groups only', q{SELECT 100 + g % 5, true, 'n' || g, g, g, '2024-02-01'::timestamptz + g * interval '1 minute'
		FROM pg_catalog.generate_series(1, 40) g} ],
	[ 'new and existing groups', q{SELECT g % 9, g % 3 OPERATOR(pg_catalog.=) 0, 'h' || (g % 4), -g, NULL, '2024-01-01'::timestamptz + g * interval '7 seconds'
		FROM pg_catalog.generate_series(1, 500) g} ],
	[ 'delta_agg_in_c off', q{SELECT g % 11, NULL, NULL, g, g * 3, NULL FROM pg_catalog.generate_series(1, 100) g} ],
);
my $err_all = '';
for my $s (@steps)
{
	my ($name, $rows) = @$s;
	my ($out, $err) = ('', '');
	my $sql = 'SET ROLE dbowner;';
	$sql .= "INSERT INTO app.src $rows;" if $rows ne '';
	$sql .= 'SET cq.delta_agg_in_c = off;' if $name =~ /off/;
	$sql .= "SET client_min_messages = debug1; CALL cq.run('app.by_k'); CALL cq.run('app.by_t');";
	$node->psql('hostile', $sql, stdout => \$out, stderr => \$err);
	unlike($err, qr/ERROR/, "$name: the batches run") or diag($err);
	$err_all .= $err;
	is($node->safe_psql('hostile', "SET search_path = public, pg_catalog; SELECT $check"), '0 0',
		"$name: the targets equal the GROUP BY");
	is(log_says(), 'nothing', "$name: no shadowing object ran");
}
like($err_all, qr/target rows of new groups written from C/, 'a batch wrote its new groups from C');

$node->safe_psql('hostile', q{SET client_min_messages = warning; SET ROLE dbowner; DROP TABLE app.by_k, app.by_t;});
is(log_says(), 'nothing', 'no shadowing object ran at all');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'dbowner'}),
	'f', 'the database owner is no superuser');

$node->stop;
done_testing();
