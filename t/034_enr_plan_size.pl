# Plans over the batch's ephemeral relations follow the batch's size.  The
# shared-memory store writes the target with one statement over m (the
# changed groups), passed as an ephemeral relation.  The statement has no
# parameters, so a saved plan made for a one-row batch (a nested-loop
# anti-join that reads the CTE of updated rows again for every row) was kept
# for every later batch, and a batch of 50,000 changed groups ran for
# minutes (quadratic).  Now each size class has its own plan.  With
# autovacuum off nothing else invalidates the saved plan, as in a long-lived
# worker between two ANALYZEs of the target.
#
# The state table path (u3) plans its one statement per batch, but from the
# source's statistics: once ANALYZE has run, a batch's new rows are
# estimated at one row (their transaction ids are past the histogram), and
# the same anti-join over the updated rows was a nested loop that rescans
# them per row (a 5,000-group batch: 0.7 s).  It no longer joins them.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('enr_plan_size', 'autovacuum = off');

$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE src (k int NOT NULL, v int NOT NULL);
  INSERT INTO src SELECT g, g FROM generate_series(1, 20000) g;
  SELECT cq.create_query('u1', 'SELECT k, count(*) AS n, sum(v) AS s FROM src GROUP BY k',
    output_mode => 'update', "trigger" => 'available_now');
  SELECT cq.create_query('u2', 'SELECT k % 7000 AS k7, count(*) AS n, avg(v) AS a FROM src GROUP BY 1 HAVING count(*) > 2',
    output_mode => 'update', "trigger" => 'available_now');
  SELECT cq.create_query('u3', 'SELECT k, count(*) AS n, sum(v) AS s FROM src GROUP BY k',
    output_mode => 'update', "trigger" => 'available_now', state_storage => 'unlogged');
  CALL cq.run('u1');
  CALL cq.run('u2');
  CALL cq.run('u3');
  ANALYZE src, u3;
});
is($node->safe_psql('postgres', "SELECT string_agg(name || ' ' || state_path, ', ' ORDER BY name) FROM cq.queries"),
	'u1 memory, u2 memory, u3 table: requested', 'u1 and u2 keep their state in the store, u3 in a table');

# One session: a one-row batch, then a batch of 5,000 changed groups, each
# target statement's plan reported by auto_explain.
my ($out, $err) = ('', '');
# (the upsert: keys that are NOT NULL would take MERGE, cq.merge_max_groups;
# and the statement, not its writes from C, cq.target_update_in_c: its plan
# is what this test reads)
$node->psql('postgres', q{
  SET cq.merge_max_groups = 0;
  SET cq.target_update_in_c = off;
  SET cq.run_in_worker = off;  -- auto_explain is loaded in this session only: batches here
  LOAD 'auto_explain';
  SET auto_explain.log_min_duration = 0;
  SET auto_explain.log_nested_statements = on;
  SET auto_explain.log_level = notice;
  SET client_min_messages = notice;
  INSERT INTO src VALUES (1, 1);
  CALL cq.run('u1');
  CALL cq.run('u2');
  CALL cq.run('u3');
  SET client_min_messages = warning;
  INSERT INTO src SELECT g, 1 FROM generate_series(1, 5000) g;
  SELECT 'big';
  SET client_min_messages = notice;
  CALL cq.run('u1');
  CALL cq.run('u2');
  CALL cq.run('u3');
}, stdout => \$out, stderr => \$err, on_error_die => 1);

# the plans of the target statements (those that update the target)
my @all = split /(?=NOTICE:  duration:)/, $err;
my @plans = grep { /Update on u[12] t\b/ } @all;
my @table = grep { /Update on u3 t\b/ } @all;
is(scalar(@plans), 4, 'auto_explain reported the target statements of the four batches')
	or diag($err);
# in order: u1 and u2 with one new row, then u1 and u2 with 5,000
my @big = @plans[2, 3];
ok(!grep({ /Named Tuplestore Scan[^\n]*rows=1 width/ } @big),
	'the big batches were planned for their size (m not estimated at one row)')
	or diag(join("\n----\n", @big));
ok(!grep({ /Nested Loop Anti Join/ } @big), 'no nested-loop anti-join over the updated rows in a big batch')
	or diag(join("\n----\n", @big));

# a nested-loop anti-join whose inner side reads the CTE ou (the updated rows)
sub rescans_ou
{
	my ($plan) = @_;
	my @lines = split /\n/, $plan;
	for my $i (0 .. $#lines)
	{
		next unless $lines[$i] =~ /^(\s*)->  Nested Loop Anti Join/;
		my $indent = length($1);
		for my $j ($i + 1 .. $#lines)
		{
			last unless $lines[$j] =~ /^(\s*)/ && length($1) > $indent;
			return 1 if $lines[$j] =~ /CTE Scan on ou\b/;
		}
	}
	return 0;
}
is(scalar(@table), 2, 'auto_explain reported the two batch statements of u3') or diag($err);
like($table[1] // '', qr/Bitmap Heap Scan on src[^\n]*rows=1 width/,
	'u3: the big batch\'s new rows are estimated at one row (past the histogram)');
ok(!rescans_ou($table[1] // ''), 'u3: the big batch does not rescan the updated rows per row')
	or diag($table[1]);

is($node->safe_psql('postgres', q{
  SELECT count(*) FROM ((SELECT k, count(*), sum(v) FROM src GROUP BY k EXCEPT ALL TABLE u1)
                  UNION ALL (TABLE u1 EXCEPT ALL SELECT k, count(*), sum(v) FROM src GROUP BY k)) x}),
	'0', 'u1 equals the plain query');
is($node->safe_psql('postgres', q{
  SELECT count(*) FROM ((SELECT k % 7000, count(*), avg(v) FROM src GROUP BY 1 HAVING count(*) > 2 EXCEPT ALL TABLE u2)
                  UNION ALL (TABLE u2 EXCEPT ALL SELECT k % 7000, count(*), avg(v) FROM src GROUP BY 1 HAVING count(*) > 2)) x}),
	'0', 'u2 equals the plain query');
is($node->safe_psql('postgres', q{
  SELECT count(*) FROM ((TABLE u1 EXCEPT ALL TABLE u3) UNION ALL (TABLE u3 EXCEPT ALL TABLE u1)) x}),
	'0', 'u3 equals u1');

$node->stop;
done_testing();
