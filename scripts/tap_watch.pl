#!/usr/bin/perl
# scripts/tap_watch.pl FILE -- run one Perl TAP file of t/ with a time limit;
# scripts/test.sh has prove run every file through it (prove --exec).
#
# The file runs as `perl -MCqWatch FILE` (t/CqWatch.pm; PERL5LIB gives
# PostgreSQL::Test) in a process group of its own; its TAP output goes
# straight to prove.  When it runs past its limit:
#   1. SIGTERM to the file's perl: CqWatch prints the Perl stack (the test
#      line and call that hung) and exits through the END blocks, which
#      stop the nodes the file started;
#   2. after a grace of CQ_TAP_GRACE seconds (default 60), SIGKILL to the
#      whole process group (psql clients and all);
#   3. every node of the file still running (a postmaster.pid under
#      $TESTDIR/tmp_check/t_<file>_*_data) is stopped: pg_ctl stop -m
#      immediate, else SIGKILL of its postmaster and its children;
# so the next file starts on a clean machine, and the file fails with a
# line naming it and its limit.  The same when tap_watch itself gets
# SIGINT, SIGTERM or SIGHUP (^C of make test).
# The limit: CQ_TAP_FILE_TIMEOUT seconds (default 600), cut to what is
# left until CQ_TAP_DEADLINE (seconds since the epoch, set by test.sh
# from CQ_TAP_BUDGET): a file that would start after the deadline is not
# run -- it bails out, which stops prove, so that a hung suite still ends
# with its summary inside CI's time.
use strict;
use warnings;
use File::Basename qw(basename dirname);
use File::Spec;
use POSIX qw(:sys_wait_h setpgid);
use Time::HiRes qw(usleep time);

my $file = shift @ARGV or die "usage: tap_watch.pl FILE\n";
my $limit = $ENV{CQ_TAP_FILE_TIMEOUT} || 600;
my $grace = $ENV{CQ_TAP_GRACE} || 60;
my $t0 = time();
if ($ENV{CQ_TAP_DEADLINE})
{
	my $left = $ENV{CQ_TAP_DEADLINE} - $t0;
	if ($left < 30)
	{
		print "Bail out! the Perl TAP suite ran out of its time (CQ_TAP_BUDGET) before $file\n";
		exit 1;
	}
	$limit = $left if $left < $limit;
}

# t/CqWatch.pm, wherever the file is (t/ or t/citus/)
my $tdir = File::Spec->rel2abs(dirname(__FILE__) . '/../t');
my $pid = fork() // die "fork: $!";
if ($pid == 0)
{
	setpgid(0, 0) or die "setpgid: $!";
	exec($^X, "-I$tdir", '-MCqWatch', $file) or die "exec $^X: $!";
}
setpgid($pid, $pid);    # also from here: no race with the kill below

my $name = basename($file);
$name =~ s/\.[^.]+$//;
# interrupted (^C, a CI runner's TERM): the file is in a process group of
# its own, so the signal did not reach it; it is stopped as on a timeout
# (and the tee that took its output may be gone: a warning must not kill it)
$SIG{PIPE} = 'IGNORE';
for my $sig (qw(INT TERM HUP))
{
	$SIG{$sig} = sub { stop_file("tap_watch got SIG$sig"); };
}

my $status = wait_for($pid, $t0 + $limit);
exit(exit_code($status)) if defined $status;
stop_file(sprintf('%s timed out after %d s (limit %d s)', $file, time() - $t0, $limit));

# stop the file (SIGTERM, then SIGKILL to its group) and its nodes; exit 1
sub stop_file
{
	my ($why) = @_;
	$SIG{$_} = 'IGNORE' for qw(INT TERM HUP);
	warn "# tap_watch: $why; stopping it\n";
	kill('TERM', $pid);
	my $status = wait_for($pid, time() + $grace);
	if (!defined $status)
	{
		warn "# tap_watch: $file did not exit within ${grace} s of SIGTERM: SIGKILL to its process group\n";
		kill('KILL', -$pid);
		wait_for($pid, time() + 30);
	}
	kill('KILL', -$pid);    # its psql clients and the like, if any are left
	stop_nodes($name);
	exit(1);
}

# the status of $pid once it exited, or undef at $deadline
sub wait_for
{
	my ($pid, $deadline) = @_;
	for (;;)
	{
		my $r = waitpid($pid, WNOHANG);
		return $? if $r == $pid;
		return 0 if $r < 0;    # not our child any more (cannot happen)
		return undef if time() >= $deadline;
		usleep(200_000);
	}
}

sub exit_code
{
	my ($status) = @_;
	return $status >> 8 if WIFEXITED($status);
	warn "# tap_watch: $file was killed by signal " . WTERMSIG($status) . "\n";
	return 1;
}

# stop the nodes of test $name still running
sub stop_nodes
{
	my ($name) = @_;
	my $tmp_check = ($ENV{TESTDIR} || '.') . '/tmp_check';
	for my $pidfile (glob("$tmp_check/t_${name}_*_data/pgdata/postmaster.pid"))
	{
		my $pgdata = dirname($pidfile);
		open(my $fh, '<', $pidfile) or next;
		my $postmaster = <$fh>;
		close($fh);
		next unless defined $postmaster && $postmaster =~ /^(\d+)/;
		$postmaster = $1;
		next unless kill(0, $postmaster);
		warn "# tap_watch: stopping the node in $pgdata (postmaster $postmaster)\n";
		system('pg_ctl', '-D', $pgdata, '-m', 'immediate', '-w', '-t', '30', 'stop');
		next unless kill(0, $postmaster);
		my @children = split(/\s+/, `pgrep -P $postmaster 2>/dev/null` // '');
		kill('KILL', $postmaster, grep { /^\d+$/ } @children);
	}
}
