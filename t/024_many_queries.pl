# Issue 12 goal 5, many trigger-'0' queries over one source:
#  - fairness: while commits keep every query due, each query gets its turn
#    (the scheduler serves the longest-waiting due query first; it used to give every
#    free worker to the first queries of its list, and the last ones
#    starved until the writers stopped);
#  - groups: a worker runs several due queries of the source in one visit
#    (one transaction per batch still);
#  - reruns: under a stream of commits into the source of one query, its
#    worker runs batch after batch in one visit, without going back to the
#    scheduler each time (trigger '0' only: an interval query waits for its
#    next tick);
#  - a failing query among many is isolated: it goes 'failed' with its
#    error, the others go on;
#  - exactly once: every target equals its query over the whole source,
#    also after workers are terminated in the middle of a group.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCrash;

my $nq = 24;
my $node = PostgreSQL::Test::Cluster->new('many_queries');
$node->init;
# a long naptime: only commits wake the queries, not the periodic poll
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq'
max_worker_processes = 20
cq.naptime = 60000
cq.max_workers = 2
log_min_messages = debug1
});
$node->start;
my $db = 'postgres';

# $nq queries with different groupings over one source, and in the middle
# of them one that fails on a row with v = 13 (division by zero)
my @names;
my $sql = "SET client_min_messages = warning;\nCREATE EXTENSION pg_cq;\n"
  . "CREATE TABLE mq_src (id bigserial, a int, b int, v int);\n";
for my $i (0 .. $nq - 1)
{
	my $col = $i % 2 ? 'b' : 'a';
	my $k = int($i / 2) + 2;
	push @names, ["mq_$i", "$col % $k"];
	$sql .= "CREATE TABLE mq_$i WITH (cq.output_mode = 'update') AS "
	  . "SELECT $col % $k AS g, count(*) AS n, sum(v) AS s FROM mq_src GROUP BY 1;\n";
	$sql .= "CREATE TABLE mq_poison WITH (cq.output_mode = 'update') AS "
	  . "SELECT a % 3 AS g, count(*) AS n, sum(1000 / (v - 13)) AS s FROM mq_src GROUP BY 1;\n"
	  if $i == $nq / 2;
}
$node->safe_psql($db, $sql);

# rows from two concurrent writers, v never 13
my %script = ('024_insert.sql' => q{
\set a random(1, 1000000)
\set b random(1, 1000000)
\set v random(14, 1000)
INSERT INTO mq_src (a, b, v) VALUES (:a, :b, :v);
});
$node->pgbench('-n -c 2 -j 2 -T 4', 0, [qr{processed: [1-9]}], [qr{^$}],
	'two writers insert for 4 s', \%script);

# batches per query during the load (the catch-up after it adds at most a few)
my ($min_b, $max_b) = split(/\|/, $node->safe_psql($db, q{
	SELECT coalesce(min(b), 0), coalesce(max(b), 0)
	  FROM (SELECT q.name, (SELECT max(o.batch_id) FROM cq.offsets o WHERE o.name = q.name) AS b
	          FROM cq.queries q WHERE q.name LIKE 'mq\_%' AND q.name <> 'mq_poison') s}));
note("batches per query while the writers ran: min $min_b, max $max_b");
cmp_ok($max_b, '>=', 5, 'queries ran batches while the writers inserted');
cmp_ok($min_b * 3, '>=', $max_b, 'every query got its turn (no query starved)');

my $log = slurp_file($node->logfile);
my @groups = ($log =~ /pg_cq: worker visit ran \d+ batches of a group of (\d+) queries/g);
ok((grep { $_ > 1 } @groups), 'workers ran groups of several queries in one visit');

# one failing query among many
$node->safe_psql($db, 'INSERT INTO mq_src (a, b, v) VALUES (1, 1, 13)');
$node->pgbench('-n -c 2 -j 2 -T 2', 0, [qr{processed: [1-9]}], [qr{^$}],
	'two writers insert for 2 s more', { '024_insert_2.sql' => $script{'024_insert.sql'} });

# workers terminated in the middle of their groups: the batches roll back and run again
$node->safe_psql($db, 'INSERT INTO mq_src (a, b, v) SELECT g, g, 14 + g % 900 FROM generate_series(1, 5000) g');
$node->safe_psql($db, q{
	SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'pg_cq worker'});
