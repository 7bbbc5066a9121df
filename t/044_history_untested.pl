# Batch 0 on the shared-memory store reads a backlog without testing each
# row's cq_xid when the BRIN summaries of cq_xid and a read of the
# unsummarized tail show that every row its snapshot sees passes the test
# (tracking.c cq_tracking_history_all, store_fold.c fold_history).  With
# other transactions open or committing around the batch, the rows of each
# transaction must still count exactly once:
#   A. history rows, an open transaction's row in the tail (invisible) and
#      rows committed after it began (visible in the end offset): no test;
#      the open transaction's row comes with the next batch;
#   B. rows committed after an open transaction began, in summarized
#      ranges (highest id not below the end offset's xmin): the test runs;
#   C. a writer holding the source's ACCESS EXCLUSIVE lock while the batch
#      starts commits rows while the batch waits: once, over two batches.
# Which statement ran is read from the server log (DEBUG1).
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('history_untested');
my $oracle = 'SELECT k, count(*) AS n, sum(v) AS s FROM src GROUP BY k';

$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE src (k int, v int);
  INSERT INTO src SELECT i % 17, i FROM generate_series(1, 20000) i;
});

sub create_query
{
	my ($name) = @_;
	$node->safe_psql('postgres',
		"SET client_min_messages = warning; SELECT cq.create_query('$name', '$oracle', output_mode => 'update', \"trigger\" => 'available_now', state_storage => 'memory')");
}

# run a batch; returns the store fold's DEBUG1 line from the server log
sub run_batch
{
	my ($name) = @_;
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', "SET log_min_messages = debug1; CALL cq.run('$name')");
	my $log = slurp_file($node->logfile, $offset);
	my ($line) = $log =~ /(pg_cq: store fold: d [^\n]*)/;
	return $line // '';
}

# A
create_query('qa');
my $open = $node->background_psql('postgres');
$open->query_safe('BEGIN; INSERT INTO src VALUES (1001, 1);');
$node->safe_psql('postgres', 'INSERT INTO src SELECT 1002, i FROM generate_series(1, 100) i');
like(run_batch('qa'), qr/without testing cq_xid/, 'A: batch 0 reads the history without the test');
is(mismatches($node, 'postgres', "$oracle HAVING k IS DISTINCT FROM 1001", 'qa'), '0',
	'A: batch 0 has every committed row, not the open transaction\'s');
$open->query_safe('COMMIT;');
run_batch('qa');
is(mismatches($node, 'postgres', $oracle, 'qa'), '0', 'A: the open transaction\'s row comes with the next batch, once');

# B
$open->query_safe('BEGIN; INSERT INTO src VALUES (1003, 1);');
$node->safe_psql('postgres', 'INSERT INTO src SELECT 1004, i FROM generate_series(1, 30000) i');
$node->safe_psql('postgres', "SELECT brin_summarize_new_values(i.indexrelid) FROM pg_index i WHERE i.indrelid = 'src'::regclass");
create_query('qb');
my $line = run_batch('qb');
like($line, qr/store fold: d/, 'B: batch 0 ran on the store');
unlike($line, qr/without testing cq_xid/, 'B: a summarized range holds ids not below xmin: the test runs');
is(mismatches($node, 'postgres', "$oracle HAVING k IS DISTINCT FROM 1003", 'qb'), '0', 'B: batch 0 exact');
$open->query_safe('COMMIT;');
run_batch('qb');
is(mismatches($node, 'postgres', $oracle, 'qb'), '0', 'B: the next batch exact');

# C
create_query('qc');
$open->query_safe('BEGIN; LOCK TABLE src IN ACCESS EXCLUSIVE MODE; INSERT INTO src SELECT 1005, i FROM generate_series(1, 50) i;');
my $batch = $node->background_psql('postgres');
$batch->query_until(qr/started/, q{
  \echo started
  CALL cq.run('qc');
  \echo done
});
ok($node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'src' AND NOT l.granted}),
	'C: the batch waits for the source');
$open->query_safe('COMMIT;');
$batch->query_until(qr/done/, '');
$batch->quit;
run_batch('qc');
is(mismatches($node, 'postgres', $oracle, 'qc'), '0', 'C: the rows committed while batch 0 waited count once');
is($node->safe_psql('postgres', 'SELECT n FROM qc WHERE k = 1005'), '50', 'C: all 50 of them');

$open->quit;
$node->stop;
done_testing();
