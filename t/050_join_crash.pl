# A join of two streams killed mid-batch (kill -9 of the postmaster while its
# batch waits to write the target), then crash recovery: the unlogged
# buffers are emptied and rebuilt exactly from the sources (issue 11 part 2).
# A twin query with logged buffers (cq.state_storage = 'logged') runs the
# same batches and is not affected by the crash: after the restart both
# have the same buffered rows, and both targets equal the plain join of
# every row processed minus the rows dropped as late.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

# the time bound of the join; t/056 runs this test with equal date_bin windows
our $time_bound //= q{c.ts BETWEEN i.ts AND i.ts + interval '1 minute'};
our $node_name //= 'join_crash';
my $node = cq_node($node_name);
my $db = 'postgres';

my $query = qq{SELECT i.id AS imp, c.id AS clk, i.ad FROM imp i JOIN clk c
  ON c.ad = i.ad AND $time_bound};
$node->safe_psql($db, qq{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  SELECT setseed(0.5);
  CREATE TABLE imp (id serial, ad int, ts timestamptz);
  CREATE TABLE clk (id serial, ad int, ts timestamptz);
  CREATE TABLE late (side int, id int);
  CREATE TABLE j_u WITH (cq.source = 'imp, clk', cq.event_time = 'imp.ts, clk.ts',
    cq.watermark = '30 seconds, 1 minute', cq.trigger = 'available_now') AS $query;
  CREATE TABLE j_l WITH (cq.source = 'imp, clk', cq.event_time = 'imp.ts, clk.ts',
    cq.watermark = '30 seconds, 1 minute', cq.trigger = 'available_now', cq.state_storage = 'logged') AS $query;
  -- one round: random rows to both streams, some out of order and late; the
  -- rows at or below the watermark in effect for the next batch are noted
  CREATE PROCEDURE round(r int) LANGUAGE plpgsql AS \$\$
  DECLARE
    base timestamptz := timestamptz '2026-01-01' + r * interval '20 seconds';
    w timestamptz := (SELECT watermark FROM cq.offsets WHERE name = 'j_l' ORDER BY batch_id DESC LIMIT 1);
    lo int := (SELECT coalesce(max(id), 0) FROM imp);
    lc int := (SELECT coalesce(max(id), 0) FROM clk);
  BEGIN
    INSERT INTO imp (ad, ts) SELECT (random() * 5)::int, base + (random() * 90 - 60) * interval '1 second'
      FROM generate_series(1, 5 + (random() * 20)::int);
    INSERT INTO clk (ad, ts) SELECT (random() * 5)::int, base + (random() * 120 - 80) * interval '1 second'
      FROM generate_series(1, 5 + (random() * 20)::int);
    INSERT INTO late SELECT 0, id FROM imp WHERE id > lo AND ts <= w;
    INSERT INTO late SELECT 1, id FROM clk WHERE id > lc AND ts <= w;
  END \$\$;
  CREATE VIEW oracle AS
    $query
     WHERE NOT EXISTS (SELECT 1 FROM late l WHERE l.side = 0 AND l.id = i.id)
       AND NOT EXISTS (SELECT 1 FROM late l WHERE l.side = 1 AND l.id = c.id);
});
for my $r (1 .. 15)
{
	$node->safe_psql($db, "SET client_min_messages = warning; CALL round($r); CALL cq.run('j_u'); CALL cq.run('j_l');");
}
is(mismatches($node, $db, 'SELECT * FROM oracle', 'j_u'), '0', 'before the crash: the target equals the oracle');
ok($node->safe_psql($db, 'SELECT count(*) FROM late') > 0, 'some rows were late');
ok($node->safe_psql($db, q{SELECT sum(num_state_rows_removed) FROM cq.progress WHERE name = 'j_l'}) > 0,
	'the time bound evicted buffered rows');
