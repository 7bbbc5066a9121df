# Session 36 review of the target writes from C of a batch of new groups
# on the store (store_load.c, cq_target_load_new, and the checks shared
# with batch 0's loads: cq_rel_takes_heap_inserts):
#   - the target's one index, pg_cq's key-hash btree made again by its
#     owner with an INCLUDE column: each row's entry was inserted with the
#     key hash alone, the INCLUDE column's value read past it (garbage in
#     the index, or a crash for a by-reference column); now not from C,
#     and amcheck (heapallindexed) finds every entry;
#   - the target attached as a partition of its owner's table: an INSERT
#     into a partition checks the partition constraint, the load from C
#     did not (a row outside the partition's range); now the INSERT's
#     error, nothing written;
#   - row-level security forced on the target, a SELECT policy that hides a
#     group's row from its owner: the upsert found that row missing and
#     inserted it again (two rows of one group; MERGE did the same); now
#     the batch fails (security.c, cq_security_target_rls).
# In one session (cq.run_in_worker off: the DEBUG1 report reaches the
# client), the query owned by a role without superuser rights.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('target_write_guards');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq'
max_worker_processes = 16
});
$node->start;

my $q = q{SELECT date_trunc('minute', ts) AS minute, k, count(*) AS n, sum(v) AS s FROM src GROUP BY 1, 2};
$node->safe_psql('postgres', qq{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE EXTENSION amcheck;
	CREATE ROLE alice LOGIN;
	GRANT CREATE ON SCHEMA public TO alice;
	SET ROLE alice;
	CREATE TABLE src (ts timestamptz, k text, v numeric(10,2));
	CREATE TABLE agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $q;
});
is($node->safe_psql('postgres', "SELECT state_storage FROM cq.queries WHERE name = 'agg'"),
	'memory', 'the query is on the store');

# rows at minute $m (of 2026-01-01), keys from the list
sub rows
{
	my ($m, @keys) = @_;
	return join(', ', map {
		"(timestamptz '2026-01-01 00:00+00' + interval '$m minutes', '$_', $m + 0.25)"
	} @keys);
}

my $mismatch = qq{SELECT (SELECT count(*) FROM (SELECT * FROM agg EXCEPT ALL SELECT * FROM ($q) x) d)
	+ (SELECT count(*) FROM (SELECT * FROM ($q) x EXCEPT ALL SELECT * FROM agg) d)};

# one batch of alice's in one session: (no error?, stdout, stderr, written from C?)
sub batch
{
	my ($rows) = @_;
	my ($out, $err) = ('', '');
	$node->psql('postgres', qq{
		SET cq.run_in_worker = off; SET ROLE alice;
		INSERT INTO src VALUES $rows;
		SET client_min_messages = debug1;
		CALL cq.run('agg');
	}, stdout => \$out, stderr => \$err);
	return ($err !~ /ERROR/ ? 1 : 0, $out, $err, $err =~ /target rows of new groups written from C/ ? 1 : 0);
}

# batch 0, then a batch of new groups only: written from C
my ($ok, $out, $err, $c) = batch(rows(1, 'a', 'b'));
ok($ok, 'batch 0') or diag($err);
($ok, $out, $err, $c) = batch(rows(2, 'a', 'b'));
ok($ok && $c, 'new groups only: written from C') or diag($err);
is($node->safe_psql('postgres', $mismatch), '0', 'the target equals the GROUP BY');

# 1. the key-hash index made again with an INCLUDE column
$node->safe_psql('postgres', q{
	SET ROLE alice;
	CREATE TABLE keydef AS SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'agg';
	DO $$
	BEGIN
	  EXECUTE 'DROP INDEX ' || (SELECT indexname FROM keydef);
	  EXECUTE (SELECT indexdef FROM keydef) || ' INCLUDE (n)';
	END $$;
});
like($node->safe_psql('postgres', "SELECT indexdef FROM pg_indexes WHERE tablename = 'agg'"),
	qr/hash_record.*INCLUDE \(n\)/, 'the index has an INCLUDE column');
