# pg_upgrade keeps a database's files, transaction ids included, but gives
# the cluster a new system identifier: the queries must go on from their
# offsets (issue 9 item 18), not start over as after a restore from a dump
# (t/007_dump_restore.pl), which would recompute every target and count the
# rows once dropped as late.  A real pg_upgrade between two PostgreSQL 15
# clusters.
use strict;
use warnings;
use Cwd;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCrash;

my $conf = "shared_preload_libraries = 'pg_cq'\nmax_worker_processes = 16\ncq.naptime = 1000\n";
my $old = PostgreSQL::Test::Cluster->new('old');
$old->init;
$old->append_conf('postgresql.conf', $conf);
$old->start;

$old->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE ev (ts timestamptz, k int);
  INSERT INTO ev SELECT '2024-01-01'::timestamptz + i * interval '1 second', i % 5 FROM generate_series(1, 300) i;
  CREATE TABLE per_min WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '10 seconds')
    AS SELECT date_bin('1 minute', ts, '2024-01-01') AS minute, count(*) AS n FROM ev GROUP BY 1;
  CREATE TABLE by_k WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n FROM ev GROUP BY k;
  CREATE TABLE live WITH (cq.output_mode = 'update')
    AS SELECT k, count(*) AS n FROM ev GROUP BY k;
  -- late: its minute closed at the first batch's watermark
  INSERT INTO ev VALUES ('2024-01-01 00:00:30.5', 1);
  CALL cq.run('per_min');
  CALL cq.run('by_k');
  -- committed but not yet processed when the cluster is upgraded
  INSERT INTO ev SELECT '2024-01-01'::timestamptz + i * interval '1 second', i % 5 FROM generate_series(301, 340) i;
});
# a user table with pg_cq's type cq.xid48 (session 42), a btree and a BRIN
# index on it: pg_upgrade keeps the type's OID, its operator classes, the
# files and the indexes as they are
$old->safe_psql('postgres', q{
  CREATE TABLE st48 (k int, x cq.xid48 DEFAULT cq.current_xid48(), y xid8 DEFAULT pg_current_xact_id());
  CREATE INDEX st48_bt ON st48 (x);
  CREATE INDEX st48_brin ON st48 USING brin (x);
  INSERT INTO st48 (k) SELECT g FROM generate_series(1, 100) g;
  INSERT INTO st48 (k) SELECT g FROM generate_series(101, 200) g;
});
is($old->safe_psql('postgres', "SELECT sum(num_rows_dropped_by_watermark) FROM cq.progress WHERE name = 'per_min'"),
	'1', 'the old cluster dropped the late row');
$old->poll_query_until('postgres', 'SELECT sum(n) = 341 FROM live') or die 'live query did not catch up';

my $before = $old->safe_psql('postgres', q{
  SELECT string_agg(minute || '=' || n, ',' ORDER BY minute) FROM per_min});
my %last_batch;
for my $q (qw(per_min by_k live))
{
	$last_batch{$q} = $old->safe_psql('postgres', "SELECT max(batch_id) FROM cq.offsets WHERE name = '$q'");
}
my $ids_before = $old->safe_psql('postgres', 'SELECT string_agg(name || cluster_id, \',\' ORDER BY name) FROM cq.queries');
my $sysid_before = $old->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
my $xid_before = $old->safe_psql('postgres', 'SELECT max(cq_xid)::text FROM ev');
$old->stop;

my $new = PostgreSQL::Test::Cluster->new('new');
$new->init;
$new->append_conf('postgresql.conf', $conf);

# pg_upgrade writes its logs into the current directory (and the new data directory)
my $bindir = $new->config_data('--bindir');
my $cwd = getcwd();
chdir $PostgreSQL::Test::Utils::tmp_check;
command_ok(
	[
		'pg_upgrade', '--no-sync',
		'-d', $old->data_dir, '-D', $new->data_dir,
		'-b', $bindir, '-B', $bindir,
		'-s', $new->host, '-p', $old->port, '-P', $new->port
	],
	'pg_upgrade');
chdir $cwd;
$new->start;

isnt($new->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()'), $sysid_before,
	'pg_upgrade gave the cluster a new system identifier');
is($new->safe_psql('postgres', 'SELECT string_agg(name || cluster_id, \',\' ORDER BY name) FROM cq.queries'),
	$ids_before, 'the queries still belong to this installation');

# new rows after the upgrade: their stamps continue the old cluster's
$new->safe_psql('postgres', q{
  INSERT INTO ev SELECT '2024-01-01'::timestamptz + i * interval '1 second', i % 5 FROM generate_series(341, 360) i;
});
ok($new->safe_psql('postgres', "SELECT min(cq_xid) > '$xid_before'::xid8 FROM ev WHERE ts > '2024-01-01 00:05:40'"),
	'transaction ids continue after pg_upgrade');
$new->safe_psql('postgres', 'INSERT INTO st48 (k) VALUES (201)');
is($new->safe_psql('postgres', q{
	SET enable_seqscan = off;
	SELECT count(*) FILTER (WHERE x OPERATOR(cq.=) y) || ' '
	       || (SELECT count(*) FROM st48 WHERE x OPERATOR(cq.>=) (SELECT y FROM st48 WHERE k = 101)) || ' '
	       || (SELECT count(*) FROM st48 WHERE x OPERATOR(cq.<) (SELECT y FROM st48 WHERE k = 201))
	  FROM st48}),
	'201 101 200', 'a cq.xid48 column and its btree and BRIN indexes after pg_upgrade');

is($new->safe_psql('postgres', q{SELECT string_agg(minute || '=' || n, ',' ORDER BY minute) FROM per_min}),
	$before, 'the target is unchanged by the upgrade');
$new->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CALL cq.run('per_min');
  CALL cq.run('by_k');
});
$new->poll_query_until('postgres', 'SELECT sum(n) = 361 FROM live') or die 'live query did not resume';

# each query went on from its last offset: the next batch id, only the rows committed since
for my $q (qw(per_min by_k))
{
	is($new->safe_psql('postgres', "SELECT min(batch_id) FROM cq.progress WHERE name = '$q' AND batch_id > $last_batch{$q}"),
		$last_batch{$q} + 1, "$q: the batch after the upgrade follows the last one before it");
	is($new->safe_psql('postgres', "SELECT sum(num_input_rows) FROM cq.progress WHERE name = '$q' AND batch_id > $last_batch{$q}"),
		'60', "$q: batches after the upgrade read only the 60 rows committed since its last batch");
}
is($new->safe_psql('postgres', "SELECT sum(num_rows_dropped_by_watermark) FROM cq.progress WHERE name = 'per_min'"),
	'1', 'the late row is still dropped, not recounted');

sub diff
{
	my ($oracle, $target) = @_;
	return $new->safe_psql('postgres',
		"SELECT count(*) FROM (($oracle EXCEPT ALL TABLE $target) UNION ALL (TABLE $target EXCEPT ALL $oracle)) x");
}
is(diff("SELECT date_bin('1 minute', ts, '2024-01-01'), count(*) FROM ev WHERE ts <> '2024-01-01 00:00:30.5' GROUP BY 1", 'per_min'),
	'0', 'windowed target: every row once, the late row never');
is(diff('SELECT k, count(*) FROM ev GROUP BY k', 'by_k'), '0', 'update target equals the oracle');
is(diff('SELECT k, count(*) FROM ev GROUP BY k', 'live'), '0', 'a background query resumed by itself');

$new->stop;
done_testing();
