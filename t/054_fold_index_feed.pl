# Batch 0's direct load (bulkload.c) builds the state's index on h and the
# target's index on hash_record(ROW(keys)) from the (h, TID) pairs of the
# rows it writes, as REINDEX builds an index (session 27, issue 12 goal 2).
# Checked with wal_level = replica, where the build WAL-logs the index's
# pages: the server log names both indexes as built that way, from as many
# key hashes as groups (state) and target rows; amcheck (heapallindexed:
# every row's key, computed from the index's definition, is in the index)
# finds each exactly matching its table, and the target's again after a
# crash and recovery of the committed batch (the target is logged; the
# unlogged state is lost and rebuilt); later batches equal the plain query.
# A reader holding the target when batch 0 starts keeps it from this path
# without making it wait: the old path then keeps the target's index (its
# DROP needs the lock too) and maintains it row by row.  A batch 0 retried
# after a failed one (its rows dead in the pages) takes the path again.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('index_feed', 'wal_level = replica', 'max_wal_senders = 2');
my $oracle = 'SELECT k, u, count(*) AS n, sum(v) AS s FROM ev GROUP BY k, u HAVING count(*) > 1';

$node->safe_psql('postgres', qq{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE EXTENSION amcheck;
  CREATE TABLE ev (k int NOT NULL, u text, v int NOT NULL);
  INSERT INTO ev SELECT (i * 7919) % 12000, CASE WHEN i % 9 = 0 THEN NULL ELSE 'u' || i % 3 END, i
    FROM generate_series(1, 40000) i;
  SELECT cq.create_query('fa', '$oracle', output_mode => 'update', "trigger" => 'available_now',
    state_storage => 'unlogged');
  SELECT cq.create_query('fb', '$oracle', output_mode => 'update', "trigger" => 'available_now',
    state_storage => 'unlogged');
});

# CALL cq.run(name) at log level debug1; returns the log it wrote
sub run_batch
{
	my ($name) = @_;
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', "SET client_min_messages = warning; SET log_min_messages = debug1; CALL cq.run('$name')");
	return slurp_file($node->logfile, $offset);
}

sub state_of
{
	my ($name) = @_;
	return $node->safe_psql('postgres', "SELECT state_table::regclass FROM cq.queries WHERE name = '$name'");
}

# every btree index of the table matches its heap exactly; returns how many
sub indexes_exact
{
	my ($table) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT count(bt_index_check(i.indexrelid, true)::text)
		  FROM pg_index i WHERE i.indrelid = '$table'::regclass AND i.indisvalid});
}

# the index of a table: OID and file
sub index_of
{
	my ($table) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT c.oid || ' ' || c.relfilenode FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		 WHERE i.indrelid = '$table'::regclass});
}

my $fa_state = state_of('fa');
my ($state_idx) = $node->safe_psql('postgres', "SELECT indexrelid::regclass FROM pg_index WHERE indrelid = '$fa_state'::regclass") =~ /([^.]+)$/;
my $groups = $node->safe_psql('postgres', 'SELECT count(*) FROM (SELECT DISTINCT k, u FROM ev) x');
my $outputs = $node->safe_psql('postgres', "SELECT count(*) FROM ($oracle) x");
my $before = index_of('fa');

my $log = run_batch('fa');
like($log, qr/index "$state_idx" built from the $groups key hashes of batch 0's load/,
	"the state's index built from the load's $groups key hashes");
like($log, qr/index "fa_hash_record_idx" built from the $outputs key hashes of batch 0's load/,
	"the target's index built from the load's $outputs key hashes (HAVING: fewer than the groups)");
my ($oid, $file) = split / /, $before;
like(index_of('fa'), qr/^$oid (\d+)$/, 'the target keeps its index (same OID)');
isnt(index_of('fa'), $before, 'in a new file');
is(indexes_exact('fa'), '1', "the target's index matches its rows exactly");
is(indexes_exact($fa_state), '1', "the state's index matches its rows exactly");
is(mismatches($node, 'postgres', $oracle, 'fa'), '0', 'batch 0 equals the plain query');

