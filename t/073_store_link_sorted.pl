# Issue 12 goal 2, session 31: a store that starts empty in a transaction
# (batch 0, a rebuild of lost state, the load of an image) links its new
# groups into its group table up to 262,144 at a time, sorted by slot
# (store.c, link_pending; sql/132 tests fewer groups, all linked at
# pre-commit).  With ~300,000 groups, each of the three links one full
# sorted run while the rows come and the rest at pre-commit: after an
# immediate stop the next batch rebuilds the store from the source, after
# a clean restart with an image it loads the image and replays the later
# batch; every time the target equals the plain query, the store holds
# each group once, and a batch that adds a row to every group finds each
# of them.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('link_sorted');
my $oracle = 'SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m FROM src GROUP BY k';

$node->safe_psql('postgres', qq{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE src (k int, v int);
  INSERT INTO src SELECT CASE WHEN g % 100003 = 0 THEN NULL ELSE g % 300000 END, g % 1000
    FROM generate_series(1, 400000) g;
  SELECT cq.create_query('q', '$oracle', output_mode => 'update', "trigger" => 'available_now',
                         state_storage => 'memory');
});
$node->safe_psql('postgres', 'ALTER SYSTEM SET cq.state_image_batches = 2');
$node->reload;

my $groups = $node->safe_psql('postgres', 'SELECT count(*) FROM (SELECT DISTINCT k FROM src) d');
ok($groups > 262144, "more groups ($groups) than one run links");

sub run_check
{
	my ($what) = @_;
	$node->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('q');");
	is(mismatches($node, 'postgres', $oracle, 'q'), '0', "target equals the plain query $what");
	is($node->safe_psql('postgres', 'SELECT state_rows FROM cq.state_store_info(\'q\')'),
		$node->safe_psql('postgres', 'SELECT count(*) FROM (SELECT DISTINCT k FROM src) d'),
		"the store holds each group once $what");
}

# a row for every group, and some new groups
sub add_rows
{
	my ($v) = @_;
	$node->safe_psql('postgres',
		"INSERT INTO src SELECT k, $v FROM (SELECT DISTINCT k FROM src) d; "
		  . "INSERT INTO src SELECT 300000 + g, $v FROM generate_series(1, 100) g");
}

run_check('after batch 0');

# immediate stop: shared memory and the image are gone, the next batch
# rebuilds the store from the source
my $off = -s $node->logfile;
$node->stop('immediate');
$node->start;
add_rows(3);
run_check('after an immediate stop');
ok($node->log_contains(qr/rebuilt lost state of continuous query "q"/, $off),
	'the store was rebuilt from the source');

# a second batch writes the image; a clean restart, a batch more: the next
# batch loads the image and replays
add_rows(5);
run_check('after the batch that writes the image');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM cq.state_images i JOIN cq.queries q ON q.id = i.query_id WHERE q.name = 'q'"),
	'1', 'an image was written');
$off = -s $node->logfile;
$node->restart;
add_rows(7);
run_check('after a clean restart with an image');
ok($node->log_contains(qr/restored lost state of continuous query "q" from its image/, $off),
	'the store was loaded from its image');
add_rows(9);
run_check('after one more batch');

$node->stop;
done_testing();
