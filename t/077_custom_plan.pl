# Custom plans of a store batch's d (issue 12 goal 3, session 32): a batch
# on the shared-memory store reads its new rows with a plan made for its own
# offsets when the query's previous batch in the same process read at least
# cq.custom_plan_rows rows (store_fold.c, want_custom_plan); otherwise with
# the cached generic plan.  In one session (cq.run_in_worker off, so the
# batches run in it and their DEBUG1 report reaches the client):
#   - the default is 5000;
#   - a batch after one of 1000 rows, with the setting at 500, says "with a
#     custom plan"; a batch after one of 10 rows does not; at -1 none does;
#   - after every batch the target equals the plain GROUP BY of the source
#     (count, sum, avg, max of a numeric, keys with NULLs), whichever plan.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCrash;

my $node = PostgreSQL::Test::Cluster->new('custom_plan');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq'
max_worker_processes = 16
});
$node->start;

is($node->safe_psql('postgres', 'SHOW cq.custom_plan_rows'), '5000', 'default 5000');

my $q = q{SELECT CASE WHEN g % 11 = 0 THEN NULL ELSE g % 7 END AS k, count(*) AS n, sum(v) AS s, avg(v) AS a, max(v) AS m FROM src GROUP BY 1};
$node->safe_psql('postgres', qq{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE src (g int, v numeric(10,2));
	CREATE TABLE agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $q;
});
is($node->safe_psql('postgres', "SELECT state_storage FROM cq.queries WHERE name = 'agg'"), 'memory',
	'the query is on the store');

# one session: INSERT n rows, then a batch whose DEBUG1 lines follow a marker
my ($sql, $from) = ('SET cq.run_in_worker = off; SET cq.custom_plan_rows = 500;', 0);
my @steps = ([1000, 500], [10, 500], [10, 500], [2000, -1], [10, -1], [5000, 500], [100, 500]);
for my $i (0 .. $#steps)
{
	my ($n, $setting) = @{ $steps[$i] };
	$sql .= qq{
		SET cq.custom_plan_rows = $setting;
		INSERT INTO src SELECT g, CASE WHEN g % 13 = 0 THEN NULL ELSE (g * 37 % 100000) / 100.0 END
		  FROM generate_series($from + 1, $from + $n) g;
		DO \$\$ BEGIN RAISE NOTICE 'step $i'; END \$\$;
		SET client_min_messages = debug1;
		CALL cq.run('agg');
		SET client_min_messages = notice;
		SELECT 'step $i', (SELECT count(*) FROM (SELECT * FROM agg EXCEPT SELECT * FROM ($q) x) d)
		  + (SELECT count(*) FROM (SELECT * FROM ($q) x EXCEPT SELECT * FROM agg) d);
	};
	$from += $n;
}
my ($out, $err) = ('', '');
$node->psql('postgres', $sql, stdout => \$out, stderr => \$err, on_error_stop => 1);
my %custom;
my $cur;
for my $line (split /\n/, $err)
{
	$cur = $1 if $line =~ /NOTICE:\s+step (\d+)/;
	$custom{$cur}++ if defined $cur && $line =~ /store fold: .*with a custom plan/;
}
for my $i (0 .. $#steps)
{
	like($out, qr/^step $i\|0$/m, "step $i: the target equals the GROUP BY");
}
# step 0 follows batch 0 (created in another session: nothing known here)
ok(!$custom{0}, 'first batch of the session: generic plan');
ok($custom{1}, 'after a 1000-row batch: custom plan');
ok(!$custom{2}, 'after a 10-row batch: generic plan');
ok(!$custom{3} && !$custom{4}, 'at -1: never');
ok($custom{6}, 'after a 5000-row batch: custom plan') or diag($err);
like($err, qr/store fold: /, 'the DEBUG1 report reached the client');

$node->stop;
done_testing();
