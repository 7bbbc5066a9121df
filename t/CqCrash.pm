# t/CqCrash.pm -- a crashed server process never passes unnoticed.  Every
# test of t/ loads it (directly or through CqTest).
#
# A worker that segfaults is followed by a crash-restart (restart_after_crash
# = on), after which pg_cq rebuilds its state and a test's checks may well
# pass: the crash would be a hidden failure, and PostgreSQL::Test::Cluster
# deletes the data directory (and any core in it) of a test that passed.  So:
#   1. At load, the test's soft core-file limit is raised to its hard limit
#      (what pg_ctl -c does): servers the test starts inherit it, and a
#      crashed process leaves a core in its data directory when
#      kernel.core_pattern is a plain file name (under runuser the soft limit
#      is 0, so no core was ever written), with pg_cq's dynamic shared
#      memory in it.
#   2. At exit, before Cluster's END block stops and cleans the nodes, the
#      log of every node the test made is read; a server process terminated
#      by a signal other than SIGKILL (which tests send on purpose) fails the
#      test (exit status 1: prove reports it, the data directory is kept),
#      with the crashed process's last log lines and a backtrace of the core
#      (gdb), when there is one.  no_crashes() makes the same check a named
#      test; accept_crashes() accepts what a node logged so far (a test that
#      crashes a process on purpose).
package CqCrash;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqWatch;    # a hang says where; waits bounded in time
use Exporter 'import';

our @EXPORT = qw(crash_report no_crashes accept_crashes core_limit);

# log offset (bytes) up to which a node's crashes were reported or accepted
my %checked;

# the soft core-file limit of this process after the raise ('' if unknown;
# set at compile time, before the servers start)
my $core_limit;

BEGIN
{
	$core_limit = '';
	my $hard = `prlimit --pid $$ --core --raw --noheadings --output HARD 2>/dev/null`;
	if (defined $hard && $hard =~ /^\s*(\S+)\s*$/)
	{
		system('prlimit', '--pid', $$, "--core=$1:$1");
		$core_limit = `prlimit --pid $$ --core --raw --noheadings --output SOFT 2>/dev/null`;
		$core_limit =~ s/\s+//g;
	}
	# cores also hold file-backed shared mappings (bit 3), i.e. the dynamic
	# shared memory segments of pg_cq's store in /dev/shm; inherited by
	# the servers as the limit is
	if (open(my $f, '>', '/proc/self/coredump_filter'))
	{
		print $f "0x3b\n";
		close($f);
	}
}

sub core_limit
{
	return $core_limit;
}

# Text describing the crashes in $node's log after what was already
# reported or accepted ('' when there is none): each crash line, the last
# lines the crashed process logged, and the backtrace of a core in the data
# directory.
sub crash_report
{
	my ($node) = @_;
	my $file = $node->logfile;
	return '' unless -f $file;
	my $log = slurp_file($file);
	my $from = $checked{$node->name} // 0;
	my @lines = split(/\n/, substr($log, $from));
	my $report = '';
	for my $line (@lines)
	{
		next unless $line =~ /\(PID (\d+)\) was terminated by signal (\d+)/ && $2 != 9;
		my $pid = $1;
		my @own = grep { /\[$pid\]/ } @lines;
		splice(@own, 0, @own - 15) if @own > 15;
		$report .= "crash in the log of node " . $node->name . " ($file):\n  $line\n"
		  . "  last lines of PID $pid:\n" . join('', map { "    $_\n" } @own);
	}
	return '' if $report eq '';
	my @cores = glob($node->data_dir . '/core*');
	if (!@cores)
	{
		my $pattern = `cat /proc/sys/kernel/core_pattern 2>/dev/null` // '';
		chomp $pattern;
		$report .= "no core in " . $node->data_dir
		  . " (soft core limit of the test: '$core_limit'; kernel.core_pattern: '$pattern')\n";
	}
	for my $core (@cores)
	{
		my $postgres = $node->installed_command('postgres');
		if ($postgres !~ m{/})
		{
			($postgres) = grep { -x "$_/postgres" } split(/:/, $ENV{PATH});
			$postgres = defined $postgres ? "$postgres/postgres" : 'postgres';
		}
		my $bt = `timeout 120 gdb -batch -q -ex 'bt 40' '$postgres' '$core' 2>/dev/null`;
		$report .= "core $core, backtrace (gdb):\n" . ($bt // '(gdb not run)');
	}
	return $report;
}

# A test: no server process of $node crashed since the last check.
sub no_crashes
{
	my ($node, $what) = @_;
	my $report = crash_report($node);
	accept_crashes($node);
	ok($report eq '', "no server process crashed $what") or diag($report);
}

# Accept the crashes $node logged so far.
sub accept_crashes
{
	my ($node) = @_;
	$checked{$node->name} = -s $node->logfile // 0;
}

END
{
	my $exit_code = $?;
	for my $node (@PostgreSQL::Test::Cluster::all_nodes)
	{
		my $report = crash_report($node);
		next if $report eq '';
		diag("a server process crashed (the data directory is kept):\n$report");
		$exit_code ||= 1;
	}
	$? = $exit_code;
}

1;