$node->safe_psql($db, 'INSERT INTO mq_src (a, b, v) SELECT g, g, 14 + g % 900 FROM generate_series(1, 100) g');

# every healthy target equals its query over the whole source (exactly once)
my $check = join(' + ', map {
	my ($name, $g) = @$_;
	"(SELECT count(*) FROM ((TABLE $name EXCEPT ALL SELECT $g, count(*), sum(v) FROM mq_src GROUP BY 1) "
	  . "UNION ALL (SELECT $g, count(*), sum(v) FROM mq_src GROUP BY 1 EXCEPT ALL TABLE $name)) x)"
} @names);
ok($node->poll_query_until($db, "SELECT $check = 0"), "all $nq healthy queries reach the oracle");
is($node->safe_psql($db, "SELECT $check"), '0', 'and stay there');

is($node->safe_psql($db, q{SELECT state || ': ' || last_error FROM cq.queries WHERE name = 'mq_poison'}),
	'failed: division by zero', 'the failing query is failed with its error');
is($node->safe_psql($db, q{
	SELECT count(*) FROM cq.queries WHERE name LIKE 'mq\_%' AND name <> 'mq_poison' AND state <> 'active'}),
	'0', 'the others are active');

# one query over its own source, a stream of commits: batches follow each other in one visit
$node->safe_psql($db, q{
	CREATE TABLE one_src (id bigserial, a int, v int);
	CREATE TABLE one_q WITH (cq.output_mode = 'update') AS SELECT a % 7 AS g, count(*) AS n, sum(v) AS s FROM one_src GROUP BY 1;
});
my $log_pos = -s $node->logfile;
$node->pgbench('-n -c 1 -j 1 -T 3', 0, [qr{processed: [1-9]}], [qr{^$}],
	'one writer inserts into one_src for 3 s', { '024_one.sql' => q{
\set a random(1, 1000000)
\set v random(1, 1000)
INSERT INTO one_src (a, v) VALUES (:a, :v);
} });
ok($node->poll_query_until($db, q{
	SELECT count(*) = 0 FROM ((TABLE one_q EXCEPT ALL SELECT a % 7, count(*), sum(v) FROM one_src GROUP BY 1)
	  UNION ALL (SELECT a % 7, count(*), sum(v) FROM one_src GROUP BY 1 EXCEPT ALL TABLE one_q)) x}),
	'one_q reaches the oracle');
$log = substr(slurp_file($node->logfile), $log_pos);
my @visits = ($log =~ /pg_cq: worker visit ran (\d+) batches of a group of 1 queries/g);
ok((grep { $_ > 1 } @visits), 'a worker ran several batches of one query in one visit');
is($node->safe_psql($db, q{SELECT max(batch_id) > 10 FROM cq.offsets WHERE name = 'one_q'}), 't',
	'one_q ran batches while the writer inserted');

# an interval query is not rerun by its worker: its batches wait for its ticks
$node->safe_psql($db, q{
	CREATE TABLE int_src (id bigserial, a int, v int);
	CREATE TABLE int_q WITH (cq.output_mode = 'update', cq."trigger" = '2 seconds')
	  AS SELECT a % 7 AS g, count(*) AS n, sum(v) AS s FROM int_src GROUP BY 1;
});
$node->pgbench('-n -c 1 -j 1 -T 3', 0, [qr{processed: [1-9]}], [qr{^$}],
	'one writer inserts into int_src for 3 s', { '024_int.sql' => q{
\set a random(1, 1000000)
\set v random(1, 1000)
INSERT INTO int_src (a, v) VALUES (:a, :v);
} });
my $int_batches = $node->safe_psql($db, q{SELECT max(batch_id) FROM cq.offsets WHERE name = 'int_q'});
note("int_q: last batch $int_batches after 3 s of commits");
cmp_ok($int_batches, '<=', 4, 'a 2-second interval query ran at most one batch per tick');
ok($node->poll_query_until($db, q{
	SELECT count(*) = 0 FROM ((TABLE int_q EXCEPT ALL SELECT a % 7, count(*), sum(v) FROM int_src GROUP BY 1)
	  UNION ALL (SELECT a % 7, count(*), sum(v) FROM int_src GROUP BY 1 EXCEPT ALL TABLE int_q)) x}),
	'int_q reaches the oracle');

$node->stop;
done_testing();