($ok, $out, $err, $c) = batch(rows(3, 'a', 'b', 'c'));
ok($ok && !$c, 'an index with an INCLUDE column: not from C') or diag($err);
is($node->safe_psql('postgres', $mismatch), '0', 'the target equals the GROUP BY');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_index i, LATERAL (SELECT bt_index_check(i.indexrelid, true)) c
	WHERE i.indrelid = 'agg'::regclass}), '1', "amcheck finds every row's index entry");

# pg_cq's index again: new groups written from C
$node->safe_psql('postgres', q{
	SET ROLE alice;
	DO $$
	BEGIN
	  EXECUTE 'DROP INDEX ' || (SELECT indexname FROM pg_indexes WHERE tablename = 'agg');
	  EXECUTE (SELECT indexdef FROM keydef);
	END $$;
});
($ok, $out, $err, $c) = batch(rows(5, 'a', 'b'));
ok($ok && $c, "pg_cq's index again: new groups written from C") or diag($err);

# 2. the target attached as a partition of minutes 0-29
$node->safe_psql('postgres', q{
	SET ROLE alice;
	CREATE TABLE aggp (LIKE agg) PARTITION BY RANGE (minute);
	ALTER TABLE aggp ATTACH PARTITION agg FOR VALUES FROM ('2026-01-01 00:00+00') TO ('2026-01-01 00:30+00');
});
($ok, $out, $err, $c) = batch(rows(6, 'a'));
ok($ok && !$c, 'a partition: a batch of new groups in its range, not from C') or diag($err);
($ok, $out, $err, $c) = batch(rows(40, 'a'));
like($err, qr/violates partition constraint/, 'a new group outside the range: the INSERT\'s error');
ok(!$c, 'not from C');
is($node->safe_psql('postgres', q{SELECT count(*) FROM agg WHERE minute >= '2026-01-01 00:30+00'}), '0',
	'no row outside the partition');
$node->safe_psql('postgres', q{SET ROLE alice; ALTER TABLE aggp DETACH PARTITION agg; DROP TABLE aggp;});
$node->safe_psql('postgres', q{SET cq.run_in_worker = off; SET ROLE alice; CALL cq.run('agg');});
is($node->safe_psql('postgres', $mismatch), '0', 'detached: the batch catches up, the target equals the GROUP BY');

# 3. row-level security forced on the target, a SELECT policy that hides a
# group's row from alice: the upsert found that row missing and inserted it
# again (two rows of one group); now the batch fails with what to change
($ok, $out, $err, $c) = batch(rows(9, 'hidden', 'a'));
ok($ok, 'a group to hide, written') or diag($err);
$node->safe_psql('postgres', q{
	SET ROLE alice;
	ALTER TABLE agg ENABLE ROW LEVEL SECURITY;
	ALTER TABLE agg FORCE ROW LEVEL SECURITY;
	CREATE POLICY ins ON agg FOR INSERT WITH CHECK (true);
	CREATE POLICY upd ON agg FOR UPDATE USING (true);
	CREATE POLICY sel ON agg FOR SELECT USING (k <> 'hidden');
});
($ok, $out, $err, $c) = batch(rows(9, 'hidden'));
like($err, qr/cannot write its target "agg": row-level security applies to its owner there/,
	'forced row-level security: the batch fails');
is($node->safe_psql('postgres', q{SELECT count(*) FROM agg WHERE k = 'hidden'}), '1', 'one row of the hidden group');
$node->safe_psql('postgres', q{SET ROLE alice; ALTER TABLE agg NO FORCE ROW LEVEL SECURITY;});
($ok, $out, $err, $c) = batch(rows(10, 'hidden'));
ok($ok, 'not forced (the owner sees every row): the batch runs') or diag($err);
is($node->safe_psql('postgres', $mismatch), '0', 'the target equals the GROUP BY');

done_testing();
