# Trigger '0' batches coalesce under a stream of commits (issue 12 goal 3,
# cq.coalesce_max_delay / cq.coalesce_factor): after a batch that took D the
# next one starts no earlier than its end + min(max_delay, factor x D).
#   - a stream of commits is folded in fewer batches than commits, every row
#     exactly once, although the fallback poll (cq.naptime) comes every
#     100 ms;
#   - a lone commit after idle runs at once (no hold);
#   - a batch cut short by cq.max_rows_per_trigger is followed at once;
#   - cq.status shows a query the worker holds for its next batch idle;
#   - cq.coalesce_max_delay = 0 is the old behaviour: one batch per commit
#     when commits are further apart than a batch takes.
# D is the batch's CPU time in the worker.  A statement trigger on the
# targets does a fixed amount of work (200,000 turns of a loop: about 12 ms of
# CPU here), so that every batch that writes rows takes that CPU time however
# busy the machine and, with factor 1000, the hold is cq.coalesce_max_delay
# (3 s): the counts below hold on a slow machine too.  (It spun for 30 ms of
# the clock before: a few ms of CPU or less on a loaded machine, and the
# hold shrank with it.)  Times the test compares are measured on the server
# (cq.progress), not by the test's polls.
# Every wait polls with a deadline.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use CqTest;

my $node = coalesce_node('coalesce', 'cq.coalesce_max_delay = 3000');

$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	CREATE FUNCTION slow_batch() RETURNS trigger LANGUAGE plpgsql
	  AS $$ DECLARE x bigint := 0;
	        BEGIN FOR i IN 1 .. 200000 LOOP x := x + i; END LOOP; RETURN NULL; END $$;
	CREATE TRIGGER slow AFTER INSERT ON out FOR EACH STATEMENT EXECUTE FUNCTION slow_batch();
	CREATE TABLE src2 (id bigint);
	CREATE TABLE out2 WITH (cq.output_mode = 'append', cq.max_rows_per_trigger = 5)
	  AS SELECT id FROM src2;
	CREATE TRIGGER slow AFTER INSERT ON out2 FOR EACH STATEMENT EXECUTE FUNCTION slow_batch();
});

my $next_id = 1;

# n single-row commits, gap_ms apart, from one session; returns the
# seconds it took
sub stream
{
	my ($n, $gap_ms) = @_;
	my $first = $next_id;
	$next_id += $n;
	return stream_commits($node, $first, $n, $gap_ms);
}

my $exact = coalesce_exact_sql();

# batches of out that read rows, after batch $after
sub batches_since
{
	my ($after) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM cq.progress WHERE name = 'out' AND batch_id > $after AND num_input_rows > 0");
}

sub last_batch
{
	my ($name) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(max(batch_id), -1) FROM cq.progress WHERE name = '$name'");
}

# no batch for more than the hold: the query is idle
sub wait_idle
{
	my ($name) = @_;
	wait_batch_idle($node, $name, 3500);
}

# seconds from $sql (which returns its clock_timestamp(): a commit, a
# resume) until the end of the last batch of query $name that read rows
# once $cond holds, both as the server saw them (cq.progress).  Not the
# test's own clock: its polls, a new psql each, took 0.7-1.8 s to see a
# row the batch had written 30-70 ms after its commit on a loaded machine.
sub arrival_s
{
	my ($name, $sql, $cond) = @_;
	my $after = last_batch($name);
	my $t0 = $node->safe_psql('postgres', $sql);
	ok($node->poll_query_until('postgres', $cond), "arrived: $cond");
	return $node->safe_psql('postgres', qq{
		SELECT extract(epoch FROM max(started_at + duration_ms * interval '1 ms') - '$t0'::timestamptz)
		  FROM cq.progress WHERE name = '$name' AND batch_id > $after AND num_input_rows > 0});
}

# --- batch 0 (coalesce_node waited for it) and idle
wait_idle('out');

# --- a lone commit after idle: at once, not after the 3 s hold
my $lone = arrival_s('out', "INSERT INTO src VALUES (" . $next_id++ . ") RETURNING clock_timestamp()", $exact);
cmp_ok($lone, '<', 2, "a lone commit after idle arrives without the hold ("
	  . sprintf('%.3f', $lone) . " s)");

# --- a stream: 30 commits 100 ms apart (3 s) with a 3 s hold after each batch
my $b0 = last_batch('out');
my $secs = stream(30, 100);
ok($node->poll_query_until('postgres', $exact), 'stream: every row exactly once');
my $nb = batches_since($b0);
# one batch at once, then one per 3 s hold while commits keep coming
my $most = int($secs / 3) + 2;
note(sprintf('stream of 30 commits in %.1f s with the hold: %d batches', $secs, $nb));
cmp_ok($nb, '<=', $most, "30 commits in at most $most batches ($nb), despite the 100 ms poll");
cmp_ok($nb, '<', 15, 'fewer batches than half the commits');
is($node->safe_psql('postgres', q{SELECT count(*) FROM cq.queries WHERE state = 'active'}), '2',
	'both queries active');

# --- a row limit: the backlog's batches follow each other at once
wait_idle('out2');
my $b2 = last_batch('out2');
# 40 commits while paused (a row limit does not split a transaction)
$node->safe_psql('postgres', "SELECT cq.pause('out2')");
$node->safe_psql('postgres', "INSERT INTO src2 VALUES ($_)") for (1 .. 40);
my $limit_s = arrival_s('out2', "SELECT clock_timestamp() FROM (SELECT cq.resume('out2')) r",
	"SELECT count(*) = 40 AND count(DISTINCT id) = 40 FROM out2");
