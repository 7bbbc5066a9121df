# Issue 12 goal 5: a backend keeps the OIDs of cq.queries, cq.offsets and
# cq.progress between batches (colmap.c, cq_colmap_cq_relid) until a
# pg_class or pg_namespace row changes.  The extension dropped and created
# again in the same session (new tables, new OIDs), and cq.progress
# replaced by another backend: the next batch must find the new tables,
# not open the old OIDs.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('catalog_relids');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_cq'\n");
$node->start;
my $db = 'postgres';

# one session: a batch (the OIDs kept), the extension again, a batch
my $out = $node->safe_psql($db, q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE src1 (k int);
	SELECT cq.create_query('q1', 'SELECT k, count(*) AS n FROM src1 GROUP BY k',
	                       output_mode => 'update', "trigger" => 'available_now');
	INSERT INTO src1 VALUES (1);
	CALL cq.run('q1');
	DROP EXTENSION pg_cq CASCADE;
	CREATE EXTENSION pg_cq;
	CREATE TABLE src2 (k int);
	SELECT cq.create_query('q2', 'SELECT k, count(*) AS n FROM src2 GROUP BY k',
	                       output_mode => 'update', "trigger" => 'available_now');
	INSERT INTO src2 VALUES (1), (2);
	CALL cq.run('q2');
	SELECT count(*) FROM q2;
	SELECT count(*) FROM cq.offsets WHERE name = 'q2';
	SELECT sum(num_input_rows) FROM cq.progress WHERE name = 'q2';
});
my @lines = grep { /^\d+$/ } split /\n/, $out;
is_deeply([ @lines[-3 .. -1] ], [ 2, 1, 2 ],
	'after the extension was created again in the session, the batch wrote the new tables');

# a session that ran a batch keeps running them after another backend
# replaced cq.progress (same definition, a new OID)
my $s = $node->background_psql($db);
$s->query_safe(q{
	SET client_min_messages = warning;
	INSERT INTO src2 VALUES (3);
	CALL cq.run('q2');
});
$node->safe_psql($db, q{
	ALTER TABLE cq.progress RENAME TO progress_old;
	CREATE TABLE cq.progress (LIKE cq.progress_old INCLUDING ALL);
});
$s->query_safe(q{INSERT INTO src2 VALUES (4); CALL cq.run('q2');});
is($node->safe_psql($db, "SELECT count(*) FROM cq.progress WHERE name = 'q2'"), '1',
	'the batch after the replacement wrote its progress row into the new cq.progress');
is($node->safe_psql($db, "SELECT count(*) FROM q2"), '4', 'every row was processed');
$s->quit;

$node->stop;
done_testing();
