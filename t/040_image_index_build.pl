# The state table image of a store query is loaded without index
# maintenance and its indexes are built after (issue 15 item 3): the rows
# go to the truncated table by heap inserts, then reindex_relation builds
# every index of the table (pg_cq's and any other) from them.  Checked with
# wal_level = replica: after every image amcheck finds each btree index of
# the state tables exactly matching the heap (heapallindexed), and again
# after crash recovery of the logged image (the index build WAL-logged);
# the store loaded from that image and replayed equals the plain SELECT.
# An error in the middle of the image write (an index whose build fails)
# rolls the batch back: the old image, its row and the target stay, and the
# next batch, once the cause is gone, writes a correct one.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('image_build', 'wal_level = replica', 'max_wal_senders = 2');

$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE EXTENSION amcheck;
  CREATE TABLE ev (k int NOT NULL, u text NOT NULL, v int NOT NULL);
  INSERT INTO ev SELECT i % 3000, 'u' || i % 7, i FROM generate_series(1, 20000) i;
  SELECT cq.create_query('lg', 'SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k',
    output_mode => 'update', "trigger" => 'available_now', state_storage => 'logged');
  SELECT cq.create_query('ul', 'SELECT k, u, count(*) AS n, max(v) AS m FROM ev GROUP BY k, u',
    output_mode => 'update', "trigger" => 'available_now');
});
is($node->safe_psql('postgres', "SELECT string_agg(name || ' ' || state_path, ', ' ORDER BY name) FROM cq.queries"),
	'lg memory: logged image, ul memory', 'both queries keep their state in the store');

my $lg_state = $node->safe_psql('postgres', "SELECT state_table::regclass FROM cq.queries WHERE name = 'lg'");
my $ul_state = $node->safe_psql('postgres', "SELECT state_table::regclass FROM cq.queries WHERE name = 'ul'");
# an index of the state table besides pg_cq's own: rebuilt as well
$node->safe_psql('postgres', "CREATE INDEX lg_extra ON $lg_state (n, g1)");

sub run_all
{
	$node->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('lg'); CALL cq.run('ul');");
}

sub add_rows
{
	my ($from, $to) = @_;
	$node->safe_psql('postgres',
		"INSERT INTO ev SELECT (i * 7919) % 4000, 'u' || i % 5, i FROM generate_series($from, $to) i");
}

sub image_of
{
	my ($name, $table) = @_;
	return $node->safe_psql('postgres',
		"SELECT i.batch_id FROM $table i JOIN cq.queries q ON q.id = i.query_id WHERE q.name = '$name'");
}

# every btree index of the table matches its heap exactly; returns how many
sub indexes_exact
{
	my ($table) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT count(bt_index_check(i.indexrelid, true)::text)
		  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
		 WHERE i.indrelid = '$table'::regclass AND a.amname = 'btree' AND i.indisvalid});
}

sub groups_of
{
	my ($table) = @_;
	return $node->safe_psql('postgres', "SELECT count(*) FROM $table");
}

sub check
{
	my ($when) = @_;
	is(mismatches($node, 'postgres', 'SELECT k, count(*), sum(v) FROM ev GROUP BY k', 'lg'),
		'0', "lg equals the oracle $when");
	is(mismatches($node, 'postgres', 'SELECT k, u, count(*), max(v) FROM ev GROUP BY k, u', 'ul'),
		'0', "ul equals the oracle $when");
}

$node->safe_psql('postgres', 'ALTER SYSTEM SET cq.state_image_batches = 1');
$node->reload;
run_all();
add_rows(20001, 21000);
run_all();
check('after two batches');
is(image_of('lg', 'cq.logged_state_images'), '1', 'lg wrote its logged image with batch 1');
is(image_of('ul', 'cq.state_images'), '1', 'ul wrote its unlogged image with batch 1');
is(groups_of($lg_state), $node->safe_psql('postgres', 'SELECT count(DISTINCT k) FROM ev'),
	'the logged image has one row per group');
is(groups_of($ul_state), $node->safe_psql('postgres', 'SELECT count(*) FROM (SELECT DISTINCT k, u FROM ev) x'),
	'the unlogged image has one row per group');
is(indexes_exact($lg_state), '2', 'both indexes of the logged image match its rows');
ok(indexes_exact($ul_state) >= 1, 'the indexes of the unlogged image match its rows');
is($node->safe_psql('postgres', "SET enable_seqscan = off; SELECT count(*) FROM $lg_state WHERE n >= 0"),
	groups_of($lg_state), 'an index scan of the extra index finds every row');

# crash recovery replays the WAL of the heap inserts and of the index build
add_rows(21001, 21500);
run_all();
is(image_of('lg', 'cq.logged_state_images'), '2', 'the logged image is of batch 2');
my $before = groups_of($lg_state);
$node->stop('immediate');
$node->start;
is(groups_of($lg_state), $before, 'crash recovery kept the logged image');
is(indexes_exact($lg_state), '2', 'after crash recovery both indexes of the logged image match its rows');
add_rows(21501, 21800);
run_all();
check('after crash recovery');
is(indexes_exact($lg_state), '2', 'the next image after the crash is exact too');

# an error in the middle of the image write: an index whose build fails
$node->safe_psql('postgres', q{
  CREATE FUNCTION public.image_boom(bigint) RETURNS bigint LANGUAGE plpgsql IMMUTABLE
    AS $$BEGIN IF $1 > 1000 THEN RAISE EXCEPTION 'image_boom: %', $1; END IF; RETURN $1; END$$;
});
$node->safe_psql('postgres', "CREATE INDEX lg_boom ON $lg_state (public.image_boom(n))");
my $image = image_of('lg', 'cq.logged_state_images');
my $rows = $node->safe_psql('postgres', "SELECT count(*) || ' ' || sum(n) FROM $lg_state");
my $target = $node->safe_psql('postgres', 'SELECT count(*) || \' \' || sum(n) FROM lg');
# 2,000 rows of one key: its count passes 1,000
$node->safe_psql('postgres', 'INSERT INTO ev SELECT 17, \'u1\', i FROM generate_series(1, 2000) i');
my ($rc, $out, $err) = $node->psql('postgres', "SET client_min_messages = warning; CALL cq.run('lg');");
isnt($rc, 0, 'the batch fails in its image write');
like($err, qr/image_boom: \d+/, 'with the index build\'s error');
is(image_of('lg', 'cq.logged_state_images'), $image, 'the image row stays');
is($node->safe_psql('postgres', "SELECT count(*) || ' ' || sum(n) FROM $lg_state"), $rows, 'the image rows stay');
is($node->safe_psql('postgres', 'SELECT count(*) || \' \' || sum(n) FROM lg'), $target, 'the target stays');
is(indexes_exact($lg_state), '3', 'every index of the old image still matches its rows');
$node->safe_psql('postgres', 'DROP INDEX cq_state.lg_boom');
run_all();
check('after the failed image write');
ok(image_of('lg', 'cq.logged_state_images') > $image, 'the next batch wrote the image');
is(indexes_exact($lg_state), '2', 'and its indexes match its rows');

$node->stop;
done_testing();
