# Session 40 review: the worker of a trigger '0' query reads its new rows in
# C (delta_scan.c) while three writers commit and roll back and the test
# changes the source under it, round after round: VACUUM FULL, CLUSTER,
# REINDEX CONCURRENTLY of the BRIN index on cq_xid, a second BRIN index
# made concurrently and the first dropped concurrently, columns added and
# dropped (and a table rewrite), TOAST settings, BRIN summarization,
# ANALYZE.  After each round the test's own rows (w >= 10) are folded
# exactly once; after the writers stop, the target equals the GROUP BY;
# the batches kept reading in C; no batch failed, no writer failed,
# nothing crashed.  Last, a query of a role without rights whose plan the
# workers build: its immutable function runs as its owner, never as the
# workers' superuser.
# First, deterministically: an INSERT into the source while CREATE INDEX
# CONCURRENTLY of a BRIN index on cq_xid waits with the new index not yet
# ready (its file empty) succeeds: pg_cq's INSERT path (brin_insert.c) read
# that index's metapage at ExecutorStart, and every INSERT into the table
# failed with 'could not read block 0' until the build (found by this test's
# writers, which died of it).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use CqTest;

my $db = 'postgres';
my $node = cq_node('review_delta_scan_ddl', 'cq.delta_scan_in_c = on', 'log_min_messages = debug1');
$node->safe_psql($db, writers_sql() . q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE live WITH (cq.output_mode = 'update')
	  AS SELECT w, k, date_bin('1 minute', ts, '2000-01-01') AS m, count(*) AS n, sum(v) AS s, max(v) AS hi
	       FROM ev WHERE NOT late GROUP BY 1, 2, 3;
	CREATE INDEX ev_k ON ev (k);
});
my $oracle = q{SELECT w, k, date_bin('1 minute', ts, '2000-01-01'), count(*), sum(v), max(v)
	FROM ev WHERE NOT late GROUP BY 1, 2, 3};
my $oracle_own = q{SELECT w, k, date_bin('1 minute', ts, '2000-01-01'), count(*), sum(v), max(v)
	FROM ev WHERE NOT late AND w >= 10 GROUP BY 1, 2, 3};
like($node->safe_psql($db, q{SELECT cq.explain('live')}),
	qr/read in C \(cq\.delta_scan_in_c\)/, 'cq.explain: its batches read the new rows in C');

# a transaction that holds its lock on ev until the table gate2 has a row:
# CREATE INDEX CONCURRENTLY waits for it with its index not yet ready
$node->safe_psql($db, 'CREATE TABLE gate2 (open boolean)');
my ($a_out, $a_err, $c_out, $c_err) = ('', '', '', '');
my $holder = IPC::Run::start(
	[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db), '-c', q{
		BEGIN;
		INSERT INTO ev (id, w, k, ts, v) VALUES (nextval('ev_id'), 10, 1, clock_timestamp(), 1);
		DO $$ BEGIN WHILE NOT EXISTS (SELECT 1 FROM gate2) LOOP PERFORM pg_sleep(0.02); END LOOP; END $$;
		COMMIT;} ],
	'>', \$a_out, '2>', \$a_err);
ok($node->poll_query_until($db, q{SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE '%gate2%' AND backend_xid IS NOT NULL}),
	'a transaction holds its lock on the source');
my $cic = IPC::Run::start(
	[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db), '-c',
	  'CREATE INDEX CONCURRENTLY ev_brin_cic ON ev USING brin (cq_xid)' ],
	'>', \$c_out, '2>', \$c_err);
ok($node->poll_query_until($db, q{SELECT EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = 'ev_brin_cic'::regclass AND NOT indisready)
	AND EXISTS (SELECT 1 FROM pg_stat_activity WHERE query LIKE 'CREATE INDEX CONCURRENTLY%' AND wait_event_type = 'Lock')}),
	'CREATE INDEX CONCURRENTLY waits, its index not ready');
my ($rc, $out, $err) = $node->psql($db, q{INSERT INTO ev (id, w, k, ts, v)
	SELECT nextval('ev_id'), 10, g % 3, clock_timestamp(), g FROM generate_series(1, 20) g});
is($rc, 0, 'an INSERT into the source while the index is not ready succeeds');
is($err, '', 'no error from the INSERT');
($rc, $out, $err) = $node->psql($db, q{INSERT INTO ev (id, w, k, ts, v) VALUES (nextval('ev_id'), 10, 2, clock_timestamp(), 5)});
is($rc, 0, 'a single-row INSERT too');
$node->safe_psql($db, 'INSERT INTO gate2 VALUES (true)');
$holder->finish;
$cic->finish;
is($a_err . $c_err, '', 'the holder committed, CREATE INDEX CONCURRENTLY finished');
is($node->safe_psql($db, q{SELECT indisvalid AND indisready FROM pg_index WHERE indexrelid = 'ev_brin_cic'::regclass}), 't',
	'the new index is valid');
$node->safe_psql($db, 'DROP INDEX ev_brin_cic');

sub brin_index
{
	return $node->safe_psql($db, q{SELECT i.indexrelid::regclass FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE i.indrelid = 'ev'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'brin')
		ORDER BY i.indexrelid LIMIT 1});
}

my @ddl = (
	'VACUUM FULL ev',
	'CLUSTER ev USING ev_k',
	sub { 'REINDEX INDEX CONCURRENTLY ' . brin_index() },
	'ALTER TABLE ev ADD COLUMN extra1 int DEFAULT 1',
	'ALTER TABLE ev ADD COLUMN extra2 text; ALTER TABLE ev DROP COLUMN extra1',
	'ALTER TABLE ev ALTER COLUMN extra2 TYPE varchar(20)',
	"ALTER TABLE ev SET (toast_tuple_target = 256, fillfactor = 70)",
	sub {
		my $old = brin_index();
		$node->safe_psql($db, 'CREATE INDEX CONCURRENTLY ev_brin2 ON ev USING brin (cq_xid)');
		return "DROP INDEX CONCURRENTLY $old";
	},
	"SELECT brin_summarize_new_values('ev_brin2')",
	'ANALYZE ev',
	'VACUUM ev',
	'VACUUM FULL ev');
