# A join of two streams dumped and restored into another cluster (issue 11
# part 2): as every restored query, it starts over (the offsets are the old
# cluster's transaction ids); both streams' rows become history, its buffers
# are made anew with their dependencies, and the target equals the plain
# join again after its first batch, also for rows written after the restore;
# and an aggregation over such a join.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCrash;

my $conf = "shared_preload_libraries = 'pg_cq'\nmax_worker_processes = 16\ncq.naptime = 1\n";
my $old = PostgreSQL::Test::Cluster->new('jold');
$old->init;
$old->append_conf('postgresql.conf', $conf);
$old->start;

my $plain = q{SELECT da.k, da.t AS at, db.t AS bt FROM da JOIN db ON da.k = db.k
  AND db.t BETWEEN da.t AND da.t + interval '10 minutes'};
# an aggregation over the join (issue 11 part 4): its logged groups are made
# anew too; the closed windows (the join's watermark - 10 minutes - 1 ms)
# equal the plain aggregation
my $agg = q{SELECT date_bin('10 minutes', da.t, 'epoch') AS w, count(*) AS n FROM da JOIN db ON da.k = db.k
  AND db.t BETWEEN da.t AND da.t + interval '10 minutes' GROUP BY 1};
my $agg_closed = qq{SELECT * FROM ($agg) a WHERE a.w + interval '10 minutes' <=
  (SELECT watermark - interval '10 minutes 0.001 seconds' FROM cq.progress WHERE name = 'dagg'
    ORDER BY batch_id DESC LIMIT 1)};
$old->safe_psql('postgres', qq{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE da (k int, t timestamptz);
  CREATE TABLE db (k int, t timestamptz);
  CREATE TABLE dj WITH (cq.source = 'da, db', cq.event_time = 'da.t, db.t', cq.watermark = '1 minute',
    cq.trigger = 'available_now') AS $plain;
  CREATE TABLE dagg WITH (cq.source = 'da, db', cq.event_time = 'da.t, db.t', cq.watermark = '1 minute',
    cq.trigger = 'available_now') AS $agg;
  INSERT INTO da SELECT i % 5, '2026-01-01'::timestamptz + i * interval '1 minute' FROM generate_series(1, 100) i;
  INSERT INTO db SELECT i % 5, '2026-01-01'::timestamptz + (i + 3) * interval '1 minute' FROM generate_series(1, 100) i;
  CALL cq.run('dj');
  CALL cq.run('dagg');
  -- committed but not processed when the dump is taken
  INSERT INTO db VALUES (1, '2026-01-01 01:40:30');
});
my $dump = $old->basedir . '/cq.sql';
$old->command_ok(['pg_dump', '-d', $old->connstr('postgres'), '-f', $dump], 'pg_dump');

my $new = PostgreSQL::Test::Cluster->new('jnew');
$new->init;
$new->append_conf('postgresql.conf', $conf);
$new->start;
$new->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '--single-transaction',
	'-d', $new->connstr('postgres'), '-f', $dump], 'restore in one transaction');
$new->safe_psql('postgres', q{
  SET client_min_messages = warning;
  INSERT INTO da VALUES (1, '2026-01-01 01:50');
  INSERT INTO db VALUES (1, '2026-01-01 01:55');
  CALL cq.run('dj');
  CALL cq.run('dagg');
});

sub mismatches
{
	my ($node, $oracle, $target) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM (($oracle EXCEPT ALL TABLE $target) UNION ALL (TABLE $target EXCEPT ALL $oracle)) x");
}
is(mismatches($new, $plain, 'dj'), '0', 'the restored join equals the plain join');
is(mismatches($new, $agg_closed, 'dagg'), '0', 'the restored aggregation over the join equals the plain one');
ok($new->safe_psql('postgres', 'SELECT count(*) FROM dagg') > 5, 'with closed windows');
is($new->safe_psql('postgres', q{
	SELECT c.relname ~ '^s_' AND c.relpersistence = 'p' FROM cq.queries q JOIN pg_class c ON c.oid = q.state_table
	 WHERE q.name = 'dagg'}), 't', 'its state table is its logged groups');
is($new->safe_psql('postgres', q{
	SELECT count(*) FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
	 WHERE c.relnamespace = 'cq_state'::regnamespace AND c.relname ~ '^j[lrd]_' AND c.relkind = 'r'
	   AND d.deptype = 'a'}), '6', 'the buffers of both queries depend on them again');
is($new->safe_psql('postgres', q{
	SELECT c.relname FROM cq.queries q JOIN pg_class c ON c.oid = q.state_table WHERE q.name = 'dj'}) =~ /^jl_\d+$/ ? 1 : 0,
	1, 'the first buffer is its state table (its loss after a crash is detected)');
$new->safe_psql('postgres', q{
  SET client_min_messages = warning;
  INSERT INTO da VALUES (2, '2026-01-01 02:00');
  INSERT INTO db VALUES (2, '2026-01-01 02:05');
  CALL cq.run('dj');
  CALL cq.run('dagg');
});
is(mismatches($new, $plain, 'dj'), '0', 'and after more batches');
is(mismatches($new, $agg_closed, 'dagg'), '0', 'the aggregation too');

$old->stop;
$new->stop;
done_testing();
