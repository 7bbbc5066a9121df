# An idle pool worker reads the invalidation messages other backends send
# when the shared queue asks it to (src/worker.c, catch_up_invalidations),
# as an idle session does, so that a busy server's catalog traffic does not
# reset its caches: the analysis and SQL its warm-up built for a query
# (src/warm.c) survive, and the next CALL handed to it builds nothing.
# Before, an idle worker never read the queue: some 4,000 messages later
# (DDL, ANALYZE, autovacuum) it was overrun and its next transaction reset
# every cache, and t/074 failed now and then under load ("no analysis or
# SQL built for the handed-off call": got 2).  Checked:
#   1. a query run by CALLs; the first call starts a worker, which warms up
#      for it;
#   2. while the worker idles, about 20,000 messages (five times the queue):
#      a temporary table created and dropped 400 times, one transaction
#      each; the worker reads them when asked (its DEBUG1 line);
#   3. the next call goes to that worker, which builds no analysis or SQL
#      (nor does the caller), and the target is the query.
# The flood takes 10 ms between its transactions, so that a worker asked
# to catch up (at 2,048 messages behind) has some 400 ms to do so before
# the queue would overrun it (at 4,096); every wait polls with a deadline.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('idle_inval', 'cq.max_workers = 1', 'log_min_messages = debug1',
	q{log_line_prefix = '%m [%p] '}, 'autovacuum = off');
my $oracle = 'SELECT k, count(*) AS n, sum(v) AS s FROM src GROUP BY k';
$node->safe_psql('postgres', qq{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE src (k int, v int);
  INSERT INTO src SELECT i % 20, i FROM generate_series(1, 2000) i;
  SELECT cq.create_query('q', '$oracle', output_mode => 'update', "trigger" => 'available_now');
});
my $id = $node->safe_psql('postgres', q{SELECT id FROM cq.queries WHERE name = 'q'});
my $built = qr/DEBUG:  pg_cq: analysis and SQL of continuous query $id built/;

# 1. the first call runs in its caller and starts the worker, which warms up
my $off = -s $node->logfile;
$node->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('q')");
ok($node->wait_for_log(qr/DEBUG:  pg_cq: worker warmed up for continuous query $id /, $off),
	'1: the worker started for the call warmed up for q');
my ($worker) = slurp_file($node->logfile, $off) =~ /\[(\d+)\] DEBUG:  pg_cq: worker warmed up for continuous query $id /;

# 2. the flood, while the worker idles
$off = -s $node->logfile;
inval_flood($node);

# 3. the next call: handed to the warm worker, nothing rebuilt
$node->safe_psql('postgres', 'INSERT INTO src SELECT i % 30, i FROM generate_series(1, 600) i');
my $call_off = -s $node->logfile;
$node->safe_psql('postgres', "SET client_min_messages = warning; CALL cq.run('q')");
ok($node->wait_for_log(qr/\[$worker\] DEBUG:  pg_cq: store fold/, $call_off), '3: the call went to the warm worker');
my @rebuilt = slurp_file($node->logfile, $off) =~ /$built/g;
is(scalar(@rebuilt), 0, '3: no analysis or SQL built since the warm-up (its cache was not reset)');
is(mismatches($node, 'postgres', $oracle, 'q'), '0', '3: the target is the query');
# (the first time it was asked came some 40 of the flood's transactions in)
ok($node->log_contains(qr/\[$worker\] DEBUG:  pg_cq: idle worker read the invalidation messages sent meanwhile/, $off),
	'2: the idle worker read the messages when asked');

$node->stop;
done_testing();
