# A background worker's poll that finds nothing new writes nothing to the
# target (SPEC §5: no new data, no batch), also for single-scan queries
# (no WHERE, join or LATERAL) on the table path, whose statement counts its
# own rows: a user's statement-level trigger on the target fires only for
# batches that wrote rows (sql/104_empty_poll.sql checks the same through
# CALL cq.run).
#   - two trigger '0' queries (an update aggregation on its state table, a
#     stateless append) with AFTER INSERT / AFTER UPDATE statement triggers
#     on their targets that log each firing with its transaction and the
#     rows of its transition table;
#   - unrelated commits while the worker polls every 100 ms (each one moves
#     the snapshot the poll compares), then a source row as a marker;
#   - no transaction fired a trigger without writing a row, the rows that
#     came are each in the targets once, and every firing's transaction
#     ran a batch.
# Every wait polls with a deadline; the pacing of the unrelated commits only
# gives the worker chances to poll, the assertions do not depend on it.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCrash;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('empty_poll');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq'
max_worker_processes = 16
cq.naptime = 100
cq.max_workers = 2
cq.coalesce_max_delay = 0
});
$node->start;

$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE fires (target text, op text, xid xid8, nrows bigint);
	CREATE FUNCTION log_fire() RETURNS trigger LANGUAGE plpgsql AS $$
	  BEGIN
	    INSERT INTO public.fires SELECT TG_TABLE_NAME, TG_OP, pg_current_xact_id(), count(*) FROM n;
	    RETURN NULL;
	  END $$;
	CREATE TABLE src (k int, x int);
	CREATE TABLE other (v int);
	CREATE TABLE agg WITH (cq.output_mode = 'update', cq.trigger = '0', cq.state_storage = 'unlogged')
	  AS SELECT k, count(*) AS n, sum(x) AS sx FROM src GROUP BY k;
	CREATE TABLE app WITH (cq.output_mode = 'append', cq.trigger = '0') AS SELECT k, x FROM src;
	CREATE TRIGGER fi AFTER INSERT ON agg REFERENCING NEW TABLE AS n
	  FOR EACH STATEMENT EXECUTE FUNCTION log_fire();
	CREATE TRIGGER fu AFTER UPDATE ON agg REFERENCING NEW TABLE AS n
	  FOR EACH STATEMENT EXECUTE FUNCTION log_fire();
	CREATE TRIGGER fi AFTER INSERT ON app REFERENCING NEW TABLE AS n
	  FOR EACH STATEMENT EXECUTE FUNCTION log_fire();
});

my $exact = q{
	SELECT (SELECT count(*) FROM ((SELECT k, count(*) AS n, sum(x) AS sx FROM src GROUP BY k EXCEPT ALL TABLE agg)
	                              UNION ALL (TABLE agg EXCEPT ALL SELECT k, count(*) AS n, sum(x) AS sx FROM src GROUP BY k)) d) = 0
	   AND (SELECT count(*) FROM ((SELECT k, x FROM src EXCEPT ALL TABLE app) UNION ALL (TABLE app EXCEPT ALL SELECT k, x FROM src)) d) = 0};

$node->safe_psql('postgres', 'INSERT INTO src SELECT g % 10, g FROM generate_series(1, 100) g');
ok($node->poll_query_until('postgres', $exact), 'the first rows reach both targets');

# a round: unrelated commits while the worker polls, then a marker row
for my $round (1 .. 3)
{
	for my $i (1 .. 40)
	{
		$node->safe_psql('postgres', "INSERT INTO other VALUES ($i)");
		usleep(10_000);
	}
	$node->safe_psql('postgres', "INSERT INTO src VALUES ($round, 1000 + $round)");
	ok($node->poll_query_until('postgres', $exact), "round $round: the marker row reaches both targets, once");
}

# a transaction that fired a trigger wrote at least one row to that target
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM (SELECT target, xid FROM fires GROUP BY target, xid HAVING sum(nrows) = 0) e}),
	'0', 'no poll wrote a target without rows (no empty statement fired its triggers)');
# and the firings are those of the batches: per target, as many transactions
# as batches that read rows (cq.progress keeps the last 100; one batch per
# transaction for a query)
is($node->safe_psql('postgres', q{
	SELECT string_agg(format('%s: %s transactions, %s batches', t, x, b), '; ' ORDER BY t)
	  FROM (SELECT target AS t, count(DISTINCT xid) AS x FROM fires GROUP BY target) f
	  JOIN (SELECT name AS t, count(*) AS b FROM cq.progress WHERE num_input_rows > 0 GROUP BY name) o USING (t)
	 WHERE x <> b}),
	'', 'every transaction that fired a target trigger ran one batch of its query');
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM other'), '==', 120, 'the unrelated commits all ran');

$node->stop;
done_testing();
