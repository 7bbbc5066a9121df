# The C writer (store_update.c) in key-hash order (session 43,
# cq.target_update_order): with "auto", the default, a batch whose changed
# groups are at least 1,024 and at least half as many as the pages of the
# target's key-hash index, an index of at least 1,024 pages, sorts them by
# key hash before writing them; "key" does in every batch, "store" never.
#   - which batches take it, from the DEBUG1 report in the server log: on
#     a target of 450k groups (an index of more than 1,024 pages) a batch
#     of 1,500 changed groups does, one of 1,000 does not, nor one of 1,500
#     with "store"; on a target of 3,000 groups a batch of 1,500 does not
#     under "auto" and does under "key"; the target equals the plain GROUP
#     BY after every batch (rows deleted by hand written again) and amcheck
#     finds every row's entry in its index;
#   - a reader's snapshot taken before a batch sees the whole target as it
#     was (the sum of a column over all rows), a later one the new target;
#   - concurrent writers, in key order and in the store's order (the same
#     results): a row updated by another transaction while the batch waits
#     for it gets the batch's values (its latest version, rechecked, as the
#     executor's UPDATE does under READ COMMITTED); a row deleted meanwhile
#     is not written again by that batch (the snapshot still shows it),
#     but by the group's next batch.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('target_update_key_order');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq'
max_worker_processes = 16
});
$node->start;

my $q = q{SELECT k, count(*) AS n, sum(v) AS s FROM src GROUP BY k};
my $qs = q{SELECT k, count(*) AS n, sum(v) AS s FROM src2 GROUP BY k};
my $G = 450000;
$node->safe_psql('postgres', qq{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE EXTENSION amcheck;
	CREATE ROLE alice LOGIN;
	GRANT CREATE ON SCHEMA public TO alice;
	SET ROLE alice;
	CREATE TABLE src (k int NOT NULL, v int);
	INSERT INTO src SELECT i % $G, i % 7 FROM generate_series(1, $G) i;
	CREATE TABLE agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $q;
	CREATE TABLE src2 (k int NOT NULL, v int);
	INSERT INTO src2 SELECT i % 3000, i % 7 FROM generate_series(1, 6000) i;
	CREATE TABLE small WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $qs;
});
is($node->safe_psql('postgres', "SELECT string_agg(state_storage, ',') FROM cq.queries"), 'memory,memory',
	'the queries are on the store');

# run a batch of $name as alice (settings $set first); returns the DEBUG1
# reports of changed groups written from C it logged
sub run_batch
{
	my ($set, $name) = @_;
	$set //= '';
	$name //= 'agg';
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres',
		"SET log_min_messages = debug1; SET cq.run_in_worker = off; $set SET ROLE alice; CALL cq.run('$name')");
	my @r = slurp_file($node->logfile, $offset) =~ /([0-9]+ changed groups written from C:[^\n]*)/g;
	return join("\n", @r);
}

sub same
{
	my ($target, $oracle) = @_;
	$target //= 'agg';
	$oracle //= $q;
	return $node->safe_psql('postgres', qq{
		SET work_mem = '64MB';
		SELECT (SELECT count(*) FROM (SELECT * FROM $target EXCEPT ALL SELECT * FROM ($oracle) x) d)
		     + (SELECT count(*) FROM (SELECT * FROM ($oracle) x EXCEPT ALL SELECT * FROM $target) d)});
}

sub checked
{
	return $node->safe_psql('postgres', q{
		SELECT count(bt_index_parent_check(i.indexrelid, true)) >= 2 FROM pg_index i
		 WHERE i.indrelid IN ('agg'::regclass, 'small'::regclass)});
}

# new rows of $n existing groups (from $from + 2, step 2, of $groups) and
# $new new ones, into $table
my $newk = 1000000;
sub add_rows
{
	my ($from, $n, $new, $v, $table, $groups) = @_;
	$table //= 'src';
	$groups //= $G;
	$node->safe_psql('postgres', qq{
		INSERT INTO $table SELECT ($from + 2 * i) % $groups, $v FROM generate_series(1, $n) i;
		INSERT INTO $table SELECT $newk + i, $v FROM generate_series(1, $new) i;});
	$newk += $new;
}

$node->safe_psql('postgres', "SET cq.run_in_worker = off; SET ROLE alice; CALL cq.run('agg'); CALL cq.run('small');");
cmp_ok($node->safe_psql('postgres', q{
	SELECT pg_relation_size(i.indexrelid) / current_setting('block_size')::int FROM pg_index i
	 WHERE i.indrelid = 'agg'::regclass}), '>=', 1024, 'the large target\'s index has at least 1,024 pages');

my $r;
add_rows(1, 1350, 150, 3);
$r = run_batch();
like($r, qr/1500 changed groups written from C: 1350 rows updated, 150 inserted, 0 deleted \(in key-hash order\)/,
	'large target, 1,500 changed groups: key order');
