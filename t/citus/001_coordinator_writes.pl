# pg_cq on a Citus cluster (issue 14, docs/scale-out.md).
#
# A local table on the coordinator streams exactly as without Citus (Citus
# loaded first, queries planned by Citus' planner hook); reference tables and
# Citus local tables are sources (a batch reads the coordinator's copy);
# single-shard distributed tables are refused with a clear error.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCitus;

my ($coord, $workers) = CqCitus::new_cluster(2);

# ---- a local source on the coordinator, static dimension distributed ----
$coord->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE TABLE ev (id bigint, ts timestamptz, k int, v numeric);
  INSERT INTO ev SELECT i, '2024-01-01'::timestamptz + i * interval '1 second', i % 7, i
    FROM generate_series(1, 1000) i;
  CREATE TABLE by_k WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi FROM ev GROUP BY k;
  CREATE TABLE by_k_c WITH (cq.trigger = 'available_now', cq.output_mode = 'complete')
    AS SELECT k % 3 AS k3, count(*) AS n, avg(v) AS a FROM ev GROUP BY 1;
});

my $check_sql = q{
  SELECT (SELECT count(*) FROM ((TABLE by_k EXCEPT ALL
            SELECT k, count(*), sum(v), min(v), max(v) FROM ev GROUP BY k)
          UNION ALL (SELECT k, count(*), sum(v), min(v), max(v) FROM ev GROUP BY k
            EXCEPT ALL TABLE by_k)) x)
       + (SELECT count(*) FROM ((TABLE by_k_c EXCEPT ALL
            SELECT k % 3, count(*), avg(v) FROM ev GROUP BY 1)
          UNION ALL (SELECT k % 3, count(*), avg(v) FROM ev GROUP BY 1
            EXCEPT ALL TABLE by_k_c)) x)
};
is($coord->safe_psql('postgres', $check_sql), '0', 'batch 0 over a local source equals the plain query');

my @writes = (
	[ 'one-row INSERT', q{INSERT INTO ev VALUES (2001, now(), 1, 5)} ],
	[ 'multi-row INSERT', q{INSERT INTO ev VALUES (2002, now(), 2, 6), (2003, now(), 3, 7), (2004, now(), 9, 8)} ],
	[ 'INSERT ... SELECT', q{INSERT INTO ev SELECT id + 10000, ts, k, v * 2 FROM ev WHERE id <= 300} ],
	[ 'INSERT with a NULL key',
	  q{INSERT INTO ev VALUES (3001, now(), NULL, 1)} ],
);
for my $w (@writes)
{
	$coord->safe_psql('postgres', $w->[1]);
	$coord->safe_psql('postgres', q{CALL cq.run('by_k'); CALL cq.run('by_k_c');});
	is($coord->safe_psql('postgres', $check_sql), '0', "after a $w->[0]: targets equal the plain query");
}
is($coord->safe_psql('postgres', q{SELECT count(*) FROM ev}), '1305', 'every row written is in the source');

# ---- reference and Citus local tables are sources (read through the
# coordinator's copy: t/citus/006_reference_local.pl); single-shard tables
# are refused ----
# (hash-distributed tables are sources: t/citus/002_distributed.pl)
$coord->safe_psql('postgres', q{
  CREATE TABLE dist (id bigint, k int);
  SELECT create_distributed_table('dist', 'id');
  CREATE TABLE ref (id bigint, k int);
  SELECT create_reference_table('ref');
  CREATE TABLE loc (id bigint, k int);
  SELECT citus_add_local_table_to_metadata('loc');
  CREATE TABLE single (id bigint, k int);
  SELECT create_distributed_table('single', null);
});
for my $t ('ref', 'loc')
{
	$coord->safe_psql('postgres', qq{
	  SET client_min_messages = warning;
	  CREATE TABLE ${t}_agg WITH (cq.trigger = '1 hour', cq.output_mode = 'update')
	    AS SELECT k, count(*) AS n FROM $t GROUP BY k;
	  INSERT INTO $t SELECT i, i % 3 FROM generate_series(1, 30) i;
	  CALL cq.run('${t}_agg');
	  INSERT INTO $t SELECT i, i % 4 FROM generate_series(31, 40) i;
	  CALL cq.run('${t}_agg');
	});
	is($coord->safe_psql('postgres', qq{
	  SELECT count(*) FROM ((TABLE ${t}_agg EXCEPT ALL SELECT k, count(*) FROM $t GROUP BY k)
	    UNION ALL (SELECT k, count(*) FROM $t GROUP BY k EXCEPT ALL TABLE ${t}_agg)) x}),
		'0', "a query over the Citus table $t runs its second batch and equals the plain query");
}
{
	my ($rc, $out, $err) = $coord->psql('postgres',
		"CREATE TABLE single_agg WITH (cq.trigger = 'available_now') AS SELECT k, count(*) FROM single GROUP BY k",
		on_error_stop => 1, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	isnt($rc, 0, "a query over a single-shard distributed table is refused");
	like($err, qr/0A000: source "single" is a Citus table that is not hash-distributed, a reference table or a Citus local table/,
		"... with SQLSTATE 0A000 and the reason");
	is($coord->safe_psql('postgres',
		"SELECT count(*) FROM pg_catalog.pg_attribute WHERE attrelid = 'single'::regclass AND attname = 'cq_xid'"),
		'0', "... and the table is left untouched");
}

# a stream-static join may read a distributed static table
$coord->safe_psql('postgres', q{
  INSERT INTO dist SELECT i, i % 7 FROM generate_series(1, 20) i;
  SET client_min_messages = warning;
  CREATE TABLE joined WITH (cq.trigger = 'available_now', cq.output_mode = 'update', cq.source = 'ev')
    AS SELECT d.k, count(*) AS n FROM ev JOIN dist d ON d.id = ev.id GROUP BY d.k;
  INSERT INTO ev VALUES (5, now(), 1, 1), (6, now(), 1, 1);
  CALL cq.run('joined');
});
is($coord->safe_psql('postgres', q{
  SELECT count(*) FROM ((TABLE joined EXCEPT ALL SELECT d.k, count(*) FROM ev JOIN dist d ON d.id = ev.id GROUP BY d.k)
    UNION ALL (SELECT d.k, count(*) FROM ev JOIN dist d ON d.id = ev.id GROUP BY d.k EXCEPT ALL TABLE joined)) x}),
	'0', 'a stream-static join with a distributed static table equals the plain query');

$_->stop for @$workers;
$coord->stop;
done_testing();
