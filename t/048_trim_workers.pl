# Lowering cq.max_workers while every worker is busy: the workers past the
# new setting stop once their batches end, not only those idle at the reload.
# (Before, the scheduler looked once, at the reload: a worker busy then stayed
# until the next reload, and t/001's "cq.max_workers = 1 after reload" timed
# out when a batch happened to run at that moment.)  Every wait polls with a
# deadline.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use CqTest qw(cq_node gate_target mismatches);

my $node = cq_node('trim', 'cq.max_workers = 2');

# two queries, each writing into a target whose rows wait for the gate:
# a batch of each holds a worker until the gate opens
$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE src (id bigint, k int);
	CREATE TABLE by_k WITH (cq.output_mode = 'update')
	  AS SELECT k, count(*) AS n, sum(id) AS s FROM src GROUP BY k;
	CREATE TABLE all_rows WITH (cq.output_mode = 'append') AS SELECT id, k FROM src;
});
gate_target($node, 'postgres', 'by_k');
$node->safe_psql('postgres', q{
	CREATE TRIGGER slow BEFORE INSERT OR UPDATE ON all_rows FOR EACH ROW EXECUTE FUNCTION slow();
	INSERT INTO src SELECT g, g % 5 FROM generate_series(1, 100) g;
});

my $workers = q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'pg_cq worker' AND datname = 'postgres'};
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) = 2 FROM pg_stat_activity
	 WHERE backend_type = 'pg_cq worker' AND datname = 'postgres' AND wait_event = 'PgSleep'}),
	'both workers busy, their batches waiting at the gate');

# lowered while both are busy: the reload stops none, and says so
my $off = -s $node->logfile;
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET cq.max_workers = 1;
	ALTER SYSTEM SET log_min_messages = debug1;
});
$node->reload;
ok($node->wait_for_log(qr/2 workers, above cq\.max_workers = 1: busy ones stop when idle/, $off),
	'the reload found both workers busy');
is($node->safe_psql('postgres', $workers), '2', 'busy workers are not interrupted');

# the gate opens: the batches end, and one worker stops without another reload
$node->safe_psql('postgres', 'UPDATE gate SET open = true');
ok($node->poll_query_until('postgres', "SELECT ($workers) = 1"),
	'one worker left once the batches ended');

# the remaining worker runs both queries
$node->safe_psql('postgres', 'INSERT INTO src SELECT g, g % 5 FROM generate_series(101, 200) g');
ok($node->poll_query_until('postgres', q{
	SELECT (SELECT count(*) FROM all_rows) = 200 AND (SELECT sum(n) FROM by_k) = 200}),
	'both queries caught up with one worker');
is(mismatches($node, 'postgres', 'SELECT k, count(*) AS n, sum(id) AS s FROM src GROUP BY k', 'by_k'),
	'0', 'by_k equals its query');
is($node->safe_psql('postgres', 'SELECT count(*) FROM (SELECT id, k FROM src EXCEPT ALL SELECT id, k FROM all_rows) d'),
	'0', 'all_rows holds every source row');
is($node->safe_psql('postgres', $workers), '1', 'still one worker');

$node->stop;
done_testing();