my @writers = map { start_writer($node, $db, "CALL cq_write($_, 100000, 40, 20, 0)") } (1, 2, 3);
my $round = 0;
for my $step (@ddl)
{
	$round++;
	# the test's own rows, committed before and after the change
	$node->safe_psql($db, qq{INSERT INTO ev (id, w, k, ts, v)
		SELECT nextval('ev_id'), 10, g % 3, clock_timestamp(), g FROM generate_series(1, 40) g});
	my $sql = ref $step ? $step->() : $step;
	$node->safe_psql($db, $sql);
	$node->safe_psql($db, qq{
		BEGIN;
		INSERT INTO ev (id, w, k, ts, v) SELECT nextval('ev_id'), 11, g % 3, clock_timestamp(), g FROM generate_series(1, 30) g;
		SAVEPOINT a;
		INSERT INTO ev (id, w, k, ts, v) SELECT nextval('ev_id'), 12, g % 3, clock_timestamp(), g FROM generate_series(1, 30) g;
		ROLLBACK TO SAVEPOINT a;
		COMMIT;
	});
	wait_caught_up($node, $db, 'ev', "after round $round ($sql)", 'live');
	is($node->safe_psql($db, qq{SELECT count(*) FROM
		(($oracle_own EXCEPT ALL SELECT * FROM live WHERE w >= 10)
		 UNION ALL (SELECT * FROM live WHERE w >= 10 EXCEPT ALL $oracle_own)) x}),
		'0', "round $round ($sql): the test's rows folded once");
}
$node->safe_psql($db, 'INSERT INTO cq_stop VALUES (true)');
stop_writers(@writers);
wait_caught_up($node, $db, 'ev', 'after the writers', 'live');
is(mismatches($node, $db, $oracle, 'live'), '0', 'every committed row folded once');
is($node->safe_psql($db, q{SELECT count(*) FILTER (WHERE w = 12) = 0 AND count(*) FILTER (WHERE w BETWEEN 1 AND 3) > 0 FROM ev}),
	't', 'the source: the rolled-back subtransactions absent, the writers present');
is($node->safe_psql($db, q{SELECT state FROM cq.queries WHERE name = 'live'}), 'active', 'the query is active');
# A query of a role without rights, run by the workers (as the bootstrap
# superuser, who build its plan cache entry): the immutable function of
# constants in its key, which the planner runs, runs as the owner (it ran
# as the superuser: the owner's code with the superuser's rights).  Every
# call is kept (a worker may build its plan, and call the function, as soon
# as the query exists, before anything of the test's could mark the audit);
# the rows written by a process other than the test's own session show
# that a worker ran it.
$node->safe_psql($db, q{
	SET client_min_messages = warning;
	CREATE ROLE regress_low;
	GRANT CREATE, USAGE ON SCHEMA public TO regress_low;
	CREATE TABLE audit (who text, super boolean, pid int);
	CREATE TABLE audit_client AS SELECT pg_backend_pid() AS pid;
	GRANT INSERT ON audit TO regress_low;
	SET ROLE regress_low;
	CREATE FUNCTION public.note_user() RETURNS int LANGUAGE plpgsql VOLATILE AS $$
	BEGIN
	  INSERT INTO public.audit SELECT current_user, rolsuper, pg_catalog.pg_backend_pid()
	    FROM pg_catalog.pg_roles WHERE rolname = current_user;
	  RETURN 0;
	END $$;
	CREATE FUNCTION public.const_of(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN i + public.note_user(); END $$;
	CREATE TABLE low_src (k int);
	CREATE TABLE low_q WITH (cq.output_mode = 'update') AS
	  SELECT k + public.const_of(10) AS b, count(*) AS n FROM low_src GROUP BY 1;
	RESET ROLE;
	INSERT INTO low_src SELECT g % 3 FROM generate_series(1, 30) g;
});
wait_caught_up($node, $db, 'low_src', 'for the query of a role without rights', 'low_q');
is($node->safe_psql($db, q{SELECT count(*) FILTER (WHERE pid <> (SELECT pid FROM audit_client)) > 0
	AND count(*) FILTER (WHERE super OR who <> 'regress_low') = 0 FROM audit}), 't',
	"the owner's function ran in a worker, as the owner only")
	or diag($node->safe_psql($db, 'SELECT DISTINCT who, super, pid FROM audit'));
is(mismatches($node, $db, 'SELECT k + 10, count(*) FROM low_src GROUP BY 1', 'low_q'), '0', 'its rows folded once');

my $log = slurp_file($node->logfile);
my @in_c = ($log =~ /new rows of "ev" read in C/g);
ok(@in_c >= scalar(@ddl), 'the worker read the new rows in C (' . scalar(@in_c) . ' batches)');
my @failed = ($log =~ /(ERROR: .*(?:continuous query|pg_cq).*)/g);
is(scalar(@failed), 0, 'no batch failed') or diag(join("\n", @failed[0 .. ($#failed < 4 ? $#failed : 4)]));
my @unread = ($log =~ /(ERROR: .*could not read block.*)/g);
is(scalar(@unread), 0, 'no writer failed reading an index') or diag($unread[0]);
ok($log !~ /PANIC|server process .* was terminated/, 'no crash');

done_testing();
