# Randomized differential test (SPEC.md section 2's invariant): random
# continuous queries of many shapes (t/CqFuzz.pm: aggregates of every kind
# with FILTER, DISTINCT, HAVING, no GROUP BY; keys and values with NULLs,
# NaNs of both signs, +-Infinity, -0, numerics of mixed scale, intervals
# equal under = but printed differently, a case-insensitive collation;
# windows of cq.window, date_bin, date_trunc and the event-time column with
# watermarks in append, update and complete mode, late rows; session
# windows; stream-static joins; set-returning functions; SELECT DISTINCT
# and DISTINCT ON; state in the shared-memory store, unlogged or logged
# tables; row limits) over one source, fed by random transactions, some
# rolled back, some kept open across batches and committed out of order
# (their transaction id taken before rows of later transactions commit).
# Every query runs with CALL cq.run after each round, and its target must
# then equal its oracle: the query as a plain SELECT over the rows its
# batches read (from cq.offsets' snapshots), minus the rows each batch
# dropped as late by the watermark it recorded (append mode: the windows
# closed by the last batch's watermark).  Also: no row is read by two
# batches, every committed row is read, and a query's last watermark is the
# largest event time it read minus the delay.  Once per run the node stops
# in immediate mode between rounds (unlogged state and the shared-memory
# store are lost and rebuilt).  The node's settings are drawn too:
# cq.state_memory (64kB: stores move to the table path mid-run), cq.work_mem,
# cq.state_image_batches, cq.merge_max_groups, cq.bulk_load,
# cq.run_in_worker.
#
# Knobs: CQ_FUZZ_SEED (default 62; 'random' draws one; the seed is printed
# and reproduces the queries and rows), CQ_FUZZ_QUERIES (default 12),
# CQ_FUZZ_ROUNDS (default 8), CQ_FUZZ_RUNS (seeds seed, seed + 1, ...;
# default 1), CQ_FUZZ_CONF (settings that override the drawn ones).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;
use CqFuzz;

my $seed0 = $ENV{CQ_FUZZ_SEED} // 62;
$seed0 = int(rand(1 << 30)) if $seed0 eq 'random';
my $nq = $ENV{CQ_FUZZ_QUERIES} // 12;
my $rounds = $ENV{CQ_FUZZ_ROUNDS} // 8;
my $runs = $ENV{CQ_FUZZ_RUNS} // 1;
my $db = 'postgres';

for my $run (0 .. $runs - 1)
{
	fuzz_run($seed0 + $run);
}
done_testing();

