# The shared-memory state store (the default for aggregations, issue 15)
# with batches run by background workers, its images written only when the
# test asks for one (cq.state_image_batches = 1000 for the workers; a CALL
# with cq.state_image_batches = 1 writes one): the store a worker published
# is newer than its image.
#   1. an error after the merge in a worker batch (the target's CHECK
#      constraint refuses a row): the batch rolls back, the published store
#      is the last committed batch's, and the query goes on exactly once
#      the constraint is gone;
#   2. kill -9 of a worker after the merge (the target's trigger waits in
#      the middle of the batch's write): the crash empties the store and
#      its image, the next batch rebuilds it from the source;
#   3. a clean restart with an image older than the last batch: the next
#      batch loads the image and folds the later rows again.
# Every target equals the plain SELECT after each.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('store_worker', 'cq.state_image_batches = 1000', 'cq.state_image_interval = 0');
my $db = 'postgres';

$node->safe_psql($db, q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE ev (id int, k int, v int);
	INSERT INTO ev SELECT i, i % 7, i FROM generate_series(1, 500) i;
	CREATE TABLE su WITH (cq.output_mode = 'update')
	  AS SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k;
	CREATE TABLE sc WITH (cq.output_mode = 'complete')
	  AS SELECT k, max(v) AS m, count(*) AS n FROM ev GROUP BY k;
});
is($node->safe_psql($db, "SELECT string_agg(name || ':' || state_storage || ':' || state_path, ',' ORDER BY name) FROM cq.queries"),
	'sc:memory:memory,su:memory:memory', 'both queries keep their state in the store by default');

