# Session 43's audit of pg_cq's newest surfaces, as an attacker and as a
# careful user: a database whose search_path (set for the database, so every
# session and every pg_cq process connecting to it gets it) puts a schema of
# a plain role before pg_catalog, with operators, functions, aggregates and
# domains shadowing pg_catalog's (CqTest::attacker_sql) and more for the
# newest objects: cq.xid48's comparisons and casts, pg_current_xact_id()
# and cq.current_xid48().  Through the role, which owns its queries:
#   - COPY into a tracked source (its default swapped for a Const while the
#     COPY runs, stamp.c; its rows meeting the BRIN index in the table's
#     access method, brin_heap.c), by the role and by a second role with
#     only INSERT, batches by CALL cq.run in the session, by a pool worker
#     and by a background worker (trigger '0');
#   - cq.alter_query's source argument, cq.reset (which now takes the
#     caller's pinned settings), cq.explain;
#   - pinned settings with extreme values (extra_float_digits -15, a text
#     search configuration of the role's schema, DateStyle SQL, DMY);
#   - cq.xid48's I/O, casts and comparisons, cq.current_xid48();
#   - a gated COPY whose backend is terminated (FATAL) in the middle: no
#     crash, no row counted.
# None of the attacker's objects may ever run (attacker.log stays empty),
# and every target equals its query run as a plain SELECT.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;
use CqCrash;
use Time::HiRes qw(usleep);

my $node = cq_node('hostile_new_surfaces', 'cq.naptime = 100');
$node->safe_psql('postgres', q{
	CREATE ROLE dbowner LOGIN;
	CREATE ROLE feeder LOGIN;
	CREATE DATABASE hostile OWNER dbowner;
});
$node->safe_psql('hostile', q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE SCHEMA attacker AUTHORIZATION dbowner;
	CREATE SCHEMA app AUTHORIZATION dbowner;
	GRANT USAGE ON SCHEMA app, attacker TO feeder;
});
$node->safe_psql('hostile', 'SET ROLE dbowner;' . attacker_sql('dbowner') . q{
	CREATE FUNCTION attacker.x48(a cq.xid48, b cq.xid48) RETURNS boolean LANGUAGE plpgsql AS
	  $$ BEGIN PERFORM attacker.note('=(cq.xid48)'); RETURN true; END $$;
	CREATE OPERATOR attacker.= (LEFTARG = cq.xid48, RIGHTARG = cq.xid48, FUNCTION = attacker.x48);
	CREATE FUNCTION attacker.x48x8(a cq.xid48, b xid8) RETURNS boolean LANGUAGE plpgsql AS
	  $$ BEGIN PERFORM attacker.note('>=(cq.xid48, xid8)'); RETURN true; END $$;
	CREATE OPERATOR attacker.>= (LEFTARG = cq.xid48, RIGHTARG = xid8, FUNCTION = attacker.x48x8);
	CREATE OPERATOR attacker.< (LEFTARG = cq.xid48, RIGHTARG = xid8, FUNCTION = attacker.x48x8);
	CREATE FUNCTION attacker.pg_current_xact_id() RETURNS xid8 LANGUAGE plpgsql AS
	  $$ BEGIN PERFORM attacker.note('pg_current_xact_id()'); RETURN '3'; END $$;
	CREATE FUNCTION attacker.current_xid48() RETURNS cq.xid48 LANGUAGE plpgsql AS
	  $$ BEGIN PERFORM attacker.note('current_xid48()'); RETURN '3'; END $$;
	CREATE FUNCTION attacker.xid48(xid8) RETURNS cq.xid48 LANGUAGE plpgsql AS
	  $$ BEGIN PERFORM attacker.note('xid48(xid8)'); RETURN '3'; END $$;
	CREATE FUNCTION attacker.xid_new(xid8, pg_snapshot, pg_snapshot) RETURNS boolean LANGUAGE plpgsql AS
	  $$ BEGIN PERFORM attacker.note('xid_new'); RETURN true; END $$;
	CREATE TEXT SEARCH CONFIGURATION attacker.cfg (COPY = pg_catalog.simple);
	ALTER DATABASE hostile SET search_path = attacker, pg_catalog;
});
is($node->safe_psql('hostile', 'SHOW search_path'), 'attacker, pg_catalog',
	'new sessions get the hostile search_path');

# the test's own polls, under a search_path of its own: its SQL (caught_up_sql's
# count(*) and =) is not pg_cq's, and would run the attacker's objects
sub poll_ok
{
	my ($sql) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		return 1 if $node->safe_psql('hostile', "SET search_path = pg_catalog, public; $sql") eq 't';
		usleep(100_000);
	}
	return 0;
}

sub log_says
{
	return $node->safe_psql('hostile', q{
		SET search_path = public, pg_catalog;
		SELECT coalesce(string_agg(DISTINCT who || ' ' || su || ' ' || what, ', '), 'nothing')
		FROM attacker.log});
}

