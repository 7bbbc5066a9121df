# Batch 0 over history of a query on the shared-memory store makes its
# group table with slots for the groups the estimate expects (session 29,
# cq_store_expect in store_estimate.c) rather than doubling it from 256
# slots, within cq.state_memory.  The server log (debug1) names the slots
# made and each doubling:
#   - ~30,000 groups estimated from the source's statistics: 65,536 slots
#     (the table is kept at most 85% full), made once, never doubled, and
#     the store holds and counts exactly what a query over the same rows
#     without statistics (no estimate: its table doubles 8 times) holds;
#   - the same estimate with a budget of 512kB: no more groups than the
#     budget holds, a slot array of at most a quarter of it (8,192 slots of
#     16 bytes); the batch outgrows the budget and moves to the table path,
#     with the plain query's result;
#   - a later batch past the pre-sized table doubles it as before.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('presize');
my $q = 'SELECT k, count(*) AS n, sum(v) AS s FROM %s GROUP BY k';

$node->safe_psql('postgres', qq{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE ev (k int NOT NULL, v int NOT NULL) WITH (autovacuum_enabled = off);
  CREATE TABLE ev2 (k int NOT NULL, v int NOT NULL) WITH (autovacuum_enabled = off);
  INSERT INTO ev SELECT (i * 7919) % 30000, i % 1000 FROM generate_series(1, 60000) i;
  INSERT INTO ev2 SELECT * FROM ev;
  ANALYZE ev;
});
for my $n (['pa', 'ev'], ['pb', 'ev2'], ['pc', 'ev'])
{
	my $sql = sprintf($q, $n->[1]);
	$node->safe_psql('postgres', qq{SELECT cq.create_query('$n->[0]', '$sql', output_mode => 'update',
	  "trigger" => 'available_now', state_storage => 'memory')});
}

# CALL cq.run(name) at log level debug1 (with settings first); returns the log it wrote
sub run_batch
{
	my ($name, $set) = @_;
	$set //= '';
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres',
		"SET client_min_messages = error; SET log_min_messages = debug1; $set CALL cq.run('$name')");
	return slurp_file($node->logfile, $offset);
}

sub grew { my ($log) = @_; my @g = $log =~ /state store group table grew to/g; return scalar @g; }

sub mismatches_of
{
	my ($name, $src) = @_;
	return mismatches($node, 'postgres', sprintf($q, $src), $name);
}

sub info
{
	my ($name) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(state_rows::text, 'none') || ' ' || coalesce(state_bytes::text, 'none') FROM cq.state_store_info('$name')");
}

# (1) estimated from statistics: made for them, never doubled
my $log = run_batch('pa');
my ($est) = $log =~ /batch 0 estimated at (\d+) groups/;
ok(defined $est && $est > 27000 && $est < 33000, 'batch 0 estimated at about its 30,000 groups (' . ($est // 'none') . ')');
like($log, qr/group table of 65536 slots for $est expected groups/, 'the group table made with 65,536 slots for them');
is(grew($log), 0, 'and never doubled');
is(mismatches_of('pa', 'ev'), '0', 'target equals the plain query');

# the same rows without statistics: no estimate, the table doubles from 256 slots
$log = run_batch('pb');
like($log, qr/no estimate of batch 0's groups/, 'no estimate without statistics');
unlike($log, qr/expected groups/, 'no pre-sized table');
is(grew($log), 8, 'the table doubles 8 times, 256 to 65,536 slots');
is(mismatches_of('pb', 'ev2'), '0', 'target equals the plain query');
my ($rows, $bytes) = split / /, info('pa');
is($rows, '30000', 'the store holds 30,000 groups');
is(info('pb'), "$rows $bytes", 'rows and bytes as the store without an estimate counts them');

# (2) the same estimate, a 512kB budget: a quarter of it at most in slots
$log = run_batch('pc', "SET cq.state_memory = '512kB';");
my ($est2, $est_bytes) = $log =~ /batch 0 estimated at (\d+) groups, (\d+) bytes/;
is($est2, $est, 'the same estimate');
ok($est_bytes > 512 * 1024, "estimate ($est_bytes bytes) past the budget");
my ($slots, $expect) = $log =~ /group table of (\d+) slots for (\d+) expected groups/;
ok(defined $slots && $slots * 16 <= 512 * 1024 / 4, 'slot array within a quarter of the budget (' . ($slots // 'none') . ' slots)');
ok(defined $expect && $expect * $est_bytes / $est <= 512 * 1024,
	'expected no more groups than the budget holds (' . ($expect // 'none') . ')');
like($log, qr/moved its state from shared memory to its state table/, 'outgrew the budget: moved to the table');
is($node->safe_psql('postgres', "SELECT state_storage FROM cq.queries WHERE name = 'pc'"), 'unlogged', 'now on the table path');
is(mismatches_of('pc', 'ev'), '0', 'target equals the plain query');

# (3) a later batch past the pre-sized table: it doubles, counts stay equal
$node->safe_psql('postgres', q{
  INSERT INTO ev SELECT 30000 + i, i FROM generate_series(1, 30000) i;
  INSERT INTO ev2 SELECT 30000 + i, i FROM generate_series(1, 30000) i;
});
$log = run_batch('pa');
is(grew($log), 1, 'the pre-sized table doubles once past its groups');
run_batch('pb');
($rows, $bytes) = split / /, info('pa');
is($rows, '60000', 'the store holds 60,000 groups');
is(info('pb'), "$rows $bytes", 'rows and bytes equal to those of the store without an estimate');
is(mismatches_of('pa', 'ev'), '0', 'target equals the plain query');
is(mismatches_of('pb', 'ev2'), '0', 'target equals the plain query');

$node->stop;
done_testing();
