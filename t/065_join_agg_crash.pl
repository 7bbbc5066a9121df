# An aggregation over a join of two streams killed mid-batch (kill -9 of the
# postmaster while its batch waits to write the target), then crash
# recovery (issue 11 part 4): the unlogged buffers are emptied and rebuilt
# exactly from the sources, and the aggregation's groups, always logged,
# are kept.  A twin query with everything logged (cq.state_storage =
# 'logged') runs the same batches and is not affected by the crash: after
# the restart both have the same buffered rows and the same open windows,
# and both targets equal the plain aggregation over the plain join of every
# row processed minus the rows dropped as late, for the closed windows.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('join_agg_crash');
my $db = 'postgres';

my $query = q{SELECT date_bin('30 seconds', i.ts, 'epoch') AS win, i.ad, count(*) AS n, max(c.id) AS clk
  FROM imp i JOIN clk c ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '1 minute'
  GROUP BY date_bin('30 seconds', i.ts, 'epoch'), i.ad};
$node->safe_psql($db, qq{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  SELECT setseed(0.65);
  CREATE TABLE imp (id serial, ad int, ts timestamptz);
  CREATE TABLE clk (id serial, ad int, ts timestamptz);
  CREATE TABLE late (side int, id int);
  CREATE TABLE j_u WITH (cq.source = 'imp, clk', cq.event_time = 'imp.ts, clk.ts',
    cq.watermark = '30 seconds, 1 minute', cq.trigger = 'available_now') AS $query;
  CREATE TABLE j_l WITH (cq.source = 'imp, clk', cq.event_time = 'imp.ts, clk.ts',
    cq.watermark = '30 seconds, 1 minute', cq.trigger = 'available_now', cq.state_storage = 'logged') AS $query;
  CREATE PROCEDURE round(r int) LANGUAGE plpgsql AS \$\$
  DECLARE
    base timestamptz := timestamptz '2026-01-01' + r * interval '20 seconds';
    w timestamptz := (SELECT watermark FROM cq.offsets WHERE name = 'j_l' ORDER BY batch_id DESC LIMIT 1);
    lo int := (SELECT coalesce(max(id), 0) FROM imp);
    lc int := (SELECT coalesce(max(id), 0) FROM clk);
  BEGIN
    INSERT INTO imp (ad, ts) SELECT (random() * 4)::int, base + (random() * 90 - 60) * interval '1 second'
      FROM generate_series(1, 5 + (random() * 20)::int);
    INSERT INTO clk (ad, ts) SELECT (random() * 4)::int, base + (random() * 120 - 80) * interval '1 second'
      FROM generate_series(1, 5 + (random() * 20)::int);
    INSERT INTO late SELECT 0, id FROM imp WHERE id > lo AND ts <= w;
    INSERT INTO late SELECT 1, id FROM clk WHERE id > lc AND ts <= w;
  END \$\$;
  -- closed windows: those that end at or before the aggregation's watermark
  -- of the last batch (the join's minus 1 minute 1 ms)
  CREATE VIEW oracle AS
    SELECT date_bin('30 seconds', i.ts, 'epoch') AS win, i.ad, count(*) AS n, max(c.id) AS clk
      FROM imp i JOIN clk c ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '1 minute'
     WHERE NOT EXISTS (SELECT 1 FROM late l WHERE l.side = 0 AND l.id = i.id)
       AND NOT EXISTS (SELECT 1 FROM late l WHERE l.side = 1 AND l.id = c.id)
     GROUP BY 1, 2
    HAVING date_bin('30 seconds', i.ts, 'epoch') + interval '30 seconds' <=
           (SELECT watermark - interval '1 minute 0.001 seconds' FROM cq.progress WHERE name = 'j_l'
             ORDER BY batch_id DESC LIMIT 1);
});
for my $r (1 .. 15)
{
	$node->safe_psql($db, "SET client_min_messages = warning; CALL round($r); CALL cq.run('j_u'); CALL cq.run('j_l');");
}
is(mismatches($node, $db, 'SELECT * FROM oracle', 'j_u'), '0', 'before the crash: the target equals the oracle');
ok($node->safe_psql($db, 'SELECT count(*) FROM j_u') > 5, 'windows were written');
ok($node->safe_psql($db, 'SELECT count(*) FROM late') > 0, 'some rows were late');
my ($id) = $node->safe_psql($db, "SELECT id FROM cq.queries WHERE name = 'j_u'");
my ($idl) = $node->safe_psql($db, "SELECT id FROM cq.queries WHERE name = 'j_l'");
is($node->safe_psql($db, qq{SELECT string_agg(relname || ' ' || relpersistence::text, ', ' ORDER BY relname) FROM pg_class
	WHERE relnamespace = 'cq_state'::regnamespace AND relkind = 'r' AND relname ~ '_${id}\$'}),
	"jd_$id p, jl_$id u, jr_$id u, s_$id p", 'buffers unlogged, groups logged');
ok($node->safe_psql($db, "SELECT count(*) FROM cq_state.s_$id") > 0, 'open windows in the state');

# the last round: the logged twin runs it; the batch of j_u blocks on a lock
# on its target, after it added the new rows to its buffers and folded them
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
ok($node->safe_psql($db, "SELECT count(*) FROM cq_state.s_$id") > 0, 'the logged groups survived');

$node->safe_psql($db, "SET client_min_messages = warning; CALL cq.run('j_u');");
ok($node->log_contains(qr/rebuilt lost state of continuous query "j_u"/, $log_offset), 'the buffers were rebuilt');

# after the same batches, the rebuilt buffers hold what the logged ones hold,
# and the open windows are the same
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
is(mismatches($node, $db, "TABLE cq_state.f_$idl", "cq_state.f_$id"), '0', 'the open windows equal the twin\'s');
is(mismatches($node, $db, 'SELECT * FROM oracle', 'j_u'), '0', 'after the crash: the target equals the oracle');
is(mismatches($node, $db, 'TABLE j_l', 'j_u'), '0', 'and the logged twin');

# more rounds after the rebuild
for my $r (17 .. 30)
{
	$node->safe_psql($db, "SET client_min_messages = warning; CALL round($r); CALL cq.run('j_u'); CALL cq.run('j_l');");
}
is(mismatches($node, $db, 'SELECT * FROM oracle', 'j_u'), '0', 'later rounds: the target equals the oracle');
is(mismatches($node, $db, 'TABLE j_l', 'j_u'), '0', 'and the logged twin');
is(mismatches($node, $db, "TABLE cq_state.f_$idl", "cq_state.f_$id"), '0', 'with the same open windows');

$node->stop;
done_testing();
