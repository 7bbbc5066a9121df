# t/CqTest.pm -- helpers shared by the crash and soak tests (t/004-006):
# a node set up for pg_cq, writer procedures, background writers, the
# "caught up" condition and the oracle comparison; ending background
# writers (end_writers) and killing a server process with the wait for the
# crash-restart (kill_and_restart); and the setup of the trigger '0'
# coalescing tests (t/042, t/072).  Every wait polls with a deadline
# (PG_TEST_TIMEOUT_DEFAULT seconds, 180 by default, of wall-clock time: see
# t/CqWatch.pm for poll_query_until).
# It loads CqCrash (a crashed server process fails the test) and exports
# its functions.
package CqTest;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Config;
use Time::HiRes qw(usleep time);
use CqCrash;
use Exporter 'import';

our @EXPORT = qw(cq_node wait_accepting kill_and_restart writers_sql start_writer stop_writers end_writers caught_up_sql
  wait_caught_up mismatches crash_restart all_modes_sql @ALL_MODES check_all_modes gate_target
  attacker_sql coalesce_node coalesce_exact_sql wait_batch_idle stream_commits inval_flood
  crash_report no_crashes accept_crashes core_limit);

# A started node with pg_cq preloaded and crash-restart on.
sub cq_node
{
	my ($name, @conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', join("\n",
		"shared_preload_libraries = 'pg_cq'",
		'max_worker_processes = 20',
		'cq.naptime = 1000',
		'cq.max_workers = 4',
		'restart_after_crash = on',
		@conf) . "\n");
	$node->start;
	return $node;
}

# SQL for the source ev and the writer procedure:
#   ev (id, w, k, ts, v, late): id from a sequence; ts = clock_timestamp()
#   at insert, so a row is late (for the 10 s+ delays of all_modes_sql)
#   only if its transaction stays open for 10 s after inserting it; with
#   synthetic => true, ts = 2024-01-01 + id * 1 ms instead (for a single
#   sequential writer: many event-time windows in little real time).  Late
#   rows (late = true) carry ts in 2023, always far behind the watermark
#   once the first batch set one.
#   CALL cq_write(w, n, max_batch, rollback_pct, late_pct [, synthetic]):
#   n transactions of 1..max_batch rows; rollback_pct of them roll back;
#   late_pct of them are one late row.  pg_sleep between transactions makes
#   a writer exit promptly when the postmaster dies; a row in cq_stop ends
#   every writer.
sub writers_sql
{
	return q{
		CREATE SEQUENCE ev_id;
		CREATE TABLE ev (id bigint, w int, k int, ts timestamptz, v numeric, late boolean DEFAULT false);
		CREATE TABLE cq_stop (stop boolean);
		CREATE PROCEDURE cq_write(wr int, n int, max_batch int, rollback_pct int, late_pct int,
		                          synthetic boolean DEFAULT false)
		LANGUAGE plpgsql AS $$
		DECLARE
		  rows int;
		BEGIN
		  FOR i IN 1 .. n LOOP
		    EXIT WHEN EXISTS (SELECT 1 FROM cq_stop);
		    IF random() * 100 < late_pct THEN
		      INSERT INTO ev (id, w, k, ts, v, late)
		      SELECT s, wr, s % 5, '2023-01-01'::timestamptz + s * interval '1 second', s % 97, true
		        FROM (SELECT nextval('ev_id') AS s) x;
		    ELSE
		      rows := 1 + floor(random() * max_batch)::int;
		      INSERT INTO ev (id, w, k, ts, v)
		      SELECT s, wr, s % 5,
		             CASE WHEN synthetic THEN '2024-01-01'::timestamptz + s * interval '1 millisecond'
		                  ELSE clock_timestamp() END,
		             (s % 1000) / 7.0
		        FROM (SELECT nextval('ev_id') AS s FROM generate_series(1, rows)) x;
		    END IF;
		    IF random() * 100 < rollback_pct THEN ROLLBACK; ELSE COMMIT; END IF;
		    PERFORM pg_sleep(0.001 + random() * 0.004);
		  END LOOP;
		END $$;
	};
}