# crash: the committed target and its index come back from the WAL
ok(crash_restart($node, 'postgres'), 'crash and restart');
ok(wait_accepting($node, 'postgres'), 'accepting connections after recovery');
is(indexes_exact('fa'), '1', "after recovery the target's index still matches its rows exactly");
is(mismatches($node, 'postgres', $oracle, 'fa'), '0', 'after recovery the target equals the plain query');
$node->safe_psql('postgres', "SET enable_seqscan = off; SET enable_bitmapscan = off;
	CREATE TABLE found AS SELECT count(*) AS n FROM fa a WHERE EXISTS (SELECT FROM fa b
	  WHERE pg_catalog.hash_record(ROW(b.k, b.u)) = pg_catalog.hash_record(ROW(a.k, a.u)) AND b.ctid = a.ctid)");
is($node->safe_psql('postgres', 'SELECT n FROM found'), $outputs, 'every target row found through its index');

# later batches: the state rebuilt after the crash, old and new groups
$node->safe_psql('postgres',
	"INSERT INTO ev SELECT (i * 31) % 15000, 'u' || i % 4, i FROM generate_series(1, 9000) i");
run_batch('fa');
is(mismatches($node, 'postgres', $oracle, 'fa'), '0', 'the next batch equals the plain query');
is(indexes_exact('fa'), '1', "the target's index matches its rows exactly after it");
is(indexes_exact(state_of('fa')), '1', "the state's index too");

# a reader already holding the target: batch 0 does not wait, takes the old path
my $reader = $node->background_psql('postgres');
$reader->query_safe('BEGIN; LOCK TABLE fb IN ACCESS SHARE MODE;');
my $fb_before = index_of('fb');
$log = run_batch('fb');
unlike($log, qr/built from the \d+ key hashes/, 'with a reader in the target no index is built from key hashes');
is(index_of('fb'), $fb_before, "the target's index kept in place (its DROP needs the lock too)");
$reader->query_safe('COMMIT;');
$reader->quit;
is(indexes_exact('fb'), '1', "the target's index, maintained row by row, matches its rows exactly");
is(mismatches($node, 'postgres', $oracle, 'fb'), '0', 'batch 0 equals the plain query');

# a batch 0 that fails (a NOT NULL the target's rows violate: one group of 30,000, after
# thousands of rows were written) leaves its rows dead in the pages of state and target;
# once the cause is gone the retry takes the same path: both indexes built from its key
# hashes (session 28)
my $oracle_c = 'SELECT k, u, count(*) AS n, sum(v) AS s FROM ev2 GROUP BY k, u';
$node->safe_psql('postgres', qq{SET client_min_messages = warning;
  CREATE TABLE ev2 (k int, u text, v int);
  INSERT INTO ev2 SELECT i % 30000, CASE WHEN i % 30000 = 12345 THEN NULL ELSE 'u' END, i
    FROM generate_series(1, 60000) i;
  SELECT cq.create_query('fc', '$oracle_c', output_mode => 'update', "trigger" => 'available_now',
    state_storage => 'unlogged');
  ALTER TABLE fc ALTER COLUMN u SET NOT NULL});
my $fc_state = state_of('fc');
my ($fc_state_idx) = $node->safe_psql('postgres', "SELECT indexrelid::regclass FROM pg_index WHERE indrelid = '$fc_state'::regclass") =~ /([^.]+)$/;
my ($rc, $out, $err) = $node->psql('postgres', "CALL cq.run('fc')");
like($err, qr/null value in column "u" of relation "fc" violates not-null constraint/, 'batch 0 fails on the NOT NULL');
cmp_ok($node->safe_psql('postgres', "SELECT least(pg_relation_size('fc'), pg_relation_size('$fc_state'))"), '>', 0,
	"the failed load's rows are left in the pages of both");
$node->safe_psql('postgres', 'ALTER TABLE fc ALTER COLUMN u DROP NOT NULL');
$log = run_batch('fc');
like($log, qr/index "$fc_state_idx" built from the 30000 key hashes of batch 0's load/,
	"the retry builds the state's index from its key hashes");
like($log, qr/index "fc_hash_record_idx" built from the 30000 key hashes of batch 0's load/,
	"and the target's");
is(indexes_exact('fc'), '1', "the target's index matches its rows exactly");
is(indexes_exact($fc_state), '1', "the state's index too");
is(mismatches($node, 'postgres', $oracle_c, 'fc'), '0', 'the retried batch 0 equals the plain query');

$node->stop;
done_testing();