sub fuzz_run
{
	my ($seed) = @_;
	srand($seed);
	diag("CQ_FUZZ_SEED=$seed");
	my %conf = (
		'cq.state_memory' => fz_pick('128MB', '64kB', '64kB', '256kB'),
		'cq.work_mem' => fz_pick('4MB', '64kB'),
		'cq.state_image_batches' => fz_pick(0, 1, 3),
		'cq.merge_max_groups' => fz_pick(1000, 0, 5),
		'cq.bulk_load' => fz_pick('on', 'off'),
		'cq.run_in_worker' => fz_pick('on', 'off'));
	# CQ_FUZZ_CONF="cq.state_memory=64kB cq.work_mem=64kB" overrides the draws
	for (split(/\s+/, $ENV{CQ_FUZZ_CONF} // ''))
	{
		my ($k, $v) = split(/=/, $_, 2);
		$conf{$k} = $v;
	}
	my $node = cq_node("fuzz_$seed", "timezone = 'UTC'", map { "$_ = '$conf{$_}'" } sort keys %conf);
	note('settings: ' . join(', ', map { "$_ = $conf{$_}" } sort keys %conf));
	my $ci = $node->safe_psql($db, q{SELECT count(*) > 0 FROM pg_collation WHERE collprovider = 'i'}) eq 't';
	$node->safe_psql($db, "SET client_min_messages = warning; CREATE EXTENSION pg_cq;\n" . fz_setup_sql($ci));

	my %state = (next_id => 1, base => 1_800_000_000, spread => 120);
	# history: rows before any query (no stamp; batch 0 reads them)
	$node->safe_psql($db, fz_rows_sql(\%state, int(rand(30))));

	my @kinds = qw(agg agg agg win win win session dedup stateless);
	my @queries = map { fz_gen_query("q$_", @kinds) } 1 .. $nq;
	my $late_start = int($rounds / 3);
	my @live;
	my %broken;
	my $create = sub {
		my ($q) = @_;
		my $opts = join('', map { ", $_ => $q->{opts}{$_}" } sort keys %{ $q->{opts} });
		my ($ret, $out, $err) = $node->psql($db,
			"SELECT cq.create_query('$q->{name}', \$fzq\$$q->{sql}\$fzq\$, \"trigger\" => 'available_now'$opts)");
		if ($ret != 0)
		{
			fail("$q->{name} created");
			diag("$q->{name}: $q->{sql}\n  options:$opts\n  $err");
			$broken{ $q->{name} } = 1;
			return;
		}
		$q->{optstr} = $opts;
		note("$q->{name}: $q->{sql}; options:$opts");
		push @live, $q;
	};
	$create->($_) for @queries[ 0 .. $nq / 2 - 1 ];
	# queries created later read the rows so far in batch 0, or start at the end
	for my $q (@queries[ $nq / 2 .. $nq - 1 ])
	{
		next if rand() > 0.2;
		$q->{opts}{starting} = "'latest'";
		$q->{latest} = 1;
	}

	my @open;    # transactions kept open across rounds (background psql)
	my $restart_round = 1 + int(rand($rounds - 1));
	my $reset_round = 1 + int(rand($rounds - 1));
	for my $round (1 .. $rounds)
	{
		$state{base} += rand(40);
		# a transaction that takes its id now, inserts now or later, commits later
		if (@open < 3 && rand() < 0.35)
		{
			push @open, bg_open($node, rand() < 0.5 ? fz_rows_sql(\%state, 1 + int(rand(8))) : '');
		}
		for (1 .. 1 + int(rand(3)))
		{
			my $rows = fz_rows_sql(\%state, int(rand() < 0.05 ? 400 : rand(rand() < 0.2 ? 120 : 25)));
			next if $rows eq '';
			$node->safe_psql($db, "BEGIN;\n$rows" . (rand() < 0.15 ? "ROLLBACK;\n" : "COMMIT;\n"));
		}
		if (@open && rand() < 0.4)
		{
			fz_send($open[ int(rand(@open)) ], fz_rows_sql(\%state, 1 + int(rand(6))));
		}
		if (@open && rand() < 0.5)
		{
			my $i = int(rand(@open));
			bg_end($open[$i], rand() < 0.2 ? 'ROLLBACK' : 'COMMIT');
			splice(@open, $i, 1);
		}
		if ($round == $late_start)
		{
			$create->($_) for @queries[ $nq / 2 .. $nq - 1 ];
		}
		if ($round == $restart_round)
		{
			bg_end($_, 'COMMIT') for @open;
			@open = ();
			note("round $round: immediate stop and start");
			$node->stop('immediate');
			$node->start;
		}
		if ($round == $reset_round)
		{
			# cq.reset: offsets, state and target start over (from starting)
			my $q = $live[ int(rand(@live)) ];
			note("round $round: cq.reset('$q->{name}')");
			$node->safe_psql($db, "SELECT cq.reset('$q->{name}');
			  DELETE FROM fz_read WHERE name = '$q->{name}'; DELETE FROM fz_batch WHERE name = '$q->{name}'");
		}
		run_and_check($node, $_, \%broken, "after round $round") for @live;
	}
	bg_end($_, 'COMMIT') for @open;
	run_and_check($node, $_, \%broken, 'at the end') for @live;
	for my $q (@live)
	{
		next if $broken{ $q->{name} };
		is($node->safe_psql($db, fz_unread_sql($q->{name})), '0', "$q->{name}: every committed row was read")
		  if !$q->{latest};
		is($node->safe_psql($db, fz_wm_check_sql($q)), 't', "$q->{name}: watermark = max event time read - delay")
		  if $q->{delay} && $q->{mode} ne 'complete';
	}
	my $summary = $node->safe_psql($db, q{
		SELECT format('%s rows, %s batches, paths: %s', (SELECT count(*) FROM fz), (SELECT count(*) FROM fz_batch),
		              (SELECT string_agg(p || ' ' || n, ', ') FROM (SELECT state_path AS p, count(*) AS n FROM cq.status
		                GROUP BY 1 ORDER BY 1) s))});
	note("seed $seed: $summary");
	ok(!%broken, "seed $seed: no query diverged") or diag('diverged: ' . join(' ', sort keys %broken));
	$node->stop;
}

# Run query $q's batches, record them, compare its target with the oracle.
sub run_and_check
{
	my ($node, $q, $broken, $when) = @_;
	my $name = $q->{name};
	my ($ret, $out, $err) = $node->psql($db, "CALL cq.run('$name')");
	if ($ret != 0)
	{
		return if $broken->{$name}++;
		fail("$name: cq.run $when");
		diag("$name: $q->{sql}\n  options:$q->{optstr}\n  $err");
		return;
	}
	# one psql: record the batches, then compare
	my ($rec, $diff) = split(/\n/, $node->safe_psql($db,
		fz_record_sql($name, 'cq.offsets', $q->{latest}) . ";\n" . fz_diff_sql($q)));
	my ($nb, $gap, $twice) = split(/\|/, $rec);
	return if $broken->{$name};
	if ($gap != 0 || $twice != 0 || $diff ne '0')
	{
		$broken->{$name} = 1;
		fail("$name equals its oracle $when");
		diag("$name: $q->{sql}\n  options:$q->{optstr}\n  $nb new batches, $gap missing, $twice rows read twice, $diff rows differ\n"
			  . fz_report($node, $db, $q));
	}
}

# A transaction in a background psql: BEGIN, take its id, run $sql.
sub bg_open
{
	my ($node, $sql) = @_;
	my $b = fz_session($node, $db);
	fz_send($b, "BEGIN;\nSELECT pg_current_xact_id() IS NULL;\n$sql");
	return $b;
}

# End background transaction $b with $how (COMMIT or ROLLBACK).
sub bg_end
{
	my ($b, $how) = @_;
	fz_send($b, "$how;");
	fz_close($b);
}
