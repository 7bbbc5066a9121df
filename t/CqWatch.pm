# t/CqWatch.pm -- a Perl TAP file that hangs says where, and no wait of
# PostgreSQL::Test::Cluster outlives its deadline.  Loaded by every file of
# t/ that scripts/test.sh runs (scripts/tap_watch.pl runs them with
# -MCqWatch) and by CqCrash (so also when a file is run by hand).
#
#   1. SIGTERM (what scripts/tap_watch.pl sends a file that ran past its
#      time limit) prints the Perl stack at that moment -- the line of the
#      test file and the call (safe_psql, poll_query_until, ...) that hung,
#      with its arguments -- as a TAP diagnostic and in the test's log,
#      then exits with status 1: the END blocks run, so
#      PostgreSQL::Test::Cluster stops every node the file started and
#      CqCrash reports crashed processes.  (Perl's default for SIGTERM
#      exits at once, leaving the nodes running.)
#   2. poll_query_until and wait_for_log give up after
#      $PostgreSQL::Test::Utils::timeout_default seconds of wall-clock time
#      (PG_TEST_TIMEOUT_DEFAULT, 180 by default).  Upstream they count
#      attempts instead (10 a second, but each attempt of poll_query_until
#      starts a psql): on a loaded machine a failing poll went on for
#      5-15 minutes.  Same arguments, same result, same diagnostic.
package CqWatch;

use strict;
use warnings;
use Carp ();
use Sub::Util qw(set_subname);
use Time::HiRes qw(usleep time);
use PostgreSQL::Test::Utils;
use PostgreSQL::Test::Cluster;
use IPC::Run;
use Test::More;

# 1. where a file was when it was told to stop
my $stopping = 0;
$SIG{TERM} = sub {
	exit(1) if $stopping++;    # a second SIGTERM: no second report
	my $stack = Carp::longmess('SIGTERM');
	$stack =~ s/^SIGTERM at [^\n]*\n//;    # the handler's own frame
	# the innermost call made from the test file itself
	my $where = 'at the top level of the file';
	for (my $i = 1; my @f = caller($i); $i++)
	{
		if ($f[1] eq $0)
		{
			$where = "in $f[3] called at $f[1] line $f[2]";
			last;
		}
	}
	diag("CqWatch: $0 stopped by SIGTERM (scripts/tap_watch.pl: its time limit, or an interrupt) after test "
		  . Test::More->builder->current_test . ", $where; the stack:\n$stack");
	exit(1);
};

# 2. waits bounded in wall-clock time
{
	no warnings 'redefine';

	*PostgreSQL::Test::Cluster::poll_query_until = set_subname 'PostgreSQL::Test::Cluster::poll_query_until', sub {
		my ($self, $dbname, $query, $expected) = @_;

		local %ENV = $self->_get_env();
		$expected = 't' unless defined($expected);
		my $cmd = [ $self->installed_command('psql'), '-XAt', '-d', $self->connstr($dbname) ];
		my ($stdout, $stderr) = ('', '');
		my $t0 = time();
		my $deadline = $t0 + $PostgreSQL::Test::Utils::timeout_default;
		my $attempts = 0;

		do
		{
			IPC::Run::run($cmd, '<', \$query, '>', \$stdout, '2>', \$stderr);
			chomp($stdout);
			chomp($stderr);
			return 1 if $stdout eq $expected && $stderr eq '';
			$attempts++;
			usleep(100_000);
		} while (time() < $deadline);

		my $msg_query = defined $query ? $query : '(connection attempt only)';
		diag(sprintf(
			"poll_query_until timed out after %.0f s (%d attempts) executing this query:\n%s\n"
			  . "expecting this output:\n%s\nlast actual query output:\n%s\nwith stderr:\n%s",
			time() - $t0, $attempts, $msg_query, $expected, $stdout, $stderr));
		return 0;
	};

	*PostgreSQL::Test::Cluster::wait_for_log = set_subname 'PostgreSQL::Test::Cluster::wait_for_log', sub {
		my ($self, $regexp, $offset) = @_;
		$offset = 0 unless defined $offset;
		my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;

		do
		{
			my $log = PostgreSQL::Test::Utils::slurp_file($self->logfile, $offset);
			return $offset + length($log) if $log =~ m/$regexp/;
			usleep(100_000);
		} while (time() < $deadline);

		Carp::croak('timed out waiting for match: ' . $regexp);
	};
}

1;