# Queries over ev in every output mode, with triggers '0' and '1 second',
# unlogged and logged state, tumbling and sliding windows with watermarks.
# Windowed update/append queries drop late rows (late = true, always far
# behind the watermark); nothing else is ever late.
our @ALL_MODES = qw(u_zero u_tick u_logged c_zero c_tick a_zero a_tick uw_zero r_zero);

sub all_modes_sql
{
	return q{
		CREATE TABLE u_zero WITH (cq.output_mode = 'update')
		  AS SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a FROM ev GROUP BY k;
		CREATE TABLE u_tick WITH (cq.output_mode = 'update', cq.trigger = '1 second')
		  AS SELECT w, k, count(*) AS n, sum(v) AS s, min(ts) AS first, max(ts) AS last FROM ev GROUP BY w, k;
		CREATE TABLE u_logged WITH (cq.output_mode = 'update', cq.state_storage = 'logged')
		  AS SELECT k, count(*) AS n, sum(v) AS s, var_samp(v) AS var FROM ev GROUP BY k;
		CREATE TABLE c_zero WITH (cq.output_mode = 'complete')
		  AS SELECT k, max(v) AS m, count(*) AS n FROM ev GROUP BY k;
		CREATE TABLE c_tick WITH (cq.output_mode = 'complete', cq.trigger = '1 second', cq.complete_refresh = 'delete')
		  AS SELECT date_trunc('minute', ts) AS minute, count(*) AS n, sum(v) AS s FROM ev GROUP BY 1;
		CREATE TABLE a_zero WITH (cq.output_mode = 'append', cq.event_time = 'ts', cq.watermark = '10 seconds')
		  AS SELECT w.window_start, w.window_end, count(*) AS n, sum(v) AS s
		       FROM ev, LATERAL cq.window(ts, '1 second') AS w GROUP BY 1, 2;
		CREATE TABLE a_tick WITH (cq.output_mode = 'append', cq.trigger = '1 second', cq.event_time = 'ts', cq.watermark = '12 seconds')
		  AS SELECT date_bin('2 seconds', ts, '2024-01-01') AS bucket, k, count(*) AS n, max(v) AS m
		       FROM ev GROUP BY 1, 2;
		CREATE TABLE uw_zero WITH (cq.output_mode = 'update', cq.event_time = 'ts', cq.watermark = '10 seconds')
		  AS SELECT w.window_start, w.window_end, k, count(*) AS n, sum(v) AS s
		       FROM ev, LATERAL cq.window(ts, '2 seconds', '1 second') AS w GROUP BY 1, 2, 3;
		CREATE TABLE r_zero WITH (cq.output_mode = 'append')
		  AS SELECT id, w, k, v FROM ev WHERE NOT late;
	};
}

# Every target of all_modes_sql against its plain-SELECT oracle; append
# targets hold exactly the windows closed by the last watermark, none twice.
sub check_all_modes
{
	my ($node, $db, $what) = @_;
	my %wm;
	for my $q (qw(a_zero a_tick))
	{
		$wm{$q} = $node->safe_psql($db,
			"SELECT watermark FROM cq.offsets WHERE name = '$q' ORDER BY batch_id DESC LIMIT 1");
	}
	my %oracle = (
		u_zero => 'SELECT k, count(*), sum(v), avg(v) FROM ev GROUP BY k',
		u_tick => 'SELECT w, k, count(*), sum(v), min(ts), max(ts) FROM ev GROUP BY w, k',
		u_logged => 'SELECT k, count(*), sum(v), var_samp(v) FROM ev GROUP BY k',
		c_zero => 'SELECT k, max(v), count(*) FROM ev GROUP BY k',
		c_tick => "SELECT date_trunc('minute', ts), count(*), sum(v) FROM ev GROUP BY 1",
		a_zero => "SELECT w.window_start, w.window_end, count(*), sum(v)
		             FROM ev, LATERAL cq.window(ts, '1 second') AS w WHERE NOT late
		            GROUP BY 1, 2 HAVING w.window_end <= '$wm{a_zero}'",
		a_tick => "SELECT date_bin('2 seconds', ts, '2024-01-01'), k, count(*), max(v)
		             FROM ev WHERE NOT late GROUP BY 1, 2
		           HAVING date_bin('2 seconds', ts, '2024-01-01') + interval '2 seconds' <= '$wm{a_tick}'",
		uw_zero => "SELECT w.window_start, w.window_end, k, count(*), sum(v)
		              FROM ev, LATERAL cq.window(ts, '2 seconds', '1 second') AS w WHERE NOT late GROUP BY 1, 2, 3",
		r_zero => 'SELECT id, w, k, v FROM ev WHERE NOT late');
	for my $q (@ALL_MODES)
	{
		is(mismatches($node, $db, $oracle{$q}, $q), '0', "$q equals its oracle $what");
	}
	is($node->safe_psql($db, q{
		SELECT (SELECT count(*) = count(DISTINCT window_start) AND count(*) > 0 FROM a_zero)
		   AND (SELECT count(*) = count(DISTINCT (bucket, k)) AND count(*) > 0 FROM a_tick)
		   AND (SELECT count(*) = count(DISTINCT id) FROM r_zero)}),
		't', "append targets: closed windows emitted, none twice $what");
}

