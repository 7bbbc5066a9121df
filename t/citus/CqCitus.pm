# CqCitus.pm -- a Citus cluster of temporary nodes for pg_cq's tests (issue 14).
#
# new_cluster(N) starts a coordinator and N workers (PostgreSQL::Test::Cluster
# nodes on 127.0.0.1, so that Citus can connect node to node over TCP), each with
# shared_preload_libraries = 'citus,pg_cq' (Citus must come first), creates
# the citus extension on every node, registers the workers, and creates
# pg_cq on the coordinator (Citus propagates it to the workers).
package CqCitus;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# new_cluster(NWORKERS) -> (coordinator, [workers])
sub new_cluster
{
	my ($nworkers) = @_;
	# every node listens on TCP: Citus connects to the others by host and port
	$PostgreSQL::Test::Utils::use_tcp = 1;
	$PostgreSQL::Test::Cluster::use_tcp = 1;
	$PostgreSQL::Test::Cluster::test_pghost = '127.0.0.1';
	$ENV{PGHOST} = '127.0.0.1';
	my @nodes;
	for my $i (0 .. $nworkers)
	{
		my $node = PostgreSQL::Test::Cluster->new($i == 0 ? 'coordinator' : "worker$i");
		$node->init;
		$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'citus,pg_cq'
max_worker_processes = 20
max_connections = 60
max_prepared_transactions = 60
wal_level = logical
citus.node_conninfo = 'sslmode=disable'
});
		$node->start;
		$node->safe_psql('postgres', 'CREATE EXTENSION citus');
		push @nodes, $node;
	}
	my ($coord, @workers) = @nodes;
	$coord->safe_psql('postgres',
		"SELECT citus_set_coordinator_host('127.0.0.1', " . $coord->port . ")");
	$coord->safe_psql('postgres',
		"SELECT citus_add_node('127.0.0.1', " . $_->port . ")") for @workers;
	$coord->safe_psql('postgres', 'SET client_min_messages = warning; CREATE EXTENSION pg_cq');
	return ($coord, \@workers);
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

1;
