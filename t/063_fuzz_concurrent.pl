# Randomized differential test under concurrency (SPEC.md sections 2 and 6):
# the random queries of t/CqFuzz.pm run in the background (trigger '0',
# workers) while three writer sessions interleave transactions: each takes
# its transaction id, inserts rows over several steps while the others
# commit, then commits or rolls back, so transactions commit out of order
# while batches run; now and then a worker is terminated mid-batch, and
# once the node stops in immediate mode (open transactions are lost) and
# starts again.  At checkpoints every query is paused, and each target must
# equal its oracle: the query as a plain SELECT over the rows its batches
# read, minus the rows each batch dropped as late (t/CqFuzz.pm; a trigger
# on cq.offsets copies every batch, since cq.offsets keeps only the last
# 100); then they resume.  At the end every committed row has been read by
# each query exactly once.
#
# Knobs: CQ_FUZZ_SEED (default 63; 'random' draws one; printed; it
# reproduces the queries and rows, not the timing), CQ_FUZZ_QUERIES
# (default 8), CQ_FUZZ_SECONDS (default 25: seconds of writing),
# CQ_FUZZ_CHECKS (default 3: checkpoints during the writing).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use CqTest;
use CqFuzz;

my $seed = $ENV{CQ_FUZZ_SEED} // 63;
$seed = int(rand(1 << 30)) if $seed eq 'random';
my $nq = $ENV{CQ_FUZZ_QUERIES} // 8;
my $seconds = $ENV{CQ_FUZZ_SECONDS} // 25;
my $checks = $ENV{CQ_FUZZ_CHECKS} // 3;
my $db = 'postgres';
srand($seed);
diag("CQ_FUZZ_SEED=$seed");

my %conf = (
	'cq.state_memory' => fz_pick('128MB', '64kB', '64kB'),
	'cq.state_image_batches' => fz_pick(0, 2),
	'cq.merge_max_groups' => fz_pick(1000, 0));
my $node = cq_node('fuzz_concurrent', "timezone = 'UTC'", 'cq.naptime = 500',
	map { "$_ = '$conf{$_}'" } sort keys %conf);
note('settings: ' . join(', ', map { "$_ = $conf{$_}" } sort keys %conf));
my $ci = $node->safe_psql($db, q{SELECT count(*) > 0 FROM pg_collation WHERE collprovider = 'i'}) eq 't';
$node->safe_psql($db, "SET client_min_messages = warning; CREATE EXTENSION pg_cq;\n" . fz_setup_sql($ci) . q{
	-- every batch, in its own transaction (cq.offsets keeps the last 100)
	CREATE TABLE fz_offlog AS SELECT name, batch_id, start_offset, end_offset, batch_watermark, watermark
	  FROM cq.offsets WITH NO DATA;
	CREATE FUNCTION fz_offlog() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
	  INSERT INTO public.fz_offlog VALUES (NEW.name, NEW.batch_id, NEW.start_offset, NEW.end_offset,
	                                       NEW.batch_watermark, NEW.watermark);
	  RETURN NULL;
	END $$;
	CREATE TRIGGER fz_offlog AFTER INSERT ON cq.offsets FOR EACH ROW EXECUTE FUNCTION fz_offlog();
});

my %state = (next_id => 1, base => 1_800_000_000, spread => 60);
my @queries = map { fz_gen_query("q$_", qw(agg agg agg win win win session dedup stateless)) } 1 .. $nq;
my %broken;
my @live;
for my $q (@queries)
{
	my $opts = join('', map { ", $_ => $q->{opts}{$_}" } sort keys %{ $q->{opts} });
	$q->{optstr} = $opts;
	my ($ret, $out, $err) = $node->psql($db, "SELECT cq.create_query('$q->{name}', \$fzq\$$q->{sql}\$fzq\$$opts)");
	if ($ret != 0)
	{
		fail("$q->{name} created");
		diag("$q->{name}: $q->{sql}\n  options:$opts\n  $err");
		next;
	}
	note("$q->{name}: $q->{sql}; options:$opts");
	push @live, $q;
}
my @names = map { $_->{name} } @live;
my $list = join(', ', map { "'$_'" } @names);

