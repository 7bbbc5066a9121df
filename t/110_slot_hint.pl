# A query's status slot in shared memory, found through the backend's hint
# (shmem.c, cq_shmem_find_query): a worker looks its queries' slots up
# several times a batch, first where it found them last.  A query dropped
# and created again under the same name has a new id, and its slot may be
# the one another query had: what the workers write must land in the slot
# of the query they ran, never in a slot a hint still points at.
#   - two trigger '0' queries, several batches each (their last batch ids
#     grow past 3) with a worker that keeps its hints;
#   - both dropped; one created again under the same name, one new query:
#     they take the freed slots, in either order;
#   - new rows: cq.status (the slot's last batch id, the worker's
#     message) of each new query follows its own batches (cq.offsets),
#     not the old queries', and both targets hold each row once.
# Every wait polls with a deadline.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCrash;

my $node = PostgreSQL::Test::Cluster->new('slot_hint');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq'
max_worker_processes = 16
cq.naptime = 60000
cq.max_workers = 1
cq.coalesce_max_delay = 0
});
$node->start;

$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE src (k int, x int);
	CREATE TABLE qa WITH (cq.output_mode = 'append', cq.trigger = '0') AS SELECT k, x FROM src;
	CREATE TABLE qb WITH (cq.output_mode = 'append', cq.trigger = '0') AS SELECT k, x FROM src;
});

# the slot's last batch id is the query's last offset, and its target holds every row once
sub in_step
{
	my ($q) = @_;
	return qq{
		(SELECT last_batch_id FROM cq.status WHERE name = '$q')
		         IS NOT DISTINCT FROM (SELECT max(batch_id) FROM cq.offsets WHERE name = '$q')
		   AND (SELECT count(*) FROM ((SELECT k, x FROM src EXCEPT ALL SELECT k, x FROM $q) UNION ALL (SELECT k, x FROM $q EXCEPT ALL SELECT k, x FROM src)) d) = 0
	};
}

# five commits, each waited for: five batches of each query
for my $i (1 .. 5)
{
	$node->safe_psql('postgres', "INSERT INTO src VALUES ($i, $i)");
	ok($node->poll_query_until('postgres', 'SELECT ' . in_step('qa') . ' AND ' . in_step('qb')),
		"commit $i: both queries ran it");
}
my $old = $node->safe_psql('postgres', q{SELECT min(last_batch_id) FROM cq.status WHERE name IN ('qa', 'qb')});
cmp_ok($old, '>=', 3, 'the first queries ran several batches each');
my $old_ids = $node->safe_psql('postgres', q{SELECT string_agg(id::text, ',' ORDER BY id) FROM cq.queries});

# drop both; qa again under its name, and a new qc
$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	SELECT cq.drop_query('qa', drop_target => true);
	SELECT cq.drop_query('qb', drop_target => true);
	CREATE TABLE qc WITH (cq.output_mode = 'append', cq.trigger = '0') AS SELECT k, x FROM src;
	CREATE TABLE qa WITH (cq.output_mode = 'append', cq.trigger = '0') AS SELECT k, x FROM src;
});
my $new_ids = $node->safe_psql('postgres', q{SELECT string_agg(id::text, ',' ORDER BY id) FROM cq.queries});
isnt($new_ids, $old_ids, 'the queries created again have new ids');

# the new queries' batches, with the worker (and its hints) of the old ones
$node->safe_psql('postgres', 'INSERT INTO src VALUES (100, 100)');
ok($node->poll_query_until('postgres', 'SELECT ' . in_step('qa')), 'the new qa: its slot shows its own last batch');
ok($node->poll_query_until('postgres', 'SELECT ' . in_step('qc')), 'qc: its slot shows its own last batch');
cmp_ok($node->safe_psql('postgres', q{SELECT max(last_batch_id) FROM cq.status}), '<', $old,
	'the new queries\' slots show their own batch ids, below the old queries\'');
for my $i (1 .. 3)
{
	$node->safe_psql('postgres', "INSERT INTO src VALUES (100 + $i, $i)");
	ok($node->poll_query_until('postgres', 'SELECT ' . in_step('qa') . ' AND ' . in_step('qc')),
		"new commit $i: both new queries ran it, their slots in step");
}
is($node->safe_psql('postgres', q{SELECT string_agg(name || ':' || message, ',' ORDER BY name) FROM cq.status}),
	'qa:Waiting for data to arrive,qc:Waiting for data to arrive', 'the slots show the workers\' idle message');
no_crashes($node);

$node->stop;
done_testing();
