# The default cap of the trigger '0' hold (issue 12 goal 3, session 31):
# cq.coalesce_max_delay is 100 ms, so that under heavy ingest a query's
# batches grow up to the rows of 100 ms (their fixed cost shared by more
# rows) instead of 20 ms.  With cq.coalesce_factor = 1000 every batch that
# reads rows reaches the cap, whatever its CPU time (the factor is not what
# this tests; t/042_coalesce.pl does), and the cap is left at its default:
#   - SHOW gives 100ms;
#   - under a stream of commits 10 ms apart, every batch after the first
#     starts at least the hold after the previous one ended (a hold can only
#     make the gap longer on a slow machine, never shorter), and the stream
#     is folded in fewer batches than its length allows at one per 100 ms;
#   - every row exactly once;
#   - cq.coalesce_row_us: a batch of r rows holds the query for at least
#     min(r x that, the cap) even when the factor x its CPU time is less.
# Every wait polls with a deadline.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use CqTest;

# the cap left at its default
my $node = coalesce_node('coalesce_cap');

is($node->safe_psql('postgres', 'SHOW cq.coalesce_max_delay'), '100ms', 'default cap 100 ms');

# idle for longer than the hold: the stream's first batch runs at once
wait_batch_idle($node, 'out', 500);
my $b0 = $node->safe_psql('postgres', "SELECT max(batch_id) FROM cq.progress WHERE name = 'out'");

# 100 single-row commits 10 ms apart, from one session
my $secs = stream_commits($node, 1, 100, 10);

ok($node->poll_query_until('postgres', coalesce_exact_sql()), 'every row exactly once');

# the gaps between a batch's end (as cq.progress records it: the worker's
# end, after its commit, is later still) and the next one's start
my $gaps = $node->safe_psql('postgres', qq{
	SELECT count(*) || ' ' || coalesce(round(min(gap_ms)), -1)
	  FROM (SELECT extract(epoch FROM started_at - lag(started_at + duration_ms * interval '1 ms')
	                 OVER (ORDER BY batch_id)) * 1000 AS gap_ms, batch_id
	          FROM cq.progress WHERE name = 'out' AND batch_id > $b0 AND num_input_rows > 0) g
	 WHERE gap_ms IS NOT NULL});
my ($ngaps, $min_gap) = split / /, $gaps;
my $nb = $node->safe_psql('postgres',
	"SELECT count(*) FROM cq.progress WHERE name = 'out' AND batch_id > $b0 AND num_input_rows > 0");
note(sprintf('stream of 100 commits in %.2f s: %d batches, shortest gap %d ms', $secs, $nb, $min_gap));
cmp_ok($ngaps, '>=', 1, "the stream took more than one batch ($nb)");
cmp_ok($min_gap, '>=', 95, "each batch waited the 100 ms hold after the previous one (shortest gap $min_gap ms)");
my $most = int($secs / 0.1) + 2;
cmp_ok($nb, '<=', $most, "at most $most batches for a $secs s stream ($nb)");

# --- cq.coalesce_row_us: the hold is also at least that many microseconds
# per row the batch read (up to the cap), so that under heavy ingest batches
# grow to the cap where cq.coalesce_factor x D settles on small ones.  With
# the factor at 1 and 10 ms per row, a batch of r rows holds the query for
# at least min(10 r ms, 100 ms), whatever its CPU time (the factor alone:
# about its CPU time, a few ms).
$node->safe_psql('postgres', 'ALTER SYSTEM SET cq.coalesce_factor = 1');
$node->safe_psql('postgres', 'ALTER SYSTEM SET cq.coalesce_row_us = 10000');
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
ok($node->poll_query_until('postgres',
	"SELECT current_setting('cq.coalesce_row_us') = '10000' AND current_setting('cq.coalesce_factor') = '1'"),
	'reloaded');
wait_batch_idle($node, 'out', 500);
$b0 = $node->safe_psql('postgres', "SELECT max(batch_id) FROM cq.progress WHERE name = 'out'");
# 40 commits of 5 rows each, 10 ms apart
$node->safe_psql('postgres', q{
	DO $$ BEGIN
	  FOR i IN 1 .. 40 LOOP
	    INSERT INTO src SELECT 1000 + 5 * i + g FROM generate_series(0, 4) g;
	    COMMIT;
	    PERFORM pg_sleep(0.01);
	  END LOOP;
	END $$});
ok($node->poll_query_until('postgres', q{
	SELECT (SELECT count(*) FROM out) = 300 AND (SELECT count(DISTINCT id) FROM out) = 300
	   AND NOT EXISTS (SELECT id FROM src EXCEPT SELECT id FROM out)}), 'rows: every row exactly once');
# each gap against the hold the previous batch's rows ask for
my $short = $node->safe_psql('postgres', qq{
	SELECT count(*) FILTER (WHERE gap_ms IS NOT NULL) || ' '
	       || count(*) FILTER (WHERE gap_ms < least(10 * prev_rows, 100) - 2) || ' '
	       || coalesce(max(prev_rows), 0)
	  FROM (SELECT extract(epoch FROM started_at - lag(started_at + duration_ms * interval '1 ms')
	                 OVER (ORDER BY batch_id)) * 1000 AS gap_ms,
	               lag(num_input_rows) OVER (ORDER BY batch_id) AS prev_rows
	          FROM cq.progress WHERE name = 'out' AND batch_id > $b0 AND num_input_rows > 0) g});
my ($npairs, $nshort, $maxrows) = split / /, $short;
note("row-term stream: $npairs gaps, largest batch $maxrows rows");
cmp_ok($npairs, '>=', 1, 'the stream took more than one batch');
is($nshort, '0', 'no batch started before min(its predecessor\'s rows x 1 ms, 100 ms) had passed');

$node->stop;
done_testing();
