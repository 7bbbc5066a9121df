# Soak of a join of two streams (issue 11, "Done when": state stays bounded
# with advancing watermarks): for SOAK_SECONDS (default 20) two writers
# insert impressions and clicks at the wall clock, slightly out of order,
# with rollbacks, while an inner and a left outer join with trigger '0' run
# in the background.  Afterwards each buffer holds exactly the rows its
# eviction bound keeps (those with event time above W + bound), a small part
# of all rows, and the targets equal the plain joins.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
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
sleep($seconds);    # the soak itself: writers and background batches run meanwhile
$node->safe_psql($db, 'INSERT INTO cq_stop VALUES (true)');
stop_writers(@writers);

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