my $next = 501;
# rows next .. next + n - 1 over the keys 0..6, in one transaction
sub add_rows
{
	my ($n, $extra) = @_;
	my $last = $next + $n - 1;
	$node->safe_psql($db, "INSERT INTO ev SELECT i, i % 7, i FROM generate_series($next, $last) i" . ($extra // ''));
	$next = $last + 1;
}

sub check
{
	my ($what) = @_;
	is(mismatches($node, $db, 'SELECT k, count(*), sum(v) FROM ev GROUP BY k', 'su'), '0',
		"update target equals the oracle $what");
	is(mismatches($node, $db, 'SELECT k, max(v), count(*) FROM ev GROUP BY k', 'sc'), '0',
		"complete target equals the oracle $what");
}

sub batches
{
	my ($name) = @_;
	return $node->safe_psql($db, "SELECT coalesce(max(batch_id), -1) FROM cq.offsets WHERE name = '$name'");
}

# image_now(name): a batch of name that writes its image: the query paused
# (no worker takes the new row), one CALL with images every batch, resumed
sub image_now
{
	my ($name) = @_;
	$node->safe_psql($db, "SELECT cq.pause('$name')");
	add_rows(1);
	$node->safe_psql($db, "SET cq.state_image_batches = 1; CALL cq.run('$name')");
	my $imaged = $node->safe_psql($db, qq{
		SELECT i.batch_id = (SELECT max(batch_id) FROM cq.offsets o WHERE o.name = '$name')
		  FROM cq.state_images i JOIN cq.queries q ON q.id = i.query_id WHERE q.name = '$name'});
	$node->safe_psql($db, "SELECT cq.resume('$name')");
	return $imaged eq 't';
}

# a few batches, each published by a worker; the image stays at the one
# written after the first round
for my $i (1 .. 4)
{
	add_rows(50);
	wait_caught_up($node, $db, 'ev', "(round $i)", 'su', 'sc');
	ok(image_now('su'), 'an image of su was written') if $i == 1;
}
check('after the workers\' batches');
ok(batches('su') >= 2, 'the workers ran several batches of su');
is($node->safe_psql($db, q{
	SELECT i.batch_id < (SELECT max(batch_id) FROM cq.offsets o WHERE o.name = 'su')
	  FROM cq.state_images i JOIN cq.queries q ON q.id = i.query_id WHERE q.name = 'su'}),
	't', 'the image of su is older than its published store');

# 1. an error after the merge in a worker batch: rows of existing groups
# (merged) and of a new key the target refuses, in one transaction
$node->safe_psql($db, 'ALTER TABLE su ADD CONSTRAINT su_no_99 CHECK (k <> 99)');
my $before = $next - 1;
my $committed = batches('su');
add_rows(40, ' UNION ALL SELECT -1, 99, 1');
ok($node->poll_query_until($db, "SELECT state = 'failed' FROM cq.queries WHERE name = 'su'"),
	'the worker batch of su failed');
like($node->safe_psql($db, "SELECT last_error FROM cq.queries WHERE name = 'su'"), qr/su_no_99/,
	'on the target\'s constraint, after the merge');
is(batches('su'), $committed, 'the failed batch left no offset');
is($node->safe_psql($db, q{
	SELECT i.batch_id FROM cq.state_store_info('su') i}), $committed,
	'the published store is still the last committed batch\'s');
is($node->safe_psql($db, qq{
	SELECT count(*) FROM ((SELECT k, count(*), sum(v) FROM ev WHERE id BETWEEN 1 AND $before GROUP BY k
	                       EXCEPT ALL SELECT * FROM cq_state.f_} . $node->safe_psql($db, "SELECT id FROM cq.queries WHERE name = 'su'") . qq{)
	  UNION ALL (SELECT * FROM cq_state.f_} . $node->safe_psql($db, "SELECT id FROM cq.queries WHERE name = 'su'") . qq{
	             EXCEPT ALL SELECT k, count(*), sum(v) FROM ev WHERE id BETWEEN 1 AND $before GROUP BY k)) x}),
	'0', 'its final view (the store) holds none of the failed batch\'s merge');
$node->safe_psql($db, "ALTER TABLE su DROP CONSTRAINT su_no_99; SELECT cq.resume('su')");
wait_caught_up($node, $db, 'ev', 'after the failed batch', 'su', 'sc');
check('after an error after the merge in a worker batch');

# 2. kill -9 of a worker after the merge: su's target trigger waits (the
# target is written after the merge) until the gate opens
gate_target($node, $db, 'su');
add_rows(30);
ok($node->poll_query_until($db, q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'pg_cq worker' AND wait_event = 'PgSleep'}),
	'a worker is in the middle of writing the target of su');
my $pid = $node->safe_psql($db, q{
	SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_cq worker' AND wait_event = 'PgSleep'});
$committed = batches('su');
my $log_offset = -s $node->logfile;
ok(kill_and_restart($node, $db, $pid), "kill -9 of worker $pid: the server is back after the crash-restart");
ok($node->log_contains(qr/terminated by signal 9/, $log_offset), 'the postmaster saw the killed worker');
is(batches('su'), $committed, 'the interrupted batch left no offset');
$node->safe_psql($db, 'UPDATE gate SET open = true');
add_rows(30);
wait_caught_up($node, $db, 'ev', 'after the kill', 'su', 'sc');
check('after a kill -9 of a worker after the merge');
ok($node->log_contains(qr/rebuilt lost state of continuous query "su"/, $log_offset),
	'the crash emptied the image: the store was rebuilt from the source');
is($node->safe_psql($db, "SELECT count(*) FROM cq.queries WHERE state_rebuilt_at IS NOT NULL"), '2',
	'both queries recorded the rebuild');

# 3. clean restart with a stale image: written after the first round,
# later batches did not write one
for my $i (1 .. 3)
{
	add_rows(20);
	wait_caught_up($node, $db, 'ev', "(before the restart, round $i)", 'su', 'sc');
	ok(image_now('su'), 'an image of su was written again') if $i == 1;
}
is($node->safe_psql($db, q{
	SELECT i.batch_id < (SELECT max(batch_id) FROM cq.offsets o WHERE o.name = 'su')
	  FROM cq.state_images i JOIN cq.queries q ON q.id = i.query_id WHERE q.name = 'su'}),
	't', 'the image is older than the last batch');
$log_offset = -s $node->logfile;
$node->restart;
add_rows(25);
wait_caught_up($node, $db, 'ev', 'after the clean restart', 'su', 'sc');
check('after a clean restart with a stale image');
ok($node->log_contains(qr/restored lost state of continuous query "su" from its image of batch/, $log_offset),
	'the store was loaded from the image and the later batches replayed');
is($node->safe_psql($db, "SELECT string_agg(state_storage, ',') FROM cq.queries"), 'memory,memory',
	'both queries are still on the store');

$node->stop;
done_testing();
