# CqCitus.pm -- a Citus cluster of temporary nodes for pg_cq's tests (issue 14).
#
# new_cluster(N) starts a coordinator and N workers (PostgreSQL::Test::Cluster
# nodes on 127.0.0.1, so that Citus can connect node to node over TCP), each with
# shared_preload_libraries = 'citus,pg_cq' (Citus must come first), creates
# the citus extension on every node, registers the workers, and creates
# pg_cq on the coordinator (Citus propagates it to the workers).
# Loading it loads t/CqCrash.pm too: a server process of any node that
# crashed fails the test (the kill -9 of a postmaster the tests make logs no
# crash of a child).
package CqCitus;

use strict;
use warnings;
use File::Basename ();
use lib File::Basename::dirname(__FILE__) . '/..';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCrash;
use IO::Select;
use IO::Socket::INET;
use POSIX ();

# Ports.  With CQ_CITUS_PORT set (scripts/test.sh sets it to CQ_TEST_PORT + 1),
# the nodes of a test take the ports CQ_CITUS_PORT, +1, ... and its proxies
# CQ_CITUS_PORT + 10, +11, ...: helpers sharing a machine keep to their
# ranges.  Without it, PostgreSQL::Test::Cluster picks free ports.
my $nodes_started = 0;
my $proxies_started = 0;

sub next_port
{
	my ($proxy) = @_;
	return undef unless $ENV{CQ_CITUS_PORT};
	return $ENV{CQ_CITUS_PORT} + ($proxy ? 10 + $proxies_started++ : $nodes_started++);
}

# new_cluster(NWORKERS, CONF) -> (coordinator, [workers]); CONF: extra
# postgresql.conf lines for every node.
sub new_cluster
{
	my ($nworkers, $conf) = @_;
	# every node listens on TCP: Citus connects to the others by host and port
	$PostgreSQL::Test::Utils::use_tcp = 1;
	$PostgreSQL::Test::Cluster::use_tcp = 1;
	$PostgreSQL::Test::Cluster::test_pghost = '127.0.0.1';
	$ENV{PGHOST} = '127.0.0.1';
	my @nodes;
	for my $i (0 .. $nworkers)
	{
		push @nodes, new_node($i == 0 ? 'coordinator' : "worker$i", $conf);
	}
	my ($coord, @workers) = @nodes;
	$coord->safe_psql('postgres',
		"SELECT citus_set_coordinator_host('127.0.0.1', " . $coord->port . ")");
	$coord->safe_psql('postgres',
		"SELECT citus_add_node('127.0.0.1', " . $_->port . ")") for @workers;
	$coord->safe_psql('postgres', 'SET client_min_messages = warning; CREATE EXTENSION pg_cq');
	return ($coord, \@workers);
}

# new_node(NAME): a started node with Citus created, not yet in a cluster.
# Logical replication (shard moves with shard_transfer_mode 'force_logical')
# needs WAL senders and slots.
sub new_node
{
	my ($name, $conf) = @_;
	my $port = next_port(0);
	my $node = PostgreSQL::Test::Cluster->new($name, defined $port ? (port => $port) : ());
	$node->init;
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'citus,pg_cq'
max_worker_processes = 20
max_connections = 60
max_prepared_transactions = 60
wal_level = logical
max_wal_senders = 10
max_replication_slots = 10
citus.node_conninfo = 'sslmode=disable'
});
	$node->append_conf('postgresql.conf', $conf) if $conf;
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus');
	return $node;
}

# wait_for(NODE, SQL, WANT, WHAT): poll SQL until it returns WANT (deadline:
# PostgreSQL::Test::Utils::timeout_default seconds); a test result either way.
sub wait_for
{
	my ($node, $sql, $want, $what) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	my $got;
	while (1)
	{
		$got = $node->safe_psql('postgres', $sql);
		last if $got eq $want || time() > $deadline;
		select(undef, undef, undef, 0.1);
	}
	is($got, $want, $what);
}

# start_proxy(TARGET_PORT, CTLDIR) -> (PORT, PID): a TCP proxy on 127.0.0.1
# in front of a node, for the two-phase-commit tests.  It relays the
# PostgreSQL protocol both ways and reads the client's messages (sslmode =
# disable: citus.node_conninfo above).  A simple-query message that contains
# COMMIT PREPARED is
#   - held, with whatever the client sends after it on that connection,
#     while the file CTLDIR/hold exists (CTLDIR/held is created when one is);
#     if the file is not empty, only a COMMIT PREPARED whose text contains
#     its content (a gid prefix, hold_gid) is held: a batch's own
#     transaction may commit in two phases on the node too (below);
#   - dropped, and the connection closed, while CTLDIR/drop exists
#     (CTLDIR/dropped is created), as a network failure would.
# Stop it with kill 'KILL', PID.
sub start_proxy
{
	my ($target_port, $ctl) = @_;
	my $listen = IO::Socket::INET->new(
		LocalAddr => '127.0.0.1', LocalPort => next_port(1) // 0, Listen => 32, ReuseAddr => 1)
	  or die "proxy: listen: $!";
	my $port = $listen->sockport;
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		proxy_loop($listen, $target_port, $ctl);
		POSIX::_exit(0);
	}
	close $listen;
	return ($port, $pid);
}

