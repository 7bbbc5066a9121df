# The idle scheduler and launcher read the invalidation messages other
# backends send when the shared queue asks them to (src/inval.c,
# cq_inval_catch_up), as an idle session and an idle pool worker (t/109) do.
# Both wait on their latch up to cq.naptime (an hour at most) without a
# transaction; before, they never read the queue meanwhile, so that on a
# busy server (DDL, ANALYZE, autovacuum) some 4,000 messages later the queue
# overran them and their next transaction reset every cache.  Here, with no
# query to run in the background (one of trigger 'available_now'):
#   1. the scheduler of the database and the launcher run; then cq.naptime
#      goes to its maximum (an hour), and both are idle once neither has
#      reported activity (a catalog read, a scan) for 3 s;
#   2. about 20,000 messages (five times the queue): a temporary table
#      created and dropped 400 times, one transaction each, 10 ms apart (a
#      process asked to catch up at 2,048 messages behind has some 400 ms
#      before the queue would overrun it at 4,096);
#   3. each of the two read them when asked (its DEBUG1 line), and is the
#      same process as before.
# Every wait polls with a deadline.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('idle_sched_inval', 'log_min_messages = debug1', q{log_line_prefix = '%m [%p] '},
	'autovacuum = off');
# a query the background leaves alone: its first commit starts the scheduler
$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE src (k int, v int);
  SELECT cq.create_query('q', 'SELECT k, count(*) AS n FROM src GROUP BY k', output_mode => 'update',
                         "trigger" => 'available_now');
});

# 1. both processes, then idle for an hour
my $pids = q{SELECT (SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_cq launcher')
	|| ' ' || (SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_cq scheduler' AND datname = 'postgres')};
ok($node->poll_query_until('postgres', "SELECT ($pids) IS NOT NULL"), '1: the launcher and the scheduler run');
my ($launcher, $scheduler) = split(/ /, $node->safe_psql('postgres', $pids));
$node->safe_psql('postgres', "ALTER SYSTEM SET cq.naptime = '1h'; SELECT pg_reload_conf()");
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) = 2 FROM pg_stat_activity
	 WHERE pid IN ($launcher, $scheduler) AND state = 'idle' AND state_change < now() - interval '3 seconds'
	   AND wait_event_type = 'Extension' AND backend_xmin IS NULL}),
	'1: both wait on their latch, outside any transaction, with cq.naptime = 1h');

# 2. the flood
my $off = -s $node->logfile;
inval_flood($node);

# 3. each read them when asked
for my $who ([ 'scheduler', $scheduler ], [ 'launcher', $launcher ])
{
	my ($name, $pid) = @$who;
	ok(eval { $node->wait_for_log(qr/\[$pid\] DEBUG:  pg_cq: idle $name read the invalidation messages sent meanwhile/, $off) },
		"3: the idle $name read the messages when asked");
}
is($node->safe_psql('postgres', $pids), "$launcher $scheduler", '3: the same launcher and scheduler as before');

$node->stop;
done_testing();
