# cq.batch_timeout (session 31): a plain role's runaway query must not keep
# a worker of the shared pool busy.  A batch that runs longer than the
# setting in a pg_cq worker is canceled, rolled back and counted as a
# failure (state 'failed', last_error says why, retried with backoff),
# unlike other cancels; the worker goes on with other queries.  The same
# holds for a CALL cq.run handed to a worker: the caller gets the error.
# In the caller's own process statement_timeout is the limit, as before.
# Every wait polls with a deadline.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('batch_timeout', 'cq.max_workers = 1', 'cq.batch_timeout = 1s');

$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE ROLE plain LOGIN;
	CREATE SCHEMA app AUTHORIZATION plain;
});
# a query whose batch sleeps 3 s per row it reads, and a cheap one; both
# run by the pool (trigger '0'), which has one worker
$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	SET ROLE plain;
	CREATE TABLE app.src (k int, nap float8);
	CREATE TABLE app.slow WITH (cq.trigger = '0')
	  AS SELECT k FROM app.src WHERE pg_sleep(nap) IS NOT NULL WITH NO DATA;
	CREATE TABLE app.other (k int);
	CREATE TABLE app.fast WITH (cq.trigger = '0') AS SELECT k FROM app.other WITH NO DATA;
	INSERT INTO app.src VALUES (1, 3);
});
ok($node->poll_query_until('postgres',
	q{SELECT state = 'failed' AND last_error LIKE '%cq.batch_timeout (1000 ms)%' FROM cq.queries WHERE name = 'slow'}),
	'a batch longer than cq.batch_timeout fails the query');
is($node->safe_psql('postgres', 'SELECT count(*) FROM app.slow'), '0', 'its batch was rolled back');
like(slurp_file($node->logfile), qr/canceling the batch: it ran longer than cq\.batch_timeout/,
	'the worker logs the timeout');

# the one worker still serves the other query
$node->safe_psql('postgres', 'INSERT INTO app.other VALUES (1), (2)');
ok($node->poll_query_until('postgres', 'SELECT count(*) = 2 FROM app.fast'),
	'the worker goes on with another query');

# a plain role cannot lift the limit for itself
my ($ret, $out, $err) = $node->psql('postgres', 'SET ROLE plain; SET cq.batch_timeout = 0');
like($err, qr/permission denied to set parameter "cq.batch_timeout"/, 'a plain role cannot change it');

# a CALL cq.run handed to the worker: the caller gets the timeout's error
# (the failed query paused, so that its retries leave the worker idle)
$node->safe_psql('postgres', q{SET ROLE plain; SELECT cq.pause('app.slow')});
$node->safe_psql('postgres', q{
	SET ROLE plain;
	CREATE TABLE app.called WITH (cq.trigger = 'available_now')
	  AS SELECT k FROM app.src WHERE pg_sleep(nap) IS NOT NULL WITH NO DATA;
});
ok($node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'pg_cq worker' AND coalesce(state, 'idle') = 'idle'}),
	'an idle pool worker');
($ret, $out, $err) = $node->psql('postgres', q{SET ROLE plain; CALL cq.run('app.called')});
like($err, qr/canceling the batch: it ran longer than cq\.batch_timeout \(1000 ms\)/, 'the caller gets the error (only a worker applies the limit)');
is($node->safe_psql('postgres', q{SELECT state FROM cq.queries WHERE name = 'called'}), 'failed',
	'the query is failed');
is($node->safe_psql('postgres', 'SELECT count(*) FROM app.called'), '0', 'nothing written');

# in the caller's own process the setting does not apply
($ret, $out, $err) = $node->psql('postgres',
	q{SET ROLE plain; SET cq.run_in_worker = off; SET client_min_messages = warning; CALL cq.run('app.called')});
is($ret, 0, 'in-process, the batch runs to its end') or diag($err);
is($node->safe_psql('postgres', 'SELECT count(*) FROM app.called'), '1', 'and writes its row');

# raised by the administrator: the retry (backoff) or cq.resume catches up
$node->append_conf('postgresql.conf', 'cq.batch_timeout = 0');
$node->reload;
ok($node->poll_query_until('postgres', q{SELECT current_setting('cq.batch_timeout') = '0'}), 'reloaded');
$node->safe_psql('postgres', q{SET ROLE plain; SELECT cq.resume('app.slow')});
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM app.slow}) , 'without the limit the batch completes');
is($node->safe_psql('postgres', q{SELECT state FROM cq.queries WHERE name = 'slow'}), 'active', 'active again');

$node->stop;
done_testing();