# the role's queries, created under extreme pinned settings
my %q = (
	counts => q{SELECT k, pg_catalog.count(*) AS n, pg_catalog.sum(v) AS s FROM app.src GROUP BY k},
	texts => q{SELECT (v OPERATOR(pg_catalog./) 3.0::pg_catalog.float8)::pg_catalog.text AS f,
		pg_catalog.to_tsvector(t)::pg_catalog.text AS tv, pg_catalog.count(*) AS n FROM app.src GROUP BY 1, 2},
	rows => q{SELECT k, v, t FROM app.src},
);
my $settings = q{SET extra_float_digits = -15; SET DateStyle = 'SQL, DMY';
	SET default_text_search_config = 'attacker.cfg';};
$node->safe_psql('hostile', qq{
	SET client_min_messages = warning;
	SET ROLE dbowner;
	$settings
	CREATE TABLE app.src (k pg_catalog.int4, v pg_catalog.int4, t pg_catalog.text);
	GRANT INSERT ON app.src TO feeder;
	INSERT INTO app.src SELECT g OPERATOR(pg_catalog.%) 7, g, 'Word' OPERATOR(pg_catalog.||) (g OPERATOR(pg_catalog.%) 3)
	  FROM pg_catalog.generate_series(1, 500) g;
	SELECT cq.create_query('counts', \$q\$$q{counts}\$q\$, output_mode => 'update', "trigger" => 'available_now',
	  target => 'app.counts');
	SELECT cq.create_query('texts', \$q\$$q{texts}\$q\$, output_mode => 'update', "trigger" => 'available_now',
	  target => 'app.texts', state_storage => 'unlogged');
	SELECT cq.create_query('rows', \$q\$$q{rows}\$q\$, "trigger" => '0', target => 'app.rows');
});
like($node->safe_psql('hostile', q{SELECT cq.explain('app.texts')}),
	qr/extra_float_digits = '-15'.*default_text_search_config = 'attacker\.cfg'/s,
	'cq.explain shows the pinned extreme settings');

sub all_equal
{
	my $diff = join(" OPERATOR(pg_catalog.+) ", map { qq{(SELECT pg_catalog.count(*) FROM ((($q{$_}) EXCEPT ALL TABLE app.$_)
		UNION ALL (TABLE app.$_ EXCEPT ALL ($q{$_}))) x)} } sort keys %q);
	return $node->safe_psql('hostile', "SET ROLE dbowner; $settings SELECT $diff");
}
sub run_batches
{
	my ($how) = @_;
	$node->safe_psql('hostile', qq{SET ROLE dbowner; SET cq.run_in_worker = $how;
		CALL cq.run('app.counts'); CALL cq.run('app.texts');});
}

# COPY by the owner and by a role with only INSERT, the default swapped
my $copy_rows = join('', map { "$_\t$_\tcopied $_\n" } 1 .. 3000);
my ($rc, $out, $err) = $node->psql('hostile', "SET ROLE dbowner; COPY app.src (k, v, t) FROM STDIN;\n${copy_rows}\\.\n");
is($rc, 0, 'COPY by the owner') or diag($err);
($rc, $out, $err) = $node->psql('hostile', "SET ROLE feeder; COPY app.src (k, v, t) FROM STDIN;\n${copy_rows}\\.\n");
is($rc, 0, 'COPY by a role with INSERT only') or diag($err);
is($node->safe_psql('hostile', q{SET search_path = public, pg_catalog;
	SELECT count(DISTINCT cq_xid) FROM app.src WHERE t LIKE 'copied%'}), '2',
	'each COPY stamped its rows with its transaction id');
run_batches('off');
is(all_equal(), '0', 'batches in the session: targets equal their queries');

# a pool worker and a background worker
$node->safe_psql('hostile', q{SET ROLE feeder;
	INSERT INTO app.src SELECT g, g, 'fed' FROM pg_catalog.generate_series(1, 300) g});
run_batches('on');
ok(poll_ok(caught_up_sql('app.src', 'rows')), 'the background worker caught up');
is(all_equal(), '0', 'batches by a pool worker and a background worker: targets equal their queries');

# cq.alter_query's source argument, cq.reset, cq.xid48
($rc, $out, $err) = $node->psql('hostile', q{SET ROLE dbowner;
	SELECT cq.alter_query('app.counts', source => 'app.src', "trigger" => '1 hour')});
is($rc, 0, 'cq.alter_query with the stream as source') or diag($err);
($rc, $out, $err) = $node->psql('hostile', q{SET ROLE dbowner;
	CREATE TABLE attacker.src (k pg_catalog.int4);
	SELECT cq.alter_query('app.counts', source => 'attacker.src')});