# Make every row written to table $target wait (pg_sleep, wait event
# PgSleep) until `UPDATE gate SET open = true`: a batch stopped in the
# middle of writing its target, after its state was merged.
sub gate_target
{
	my ($node, $db, $target) = @_;
	$node->safe_psql($db, qq{
	  CREATE TABLE gate (open boolean);
	  INSERT INTO gate VALUES (false);
	  CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS \$\$
	  BEGIN
	    WHILE NOT (SELECT open FROM public.gate) LOOP PERFORM pg_catalog.pg_sleep(0.05); END LOOP;
	    RETURN NEW;
	  END \$\$;
	  CREATE TRIGGER slow BEFORE INSERT OR UPDATE ON $target FOR EACH ROW EXECUTE FUNCTION slow();
	});
}

# Start `CALL cq_write(...)` in a background psql; returns the harness.
# Its session's application_name is cq_writer (end_writers finds it so).
sub start_writer
{
	my ($node, $db, $call) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $node->connstr($db) . ' application_name=cq_writer', '-c', $call ],
		'>', \$out, '2>', \$err);
	return $h;
}

# Stop background writers' psql clients (they may already have died with
# the server).  A psql that is signalled leaves its backend running the
# CALL: on a running node, end_writers is what ends the writers.
sub stop_writers
{
	for my $h (@_)
	{
		$h->signal('TERM') if $h->pumpable;
		eval { $h->finish; };
		$h->kill_kill if $h->pumpable;
	}
}

# End the background writers of a running node: their psql clients
# (stop_writers), then their backends, which go on with their CALL after
# the client is gone.  A writer the test asked to stop (a row in cq_stop)
# gets up to 5 s to end its loop; then what is left of them is terminated
# (its open transaction rolls back), until none is left or the deadline
# (PG_TEST_TIMEOUT_DEFAULT).  Returns true when no writer's backend is
# left: from then on, no row of theirs is committed.
sub end_writers
{
	my ($node, $db, @h) = @_;
	my $writers = q{FROM pg_stat_activity WHERE application_name = 'cq_writer' AND pid <> pg_backend_pid()};
	my $t0 = time();
	my $deadline = $t0 + $PostgreSQL::Test::Utils::timeout_default;

	stop_writers(@h);
	while (time() < $deadline)
	{
		return 1 if $node->safe_psql($db, "SELECT count(*) $writers") eq '0';
		$node->safe_psql($db, "SELECT pg_terminate_backend(pid) $writers") if time() > $t0 + 5;
		usleep(100_000);
	}
	diag('writers still running: ' . $node->safe_psql($db, "SELECT string_agg(pid || ' ' || query, '; ') $writers"));
	return 0;
}