is(same(), '0', 'large target, 1,500 changed groups: the target equals the GROUP BY');

add_rows(2, 900, 100, 5);
$r = run_batch();
like($r, qr/1000 changed groups written from C/, 'large target, 1,000 changed groups: written from C');
unlike($r, qr/key-hash order/, 'large target, 1,000 changed groups: in the store\'s order');

add_rows(3, 1350, 150, 7);
$r = run_batch('SET cq.target_update_order = store;');
like($r, qr/1500 changed groups written from C/, '"store": written from C');
unlike($r, qr/key-hash order/, '"store": in the store\'s order');
is(same(), '0', '"store": the target equals the GROUP BY');

add_rows(1, 1350, 150, 3, 'src2', 3000);
$r = run_batch('', 'small');
like($r, qr/1500 changed groups written from C/, 'small target, 1,500 changed groups: written from C');
unlike($r, qr/key-hash order/, 'small target, "auto": in the store\'s order');
add_rows(2, 1350, 150, 3, 'src2', 3000);
like(run_batch('SET cq.target_update_order = key;', 'small'), qr/1500 changed groups .*\(in key-hash order\)/,
	'small target, "key": key order');
is(same('small', $qs), '0', 'small target: the target equals the GROUP BY');

# rows deleted by hand: their groups are written again
$node->safe_psql('postgres', 'DELETE FROM agg WHERE k IN (5, 7, 9)');
add_rows(3, 1350, 150, 2);
like(run_batch(), qr/1500 changed groups written from C: 1347 rows updated, 153 inserted, 0 deleted \(in key-hash order\)/,
	'rows deleted by hand: inserted again, in key order');
is(same(), '0', 'rows deleted by hand: the target equals the GROUP BY');
is(checked(), 't', 'amcheck after the batches in key order');

# a reader's snapshot keeps the whole old target
my $reader = $node->background_psql('postgres');
$reader->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ;');
my $old = $reader->query_safe('SELECT sum(s) || \'/\' || count(*) FROM agg;');
add_rows(4, 1350, 150, 1000);
like(run_batch(), qr/key-hash order/, 'reader: the batch is in key order');
is($reader->query_safe('SELECT sum(s) || \'/\' || count(*) FROM agg;'), $old,
	'reader: its snapshot still shows the whole old target');
$reader->query_safe('COMMIT;');
is($reader->query_safe('SELECT sum(s) || \'/\' || count(*) FROM agg;'),
	$node->safe_psql('postgres', "SELECT sum(s) || '/' || count(*) FROM ($q) x"),
	'reader: a new snapshot shows the new target');
$reader->quit;

# concurrent writers, in key order and with the setting off
for my $set ('', 'SET cq.target_update_order = store;')
{
	my $label = $set ? 'store order' : 'key order';
	my $writer = $node->background_psql('postgres');
	my $batch = $node->background_psql('postgres');

	# a row updated while the batch waits: its latest version is written
	my $offset = -s $node->logfile;
	$writer->query_safe('BEGIN; UPDATE agg SET s = -999 WHERE k = 11;');
	add_rows(9, 1350, 150, 1);
	$batch->query_until(qr/started/, qq{
		\\echo started
		SET log_min_messages = debug1; SET cq.run_in_worker = off; $set SET ROLE alice; CALL cq.run('agg');
		\\echo done
	});
	ok($node->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted}),
		"$label: the batch waits for the writer's row");
	$writer->query_safe('COMMIT;');
	$batch->query_until(qr/done/, '');
	is(same(), '0', "$label: the row updated meanwhile has the batch's values");
	my $log = slurp_file($node->logfile, $offset);
	my $n = () = $log =~ /1500 changed groups written from C: 1350 rows updated, 150 inserted, 0 deleted \(in key-hash order\)/g;
	is($n, $set ? 0 : 1, "$label: " . ($set ? 'not in key order' : 'in key order, every row updated'));

	# a row deleted while the batch waits: not written again by it
	$writer->query_safe('BEGIN; DELETE FROM agg WHERE k = 13;');
	add_rows(9, 1350, 150, 1);
	$batch->query_until(qr/started/, qq{
		\\echo started
		CALL cq.run('agg');
		\\echo done
	});
	ok($node->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted}),
		"$label: the batch waits for the deleting writer");
	$writer->query_safe('COMMIT;');
	$batch->query_until(qr/done/, '');
	is($node->safe_psql('postgres', 'SELECT count(*) FROM agg WHERE k = 13'), '0',
		"$label: the row deleted meanwhile is not written again by that batch");
	is(same(), '1', "$label: that group alone is missing");
	add_rows(9, 1350, 150, 1);
	run_batch($set);
	is(same(), '0', "$label: the group's next batch writes it");
	is(checked(), 't', "$label: amcheck after the concurrent writers");
	$writer->quit;
	$batch->quit;
}

$node->stop;
done_testing();
