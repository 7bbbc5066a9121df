# Queries created with catalog 0.1 (CREATE EXTENSION pg_cq VERSION '0.1',
# served by the current library) keep working, and ALTER EXTENSION pg_cq
# UPDATE gives them what 0.2 adds for issue 9: the stamp trigger on every
# source (partitions and inheritance children included; a partition that is
# a source itself gets its parent's clone) and the installation id in place
# of the system identifier; the queries go on from their offsets.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCrash;

my $node = PostgreSQL::Test::Cluster->new('upgrade');
$node->init;
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'pg_cq'\nmax_worker_processes = 16\ncq.naptime = 1000\n");
$node->start;

$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq VERSION '0.1';
  CREATE TABLE ev (k int);
  CREATE TABLE ev_n WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n FROM ev GROUP BY k;
  CREATE TABLE pt (k int) PARTITION BY LIST (k);
  CREATE TABLE pt_1 PARTITION OF pt FOR VALUES IN (1);
  CREATE TABLE pt_2 PARTITION OF pt FOR VALUES IN (2);
  CREATE TABLE pt_n WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n FROM pt GROUP BY k;
  CREATE TABLE pt_1_n WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n FROM pt_1 GROUP BY k;
  CREATE TABLE ih (k int);
  CREATE TABLE ih_child () INHERITS (ih);
  CREATE TABLE ih_n WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n FROM ih GROUP BY k;
  INSERT INTO ev VALUES (1), (2);
  INSERT INTO pt VALUES (1), (2);
  INSERT INTO ih_child VALUES (1);
  CALL cq.run('ev_n'); CALL cq.run('pt_n'); CALL cq.run('pt_1_n'); CALL cq.run('ih_n');
});
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_trigger WHERE tgname = 'zz_cq_stamp'"),
	'0', 'catalog 0.1: no stamp trigger');
is($node->safe_psql('postgres',
	'SELECT bool_and(cluster_id = (SELECT system_identifier::text FROM pg_control_system())) FROM cq.queries'),
	't', 'catalog 0.1: queries belong to the system identifier');
my %last;
for my $q (qw(ev_n pt_n pt_1_n ih_n))
{
	$last{$q} = $node->safe_psql('postgres', "SELECT max(batch_id) FROM cq.offsets WHERE name = '$q'");
}

$node->safe_psql('postgres', 'ALTER EXTENSION pg_cq UPDATE');
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'pg_cq'"), '0.2', 'updated to 0.2');
is($node->safe_psql('postgres', q{
  SELECT string_agg(c.relname || ':' || (t.tgparentid <> 0) || ':' || t.tgenabled::text, ',' ORDER BY c.relname)
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE t.tgname = 'zz_cq_stamp'}),
	'ev:false:A,ih:false:A,ih_child:false:A,pt:false:A,pt_1:true:A,pt_2:true:A',
	'every source, partition and inheritance child has the stamp trigger, firing always');
is($node->safe_psql('postgres',
	'SELECT count(*) FROM cq.queries WHERE cluster_id = (SELECT id::text FROM cq.installation)'),
	'4', 'the queries now belong to the installation id');

# explicit stamps are replaced from now on; the queries go on from their offsets
$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  INSERT INTO ev (k, cq_xid) VALUES (1, '3');
  INSERT INTO pt_1 (k, cq_xid) VALUES (1, '3');
  INSERT INTO ih_child (k, cq_xid) VALUES (1, '3');
  CALL cq.run('ev_n'); CALL cq.run('pt_n'); CALL cq.run('pt_1_n'); CALL cq.run('ih_n');
});
for my $q (qw(ev_n pt_n pt_1_n ih_n))
{
	is($node->safe_psql('postgres', "SELECT min(batch_id) FROM cq.progress WHERE name = '$q' AND batch_id > $last{$q}"),
		$last{$q} + 1, "$q goes on from its last batch");
}
is($node->safe_psql('postgres', q{
  SELECT (SELECT n FROM ev_n WHERE k = 1) || ',' || (SELECT n FROM pt_n WHERE k = 1) || ','
      || (SELECT n FROM pt_1_n WHERE k = 1) || ',' || (SELECT n FROM ih_n WHERE k = 1)}),
	'2,2,2,2', 'rows with explicit stamps are counted');

$node->stop;
done_testing();
