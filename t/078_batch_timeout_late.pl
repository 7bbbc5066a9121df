# cq.batch_timeout whose timer fires after the batch's last interrupt check
# (session 32, src/runner.c).  The batch has succeeded, but the timer's
# cancel was still pending: it canceled whatever the worker did next, here
# the next batch of a CALL cq.run handed to the worker, whose caller got
# "canceling statement due to user request".  Now the batch commits and
# the cancel the timer made is dropped; a user's cancel is not.
#
# The window is made deterministic with the internal cq.debug_batch_end_delay:
# a wait after each batch, before its commit, with no interrupt check
# (signals do not shorten it).  Every wait polls with a deadline.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('batch_timeout_late', 'cq.max_workers = 1', 'cq.batch_timeout = 1s');

# q: one row per batch (each row its own transaction, max_rows_per_trigger 1)
$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE src (k int);
	SELECT cq.create_query('q', 'SELECT k FROM src', output_mode => 'append',
	                       "trigger" => 'available_now', max_rows_per_trigger => 1);
});
my $idle_worker = q{SELECT count(*) > 0 FROM pg_stat_activity
  WHERE backend_type = 'pg_cq worker' AND coalesce(state, 'idle') = 'idle'};
$node->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('q')");
ok($node->poll_query_until('postgres', $idle_worker), 'an idle pool worker');

sub insert_rows
{
	my ($from, $to) = @_;
	$node->safe_psql('postgres', "INSERT INTO src VALUES ($_)") for ($from .. $to);
}

# did the pool worker serve the last CALL of q for backend $pid?
sub served
{
	my ($pid) = @_;
	return $node->safe_psql('postgres', qq{
	  SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_cq worker'
	     AND query = 'pg_cq: CALL cq.run(''q'') for PID $pid'});
}

# 1. three batches, each waiting 1.5 s before its commit: the timer (1 s)
# fires in every wait, after the batch's last interrupt check
insert_rows(1, 3);
my ($ret, $out, $err) = $node->psql('postgres', q{
	SET client_min_messages = warning;
	SET cq.debug_batch_end_delay = 1500;
	SELECT pg_backend_pid();
	CALL cq.run('q');
});
is($ret, 0, 'a CALL whose batches outlived cq.batch_timeout only after their last check succeeds')
  or diag($err);
unlike($err, qr/canceling/, 'no cancel reached the caller');
is(served($out), '1', 'the batches ran in the pool worker (where cq.batch_timeout applies)');
is($node->safe_psql('postgres', 'SELECT count(*) FROM q'), '3', 'all three batches committed');
is($node->safe_psql('postgres', q{SELECT state FROM cq.queries WHERE name = 'q'}), 'active',
	'the query is active');

# the worker goes on: a plain CALL afterwards is not canceled either
insert_rows(4, 4);
ok($node->poll_query_until('postgres', $idle_worker), 'the worker is idle again');
($ret, $out, $err) = $node->psql('postgres', q{
	SET client_min_messages = warning;
	SELECT pg_backend_pid();
	CALL cq.run('q');
});
is($ret, 0, 'the next CALL handed to the worker succeeds') or diag($err);
is(served($out), '1', 'in the worker');
is($node->safe_psql('postgres', 'SELECT count(*) FROM q'), '4', 'its batch committed');

# 2. a user's cancel during such a wait is kept: the caller cancels its
# CALL while the worker waits in its first batch (3 s; the timer fires
# after 1 s); the worker must stop there, not run the other batches
insert_rows(5, 7);
ok($node->poll_query_until('postgres', $idle_worker), 'the worker is idle again');
my $caller = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $caller->query_safe('SELECT pg_backend_pid()');
$caller->query_until(qr/started/, q{
	SET client_min_messages = warning;
	SET cq.debug_batch_end_delay = 3000;
	\echo started
	CALL cq.run('q');
	\echo done
});
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_cq worker'
	   AND state = 'active' AND query = 'pg_cq: CALL cq.run(''q'') for PID $pid'}),
	'the worker runs the call');
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
$caller->query_until(qr/done/, '');
like($caller->{stderr}, qr/canceling statement due to user request/, 'the caller gets its cancel');
$caller->quit;
ok($node->poll_query_until('postgres', $idle_worker), 'the worker is idle again');
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM q'), '<=', 5,
	'the worker stopped at the batch it was in (the cancel was not dropped)');
is($node->safe_psql('postgres', q{SELECT state FROM cq.queries WHERE name = 'q'}), 'active',
	'a cancel is no failure');

# and what is left is counted once by the next call
($ret, $out, $err) = $node->psql('postgres', "SET client_min_messages = warning; CALL cq.run('q')");
is($ret, 0, 'the next CALL succeeds') or diag($err);
is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT k) FROM q'), '7|7',
	'every row once');

$node->stop;
done_testing();
