# pg_cron (Debian's postgresql-15-cron) runs an available-now query:
# SELECT cron.schedule('* * * * *', 'CALL cq.run(''q'')').  pg_cron 1.4 has
# minute granularity, so this waits for up to a minute or two (polled).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCrash;

my $node = PostgreSQL::Test::Cluster->new('cron');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_cq,pg_cron'
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 20
});
$node->start;

$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE EXTENSION pg_cron;
	CREATE TABLE clicks (page text);
	CREATE TABLE clicks_per_page
	  WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
	  AS SELECT page, count(*) AS n FROM clicks GROUP BY page WITH NO DATA;
	INSERT INTO clicks VALUES ('home'), ('home'), ('about');
	SELECT cron.schedule('cq clicks', '* * * * *', 'CALL cq.run(''clicks_per_page'')');
});

# the background never runs an available-now query; pg_cron does
is($node->safe_psql('postgres', 'SELECT count(*) FROM clicks_per_page'), '0',
	'nothing ran before pg_cron');
ok($node->poll_query_until('postgres',
	q{SELECT coalesce((SELECT n FROM clicks_per_page WHERE page = 'home'), 0) = 2}),
	'pg_cron ran CALL cq.run');
is($node->safe_psql('postgres', 'SELECT page, n FROM clicks_per_page ORDER BY page'),
	"about|1\nhome|2", 'the result of the run');
ok($node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM cron.job_run_details
	 WHERE command LIKE 'CALL cq.run%' AND status = 'succeeded'}),
	'pg_cron recorded the run as succeeded');
is($node->safe_psql('postgres', q{SELECT message FROM cq.status WHERE name = 'clicks_per_page'}),
	'Stopped', 'an available-now query is "Stopped" between runs');

# cq.batch_timeout bounds the batches of pg_cq's own pool workers only
# (session 32): pg_cron's background worker running a CALL in its own process
# (cq.run_in_worker off) is bounded by statement_timeout as any session is,
# although it is a background worker too.  A batch of 2 s, the limit 1 s.
$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	ALTER SYSTEM SET cq.batch_timeout = '1s';
	SELECT pg_reload_conf();
	ALTER DATABASE postgres SET cq.run_in_worker = off;
	CREATE TABLE slow_src (k int, nap float8);
	CREATE TABLE slow_out WITH (cq.output_mode = 'append', cq.trigger = 'available_now')
	  AS SELECT k FROM slow_src WHERE pg_sleep(nap) IS NOT NULL WITH NO DATA;
	INSERT INTO slow_src VALUES (1, 2);
	SELECT cron.schedule('cq slow', '* * * * *', 'CALL cq.run(''slow_out'')');
});
ok($node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM cron.job_run_details d JOIN cron.job j USING (jobid)
	 WHERE j.jobname = 'cq slow' AND d.status IN ('succeeded', 'failed')}),
	'pg_cron ran the slow CALL');
is($node->safe_psql('postgres', q{
	SELECT d.status FROM cron.job_run_details d JOIN cron.job j USING (jobid)
	 WHERE j.jobname = 'cq slow' ORDER BY d.runid LIMIT 1}), 'succeeded',
	'cq.batch_timeout does not apply in pg_cron\'s worker');
is($node->safe_psql('postgres', q{SELECT count(*) FROM slow_out}), '1', 'the slow batch committed');
is($node->safe_psql('postgres', q{SELECT state FROM cq.queries WHERE name = 'slow_out'}), 'active',
	'the query is not failed');

$node->stop;
done_testing();
