# A later batch on the store whose changed groups are all new writes their
# target rows from C (issue 12 goal 4, session 35: store_load.c,
# cq_target_load_new): heap inserts as COPY makes them and each row's entry
# in the target's key-hash index from the key hash the store computed.
# In one session (cq.run_in_worker off: the DEBUG1 report reaches the
# client), a query owned by a role without superuser rights, nullable keys
# (sum, avg, max of numeric), and one with HAVING:
#   - a batch of new groups only (a NULL key among them) is written from C;
#     a batch of existing groups, which finds their rows through the index,
#     is not; after every batch the target equals the plain GROUP BY (a
#     wrong index entry would make the next batch insert a duplicate row),
#     and amcheck finds every row's index entry (heapallindexed recomputes
#     the index expression);
#   - not from C, with the same results, where the INSERT would do more: a
#     row trigger on the target (fires once a new group), a second index
#     (which gets every row), row-level security, cq.bulk_load off;
#   - with INSERT revoked from the owner on its target, the batch fails
#     with the INSERT's permission error and writes nothing.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('new_groups_direct');
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
	CREATE EXTENSION amcheck;
	CREATE ROLE alice LOGIN;
	GRANT CREATE ON SCHEMA public TO alice;
	SET ROLE alice;
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

# per step: set-up SQL, rows; then both batches, whose DEBUG1 lines follow a marker
my @steps = (
	[ '', rows(1, 'a', 'b', 'a') . ', ' . rows(2, 'NULL', 'c', 'c') ],    # 0 new only, a NULL key
	[ '', rows(1, 'a', 'b') . ', ' . rows(2, 'NULL', 'c') ],              # 1 existing only
	[ '', rows(3, 'a', 'b', 'b') . ', ' . rows(4, 'NULL', 'NULL') ],      # 2 new only
	[ '', rows(3, 'a') . ', ' . rows(4, 'NULL', 'x') ],                   # 3 existing and new
	[ 'CREATE TRIGGER ins_row AFTER INSERT ON agg FOR EACH ROW EXECUTE FUNCTION note();',
	  rows(5, 'a', 'b') ],                                                # 4 a row trigger
	[ 'DROP TRIGGER ins_row ON agg; CREATE INDEX agg_k ON agg (k);',
	  rows(6, 'a', 'b', 'c') ],                                           # 5 a second index
	[ 'DROP INDEX agg_k; ALTER TABLE agg ENABLE ROW LEVEL SECURITY;'
	  . ' CREATE POLICY p ON agg USING (true);',
	  rows(7, 'a', 'b') ],                                                # 6 RLS
	[ 'ALTER TABLE agg DISABLE ROW LEVEL SECURITY; SET cq.bulk_load = off;',
	  rows(8, 'a', 'b') ],                                                # 7 cq.bulk_load off
	[ 'RESET cq.bulk_load;', rows(9, 'a', 'b', 'NULL') . ', ' . rows(10, 'a', 'a') ],    # 8 new only
	[ '', rows(9, 'a') . ', ' . rows(10, 'a') . ', ' . rows(8, 'b') ],   # 9 existing only
);
my $sql = 'SET cq.run_in_worker = off; SET ROLE alice;';
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
		SELECT 'step $i', (SELECT count(*) FROM (SELECT * FROM agg EXCEPT ALL SELECT * FROM ($q) x) d)
		  + (SELECT count(*) FROM (SELECT * FROM ($q) x EXCEPT ALL SELECT * FROM agg) d)
		  + (SELECT count(*) FROM (SELECT * FROM aggh EXCEPT ALL SELECT * FROM ($qh) x) d)
		  + (SELECT count(*) FROM (SELECT * FROM ($qh) x EXCEPT ALL SELECT * FROM aggh) d);
		SELECT 'fired $i', coalesce(string_agg(op || ' ' || level, ',' ORDER BY op, level), '') FROM fired;
		DELETE FROM fired;
		RESET ROLE;
		SELECT 'indexes $i', count(*) FROM pg_index i,
		  LATERAL (SELECT bt_index_check(i.indexrelid, true)) c
		  WHERE i.indrelid IN ('agg'::regclass, 'aggh'::regclass);
		SET ROLE alice;
	};
}
$sql .= q{
	SELECT 'out ' || name, string_agg(num_output_rows::text, ',' ORDER BY batch_id)
	FROM cq.progress WHERE batch_id > 0 GROUP BY name ORDER BY name;
};
my ($out, $err) = ('', '');
$node->psql('postgres', $sql, stdout => \$out, stderr => \$err, on_error_stop => 1);
my %c;
my $cur;
for my $line (split /\n/, $err)
{
	$cur = "$1 $2" if $line =~ /NOTICE:\s+step (\d+) (\w+)/;
	$c{$cur}++ if defined $cur && $line =~ /target rows of new groups written from C/;
}
like($err, qr/store fold: /, 'the DEBUG1 report reached the client');
for my $i (0 .. $#steps)
{
	like($out, qr/^step $i\|0$/m, "step $i: the targets equal the GROUP BY") or diag($out);
	like($out, qr/^indexes $i\|[1-9]/m, "step $i: amcheck finds every row's index entry");
}
ok($c{'0 agg'} && $c{'0 aggh'}, 'new groups only: written from C') or diag($err);
ok(!$c{'1 agg'} && !$c{'1 aggh'}, 'existing groups only: not');
ok($c{'2 agg'} && $c{'2 aggh'}, 'new groups only, again: written from C');
ok(!$c{'3 agg'} && !$c{'3 aggh'}, 'existing and new groups: not');
ok(!$c{'4 agg'} && $c{'4 aggh'}, 'a row trigger on the target: not');
like($out, qr/^fired 4\|INSERT ROW,INSERT ROW$/m, 'and it fired once a new group');
ok(!$c{'5 agg'}, 'a second index on the target: not');
ok(!$c{'6 agg'}, 'row-level security on the target: not');
ok(!$c{'7 agg'} && !$c{'7 aggh'}, 'cq.bulk_load off: not');
ok($c{'8 agg'} && $c{'8 aggh'}, 'new groups only, after: written from C');
like($out, qr/^out agg\|4,4,3,3,2,3,2,2,4,3$/m, "agg's output rows are the rows written") or diag($out);
like($out, qr/^out aggh\|2,2,2,2,1,1,1,1,2,3$/m, "aggh's output rows: HAVING applied") or diag($out);

# the owner without INSERT on its target: the INSERT's error, nothing written
$node->safe_psql('postgres', q{SET ROLE alice; REVOKE INSERT ON agg FROM alice;});
$node->safe_psql('postgres', 'INSERT INTO src VALUES ' . rows(20, 'a', 'b'));
my ($rc, $o2, $e2) = $node->psql('postgres', q{SET cq.run_in_worker = off; SET ROLE alice; CALL cq.run('agg');});
like($e2, qr/permission denied for table agg/, 'without INSERT on the target: permission denied');
is($node->safe_psql('postgres', q{SELECT count(*) FROM agg WHERE minute >= '2026-01-01 00:20+00'}), '0',
	'and no row written');
$node->safe_psql('postgres', q{SET ROLE alice; GRANT INSERT ON agg TO alice;});
$node->safe_psql('postgres', q{SET cq.run_in_worker = off; SET ROLE alice; CALL cq.run('agg');});
is($node->safe_psql('postgres', qq{SELECT (SELECT count(*) FROM (SELECT * FROM agg EXCEPT ALL SELECT * FROM ($q) x) d)
	+ (SELECT count(*) FROM (SELECT * FROM ($q) x EXCEPT ALL SELECT * FROM agg) d)}), '0',
	'granted again: the batch catches up');

done_testing();
