# Batch 0 over history on the table path loads the state and the target
# directly (bulkload.c): one SELECT of the aggregated groups whose rows a
# DestReceiver inserts into both tables through bulk-insert state, instead
# of the batch statement's INSERT ... RETURNING chain.  Checked here:
#   - the path is taken (no INSERT into the state in the batch's plans) for
#     a plain target, and not for a target with a trigger or whose column
#     types differ from the query's (those need the executor's INSERT);
#   - every group reaches the state exactly once and the target's rows are
#     the plain query's (NULL keys, HAVING, avg from two state columns),
#     against a twin run with cq.bulk_load = off and against the query
#     itself, after batch 0 and after a second batch over new rows of old
#     and new groups (the state's rebuilt index finds every group: a lost
#     or doubled group makes a duplicate or wrong target row);
#   - the batch's statistics (rows read, state rows, rows written);
#   - the state and target analyzed after the load (on both paths), so
#     that the next batches are planned with statistics.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('bulk_load', 'autovacuum = off');

my $q = q{SELECT k1, k2, count(*) AS n, sum(v) AS s, avg(v) AS a, max(v) AS mx, min(t) AS mt FROM bsrc GROUP BY k1, k2 HAVING count(*) > 1};
(my $qs = $q) =~ s/'/''/g;

$node->safe_psql('postgres', qq{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLE bsrc (k1 int, k2 text, v int, t text);
  SELECT setseed(0.25);
  INSERT INTO bsrc SELECT CASE WHEN g % 97 = 0 THEN NULL ELSE (random() * 3000)::int END,
                          CASE WHEN g % 89 = 0 THEN NULL ELSE 'c' || (random() * 4)::int END,
                          CASE WHEN g % 13 = 0 THEN NULL ELSE (random() * 1000)::int END,
                          md5(g::text)
                     FROM generate_series(1, 40000) g;
  ANALYZE bsrc;
  SELECT cq.create_query(name, '$qs', output_mode => 'update', "trigger" => 'available_now',
                         state_storage => 'unlogged')
    FROM unnest(ARRAY['b_on', 'b_off']) name;
  -- a target with a trigger: the executor's INSERT must run it
  CREATE TABLE trg_count (n int);
  INSERT INTO trg_count VALUES (0);
  CREATE FUNCTION trg_count() RETURNS trigger LANGUAGE plpgsql AS
    \$\$BEGIN UPDATE public.trg_count SET n = n + 1; RETURN NEW; END\$\$;
  CREATE TABLE b_trg (k1 int, k2 text, n bigint, s bigint, a numeric, mx int, mt text);
  CREATE TRIGGER b_trg_count BEFORE INSERT ON b_trg FOR EACH ROW EXECUTE FUNCTION trg_count();
  SELECT cq.create_query('b_trg', '$qs', output_mode => 'update', "trigger" => 'available_now',
                         state_storage => 'unlogged');
  -- a target whose avg column has a scale: the INSERT's assignment cast rounds
  CREATE TABLE b_cast (k1 int, k2 text, n bigint, s bigint, a numeric(30,6), mx int, mt text);
  SELECT cq.create_query('b_cast', '$qs', output_mode => 'update', "trigger" => 'available_now',
                         state_storage => 'unlogged');
});

# batch 0 of each, the plans of its statements reported by auto_explain
sub batch0
{
	my ($name, $bulk) = @_;
	my ($out, $err) = ('', '');
	$node->psql('postgres', qq{
	  SET cq.bulk_load = $bulk;
	  SET cq.run_in_worker = off;  -- auto_explain is loaded in this session only: batches here
  LOAD 'auto_explain';
	  SET auto_explain.log_min_duration = 0;
	  SET auto_explain.log_nested_statements = on;
	  SET auto_explain.log_level = notice;
	  SET client_min_messages = notice;
	  CALL cq.run('$name');
	}, stdout => \$out, stderr => \$err, on_error_die => 1);
	return $err;
}
my $sid = sub {
	$node->safe_psql('postgres', "SELECT id FROM cq.queries WHERE name = '$_[0]'");
};
my %plans;
$plans{$_} = batch0($_, $_ eq 'b_off' ? 'off' : 'on') for qw(b_on b_off b_trg b_cast);

