# Soak of a join of two streams (issue 11, "Done when": state stays bounded
# with advancing watermarks): for SOAK_SECONDS (default 20) two writers
# insert impressions and clicks at the wall clock, slightly out of order,
# with rollbacks, while an inner and a left outer join with trigger '0' run
# in the background.  Afterwards each buffer holds exactly the rows its
# eviction bound keeps (those with event time above W + bound), a small part
# of all rows and within a small factor (4) of the rows inside one
# watermark delay (event time in (max - 2 s, max] of each stream: the
# impressions' buffer spans about delay + 3 s, the clicks' about the delay,
# so about 2x), and the targets equal the plain joins.  Every 5 s the state
# of the last batch is sampled for the record (note lines); a 10-minute run
# (SOAK_SECONDS=600) is recorded in bench/README.md.
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
my $node = cq_node('join_soak');
my $db = 'postgres';

my $inner = q{SELECT i.id AS imp, c.id AS clk FROM imp i JOIN clk c
  ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '3 seconds'};
my $outer = $inner =~ s/ JOIN clk/ LEFT JOIN clk/r;
$node->safe_psql($db, qq{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE imp (id bigserial, ad int, ts timestamptz);
  CREATE TABLE clk (id bigserial, ad int, ts timestamptz);
  CREATE TABLE cq_stop (stop boolean);
  CREATE TABLE j_in WITH (cq.source = 'imp, clk', cq.event_time = 'imp.ts, clk.ts',
    cq.watermark = '2 seconds') AS $inner;
  CREATE TABLE j_out WITH (cq.source = 'imp, clk', cq.event_time = 'imp.ts, clk.ts',
    cq.watermark = '2 seconds') AS $outer;
  -- event times up to half a second behind the clock: never late for a 2 s delay
  CREATE PROCEDURE write(tbl text) LANGUAGE plpgsql AS \$\$
  BEGIN
    LOOP
      EXIT WHEN EXISTS (SELECT 1 FROM cq_stop);
      EXECUTE format('INSERT INTO %I (ad, ts) SELECT (random() * 20)::int, '
                     'clock_timestamp() - random() * interval ''0.5 seconds'' '
                     'FROM generate_series(1, 1 + (random() * 10)::int)', tbl);
      IF random() < 0.1 THEN ROLLBACK; ELSE COMMIT; END IF;
      PERFORM pg_sleep(0.002 + random() * 0.01);
    END LOOP;
  END \$\$;
});
my @writers = map { start_writer($node, $db, "CALL write('$_')") } ('imp', 'clk');
ok($node->poll_query_until($db, q{SELECT count(*) > 100 FROM j_in}), 'the join runs in the background');
# the soak itself: writers and background batches run meanwhile
my $end = time() + $seconds;
my @samples;
while (time() < $end)
{
	sleep(5);
	push @samples, $node->safe_psql($db, q{
		SELECT (SELECT string_agg(num_state_rows_total::text, '/' ORDER BY name) FROM
		         (SELECT DISTINCT ON (name) name, num_state_rows_total FROM cq.progress
		           WHERE name IN ('j_in', 'j_out') ORDER BY name, batch_id DESC) p)
		       || ' of ' || ((SELECT count(*) FROM imp WHERE ts > (SELECT max(ts) FROM imp) - interval '2 seconds')
		                     + (SELECT count(*) FROM clk WHERE ts > (SELECT max(ts) FROM clk) - interval '2 seconds'))});
}
note('buffered rows j_in/j_out of the rows in one delay, every 5 s: ' . join(', ', @samples));
$node->safe_psql($db, 'INSERT INTO cq_stop VALUES (true)');
ok(end_writers($node, $db, @writers), 'the writers ended');

for my $q ('j_in', 'j_out')
{
	ok($node->poll_query_until($db, qq{
		SELECT o.batch_watermark IS NOT DISTINCT FROM o.watermark
		   AND NOT EXISTS (SELECT 1 FROM imp s WHERE NOT pg_visible_in_snapshot(s.cq_xid, o.end_offset))
		   AND NOT EXISTS (SELECT 1 FROM clk s WHERE NOT pg_visible_in_snapshot(s.cq_xid, o.end_offset))
		  FROM (SELECT * FROM cq.offsets WHERE name = '$q' ORDER BY batch_id DESC LIMIT 1) o}),
		"$q caught up with the writers");
}
my $total = $node->safe_psql($db, 'SELECT (SELECT count(*) FROM imp) + (SELECT count(*) FROM clk)');
my $delay_rows = $node->safe_psql($db, q{
	SELECT (SELECT count(*) FROM imp WHERE ts > (SELECT max(ts) FROM imp) - interval '2 seconds')
	     + (SELECT count(*) FROM clk WHERE ts > (SELECT max(ts) FROM clk) - interval '2 seconds')});