# three writer sessions: each step continues one of them
my @w = map { fz_session($node, $db) } 1 .. 3;
my $t0 = time();
my $crash_at = $t0 + $seconds * (0.3 + rand(0.4));
my $crashed = 0;
my @check_at = map { $t0 + $seconds * $_ / ($checks + 1) } 1 .. $checks;
my $next_kill = $t0 + 3 + rand(5);
my ($steps, $commits, $rollbacks) = (0, 0, 0);
while (time() < $t0 + $seconds)
{
	$state{base} += rand(0.4);
	my $s = $w[ int(rand(@w)) ];
	if (!$s->{open})
	{
		fz_send($s, "BEGIN;\nSELECT pg_current_xact_id() IS NULL;\n"
			  . (rand() < 0.5 ? fz_rows_sql(\%state, 1 + int(rand(10))) : ''));
		$s->{open} = 1;
	}
	elsif (rand() < 0.4)
	{
		fz_send($s, fz_rows_sql(\%state, 1 + int(rand(10))));
	}
	else
	{
		my $rb = rand() < 0.15;
		fz_send($s, $rb ? 'ROLLBACK;' : 'COMMIT;');
		$rb ? $rollbacks++ : $commits++;
		$s->{open} = 0;
	}
	$steps++;
	usleep(1000 + int(rand(5000)));
	if (time() >= $next_kill)
	{
		$node->safe_psql($db, q{SELECT count(pg_terminate_backend(pid)) FROM (SELECT pid FROM pg_stat_activity
		                         WHERE backend_type = 'pg_cq worker' ORDER BY random() LIMIT 1) x});
		$next_kill = time() + 3 + rand(5);
	}
	if (!$crashed && time() >= $crash_at)
	{
		note('immediate stop and start (open transactions are lost)');
		$node->stop('immediate');
		fz_close($_) for @w;
		$node->start;
		@w = map { fz_session($node, $db) } 1 .. 3;
		$crashed = 1;
	}
	if (@check_at && time() >= $check_at[0])
	{
		shift @check_at;
		checkpoint(sprintf('at %.0f s', time() - $t0));
	}
}
for my $s (@w)
{
	fz_send($s, 'COMMIT;') if $s->{open};
	fz_close($s);
}
note("writers: $steps steps, $commits commits, $rollbacks rollbacks");

# the queries catch up: every committed row in an offset, the no-data batch run
wait_caught_up($node, $db, 'fz', 'after the writers', @names);
checkpoint('at the end');
for my $q (@live)
{
	next if $broken{ $q->{name} };
	is($node->safe_psql($db, fz_unread_sql($q->{name})), '0', "$q->{name}: every committed row was read");
	is($node->safe_psql($db, fz_wm_check_sql($q)), 't', "$q->{name}: watermark = max event time read - delay")
	  if $q->{delay} && $q->{mode} ne 'complete';
}
is($node->safe_psql($db, "SELECT string_agg(name || ': ' || last_error, '; ') FROM cq.queries WHERE state <> 'active'"),
	'', 'every query is active');
note($node->safe_psql($db, q{
	SELECT format('%s rows, %s batches, paths: %s', (SELECT count(*) FROM fz), (SELECT count(*) FROM fz_batch),
	              (SELECT string_agg(p || ' ' || n, ', ') FROM (SELECT state_path AS p, count(*) AS n FROM cq.status
	                GROUP BY 1 ORDER BY 1) s))}));
ok(!%broken, "seed $seed: no query diverged") or diag('diverged: ' . join(' ', sort keys %broken));
$node->stop;
done_testing();

# Pause every query (a running batch commits first), record the batches
# and compare each target with its oracle, resume.
sub checkpoint
{
	my ($when) = @_;
	$node->safe_psql($db, "SELECT cq.pause(name) FROM cq.queries WHERE name IN ($list)");
	for my $q (@live)
	{
		my $name = $q->{name};
		my ($nb, $gap, $twice) = split(/\|/, $node->safe_psql($db, fz_record_sql($name, 'fz_offlog')));
		next if $broken{$name};
		my $diff = $node->safe_psql($db, fz_diff_sql($q));
		my $state = $node->safe_psql($db, "SELECT state || ' ' || coalesce(last_error, '') FROM cq.queries WHERE name = '$name'");
		if ($gap != 0 || $twice != 0 || $diff ne '0' || $state !~ /^paused/)
		{
			$broken{$name} = 1;
			fail("$name equals its oracle $when");
			diag("$name: $q->{sql}\n  options:$q->{optstr}\n  state $state; $nb new batches, $gap missing, $twice rows read twice, $diff rows differ\n"
				  . fz_report($node, $db, $q));
		}
	}
	pass("checkpoint $when");
	$node->safe_psql($db, "SELECT cq.resume(name) FROM cq.queries WHERE name IN ($list)");
}