my $id_on = $sid->('b_on');
unlike($plans{b_on}, qr/Insert on s_$id_on\b/, 'b_on: batch 0 does not INSERT into the state');
like($plans{b_on}, qr/_s_n/, 'b_on: batch 0 ran the direct load\'s SELECT');
unlike($plans{b_on}, qr/Insert on b_on\b/, 'b_on: batch 0 does not INSERT into the target');
like($plans{b_off}, qr/Insert on s_\d+/, 'b_off (cq.bulk_load = off): the batch statement inserts into the state');
like($plans{b_trg}, qr/Insert on b_trg\b/, 'b_trg: a target with a trigger takes the INSERT');
like($plans{b_cast}, qr/Insert on b_cast\b/, 'b_cast: a target needing a cast takes the INSERT');
is($node->safe_psql('postgres', q{SELECT count(*) FROM b_cast WHERE scale(a) <> 6}), '0',
	'b_cast: its avg column was rounded to its scale');

sub mismatch
{
	my ($t) = @_;
	return $node->safe_psql('postgres', qq{
	  SELECT count(*) FROM ((SELECT k1, k2, n, s, a::numeric(30,6), mx, mt FROM ($q) q EXCEPT ALL
	                         SELECT k1, k2, n, s, a::numeric(30,6), mx, mt FROM $t)
	                  UNION ALL (SELECT k1, k2, n, s, a::numeric(30,6), mx, mt FROM $t EXCEPT ALL
	                             SELECT k1, k2, n, s, a::numeric(30,6), mx, mt FROM ($q) q)) x});
}
sub check_all
{
	my ($when) = @_;
	is(mismatch($_), '0', "$_ equals the plain query $when") for qw(b_on b_off b_trg b_cast);
	# the state: one row per group of the source, counts summing to its rows
	for my $name (qw(b_on b_off))
	{
		my $id = $sid->($name);
		is($node->safe_psql('postgres', qq{
		  SELECT (SELECT count(*) FROM cq_state.s_$id) || ' ' || (SELECT sum(n) FROM cq_state.s_$id) || ' ' ||
		         (SELECT count(*) FROM (SELECT DISTINCT k1, k2 FROM bsrc) g) || ' ' || (SELECT count(*) FROM bsrc)}) =~ /^(\d+) (\d+) (\d+) (\d+)$/ && $1 == $3 && $2 == $4 ? 'ok' : 'differs',
			'ok', "$name: one state row per group, counts summing to the source's rows $when");
	}
}
check_all('after batch 0');
is($node->safe_psql('postgres', q{SELECT n FROM trg_count}),
	$node->safe_psql('postgres', q{SELECT count(*) FROM b_trg}), 'b_trg: the trigger ran for every target row');
is($node->safe_psql('postgres', q{
  SELECT string_agg(DISTINCT num_input_rows || ' ' || num_state_rows_total || ' ' || num_state_rows_updated || ' ' || num_output_rows, ', ')
    FROM cq.progress WHERE name IN ('b_on', 'b_off') AND batch_id = 0}),
	$node->safe_psql('postgres', qq{
  SELECT (SELECT count(*) FROM bsrc) || ' ' || g || ' ' || g || ' ' || (SELECT count(*) FROM ($q) x)
    FROM (SELECT count(*) AS g FROM (SELECT DISTINCT k1, k2 FROM bsrc) d) s}),
	'batch 0 statistics: rows read, state rows, rows written (same on both paths)');
is($node->safe_psql('postgres', qq{SELECT indexdef IS NOT NULL FROM pg_indexes WHERE tablename = 's_$id_on'}),
	't', 'b_on: the state\'s index was built after the load');

# statistics for the next batches' plans: the state and the target analyzed
for my $name (qw(b_on b_off))
{
	my $id = $sid->($name);
	is($node->safe_psql('postgres', qq{
	  SELECT (SELECT count(*) > 0 FROM pg_stats WHERE schemaname = 'cq_state' AND tablename = 's_$id') AND
	         (SELECT count(*) > 0 FROM pg_stats WHERE schemaname = 'public' AND tablename = '$name')}),
		't', "$name: batch 0 analyzed its state and its target");
}

# batch 1: new rows of old and new groups, then every group again
$node->safe_psql('postgres', q{
  INSERT INTO bsrc SELECT CASE WHEN g % 7 = 0 THEN NULL ELSE (random() * 3500)::int END,
                          CASE WHEN g % 5 = 0 THEN NULL ELSE 'c' || (random() * 5)::int END,
                          (random() * 1000)::int, md5((g * 7)::text)
                     FROM generate_series(1, 5000) g;
  CALL cq.run('b_on');
  CALL cq.run('b_off');
  CALL cq.run('b_trg');
  CALL cq.run('b_cast');
});
check_all('after batch 1');
is($node->safe_psql('postgres', q{SELECT count(*) FROM (SELECT k1, k2 FROM b_on GROUP BY k1, k2 HAVING count(*) > 1) d}),
	'0', 'b_on: no group twice in the target');

$node->stop;
done_testing();
