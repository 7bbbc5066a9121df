# What a plain role can make the processes that run as the bootstrap
# superuser do for it (session 30):
#  1. CALL cq.run handed to an idle pool worker (handoff.c) passes the
#     caller's settings to the worker.  A default_tablespace the caller may
#     not create in must not go with them: the worker's superuser sections
#     (batch 0 over history, without cq.bulk_load, drops the state table's
#     indexes and builds them again)
#     would put pg_cq's objects there past the tablespace's ACL.  Before
#     session 30 they did.  (sql/117_adversarial.sql checks the in-process
#     path.)
#  2. pg_cron runs a job as the role that scheduled it: a role can schedule
#     CALL cq.run of another role's query, and the run is refused by the
#     ownership check; its own query runs.  pg_cron 1.4 has minute
#     granularity: this waits up to a minute or two (polled).
# Every wait polls with a deadline.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('worker_rights', "shared_preload_libraries = 'pg_cq,pg_cron'",
	"cron.database_name = 'postgres'", 'cron.use_background_workers = on');
my $dir = PostgreSQL::Test::Utils::tempdir;

$node->safe_psql('postgres', qq{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE EXTENSION pg_cron;
	CREATE TABLESPACE locked LOCATION '$dir';
	CREATE ROLE mallory LOGIN;
	CREATE ROLE victim LOGIN;
	CREATE SCHEMA evil AUTHORIZATION mallory;
	CREATE SCHEMA app AUTHORIZATION victim;
	GRANT USAGE ON SCHEMA app TO mallory;
	GRANT USAGE ON SCHEMA cron TO mallory;
});
$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	SET ROLE mallory;
	CREATE TABLE evil.src (k int, v int);
	INSERT INTO evil.src SELECT g % 50, g FROM generate_series(1, 5000) g;
	CREATE TABLE evil.warm WITH (cq.trigger = 'available_now') AS SELECT k FROM evil.src WITH NO DATA;
	CREATE TABLE evil.agg WITH (cq.trigger = 'available_now', cq.output_mode = 'complete',
	                            cq.state_storage = 'unlogged')
	  AS SELECT k, count(*) AS n, sum(v) AS s FROM evil.src GROUP BY k WITH NO DATA;
});

# 1. an idle worker: the first CALL asks the scheduler for one
$node->safe_psql('postgres', "SET client_min_messages = warning; SET ROLE mallory; CALL cq.run('evil.warm')");
ok($node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'pg_cq worker' AND coalesce(state, 'idle') = 'idle'}),
	'an idle pool worker');
my ($ret, $out, $err) = $node->psql('postgres', q{
	SET client_min_messages = warning;
	SET ROLE mallory;
	SET default_tablespace = locked;
	CREATE TABLE evil.direct (k int);
});
like($err, qr/permission denied for tablespace locked/, 'mallory may not create in tablespace locked');
$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	SET ROLE mallory;
	SET default_tablespace = locked;
	SET cq.bulk_load = off;
	CALL cq.run('evil.agg');
});
is($node->safe_psql('postgres', q{SELECT count(*) = 50 AND sum(n) = 5000 FROM evil.agg}), 't',
	'batch 0 over history ran');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_class WHERE reltablespace = (SELECT oid FROM pg_tablespace WHERE spcname = 'locked')}),
	'0', 'nothing of pg_cq went to the tablespace mallory may not create in');
is($node->safe_psql('postgres', q{
	SELECT count(*) > 0 FROM pg_index WHERE indrelid = (SELECT state_table FROM cq.queries WHERE name = 'agg')}),
	't', 'the state table has its indexes');
is($node->safe_psql('postgres', q{SELECT count(*) FROM cq.offsets WHERE name = 'agg'}), '1',
	'one batch');

# 2. pg_cron: mallory schedules a run of victim's query and one of her own
$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	SET ROLE victim;
	CREATE TABLE app.src (k int);
	CREATE TABLE app.counts WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
	  AS SELECT k, count(*) AS n FROM app.src GROUP BY k WITH NO DATA;
	INSERT INTO app.src VALUES (1), (2);
});
$node->safe_psql('postgres', q{
	SET ROLE mallory;
	INSERT INTO evil.src VALUES (1, 1);
	SELECT cron.schedule('steal', '* * * * *', 'CALL cq.run(''app.counts'')');
	SELECT cron.schedule('own', '* * * * *', 'CALL cq.run(''evil.agg'')');
});
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 2 FROM (SELECT DISTINCT j.jobname FROM cron.job_run_details d JOIN cron.job j USING (jobid)
	                           WHERE d.status IN ('succeeded', 'failed')) x}),
	'pg_cron ran both jobs');
is($node->safe_psql('postgres', q{
	SELECT string_agg(DISTINCT j.jobname || ' ' || j.username || ' ' || d.status || coalesce(' ' || d.return_message, ''), E'\n')
	  FROM cron.job_run_details d JOIN cron.job j USING (jobid) WHERE d.status IN ('succeeded', 'failed')}),
	"own mallory succeeded CALL\nsteal mallory failed ERROR: must be owner of continuous query \"counts\"",
	'the job on the victim\'s query failed the ownership check, the own one ran');
is($node->safe_psql('postgres', q{SELECT count(*) FROM app.counts}), '0', 'the victim\'s query did not run');
is($node->safe_psql('postgres', q{SELECT count(*) FROM cq.offsets WHERE name = 'counts'}), '0',
	'no batch of it');
ok($node->poll_query_until('postgres', q{SELECT n = 101 FROM evil.agg WHERE k = 1}),
	'mallory\'s own job ran her query');
$node->safe_psql('postgres', q{SELECT cron.unschedule(jobid) FROM cron.job});

$node->stop;
done_testing();
