# Soak of session windows (issue 11, "Done when": state stays bounded with
# advancing watermarks): for SOAK_SECONDS (default 20) two writers insert
# clicks of 500 users at the wall clock, slightly out of order, with
# rollbacks, while an update and an append session-window query (gap 1 s,
# watermark delay 2 s, trigger '0') run in the background.  The state
# samples of cq.progress are kept for the record (note lines).  Afterwards:
#   - each state holds exactly the open sessions: those whose end is after
#     the watermark of the last batch;
#   - bound: the state rows are within a small factor (4) of the rows inside
#     one watermark delay (event time in (max - 2 s, max]); an open session
#     has a row in (W - gap, max], so about (delay + gap) / delay = 1.5x at
#     most when every row is its own session;
#   - the targets equal the gaps-and-islands sessionization of the rows.
# A 10-minute run (SOAK_SECONDS=600) is recorded in bench/README.md.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use CqTest;

my $seconds = $ENV{SOAK_SECONDS} || 20;
my $node = cq_node('session_soak');
my $db = 'postgres';

my $q = q{SELECT u, s.session_start, s.session_end, count(*) AS n, sum(v) AS sv, max(v) AS mx
  FROM clicks, LATERAL cq.session_window(ts, interval '1 second') AS s
 GROUP BY u, s.session_start, s.session_end};
$node->safe_psql($db, qq{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE clicks (id bigserial, u int, v int, ts timestamptz);
  CREATE TABLE cq_stop (stop boolean);
  CREATE TABLE se_u WITH (cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '2 seconds') AS $q;
  CREATE TABLE se_a WITH (cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '2 seconds') AS $q;
  -- event times up to half a second behind the clock: never late for a 2 s delay
  CREATE PROCEDURE write() LANGUAGE plpgsql AS \$\$
  BEGIN
    LOOP
      EXIT WHEN EXISTS (SELECT 1 FROM cq_stop);
      INSERT INTO clicks (u, v, ts) SELECT (random() * 500)::int, (random() * 100)::int,
             clock_timestamp() - random() * interval '0.5 seconds'
        FROM generate_series(1, 1 + (random() * 10)::int);
      IF random() < 0.1 THEN ROLLBACK; ELSE COMMIT; END IF;
      PERFORM pg_sleep(0.002 + random() * 0.01);
    END LOOP;
  END \$\$;
  CREATE FUNCTION oracle() RETURNS TABLE (u int, session_start timestamptz, session_end timestamptz,
      n bigint, sv bigint, mx int) LANGUAGE sql AS \$\$
    WITH b AS (SELECT c.*, CASE WHEN ts <= max(ts + interval '1 second') OVER (PARTITION BY c.u ORDER BY ts
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) THEN 0 ELSE 1 END AS brk FROM clicks c),
         i AS (SELECT b.*, sum(brk) OVER (PARTITION BY b.u ORDER BY ts ROWS UNBOUNDED PRECEDING) AS isl FROM b)
    SELECT i.u, min(ts), max(ts) + interval '1 second', count(*), sum(v), max(v) FROM i GROUP BY i.u, isl \$\$;
});
my @writers = map { start_writer($node, $db, 'CALL write()') } (1, 2);
ok($node->poll_query_until($db, q{SELECT count(*) > 100 FROM se_a}), 'sessions are written in the background');
# the soak itself: writers and background batches run meanwhile; every 5 s
# a sample of the state (last batch) against the rows of one delay
my $end = time() + $seconds;
my @samples;
while (time() < $end)
{
	sleep(5);
	push @samples, $node->safe_psql($db, q{
		SELECT (SELECT string_agg(num_state_rows_total::text, '/' ORDER BY name) FROM
		         (SELECT DISTINCT ON (name) name, num_state_rows_total FROM cq.progress
		           WHERE name IN ('se_u', 'se_a') ORDER BY name, batch_id DESC) p)
		       || ' of ' || count(*) FROM clicks WHERE ts > (SELECT max(ts) FROM clicks) - interval '2 seconds'});
}
note('state rows se_a/se_u of the rows in one delay, every 5 s: ' . join(', ', @samples));
$node->safe_psql($db, 'INSERT INTO cq_stop VALUES (true)');
ok(end_writers($node, $db, @writers), 'the writers ended');
wait_caught_up($node, $db, 'clicks', 'after the soak', 'se_u', 'se_a');

my $total = $node->safe_psql($db, 'SELECT count(*) FROM clicks');
my $delay_rows = $node->safe_psql($db,
	q{SELECT count(*) FROM clicks WHERE ts > (SELECT max(ts) FROM clicks) - interval '2 seconds'});
for my $name ('se_u', 'se_a')
{
	my ($state, $w) = split(/\|/, $node->safe_psql($db, qq{
		SELECT q.state_table, o.batch_watermark FROM cq.queries q,
		  LATERAL (SELECT * FROM cq.offsets o WHERE o.name = q.name ORDER BY batch_id DESC LIMIT 1) o
		 WHERE q.name = '$name'}));
	my $rows = $node->safe_psql($db, "SELECT count(*) FROM $state");
	is($rows, $node->safe_psql($db, "SELECT count(*) FROM oracle() WHERE session_end > '$w'"),
		"$name: the state holds exactly the open sessions");
	is($node->safe_psql($db, qq{SELECT num_state_rows_total FROM cq.progress WHERE name = '$name'
		ORDER BY batch_id DESC LIMIT 1}), $rows, "$name: cq.progress counts the open sessions");
	ok($rows <= 4 * $delay_rows, "$name: $rows state rows within 4x the $delay_rows rows of one watermark delay");
	note("$name: " . $node->safe_psql($db, qq{
		SELECT format('rows %s, batches %s, state rows after the soak %s (rows in one delay %s); '
		              'last %s batches: state rows median %s, max %s; batch duration median %s ms, max %s ms',
		       $total, max(batch_id) + 1, $rows, $delay_rows, count(*),
		       percentile_disc(0.5) WITHIN GROUP (ORDER BY num_state_rows_total), max(num_state_rows_total),
		       percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_ms), max(duration_ms))
		  FROM cq.progress WHERE name = '$name'}));
}
ok($total > 1000, "$total rows written");
is($node->safe_psql($db, q{SELECT coalesce(sum(num_rows_dropped_by_watermark), 0) FROM cq.progress WHERE name = 'se_u'}),
	'0', 'no row was late');
is(mismatches($node, $db, 'SELECT * FROM oracle()', 'se_u'), '0', 'the update target equals the sessionization');
my $wa = $node->safe_psql($db, q{SELECT batch_watermark FROM cq.offsets WHERE name = 'se_a' ORDER BY batch_id DESC LIMIT 1});
is(mismatches($node, $db, "SELECT * FROM oracle() WHERE session_end <= '$wa'", 'se_a'), '0',
	'the append target holds every closed session once');

$node->stop;
done_testing();