# touch(FILE[, CONTENT])
sub touch
{
	my ($f, $content) = @_;
	open(my $fh, '>', $f) or die "$f: $!";
	print $fh $content if defined $content;
	close $fh;
}

# hold_gid(BACKGROUND_PSQL on the coordinator): the prefix of the gids of
# the transactions that session prepares on the workers ("citus_<group>_
# <pid>_", Citus' PREPARED_TRANSACTION_NAME_FORMAT), for CTLDIR/hold.  A
# batch's own transaction can end with a PREPARE on a worker although it
# only reads there: when Citus' adaptive executor opened a second
# connection to the node that ran no task, Citus cannot tell that it wrote
# nothing and prepares it (ConnectionModifiedPlacement).  Holding every
# COMMIT PREPARED then holds the batch's own commit too, and the test hangs.
sub hold_gid
{
	my ($session) = @_;
	my $pid = $session->query_safe('SELECT pg_backend_pid()');
	$pid =~ s/\s+//g;
	return "citus_0_${pid}_";
}

# hold_matches(FILE, MSG): does the hold file apply to the message?
sub hold_matches
{
	my ($f, $msg) = @_;
	open(my $fh, '<', $f) or return 0;    # lifted meanwhile
	local $/;
	my $want = <$fh> // '';
	close $fh;
	return $want eq '' || index($msg, $want) >= 0;
}

sub write_all
{
	my ($sock, $data) = @_;
	while (length $data)
	{
		my $n = syswrite($sock, $data);
		return 0 unless defined $n && $n > 0;
		substr($data, 0, $n) = '';
	}
	return 1;
}

sub proxy_loop
{
	my ($listen, $target_port, $ctl) = @_;
	my $sel = IO::Select->new($listen);
	my %peer;     # socket -> its other end
	my %conn;     # client socket -> { buf, started, held => [msgs] }
	my $close = sub {
		my ($s) = @_;
		my $o = $peer{$s};
		for my $x (grep { defined } $s, $o)
		{
			$sel->remove($x);
			delete $peer{$x};
			delete $conn{$x};
			close $x;
		}
	};
	while (1)
	{
		# release held messages once the hold is lifted
		for my $c (values %conn)
		{
			next unless @{ $c->{held} } && !-e "$ctl/hold";
			write_all($c->{server}, join('', @{ $c->{held} }));
			$c->{held} = [];
		}
		for my $s ($sel->can_read(0.02))
		{
			if ($s == $listen)
			{
				my $client = $listen->accept or next;
				my $server = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $target_port)
				  or do { close $client; next; };
				$peer{$client} = $server;
				$peer{$server} = $client;
				$conn{$client} = { buf => '', started => 0, held => [], server => $server };
				$sel->add($client, $server);
				next;
			}
			next unless exists $peer{$s};
			my $n = sysread($s, my $data, 65536);
			if (!$n)
			{
				$close->($s);
				next;
			}
			my $c = $conn{$s};
			if (!$c)
			{
				write_all($peer{$s}, $data) or $close->($s);    # server -> client
				next;
			}
			$c->{buf} .= $data;
			while (1)
			{
				my $msg;
				if (!$c->{started})
				{
					last if length($c->{buf}) < 4;
					my $len = unpack('N', $c->{buf});
					last if length($c->{buf}) < $len;
					$msg = substr($c->{buf}, 0, $len, '');
					$c->{started} = 1;
				}
				else
				{
					last if length($c->{buf}) < 5;
					my $len = unpack('N', substr($c->{buf}, 1, 4));
					last if length($c->{buf}) < 1 + $len;
					$msg = substr($c->{buf}, 0, 1 + $len, '');
				}
				my $commit = substr($msg, 0, 1) eq 'Q' && $msg =~ /COMMIT PREPARED/;
				if ($commit && -e "$ctl/drop")
				{
					touch("$ctl/dropped");
					$close->($s);
					last;
				}
				if (@{ $c->{held} } || ($commit && -e "$ctl/hold" && hold_matches("$ctl/hold", $msg)))
				{
					push @{ $c->{held} }, $msg;
					touch("$ctl/held") if $commit;
					next;
				}
				write_all($c->{server}, $msg) or do { $close->($s); last; };
			}
		}
	}
}

1;
