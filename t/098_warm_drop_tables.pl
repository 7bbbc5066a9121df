# A pool worker's warm-up (src/warm.c) never waits for a lock, so a user's
# DROP TABLE of several of a query's relations is never the victim of a
# deadlock with it (session 34: the warm-up's analysis locked the source,
# then waited for the dimension table the DROP held, while the DROP waited
# for the source; the DROP, waiting first, was the victim; sql/143 in CI).
# The warm-up's transaction sets lock_timeout = 1 ms.  The interleaving is
# made, not hoped for:
#   1. one pool worker (cq.max_workers = 1), busy with a call of another
#      query (qb) that waits for a lock; a call of q meanwhile runs in its
#      caller, which then posts q's warm-up: it waits for the worker;
#   2. the user's transaction locks q's dimension table (the second
#      relation the analysis locks), then qb's lock is released: the
#      worker, idle, warms up for q, a query it never analyzed;
#   3. once the warm-up gave up (its DEBUG1 line) or waits for the lock
#      (without lock_timeout), and gave up again in its next attempt
#      (session 35: it tries again 10 ms later, up to 50 times, holding
#      nothing meanwhile), the user's DROP TABLE of the target, the
#      dimension and the source must succeed.  The user's deadlock_timeout
#      is 10 ms, the worker's 30 s: were the warm-up waiting while holding
#      the source, the user's DROP would be the victim ("deadlock
#      detected", as it is with the setting left out).
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use CqTest;

my $node = cq_node('warm_drop_tables', 'cq.max_workers = 1', 'log_min_messages = debug1',
	q{log_line_prefix = '%m [%p] '}, "deadlock_timeout = '30s'");

$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE src (k int, d int, v int);
  CREATE TABLE dim (d int PRIMARY KEY, name text);
  CREATE TABLE qb_src (k int, v int);
  INSERT INTO dim SELECT i, 'd' || i FROM generate_series(1, 5) i;
  INSERT INTO src SELECT i % 7, i % 5 + 1, i FROM generate_series(1, 200) i;
  INSERT INTO qb_src SELECT i % 3, i FROM generate_series(1, 50) i;
  SELECT cq.create_query('q', 'SELECT s.k, dim.name, count(*) AS n, sum(s.v) AS sv FROM src s JOIN dim ON dim.d = s.d GROUP BY s.k, dim.name',
                         output_mode => 'update', "trigger" => 'available_now', source => 'src');
  SELECT cq.create_query('qb', 'SELECT k, count(*) AS n FROM qb_src GROUP BY k',
                         output_mode => 'update', "trigger" => 'available_now');
});
my $idq = $node->safe_psql('postgres', q{SELECT id FROM cq.queries WHERE name = 'q'});
my $idb = $node->safe_psql('postgres', q{SELECT id FROM cq.queries WHERE name = 'qb'});

# the pool's one worker, started by a first call of qb, warmed up for qb
my $off = -s $node->logfile;
$node->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('qb')");
ok($node->wait_for_log(qr/pg_cq: worker warmed up for continuous query $idb /, $off), 'the worker warmed up for qb');
my $worker = $node->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_cq worker'});
like($worker, qr/^\d+$/, 'one pool worker');

# 1. the worker busy with a call of qb that waits for qb_src
$node->safe_psql('postgres', 'INSERT INTO qb_src VALUES (1, 1)');
my $blocker = $node->background_psql('postgres');
$blocker->query_safe('BEGIN; LOCK TABLE qb_src IN ACCESS EXCLUSIVE MODE;');
my $caller = $node->background_psql('postgres', on_error_stop => 0);
$caller->query_until(qr/started/, q{
  SET client_min_messages = warning;
  \echo started
  CALL cq.run('qb');
  \echo done
});
ok($node->poll_query_until('postgres', qq{
  SELECT count(*) = 1 FROM pg_locks WHERE pid = $worker AND relation = 'qb_src'::regclass AND NOT granted}),
	'1: the worker waits for qb_src, serving the call of qb');
# a call of q: no idle worker, it runs in its caller and posts q's warm-up
$off = -s $node->logfile;
$node->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('q')");
is($node->safe_psql('postgres', q{SELECT count(*) FROM cq.offsets WHERE name = 'q'}), '1', '1: q ran its batch 0 in its caller');

# 2. the user locks dim; the worker, free, warms up for q
my $user = $node->background_psql('postgres', on_error_stop => 0);
$user->query_safe(q{SET deadlock_timeout = '10ms'; BEGIN; LOCK TABLE dim IN ACCESS EXCLUSIVE MODE;});
$blocker->query_safe('COMMIT;');
$caller->query_until(qr/done/, '');
is($caller->{stderr}, '', '2: the call of qb done');

# 3. the warm-up for q ends (lock_timeout) or waits for dim (the bug: a
#    wait a thousand times longer than lock_timeout; each attempt may be
#    seen waiting for its millisecond)
my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
my $state = 'timeout';
while (time() < $deadline)
{
	if (slurp_file($node->logfile, $off) =~ /\[$worker\] DEBUG:  pg_cq: warm-up for continuous query $idq failed: (.*)/)
	{
		$state = "gave up: $1";
		last;
	}
	if ($node->safe_psql('postgres', qq{
	      SELECT count(*) FROM pg_locks WHERE pid = $worker AND relation = 'dim'::regclass AND NOT granted
	         AND now() - waitstart > interval '1 s'}) ne '0')
	{
		$state = 'waits for dim';
		last;
	}
	usleep(10_000);
}
like($state, qr/^gave up: canceling statement due to lock timeout/, '3: the warm-up for q gave up at the lock on dim');
# it tries again meanwhile (the lock's holder may be the query's creator,
# about to commit: t/074), each attempt giving up as the first
my $attempts = 0;
$deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
while (time() < $deadline)
{
	my @failed = slurp_file($node->logfile, $off) =~
	  /\[$worker\] DEBUG:  pg_cq: warm-up for continuous query $idq failed: canceling statement due to lock timeout/g;
	$attempts = scalar(@failed);
	last if $attempts >= 2;
	usleep(10_000);
}
cmp_ok($attempts, '>=', 2, '3: the warm-up tried again, giving up again');
$user->query('DROP TABLE q, dim, src;');
is($user->{stderr}, '', '3: the user\'s DROP TABLE of q\'s target, dimension and source succeeded (no deadlock)');
$user->query_safe('COMMIT;');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname IN ('q', 'dim', 'src')}), '0',
	'3: the tables are gone');

# the worker serves calls afterwards
$node->safe_psql('postgres', 'INSERT INTO qb_src VALUES (2, 2)');
$node->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('qb')");
is($node->safe_psql('postgres', q{SELECT sum(n) FROM qb}), '52', 'the worker serves calls of qb afterwards');

$blocker->quit;
$caller->quit;
$user->quit;
$node->stop;
done_testing();