my ($id) = $node->safe_psql($db, "SELECT id FROM cq.queries WHERE name = 'j_u'");
my ($idl) = $node->safe_psql($db, "SELECT id FROM cq.queries WHERE name = 'j_l'");
ok($node->safe_psql($db, "SELECT count(*) FROM cq_state.jl_$id") > 0
	  && $node->safe_psql($db, "SELECT count(*) FROM cq_state.jr_$id") > 0, 'both streams have buffered rows');

# the last round: the logged twin runs it; the batch of j_u blocks on a lock
# on its target, after it added the new rows to its buffers
$node->safe_psql($db, "SET client_min_messages = warning; CALL round(16); CALL cq.run('j_l');");
my $locker = start_writer($node, $db, 'BEGIN; LOCK TABLE j_u IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(600);');
ok($node->poll_query_until($db, q{SELECT count(*) = 1 FROM pg_locks WHERE relation = 'j_u'::regclass AND granted}),
	'the target is locked');
my $batch = start_writer($node, $db, "CALL cq.run('j_u')");
ok($node->poll_query_until($db, q{SELECT count(*) = 1 FROM pg_locks WHERE relation = 'j_u'::regclass AND NOT granted}),
	'the batch waits to write its target');

my $log_offset = -s $node->logfile;
ok(crash_restart($node, $db), 'restarted after kill -9 of the postmaster mid-batch');
stop_writers($locker, $batch);
is($node->safe_psql($db, "SELECT count(*) FROM cq_state.jl_$id") + $node->safe_psql($db, "SELECT count(*) FROM cq_state.jr_$id"),
	'0', 'crash recovery emptied the unlogged buffers');
ok($node->safe_psql($db, "SELECT count(*) FROM cq_state.jl_$idl") > 0, 'the logged buffers survived');

$node->safe_psql($db, "SET client_min_messages = warning; CALL cq.run('j_u');");
ok($node->log_contains(qr/rebuilt lost state of continuous query "j_u"/, $log_offset), 'the buffers were rebuilt');
is($node->safe_psql($db, "SELECT state_rebuilt_at IS NOT NULL FROM cq.queries WHERE name = 'j_u'"), 't',
	'the query recorded its rebuild');

# after the same batches, the rebuilt buffers hold what the logged ones hold
# (the batch that added a row is not rebuilt: compare the rows)
for my $side ('jl', 'jr')
{
	my $cols = $node->safe_psql($db, qq{
		SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
		 WHERE attrelid = 'cq_state.${side}_$id'::regclass AND attnum > 0 AND NOT attisdropped
		   AND attname <> 'cq_join_batch'});
	my $n = $node->safe_psql($db, qq{
		SELECT count(*) FROM ((SELECT $cols FROM cq_state.${side}_$idl EXCEPT ALL SELECT $cols FROM cq_state.${side}_$id)
		  UNION ALL (SELECT $cols FROM cq_state.${side}_$id EXCEPT ALL SELECT $cols FROM cq_state.${side}_$idl)) x});
	is($n, '0', "$side: the rebuilt buffer equals the logged twin's");
}
is(mismatches($node, $db, 'SELECT * FROM oracle', 'j_u'), '0', 'after the crash: the target equals the oracle');
is(mismatches($node, $db, 'TABLE j_l', 'j_u'), '0', 'and the logged twin');

# more rounds after the rebuild: late rows before the crash stay dropped
for my $r (17 .. 25)
{
	$node->safe_psql($db, "SET client_min_messages = warning; CALL round($r); CALL cq.run('j_u'); CALL cq.run('j_l');");
}
is(mismatches($node, $db, 'SELECT * FROM oracle', 'j_u'), '0', 'later rounds: the target equals the oracle');
is($node->safe_psql($db, q{SELECT sum(num_rows_dropped_by_watermark) FROM cq.progress WHERE name = 'j_l'}),
	$node->safe_psql($db, 'SELECT count(*) FROM late'), 'the rows dropped as late are those the test expected');

$node->stop;
done_testing();