is($node->safe_psql('postgres',
	"SELECT count(*) FROM cq.progress WHERE name = 'out2' AND batch_id > $b2 AND num_input_rows > 0"),
	'8', '40 rows in 8 batches of 5');
cmp_ok($limit_s, '<', 10, "the 8 batches follow each other without the hold ("
	  . sprintf('%.3f', $limit_s) . " s; with it at least 21 s)");

# --- cq.status during the hold (session 28): once a batch is over, the worker
# holding the query for its next batch shows it idle ("Waiting for data to
# arrive", is_trigger_active false, no worker_pid), as the scheduler does
# between visits; the row committed during the batch arrives after the hold.
# The batch waits at a gate (an advisory lock the test holds) in a row trigger
# on its target (not a statement trigger: the empty INSERTs of the polls would
# wait there too), then does the fixed work: a hold of 3 s.  Without the 100 ms
# fallback poll here, whose due queries would end the worker's visit (the
# scheduler then holds the query, and always showed it idle).
$node->safe_psql('postgres', 'ALTER SYSTEM SET cq.naptime = 60000');
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
ok($node->poll_query_until('postgres', "SELECT current_setting('cq.naptime') = '1min'"), 'naptime 1 min');
$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	CREATE FUNCTION gated_batch() RETURNS trigger LANGUAGE plpgsql
	  AS $$ DECLARE x bigint := 0;
	        BEGIN PERFORM pg_advisory_xact_lock_shared(4242);
	              FOR i IN 1 .. 200000 LOOP x := x + i; END LOOP; RETURN NULL; END $$;
	CREATE TABLE src3 (id bigint);
	CREATE TABLE out3 WITH (cq.output_mode = 'append') AS SELECT id FROM src3;
	CREATE TRIGGER gated AFTER INSERT ON out3 FOR EACH ROW EXECUTE FUNCTION gated_batch();
});
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM cq.progress WHERE name = 'out3'"),
	'first batch of out3');
wait_idle('out3');
my $gate = $node->background_psql('postgres');
$gate->query_safe('SELECT pg_advisory_lock(4242)');
my $b3 = last_batch('out3');
$node->safe_psql('postgres', 'INSERT INTO src3 VALUES (1)');
ok($node->poll_query_until('postgres', q{SELECT message = 'Processing new data' AND is_trigger_active
	AND worker_pid IS NOT NULL FROM cq.status WHERE name = 'out3'}), 'the batch runs, held at the gate');
$node->safe_psql('postgres', 'INSERT INTO src3 VALUES (2)');
$gate->query_safe('SELECT pg_advisory_unlock(4242)');
# what cq.status and the target show as soon as the batch is over, watched
# from one session every 10 ms: a poll by a new psql each time came seconds
# after the batch's end on a loaded machine, after the hold (and found the
# second row read)
my $seen = $node->safe_psql('postgres', qq{
	CREATE FUNCTION hold_seen() RETURNS text LANGUAGE plpgsql AS \$\$
	DECLARE
	  deadline timestamptz := clock_timestamp() + interval '$PostgreSQL::Test::Utils::timeout_default seconds';
	BEGIN
	  WHILE NOT (SELECT last_batch_id > $b3 AND NOT is_trigger_active FROM cq.status WHERE name = 'out3') LOOP
	    IF clock_timestamp() > deadline THEN RETURN 'the batch did not end'; END IF;
	    PERFORM pg_sleep(0.01);
	  END LOOP;
	  RETURN (SELECT message || ', ' || is_trigger_active || ', ' || (worker_pid IS NULL)
	                 || ', ' || (SELECT count(*) FROM out3) FROM cq.status WHERE name = 'out3');
	END \$\$;
	SELECT hold_seen();});
is($seen, 'Waiting for data to arrive, false, true, 1', 'in the hold: idle in cq.status, the second row not read yet');
ok($node->poll_query_until('postgres', 'SELECT count(*) = 2 FROM out3'), 'the second row arrives after the hold');
$gate->quit;
$node->safe_psql('postgres', 'ALTER SYSTEM RESET cq.naptime');
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');

# --- cq.coalesce_max_delay = 0: one batch per commit as before (out's
# batches without the trigger's work now: on a loaded machine it would make
# them longer than the 200 ms between the commits)
$node->safe_psql('postgres', 'DROP TRIGGER slow ON out');
$node->safe_psql('postgres', 'ALTER SYSTEM SET cq.coalesce_max_delay = 0');
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
ok($node->poll_query_until('postgres', "SELECT current_setting('cq.coalesce_max_delay') = '0'"),
	'reloaded');
wait_idle('out');
$b0 = last_batch('out');
$secs = stream(20, 200);
note(sprintf('stream of 20 commits in %.1f s', $secs));
ok($node->poll_query_until('postgres', $exact), 'stream without hold: every row exactly once');
$nb = batches_since($b0);
note("stream of 20 commits without the hold: $nb batches");
cmp_ok($nb, '>=', 12, "20 commits 200 ms apart in at least 12 batches ($nb)");

$node->stop;
done_testing();
