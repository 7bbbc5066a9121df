# Issue 9 item 9: the max_rows_per_trigger cut takes transactions in the
# numeric order of their ids.  It sorted them as text, so when the pending
# ids straddled a power of ten ('1000' < '999' as text) one batch took
# every transaction below the first "smallest" id: 5 rows with a limit of
# 1.  A fresh cluster's ids are in the hundreds: consume ids up to just
# below the next power of ten, then commit one-row transactions across it.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCrash;

my $node = PostgreSQL::Test::Cluster->new('xid_order');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_cq'\n");
$node->start;
my $db = 'postgres';

$node->safe_psql($db, q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE src (id int);
	SELECT cq.create_query('one_by_one', 'SELECT id FROM src', output_mode => 'append',
	                       "trigger" => 'available_now', max_rows_per_trigger => 1);
});

# the first power of ten with room below it, then ids up to 5 below it
my $xid = $node->safe_psql($db, 'SELECT pg_current_xact_id()::text::bigint');
my $p = 10;
$p *= 10 while $p <= $xid + 20;
$node->safe_psql($db,
	"DO \$\$ BEGIN WHILE pg_current_xact_id()::text::bigint < $p - 5 LOOP COMMIT; END LOOP; END \$\$");
$node->safe_psql($db, "INSERT INTO src VALUES ($_)") for 1 .. 10;
is($node->safe_psql($db,
		"SELECT min(cq_xid)::text::bigint < $p AND max(cq_xid)::text::bigint >= $p FROM src"),
	't', "the rows' transaction ids straddle $p");

$node->safe_psql($db, "SET client_min_messages = warning; CALL cq.run('one_by_one')");
is($node->safe_psql($db, 'SELECT count(*) FROM one_by_one'), '10', 'every row was processed');
is($node->safe_psql($db, "SELECT max(num_input_rows) FROM cq.progress WHERE name = 'one_by_one'"),
	'1', 'no batch took more than max_rows_per_trigger rows');
is($node->safe_psql($db, "SELECT count(*) FROM cq.offsets WHERE name = 'one_by_one'"),
	'10', 'one batch per row');

$node->stop;
done_testing();