like($err, qr/ERROR:  cannot change option "source" of continuous query "counts"/,
	'cq.alter_query refuses another table as source');
$node->safe_psql('hostile', qq{SET ROLE dbowner; $settings SELECT cq.reset('app.texts');});
run_batches('off');
is(all_equal(), '0', 'after cq.reset under the same settings: targets equal their queries');
is($node->safe_psql('hostile', q{SET ROLE dbowner;
	SELECT pg_catalog.format('%s %s %s %s', '77'::cq.xid48, ('77'::cq.xid48)::xid8,
	  '77'::cq.xid48 OPERATOR(cq.=) '77'::xid8, cq.current_xid48() IS NOT NULL)}),
	'77 77 t t', 'cq.xid48 I/O, casts, comparison and cq.current_xid48()');

# a COPY gated in the table's access method, its backend terminated in the middle:
# a CHECK constraint sleeps at row 2500 (after the COPY's first flushes)
$node->safe_psql('hostile', q{
	SET search_path = public, pg_catalog;
	CREATE FUNCTION app.slow(k int) RETURNS boolean LANGUAGE plpgsql
	  SET search_path = pg_catalog AS $$
	BEGIN
	  IF k = 900002500 THEN PERFORM pg_sleep(300); END IF;
	  RETURN true;
	END $$;
	ALTER TABLE app.src ADD CONSTRAINT slow CHECK (app.slow(k));
});
my $rows_before = $node->safe_psql('hostile', 'SELECT pg_catalog.count(*) FROM app.src');
my $copy_file = $node->basedir . '/cut.sql';
open(my $fh, '>', $copy_file) or die "$copy_file: $!";
print $fh "SET ROLE feeder;\nCOPY app.src (k, v, t) FROM STDIN;\n",
  map({ (900000000 + $_) . "\t1\tcut\n" } 1 .. 5000), "\\.\n";
close($fh);
my ($cout, $cerr) = ('', '');
my $copy = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('hostile'), '-f', $copy_file ],
	'>', \$cout, '2>', \$cerr);
ok(poll_ok(q{SELECT EXISTS (SELECT FROM pg_catalog.pg_stat_activity
	WHERE wait_event OPERATOR(pg_catalog.=) 'PgSleep' AND query OPERATOR(pg_catalog.~~) '%COPY app.src (k, v, t) FROM STDIN%')}),
	'the COPY waits at row 2500');
my $pid = $node->safe_psql('hostile', q{SELECT pid FROM pg_catalog.pg_stat_activity
	WHERE wait_event OPERATOR(pg_catalog.=) 'PgSleep' AND query OPERATOR(pg_catalog.~~) '%COPY app.src (k, v, t) FROM STDIN%'});
$node->safe_psql('hostile', "SELECT pg_catalog.pg_terminate_backend($pid)");
ok(poll_ok("SELECT NOT EXISTS (SELECT FROM pg_catalog.pg_stat_activity WHERE pid OPERATOR(pg_catalog.=) $pid)"),
	'the terminated backend is gone');
$copy->finish;
like($cerr, qr/terminating connection due to administrator command/, 'the COPY was ended by the termination');
no_crashes($node, 'when a gated COPY\'s backend was terminated');
$node->safe_psql('hostile', 'ALTER TABLE app.src DROP CONSTRAINT slow');
is($node->safe_psql('hostile', 'SELECT pg_catalog.count(*) FROM app.src'), $rows_before,
	'none of its rows is there');
($rc, $out, $err) = $node->psql('hostile', "SET ROLE feeder; COPY app.src (k, v, t) FROM STDIN;\n${copy_rows}\\.\n");
is($rc, 0, 'a COPY after it') or diag($err);
run_batches('off');
ok(poll_ok(caught_up_sql('app.src', 'rows')), 'the background worker caught up again');
is(all_equal(), '0', 'targets equal their queries after the terminated COPY');

# the new refusals, as the role on the hostile path
($rc, $out, $err) = $node->psql('hostile', q{SET ROLE dbowner;
	CREATE TABLE app.bad WITH (cq.output_mode = 'update') AS
	  SELECT k, pg_catalog.count(*) AS n FROM app.src GROUP BY k HAVING pg_catalog.random() OPERATOR(pg_catalog.<) 0.5});
like($err, qr/ERROR:  volatile functions in HAVING are not supported in continuous queries/,
	'a volatile HAVING is refused');
($rc, $out, $err) = $node->psql('hostile', q{SET ROLE dbowner;
	SELECT cq.create_query(NULL, 'SELECT k FROM app.src')});
like($err, qr/ERROR:  continuous query name must not be null/, 'a NULL name: 22004\'s message');

is(log_says(), 'nothing', 'none of the attacker\'s objects ran');
no_crashes($node, 'in the test');
$node->stop;
done_testing();