# bounded state: impressions are kept while i.ts > W - 3 s - 1 ms, clicks
# while c.ts > W - 1 ms (c.ts >= i.ts): exactly those are buffered
for my $q ('j_in', 'j_out')
{
	my ($id, $w) = split(/\|/, $node->safe_psql($db, qq{
		SELECT q.id, o.batch_watermark FROM cq.queries q,
		  LATERAL (SELECT * FROM cq.offsets o WHERE o.name = q.name ORDER BY batch_id DESC LIMIT 1) o
		 WHERE q.name = '$q'}));
	is($node->safe_psql($db, "SELECT count(*) FROM cq_state.jl_$id"),
		$node->safe_psql($db, "SELECT count(*) FROM imp WHERE ts > '$w'::timestamptz - interval '3 seconds 1 millisecond'"),
		"$q: the impressions buffered are those within the bound");
	is($node->safe_psql($db, "SELECT count(*) FROM cq_state.jr_$id"),
		$node->safe_psql($db, "SELECT count(*) FROM clk WHERE ts > '$w'::timestamptz - interval '1 millisecond'"),
		"$q: the clicks buffered are those within the bound");
	ok($node->safe_psql($db, "SELECT (SELECT count(*) FROM cq_state.jl_$id) + (SELECT count(*) FROM cq_state.jr_$id)")
		  * 4 < $total, "$q: the buffers hold a small part of all rows");
	my $state = $node->safe_psql($db, "SELECT (SELECT count(*) FROM cq_state.jl_$id) + (SELECT count(*) FROM cq_state.jr_$id)");
	is($node->safe_psql($db, qq{SELECT num_state_rows_total FROM cq.progress WHERE name = '$q'
		ORDER BY batch_id DESC LIMIT 1}), $state, "$q: cq.progress counts the buffered rows");
	ok($state <= 4 * $delay_rows, "$q: $state buffered rows within 4x the $delay_rows rows of one watermark delay");
	note("$q: " . $node->safe_psql($db, qq{
		SELECT format('rows %s, batches %s, buffered rows after the soak %s (rows in one delay %s); '
		              'last %s batches: buffered rows median %s, max %s; batch duration median %s ms, max %s ms',
		       $total, max(batch_id) + 1, $state, $delay_rows, count(*),
		       percentile_disc(0.5) WITHIN GROUP (ORDER BY num_state_rows_total), max(num_state_rows_total),
		       percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_ms), max(duration_ms))
		  FROM cq.progress WHERE name = '$q'}));
}

# let the watermark pass the last rows: one row per stream, 10 s ahead
$node->safe_psql($db, q{
  INSERT INTO imp (ad, ts) VALUES (-1, clock_timestamp() + interval '10 seconds');
  INSERT INTO clk (ad, ts) VALUES (-1, clock_timestamp() + interval '10 seconds');
});
for my $q ('j_in', 'j_out')
{
	ok($node->poll_query_until($db, qq{
		SELECT o.batch_watermark IS NOT DISTINCT FROM o.watermark
		   AND NOT EXISTS (SELECT 1 FROM imp s WHERE NOT pg_visible_in_snapshot(s.cq_xid, o.end_offset))
		   AND NOT EXISTS (SELECT 1 FROM clk s WHERE NOT pg_visible_in_snapshot(s.cq_xid, o.end_offset))
		  FROM (SELECT * FROM cq.offsets WHERE name = '$q' ORDER BY batch_id DESC LIMIT 1) o}),
		"$q caught up with the last rows");
}
note("rows: $total, batches: " . $node->safe_psql($db, "SELECT max(batch_id) FROM cq.progress WHERE name = 'j_in'"));
is(mismatches($node, $db, $inner, 'j_in'), '0', 'the inner join equals the plain join');
is(mismatches($node, $db, $outer . q{ WHERE i.ts <= (SELECT batch_watermark FROM cq.offsets WHERE name = 'j_out'
		ORDER BY batch_id DESC LIMIT 1) - interval '3 seconds 1 millisecond' OR c.id IS NOT NULL}, 'j_out'),
	'0', 'the left outer join equals the plain one for every impression the watermark passed');

$node->stop;
done_testing();
