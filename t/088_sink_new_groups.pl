# A batch on the store whose changed groups are all new (issue 12 goal 4,
# session 34): an update query's target statement is then the plain INSERT
# of those groups alone (CqStoreSql.sink_new, store_fold.c), not the upsert
# whose ou and oi would write nothing.  In one session (cq.run_in_worker
# off, so the batches run in it and their DEBUG1 report reaches the
# client), for a query with nullable keys (the upsert, not MERGE) and one
# with HAVING:
#   - a batch of new groups only (a NULL key among them) says "all new";
#     a batch of existing groups only, or of new and existing ones, does
#     not;
#   - with a statement-level UPDATE trigger on the target the upsert runs
#     (its ou fires that trigger in every batch) and the trigger fires once;
#     without one, statement-level INSERT triggers fire once and row-level
#     ones once a new group, as with the upsert;
#   - after every batch the target equals the plain GROUP BY of the source
#     (HAVING applied), and the batch's output rows are the rows written.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('sink_new_groups');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq'
max_worker_processes = 16
});
$node->start;

my $q = q{SELECT date_trunc('minute', ts) AS minute, k, count(*) AS n, sum(v) AS s, avg(v) AS a, max(v) AS m FROM src GROUP BY 1, 2};
my $qh = q{SELECT date_trunc('minute', ts) AS minute, count(*) AS n FROM src GROUP BY 1 HAVING count(*) > 1};
$node->safe_psql('postgres', qq{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE src (ts timestamptz, k text, v numeric(10,2));
	CREATE TABLE agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $q;
	CREATE TABLE aggh WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $qh;
	CREATE TABLE fired (op text, level text);
	CREATE FUNCTION note() RETURNS trigger LANGUAGE plpgsql AS \$\$
	BEGIN INSERT INTO public.fired VALUES (TG_OP, TG_LEVEL); RETURN NULL; END \$\$;
});
is($node->safe_psql('postgres', "SELECT string_agg(state_storage, ',' ORDER BY name) FROM cq.queries"),
	'memory,memory', 'both queries are on the store');

# rows at minute $m (of 2026-01-01), keys from the list
sub rows
{
	my ($m, @keys) = @_;
	return join(', ', map {
		my $k = $_ eq 'NULL' ? 'NULL' : "'$_'";
		"(timestamptz '2026-01-01 00:00+00' + interval '$m minutes' + interval '1 second' * $m, $k, $m + 0.25)"
	} @keys);
}

# one session: per step, set-up SQL, rows, then both batches whose DEBUG1
# lines follow a marker
my @steps = (
	[ '', rows(1, 'a', 'b', 'a') . ', ' . rows(2, 'NULL', 'c') ],    # new groups only
	[ '', rows(1, 'a', 'b') . ', ' . rows(2, 'NULL') ],              # existing only
	[ '', rows(2, 'c') . ', ' . rows(3, 'a', 'a') ],                 # both
	[ '', rows(4, 'NULL', 'd', 'd') . ', ' . rows(5, 'e') ],         # new only, NULL key
	[ 'CREATE TRIGGER up_stmt BEFORE UPDATE ON agg FOR EACH STATEMENT EXECUTE FUNCTION note();',
	  rows(6, 'a', 'b') ],                                           # new only, UPDATE trigger
	[ 'DROP TRIGGER up_stmt ON agg; DELETE FROM fired;'
	  . ' CREATE TRIGGER ins_stmt AFTER INSERT ON agg FOR EACH STATEMENT EXECUTE FUNCTION note();'
	  . ' CREATE TRIGGER ins_row AFTER INSERT ON agg FOR EACH ROW EXECUTE FUNCTION note();',
	  rows(7, 'a', 'b', 'NULL', 'b') ],                              # new only, INSERT triggers
);
my $sql = 'SET cq.run_in_worker = off;';
for my $i (0 .. $#steps)
{
	my ($setup, $rows) = @{ $steps[$i] };
	$sql .= qq{
		$setup
		INSERT INTO src VALUES $rows;
		DO \$\$ BEGIN RAISE NOTICE 'step $i agg'; END \$\$;
		SET client_min_messages = debug1;
		CALL cq.run('agg');
		SET client_min_messages = notice;
		DO \$\$ BEGIN RAISE NOTICE 'step $i aggh'; END \$\$;
		SET client_min_messages = debug1;
		CALL cq.run('aggh');
		SET client_min_messages = notice;
		SELECT 'step $i', (SELECT count(*) FROM (SELECT * FROM agg EXCEPT SELECT * FROM ($q) x) d)
		  + (SELECT count(*) FROM (SELECT * FROM ($q) x EXCEPT SELECT * FROM agg) d)
		  + (SELECT count(*) FROM (SELECT * FROM aggh EXCEPT SELECT * FROM ($qh) x) d)
		  + (SELECT count(*) FROM (SELECT * FROM ($qh) x EXCEPT SELECT * FROM aggh) d);
		SELECT 'fired $i', coalesce(string_agg(op || ' ' || level, ',' ORDER BY op, level), '') FROM fired;
		DELETE FROM fired;
	};
}
$sql .= q{
	SELECT 'out ' || name, string_agg(num_output_rows::text, ',' ORDER BY batch_id)
	FROM cq.progress WHERE batch_id > 0 GROUP BY name ORDER BY name;
};
my ($out, $err) = ('', '');
$node->psql('postgres', $sql, stdout => \$out, stderr => \$err, on_error_stop => 1);
my %new;
my $cur;
for my $line (split /\n/, $err)
{
	$cur = "$1 $2" if $line =~ /NOTICE:\s+step (\d+) (\w+)/;
	$new{$cur}++ if defined $cur && $line =~ /store fold: .*all new: the target by its INSERT alone/;
}
like($err, qr/store fold: /, 'the DEBUG1 report reached the client');
for my $i (0 .. $#steps)
{
	like($out, qr/^step $i\|0$/m, "step $i: the targets equal the GROUP BY");
}
ok($new{'0 agg'} && $new{'0 aggh'}, 'new groups only: the INSERT alone') or diag($err);
ok(!$new{'1 agg'} && !$new{'1 aggh'}, 'existing groups only: not');
ok(!$new{'2 agg'} && !$new{'2 aggh'}, 'new and existing groups: not');
ok($new{'3 agg'}, 'new groups only, a NULL key among them: the INSERT alone');
ok(!$new{'4 agg'}, 'a statement-level UPDATE trigger on the target: the upsert');
like($out, qr/^fired 4\|UPDATE STATEMENT$/m, 'and the trigger fired once');
ok($new{'5 agg'}, 'INSERT triggers only: the INSERT alone');
like($out, qr/^fired 5\|INSERT ROW,INSERT ROW,INSERT ROW,INSERT STATEMENT$/m,
	'the statement trigger once, the row trigger once a new group');
# output rows per batch (the rows written)
like($out, qr/^out agg\|4,3,2,3,2,3$/m, "agg's output rows are the rows written") or diag($out);
like($out, qr/^out aggh\|2,2,2,1,1,1$/m, "aggh's output rows: HAVING applied") or diag($out);

done_testing();