# True when every listed query has processed every row committed so far:
# no source row is invisible in the end offset of its last batch (rows
# below the offset's xmin are all visible or rolled back), and a query with
# a watermark has also run the no-data batch for its last watermark.
sub caught_up_sql
{
	my ($source, @names) = @_;
	my $list = join(', ', map { "'$_'" } @names);
	return qq{
		SELECT count(*) = } . scalar(@names) . qq{ FROM cq.queries q,
		  LATERAL (SELECT * FROM cq.offsets o WHERE o.name = q.name ORDER BY batch_id DESC LIMIT 1) o
		 WHERE q.name IN ($list) AND q.state = 'active'
		   AND NOT EXISTS (SELECT 1 FROM $source s
		                    WHERE s.cq_xid >= pg_snapshot_xmin(o.end_offset)
		                      AND NOT pg_visible_in_snapshot(s.cq_xid, o.end_offset))
		   AND (q.watermark_delay IS NULL OR q.output_mode = 'complete'
		        OR o.batch_watermark IS NOT DISTINCT FROM o.watermark)};
}

sub wait_caught_up
{
	my ($node, $db, $source, $what, @names) = @_;
	ok($node->poll_query_until($db, caught_up_sql($source, @names)),
		"queries caught up $what");
}

# Rows that differ between an oracle query and a target, both ways.
sub mismatches
{
	my ($node, $db, $oracle, $target) = @_;
	return $node->safe_psql($db,
		"SELECT count(*) FROM (($oracle EXCEPT ALL TABLE $target) UNION ALL (TABLE $target EXCEPT ALL $oracle)) x");
}

# kill -9 of the postmaster, then start it again once its children are gone
# (they exit when they notice the postmaster's death; a new postmaster
# refuses to start while they still hold the old shared memory).  Waits for
# the processes pg_stat_activity listed just before the kill, then retries
# the start, both with a deadline.  Returns true once the node runs again.
sub crash_restart
{
	my ($node, $db) = @_;
	my @pids = split(/\n/, $node->safe_psql($db, 'SELECT pid FROM pg_stat_activity'));
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;

	$node->kill9;
	while (time() < $deadline && grep { kill(0, $_) } @pids)
	{
		usleep(50_000);
	}
	while (time() < $deadline)
	{
		$node->{_pid} = undef;    # the killed postmaster's pid file is stale
		return 1 if $node->start(fail_ok => 1);
		usleep(200_000);
	}
	return 0;
}


# wait, with a deadline, until the node accepts connections again after a
# crash-restart.  poll_query_until is not used for this: it writes its
# query to psql's stdin, and a psql that gives up at once (the server still
# in recovery) may close that pipe first, which IPC::Run reports as a fatal
# "Broken pipe"; here that error only means another try.  Returns true once
# a connection to $db answers.
sub wait_accepting
{
	my ($node, $db) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;

	while (time() < $deadline)
	{
		my ($ret, $out) = (1, '');
		eval { ($ret, $out) = $node->psql($db, 'SELECT 1'); };
		return 1 if !$@ && $ret == 0 && $out eq '1';
		usleep(100_000);
	}
	return 0;
}


# Send $signal (a name: KILL, SEGV, ...) to server process $pid, whose
# death makes the postmaster crash-restart, and wait, with a deadline,
# until the node serves again.  wait_accepting alone could return before
# the restart began (a connection served before the postmaster reaped the
# process): first the postmaster's log line for the death is awaited --
# it is written as the restart begins, and from then on connections are
# refused until the restart is over.  Returns true once $db answers after
# the restart.
sub kill_and_restart
{
	my ($node, $db, $pid, $signal) = @_;
	$signal //= 'KILL';
	my %num;
	@num{ split(' ', $Config{sig_name}) } = split(' ', $Config{sig_num});
	my $offset = -s $node->logfile;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;

	return 0 unless defined $num{$signal} && $pid =~ /^\d+$/ && kill($signal, $pid);
	while (!$node->log_contains(qr/\(PID $pid\) was terminated by signal $num{$signal}\b/, $offset))
	{
		if (time() >= $deadline)
		{
			diag("the postmaster did not log the end of process $pid (signal $signal)");
			return 0;
		}
		usleep(50_000);
	}
	return wait_accepting($node, $db);
}


