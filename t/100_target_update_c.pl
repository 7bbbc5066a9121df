# The changed groups of an incremental batch on the store written to the
# target from C (issue 12 goal 5, session 36: store_update.c,
# cq.target_update_in_c), in place of the upsert statement.  A query owned
# by a role without superuser rights, nullable keys, and one with HAVING:
#   - batches of existing groups, and of new and existing ones, are
#     written from C (the DEBUG1 report in the server log); the target
#     equals the plain GROUP BY after every batch, and amcheck finds every
#     row's entry in the target's indexes (bt_index_parent_check,
#     heapallindexed);
#   - not from C, with the same results, where the statement would do
#     more: a row trigger (fires), a second index, row-level security,
#     the setting off;
#   - with UPDATE revoked from the owner, the batch fails with the
#     statement's permission error and writes nothing;
#   - a reader's snapshot taken before the batch keeps the old row (MVCC:
#     the rows are updated by heap_update), a later one sees the new row;
#   - a concurrent writer: a row updated by another transaction while the
#     batch waits for it gets the batch's values (its latest version,
#     rechecked, as the executor's UPDATE does under READ COMMITTED); a row
#     deleted meanwhile is not written again by that batch (the snapshot
#     still shows it, as the statement's NOT EXISTS sees it), but by the
#     group's next batch -- the same with the setting off.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('target_update_c');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq'
max_worker_processes = 16
});
$node->start;

my $q = q{SELECT k % 10 AS g, count(*) AS n, sum(v) AS s FROM src GROUP BY 1};
my $qh = q{SELECT k % 10 AS g, sum(v) AS s FROM src GROUP BY 1 HAVING sum(v) > 0};
$node->safe_psql('postgres', qq{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE EXTENSION amcheck;
	CREATE ROLE alice LOGIN;
	GRANT CREATE ON SCHEMA public TO alice;
	SET ROLE alice;
	CREATE TABLE src (k int, v int);
	INSERT INTO src SELECT CASE WHEN i % 13 = 0 THEN NULL ELSE i END, i % 7 - 2 FROM generate_series(1, 200) i;
	CREATE TABLE agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $q;
	CREATE TABLE aggh WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $qh;
	CREATE TABLE fired (op text);
	CREATE FUNCTION note() RETURNS trigger LANGUAGE plpgsql AS \$\$
	BEGIN INSERT INTO public.fired VALUES (TG_OP); RETURN NULL; END \$\$;
});
is($node->safe_psql('postgres', "SELECT string_agg(state_storage, ',' ORDER BY name) FROM cq.queries"),
	'memory,memory', 'both queries are on the store');

# run a batch of $name as alice (settings $set first); returns how many
# DEBUG1 reports of changed groups written from C it logged
sub run_batch
{
	my ($name, $set) = @_;
	$set //= '';
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres',
		"SET log_min_messages = debug1; SET cq.run_in_worker = off; $set SET ROLE alice; CALL cq.run('$name')");
	my $log = slurp_file($node->logfile, $offset);
	my $n = () = $log =~ /changed groups written from C/g;
	return $n;
}

sub same
{
	my ($target, $oracle) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT (SELECT count(*) FROM (SELECT * FROM $target EXCEPT ALL SELECT * FROM ($oracle) x) d)
		     + (SELECT count(*) FROM (SELECT * FROM ($oracle) x EXCEPT ALL SELECT * FROM $target) d)});
}

sub checked
{
	return $node->safe_psql('postgres', q{
		SELECT count(bt_index_parent_check(i.indexrelid, true)) >= 2 FROM pg_index i
		 WHERE i.indrelid IN ('agg'::regclass, 'aggh'::regclass)});
}

$node->safe_psql('postgres', "SET cq.run_in_worker = off; SET ROLE alice; CALL cq.run('agg'); CALL cq.run('aggh');");

