# A crashed server process fails the test that saw it, with evidence
# (t/CqCrash.pm).  A pg_cq worker that segfaults is followed by a
# crash-restart after which the state is rebuilt, so a soak's checks alone
# pass: a segfault seen once in t/006_soak.pl (session 32) left nothing
# behind.  Here the pg_cq launcher gets SIGSEGV:
#   1. crash_report() names the crash, and when the kernel writes cores to
#      a plain file name, the core in the data directory and its backtrace
#      (the test raised its core limit: under runuser it is 0);
#      accept_crashes() then accepts it.
#   2. A child test script that sees the same crash and checks nothing
#      about it (one passing ok) exits with status 1 and prints the report
#      (CqCrash's END block), and its data directory is kept.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use File::Path qw(rmtree);
use CqTest;

my $pattern = slurp_file('/proc/sys/kernel/core_pattern');
chomp $pattern;
# the kernel writes "core" (or core.PID) into the crashed process's cwd, the
# data directory
my $cores_here = core_limit() ne '' && core_limit() ne '0' && $pattern =~ /^core/;
note("core limit '" . core_limit() . "', kernel.core_pattern '$pattern'");

# SIGSEGV to the launcher of $node; waits until the postmaster logged it and
# the node accepts connections again
sub segv_launcher
{
	my ($node) = @_;
	my $pid = $node->safe_psql('postgres',
		q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_cq launcher'});
	ok(kill_and_restart($node, 'postgres', $pid, 'SEGV'), "SIGSEGV to the launcher ($pid): the node crash-restarted");
	return $pid;
}

# 1. the report
my $node = cq_node('evidence');
is(crash_report($node), '', 'no crash at first');
my $pid = segv_launcher($node);
my $report = crash_report($node);
like($report, qr/\(PID $pid\) was terminated by signal 11/, 'the report names the crash');
SKIP:
{
	skip("kernel.core_pattern '$pattern' or core limit '" . core_limit() . "' writes no core here", 2)
	  unless $cores_here;
	like($report, qr{core \S+/core\S*, backtrace}, 'the report names the core in the data directory');
	if (`which gdb 2>/dev/null` ne '')
	{
		like($report, qr/^#0 /m, 'and has its backtrace');
	}
	else
	{
		pass('gdb not installed: no backtrace');
	}
}
accept_crashes($node);
unlink(glob($node->data_dir . '/core*'));
no_crashes($node, 'after accept_crashes');

# 2. a test that does not look still fails
my $child = "$PostgreSQL::Test::Utils::tmp_check/crash_child.pl";
open(my $fh, '>', $child) or die "$child: $!";
print $fh q{
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;
my $node = cq_node('child');
my $pid = $node->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_cq launcher'});
kill_and_restart($node, 'postgres', $pid, 'SEGV');
note('child data: ' . $node->data_dir);
ok(1, 'nothing checked');
done_testing();
};
close($fh);
my ($out, $err) = ('', '');
IPC::Run::run([ $^X, (map { "-I$_" } $FindBin::RealBin, @INC), $child ], '>', \$out, '2>', \$err);
my $status = $? >> 8;
is($status, 1, 'the child test exits with status 1');
like($err, qr/a server process crashed \(the data directory is kept\).*was terminated by signal 11/s,
	'and reports the crash');
my ($child_data) = $out =~ /^# child data: (\S+)$/m;
ok(defined $child_data && -d $child_data, 'the child\'s data directory is kept');
if ($status != 1 || !defined $child_data)
{
	diag("child stdout:\n$out\nchild stderr:\n$err");
}
rmtree($1) if defined $child_data && $child_data =~ m{^(.*)/pgdata$};

$node->stop;
done_testing();