# SQL (run as $role, who owns the schema attacker) for objects of schema
# attacker that shadow pg_catalog's operators, functions, aggregates and
# types under search_path = attacker, pg_catalog; each notes in
# attacker.log who ran it and whether as a superuser (and then makes $role
# a superuser): with the path set for a database or role, a check that
# attacker.log stays empty shows none of them ever ran (t/011, t/055).
sub attacker_sql
{
	my ($role) = @_;
	my $sql = q{
	CREATE TABLE attacker.log (who name, su boolean, what text);
	GRANT INSERT ON attacker.log TO PUBLIC;
	CREATE FUNCTION attacker.note(what text) RETURNS boolean
	LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
	DECLARE
	  su boolean := (SELECT rolsuper FROM pg_roles WHERE rolname OPERATOR(pg_catalog.=) current_user);
	BEGIN
	  INSERT INTO attacker.log VALUES (current_user, su, what);
	  IF su THEN
	    EXECUTE 'ALTER ROLE ROLE_NAME SUPERUSER';
	  END IF;
	  RETURN true;
	END $$;
	DO $do$
	DECLARE
	  r record;
	  f text;
	BEGIN
	  FOR r IN SELECT * FROM (VALUES ('=', 'text'), ('<>', 'text'), ('=', 'name'),
	      ('=', 'regclass'), ('=', 'regrole'), ('=', 'oid'), ('=', 'integer'),
	      ('=', 'bigint'), ('<=', 'bigint'), ('>=', 'bigint'), ('<', 'bigint'), ('>', 'bigint'),
	      ('=', 'xid'), ('=', 'xid8'), ('<', 'xid8'), ('>=', 'xid8'), ('=', 'uuid'),
	      ('=', 'timestamptz'), ('>', 'timestamptz')) AS v(op, typ)
	  LOOP
	    f := 'op_' || md5(r.op || r.typ);
	    EXECUTE format('CREATE FUNCTION attacker.%I(a %s, b %s) RETURNS boolean '
	                   'LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS %L',
	                   f, r.typ, r.typ,
	                   format('BEGIN PERFORM attacker.note(%L); RETURN a OPERATOR(pg_catalog.%s) b; END',
	                          r.op || '(' || r.typ || ')', r.op));
	    EXECUTE format('CREATE OPERATOR attacker.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = attacker.%I)',
	                   r.op, r.typ, r.typ, f);
	  END LOOP;
	END $do$;
	CREATE FUNCTION attacker.now() RETURNS timestamptz LANGUAGE plpgsql AS
	  $$ BEGIN PERFORM attacker.note('now()'); RETURN pg_catalog.now(); END $$;
	CREATE FUNCTION attacker.gen_random_uuid() RETURNS uuid LANGUAGE plpgsql AS
	  $$ BEGIN PERFORM attacker.note('gen_random_uuid()'); RETURN pg_catalog.gen_random_uuid(); END $$;
	CREATE FUNCTION attacker.pg_current_snapshot() RETURNS pg_snapshot LANGUAGE plpgsql AS
	  $$ BEGIN PERFORM attacker.note('pg_current_snapshot()'); RETURN pg_catalog.pg_current_snapshot(); END $$;
	CREATE FUNCTION attacker.max_sfunc(bigint, bigint) RETURNS bigint LANGUAGE plpgsql AS
	  $$ BEGIN PERFORM attacker.note('max(bigint)'); RETURN pg_catalog.greatest($1, $2); END $$;
	CREATE AGGREGATE attacker.max(bigint) (sfunc = attacker.max_sfunc, stype = bigint);
	CREATE FUNCTION attacker.count_sfunc(bigint) RETURNS bigint LANGUAGE plpgsql AS
	  $$ BEGIN PERFORM attacker.note('count(*)'); RETURN $1 + 1; END $$;
	CREATE AGGREGATE attacker.count(*) (sfunc = attacker.count_sfunc, stype = bigint, initcond = '0');
	CREATE DOMAIN attacker.text AS pg_catalog.text CHECK (attacker.note('::text'));
	CREATE DOMAIN attacker.oid AS pg_catalog.oid CHECK (attacker.note('::oid'));
	CREATE DOMAIN attacker.regclass AS pg_catalog.regclass CHECK (attacker.note('::regclass'));
	CREATE DOMAIN attacker.pg_snapshot AS pg_catalog.pg_snapshot CHECK (attacker.note('::pg_snapshot'));
	CREATE DOMAIN attacker.uuid AS pg_catalog.uuid CHECK (attacker.note('::uuid'));
	CREATE DOMAIN attacker.jsonb AS pg_catalog.jsonb CHECK (attacker.note('::jsonb'));
	};
	$sql =~ s/ROLE_NAME/$role/g;
	return $sql;
}