# per step: set-up SQL (as alice), new rows, settings, whether written from C
my @steps = (
	[ '', '(1, 5), (2, 5), (NULL, 3), (11, -40)', '', 1, 'existing groups' ],
	[ '', '(3, 1), (1000, 2), (NULL, 1), (5, 100)', '', 1, 'existing and new groups' ],
	[ 'CREATE TRIGGER upd_row AFTER UPDATE ON agg FOR EACH ROW EXECUTE FUNCTION note();',
	  '(1, 1), (2, 1)', '', 0, 'a row trigger' ],
	[ 'DROP TRIGGER upd_row ON agg; CREATE INDEX agg_n ON agg (n);', '(1, 1), (4, 1)', '', 0,
	  'a second index' ],
	[ 'DROP INDEX agg_n; ALTER TABLE agg ENABLE ROW LEVEL SECURITY; CREATE POLICY p ON agg USING (true);',
	  '(1, 1), (6, 1)', '', 0, 'row-level security' ],
	[ 'ALTER TABLE agg DISABLE ROW LEVEL SECURITY;', '(1, 1), (7, 1), (NULL, 2)',
	  'SET cq.target_update_in_c = off;', 0, 'the setting off' ],
	[ '', '(1, 1), (7, 1), (NULL, 2), (2001, 3)', '', 1, 'plain again' ],
);
for my $i (0 .. $#steps)
{
	my ($setup, $rows, $set, $c, $what) = @{ $steps[$i] };
	$node->safe_psql('postgres', "SET ROLE alice; $setup INSERT INTO src VALUES $rows;");
	my $na = run_batch('agg', $set);
	my $nh = run_batch('aggh', $set);
	if ($c)
	{
		ok($na == 1 && $nh == 1, "step $i, $what: written from C");
	}
	else
	{
		ok($na == 0, "step $i, $what: agg not written from C");
	}
	is(same('agg', $q), '0', "step $i: agg equals the GROUP BY");
	is(same('aggh', $qh), '0', "step $i: aggh equals the GROUP BY with HAVING");
	is(checked(), 't', "step $i: amcheck finds every row's index entry");
}
is($node->safe_psql('postgres', 'SELECT count(*) > 0 FROM fired'), 't', 'the row trigger fired');
is($node->safe_psql('postgres',
	q{SELECT string_agg(num_output_rows::text, ',' ORDER BY batch_id) FROM cq.progress WHERE name = 'agg'}),
	'11,3,4,2,2,2,3,3', "agg's output rows are the rows written");

# the owner without UPDATE on its target: the statement's error, nothing written
$node->safe_psql('postgres', q{SET ROLE alice; REVOKE UPDATE ON agg FROM alice; INSERT INTO src VALUES (1, 50);});
my $before = $node->safe_psql('postgres', 'SELECT s FROM agg WHERE g = 1');
my ($rc, $o2, $e2) = $node->psql('postgres', q{SET cq.run_in_worker = off; SET ROLE alice; CALL cq.run('agg');});
like($e2, qr/permission denied for table agg/, 'without UPDATE on the target: permission denied');
is($node->safe_psql('postgres', 'SELECT s FROM agg WHERE g = 1'), $before, 'and nothing written');
$node->safe_psql('postgres', q{SET ROLE alice; GRANT UPDATE ON agg TO alice;});
is(run_batch('agg'), 1, 'granted again: written from C');
is(same('agg', $q), '0', 'and the batch caught up');

# a reader's snapshot keeps the old row
my $reader = $node->background_psql('postgres');
$reader->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ;');
my $old = $reader->query_safe('SELECT s FROM agg WHERE g = 2;');
$node->safe_psql('postgres', 'INSERT INTO src VALUES (2, 1000)');
is(run_batch('agg'), 1, 'reader: the batch is written from C');
is($reader->query_safe('SELECT s FROM agg WHERE g = 2;'), $old, 'reader: its snapshot still shows the old row');
$reader->query_safe('COMMIT;');
is($reader->query_safe('SELECT s FROM agg WHERE g = 2;'), $old + 1000, 'reader: a new snapshot shows the new row');
$reader->quit;

# concurrent writers, with the setting on and off
for my $set ('', 'SET cq.target_update_in_c = off;')
{
	my $label = $set ? 'statement' : 'from C';
	my $writer = $node->background_psql('postgres');
	my $batch = $node->background_psql('postgres');

	# a row updated while the batch waits: its latest version is written
	my $offset = -s $node->logfile;
	$writer->query_safe('BEGIN; UPDATE agg SET s = -999 WHERE g = 3;');
	$node->safe_psql('postgres', 'INSERT INTO src VALUES (3, 1), (4, 1)');
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
	is(same('agg', $q), '0', "$label: the row updated meanwhile has the batch's values");
	my $n = () = slurp_file($node->logfile, $offset) =~ /changed groups written from C: 2 rows updated/g;
	is($n, $set ? 0 : 1, "$label: " . ($set ? 'not from C' : 'written from C, both rows updated'));

	# a row deleted while the batch waits: not written again by it
	$writer->query_safe('BEGIN; DELETE FROM agg WHERE g = 4;');
	$node->safe_psql('postgres', 'INSERT INTO src VALUES (4, 1), (5, 1)');
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
	is($node->safe_psql('postgres', 'SELECT count(*) FROM agg WHERE g = 4'), '0',
		"$label: the row deleted meanwhile is not written again by that batch");
	$node->safe_psql('postgres', 'INSERT INTO src VALUES (4, 1)');
	run_batch('agg', $set);
	is(same('agg', $q), '0', "$label: the group's next batch writes it");
	is(checked(), 't', "$label: amcheck after the concurrent writers");
	$writer->quit;
	$batch->quit;
}

$node->stop;
done_testing();
