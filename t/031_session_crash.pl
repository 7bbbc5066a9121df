# Session windows (issue 11 part 1) through kill -9 of the postmaster in the
# middle of a batch: a session transaction has run batches of every query
# (sessions merged, rows deleted from the update target, state rows deleted
# and inserted) and not committed when the postmaster dies.  After crash
# recovery the uncommitted batches are gone; the logged state of the queries
# whose watermark drops rows survived as committed, the unlogged state of the
# query without watermark was emptied and is rebuilt from the source; then
# more batches (with rows that bridge sessions stored before the crash) and
# every target equals the plain sessionization of the rows it kept.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use CqTest;

my $node = cq_node('session_crash');
my $db = 'postgres';

# sr: k, v, ts; ok = not late for the watermark queries (the test knows the
# watermark the next batch applies when it writes a round: rows are drawn
# late, ts + 10 s <= W, or after W, as in sql/56_session_random.sql)
$node->safe_psql($db, q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE sr (id serial, k int, v int, ts timestamptz, ok boolean);
	CREATE VIEW sr_q AS
	  SELECT k, s.session_start, s.session_end, count(*) AS n, sum(v) AS sv, min(v) AS mn, max(v) AS mx
	    FROM sr, LATERAL cq.session_window(sr.ts, interval '10 seconds') AS s
	   GROUP BY k, s.session_start, s.session_end;
	SELECT cq.create_query('sr_u', pg_get_viewdef('sr_q'), output_mode => 'update', event_time => 'ts',
	                       watermark => '15 seconds', "trigger" => 'available_now');
	SELECT cq.create_query('sr_a', pg_get_viewdef('sr_q'), output_mode => 'append', event_time => 'ts',
	                       watermark => '15 seconds', "trigger" => 'available_now');
	SELECT cq.create_query('sr_n', pg_get_viewdef('sr_q'), output_mode => 'update', "trigger" => 'available_now');
	CREATE PROCEDURE sr_round(seed float8) LANGUAGE plpgsql AS $$
	DECLARE w timestamptz;
	BEGIN
	  PERFORM setseed(seed);
	  SELECT watermark INTO w FROM cq.offsets WHERE name = 'sr_u' ORDER BY batch_id DESC LIMIT 1;
	  INSERT INTO sr (k, v, ts, ok)
	  SELECT k, v, ts, w IS NULL OR ts > w
	    FROM (SELECT (random() * 3)::int AS k, (random() * 100)::int AS v,
	                 CASE WHEN w IS NULL THEN timestamptz '2026-03-01 00:00:00+00' + floor(random() * 35) * interval '1 second'
	                      WHEN random() < 0.1 THEN w - (10 + floor(random() * 30)) * interval '1 second'
	                      ELSE w + (1 + floor(random() * 35)) * interval '1 second' END AS ts
	            FROM generate_series(1, 1 + (random() * 10)::int)) x;
	END $$;
	CREATE PROCEDURE sr_batches() LANGUAGE sql AS $$ CALL cq.run('sr_u'); CALL cq.run('sr_a'); CALL cq.run('sr_n') $$;
	CREATE FUNCTION sr_oracle(only_ok boolean) RETURNS TABLE (k int, session_start timestamptz, session_end timestamptz,
	    n bigint, sv bigint, mn int, mx int) LANGUAGE sql AS $$
	  WITH r AS (SELECT * FROM sr WHERE ok OR NOT only_ok),
	       b AS (SELECT r.*, CASE WHEN ts <= max(ts + interval '10 seconds') OVER (PARTITION BY k ORDER BY ts
	                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) THEN 0 ELSE 1 END AS brk FROM r),
	       c AS (SELECT b.*, sum(brk) OVER (PARTITION BY k ORDER BY ts ROWS UNBOUNDED PRECEDING) AS isl FROM b)
	  SELECT k, min(ts), max(ts) + interval '10 seconds', count(*), sum(v), min(v), max(v) FROM c GROUP BY k, isl $$;
});
for my $r (1 .. 20)
{
	$node->safe_psql($db, "SET client_min_messages = warning; CALL sr_round($r / 100.0); CALL sr_batches();");
}

sub check
{
	my ($what) = @_;
	my $wm = $node->safe_psql($db,
		"SELECT batch_watermark FROM cq.offsets WHERE name = 'sr_a' ORDER BY batch_id DESC LIMIT 1");
	is(mismatches($node, $db, 'SELECT * FROM sr_oracle(true)', 'sr_u'), '0', "update target equals the oracle $what");
	is(mismatches($node, $db, "SELECT * FROM sr_oracle(true) WHERE session_end <= '$wm'", 'sr_a'), '0',
		"append target holds every closed session once $what");
	is(mismatches($node, $db, 'SELECT * FROM sr_oracle(false)', 'sr_n'), '0',
		"target without watermark equals the oracle $what");
}
check('before the crash');
my $state_u = $node->safe_psql($db, "SELECT state_table FROM cq.queries WHERE name = 'sr_u'");
my $state_n = $node->safe_psql($db, "SELECT state_table FROM cq.queries WHERE name = 'sr_n'");
my $rows_u = $node->safe_psql($db, "SELECT count(*) FROM $state_u");
ok($rows_u > 0 && $node->safe_psql($db, "SELECT count(*) FROM $state_n") > 0, 'open sessions in the state');

# a transaction inserts a round and runs a batch of every query, then waits
my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr($db), '-c',
	  "SET client_min_messages = warning; BEGIN; CALL sr_round(0.77); CALL sr_batches(); SELECT pg_sleep(600); COMMIT;" ],
	'>', \$out, '2>', \$err);
ok($node->poll_query_until($db, q{
	SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE query LIKE '%sr_batches%' AND wait_event = 'PgSleep')}),
	'a batch of every query ran and has not committed');
my $log_offset = -s $node->logfile;
ok(crash_restart($node, $db), 'restarted after kill -9 of the postmaster');
eval { $h->finish; };
$h->kill_kill if $h->pumpable;
ok($node->log_contains(qr/database system was not properly shut down; automatic recovery in progress/, $log_offset),
	'the restart ran crash recovery');
is($node->safe_psql($db, "SELECT count(*) FROM $state_u"), $rows_u, 'the logged state is as the last commit left it');
is($node->safe_psql($db, "SELECT count(*) FROM $state_n"), '0', 'the unlogged state was emptied');

for my $r (21 .. 35)
{
	$node->safe_psql($db, "SET client_min_messages = warning; CALL sr_round($r / 100.0); CALL sr_batches();");
}
check('after the crash');
is($node->safe_psql($db, "SELECT string_agg(name, ',' ORDER BY name) FROM cq.queries WHERE state_rebuilt_at IS NOT NULL"),
	'sr_n', 'only the unlogged state was rebuilt');
ok($node->safe_psql($db, 'SELECT count(*) FROM sr WHERE NOT ok') > 0, 'some rows were late');

$node->stop;
done_testing();