# The setup of the trigger '0' coalescing tests (t/042_coalesce.pl,
# t/072_coalesce_cap.pl): a node (cq_node) whose fallback poll comes every
# 100 ms, with two workers and cq.coalesce_factor = 1000 (every batch that
# reads rows is held for the cap, whatever its CPU time), then @conf; pg_cq,
# the source src (id bigint) and its append query out (trigger '0').
# Returns the node once out's first batch has run.
sub coalesce_node
{
	my ($name, @conf) = @_;
	my $node = cq_node($name, 'max_worker_processes = 16', 'cq.naptime = 100', 'cq.max_workers = 2',
		'cq.coalesce_factor = 1000', @conf);
	$node->safe_psql('postgres', q{
		SET client_min_messages = warning;
		CREATE EXTENSION pg_cq;
		CREATE TABLE src (id bigint);
		CREATE TABLE out WITH (cq.output_mode = 'append') AS SELECT id FROM src;
	});
	ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM cq.progress WHERE name = 'out'"),
		'first batch of out');
	return $node;
}

# SQL: every row of src is in out exactly once
sub coalesce_exact_sql
{
	return q{SELECT (SELECT count(*) FROM out) = (SELECT count(*) FROM src)
	            AND (SELECT count(DISTINCT id) FROM out) = (SELECT count(*) FROM src)
	            AND NOT EXISTS (SELECT id FROM src EXCEPT SELECT id FROM out)};
}

# Wait until query $name has run no batch for $ms milliseconds (longer
# than its hold: its next batch runs at once).
sub wait_batch_idle
{
	my ($node, $name, $ms) = @_;
	ok($node->poll_query_until('postgres',
		"SELECT coalesce(max(started_at + duration_ms * interval '1 ms'), '-infinity') < now() - interval '$ms ms' "
		  . "FROM cq.progress WHERE name = '$name'"), "$name idle for longer than $ms ms");
}

# $n single-row commits into src, ids $first .. $first + $n - 1, $gap_ms
# apart, from one session; returns the seconds they took.
sub stream_commits
{
	my ($node, $first, $n, $gap_ms) = @_;
	my $t0 = time;
	$node->safe_psql('postgres', qq{
		DO \$\$ BEGIN
		  FOR i IN $first .. $first + $n - 1 LOOP
		    INSERT INTO src VALUES (i);
		    COMMIT;
		    PERFORM pg_sleep($gap_ms / 1000.0);
		  END LOOP;
		END \$\$});
	return time - $t0;
}

# About 20,000 shared invalidation messages (five times the queue) into
# $node: a temporary table created and dropped 400 times, one transaction
# each, 10 ms apart, so that an idle process asked to catch up (at 2,048
# messages behind) has some 400 ms to do so before the queue would overrun
# it (at 4,096) (t/107, t/109).
sub inval_flood
{
	my ($node) = @_;
	$node->safe_psql('postgres', q{
	  SET client_min_messages = warning;
	  DO $$ BEGIN
	    FOR i IN 1 .. 400 LOOP
	      CREATE TEMP TABLE flood (a int, b int, c int);
	      DROP TABLE flood;
	      COMMIT;
	      PERFORM pg_sleep(0.01);
	    END LOOP;
	  END $$});
}

1;
