# The shared memory of the state store (state_storage = 'memory') is given
# back when pg_cq or the database is dropped (session 29): DROP EXTENSION
# pg_cq frees the stores of its queries when it commits (not when it rolls
# back), DROP DATABASE, run from another database, those of the dropped
# database.  Before, both left the stores in the store's area for good.
# The area's segments are files in pg_dynshmem here
# (dynamic_shared_memory_type = mmap), and the area grows by new segments
# when it has no free space: stores made again after a drop fit in the
# memory the drop gave back (before, the area grew by as much again).
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('lifecycle', 'dynamic_shared_memory_type = mmap',
	'max_parallel_workers_per_gather = 0', 'max_parallel_maintenance_workers = 0');

# bytes of the dynamic shared memory segments now
sub dsm_bytes
{
	return $node->safe_psql('postgres',
		q{SELECT coalesce(sum((pg_stat_file('pg_dynshmem/' || f)).size), 0) FROM pg_ls_dir('pg_dynshmem') f});
}

# a database with pg_cq, a small query and a big one (200k groups) on the store,
# batch 0 of both run
sub big_store
{
	my ($db) = @_;
	$node->safe_psql($db, q{
	  SET client_min_messages = warning;
	  CREATE EXTENSION IF NOT EXISTS pg_cq;
	  CREATE TABLE src (k int, x int);
	  INSERT INTO src SELECT g, g FROM generate_series(1, 200000) g;
	  SELECT cq.create_query('big', 'SELECT k, count(*) AS n, sum(x) AS sx FROM src GROUP BY k',
	    output_mode => 'update', "trigger" => 'available_now', starting => 'earliest');
	  SELECT cq.create_query('small', 'SELECT k % 3 AS r, count(*) AS n FROM src GROUP BY 1',
	    output_mode => 'update', "trigger" => 'available_now', starting => 'earliest');
	  CALL cq.run('big');
	  CALL cq.run('small');
	});
	is($node->safe_psql($db, q{SELECT state_rows FROM cq.state_store_info('big')}),
		'200000', "$db: the big store holds its groups");
}

# the store's area exists before the measures (a small store of another database)
$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE t0 (k int);
  INSERT INTO t0 VALUES (1), (2);
  SELECT cq.create_query('q0', 'SELECT k, count(*) AS n FROM t0 GROUP BY k',
    output_mode => 'update', "trigger" => 'available_now', starting => 'earliest');
  CALL cq.run('q0');
});
my $base = dsm_bytes();
note("dynamic shared memory with the area made: $base bytes");

# --- DROP DATABASE (run from another database), first: the area has no
# free space yet
$node->safe_psql('postgres', 'CREATE DATABASE db2');
big_store('db2');
my $full = dsm_bytes();
note("with db2's stores: $full bytes");
cmp_ok($full - $base, '>', 8 * 1024 * 1024, 'the stores took more than 8 MB');
$node->safe_psql('postgres', 'DROP DATABASE db2');
note('after DROP DATABASE: ' . dsm_bytes() . ' bytes');
$node->safe_psql('postgres', 'CREATE DATABASE db3');
big_store('db3');
my $again = dsm_bytes();
note("with db3's stores: $again bytes");
cmp_ok($again - $full, '<', ($full - $base) / 4,
	'the stores of a new database after DROP DATABASE took the memory it gave back');
$base = $again;

# --- DROP EXTENSION
$node->safe_psql('postgres', 'CREATE DATABASE db1');
big_store('db1');
$full = dsm_bytes();
note("with db1's stores: $full bytes");
cmp_ok($full - $base, '>', 8 * 1024 * 1024, 'db1\'s stores took more than 8 MB');

$node->safe_psql('db1', 'BEGIN; DROP EXTENSION pg_cq CASCADE; ROLLBACK');
$node->safe_psql('db1', 'BEGIN; SAVEPOINT s; DROP EXTENSION pg_cq CASCADE; ROLLBACK TO s; COMMIT');
is(dsm_bytes(), $full, 'DROP EXTENSION rolled back: the stores stay');
is($node->safe_psql('db1', q{SELECT batch_id || ' ' || state_rows FROM cq.state_store_info('big')}),
	'0 200000', 'and are read');
$node->safe_psql('db1', 'INSERT INTO src VALUES (1, 1)');
$node->safe_psql('db1', q{SET client_min_messages = warning; CALL cq.run('big')});
is($node->safe_psql('db1', q{SELECT batch_id || ' ' || state_rows FROM cq.state_store_info('big')}),
	'1 200000', 'and the next batch folds into them');

$node->safe_psql('db1', 'DROP EXTENSION pg_cq CASCADE');
$node->safe_psql('db1', 'DROP TABLE src, big, small');
note('after DROP EXTENSION: ' . dsm_bytes() . ' bytes');
big_store('db1');
$again = dsm_bytes();
note("with db1's stores made again: $again bytes");
cmp_ok($again - $full, '<', ($full - $base) / 4,
	'the stores made again after DROP EXTENSION took the memory it gave back');

# a new query with the dropped small one's id starts with no store
$node->safe_psql('db1', q{
  SET client_min_messages = warning;
  DROP EXTENSION pg_cq CASCADE;
  DROP TABLE big, small;
  CREATE EXTENSION pg_cq;
  SELECT cq.create_query('again', 'SELECT k % 7 AS r, count(*) AS n FROM src GROUP BY 1',
    output_mode => 'update', "trigger" => 'available_now', starting => 'earliest');
});
is($node->safe_psql('db1', q{SELECT id FROM cq.queries WHERE name = 'again'}), '1', 'the new query has id 1');
is($node->safe_psql('db1', q{SELECT state_rows IS NULL FROM cq.state_store_info('again')}), 't',
	'and no store before its first batch');
$node->safe_psql('db1', q{SET client_min_messages = warning; CALL cq.run('again')});
is($node->safe_psql('db1', q{SELECT count(*) FROM ((SELECT k % 7 AS r, count(*) AS n FROM src GROUP BY 1 EXCEPT ALL TABLE again) UNION ALL (TABLE again EXCEPT ALL SELECT k % 7 AS r, count(*) AS n FROM src GROUP BY 1)) x}),
	'0', 'its first batch is exact');

# the stores of the other databases are untouched
is($node->safe_psql('postgres', q{SELECT batch_id || ' ' || state_rows FROM cq.state_store_info('q0')}),
	'0 2', 'another database keeps its store');
is($node->safe_psql('db1', q{SELECT state_rows FROM cq.state_store_info('again')}), '7',
	'so does db1');
is($node->safe_psql('db3', q{SELECT state_rows FROM cq.state_store_info('big')}), '200000',
	'and db3');

$node->stop;
done_testing();
