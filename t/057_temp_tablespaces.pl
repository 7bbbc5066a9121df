# The key hashes batch 0's direct load notes for the indexes it builds
# (bulkload.c: a temporary file of (h, TID) per table) go where the
# temporary files of sorts go: temp_tablespaces, among the tablespaces the
# query's owner may CREATE in (others are skipped, as core skips them), else
# the database's default.  (PostgreSQL 15's BufFileCreateTemp selects the
# temporary tablespaces itself, PrepareTempTablespaces: session 28 checked
# rather than assumed it.)  Seen through log_temp_files = 0, which logs each
# temporary file's path and size as it is closed: the key files have 12
# bytes per row (an int4 and a TID); work_mem is large enough that no sort
# spills.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('temp_tablespaces', 'log_temp_files = 0', "cq.work_mem = '64MB'");
my $dir = PostgreSQL::Test::Utils::tempdir;
my $oracle = 'SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k';

$node->safe_psql('postgres', qq{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE TABLESPACE cq_tmp LOCATION '$dir';
  CREATE ROLE cq_plain LOGIN;
  GRANT CREATE ON SCHEMA public TO cq_plain;
  CREATE TABLE ev (k int, v int);
  INSERT INTO ev SELECT i % 20000, i FROM generate_series(1, 50000) i;
  ALTER TABLE ev OWNER TO cq_plain;
});
my $ts_oid = $node->safe_psql('postgres', "SELECT oid FROM pg_tablespace WHERE spcname = 'cq_tmp'");

# batch 0 of a new query of role, run by a superuser's session with
# temp_tablespaces = cq_tmp; the temporary files it logged (path, size)
my $n = 0;
sub batch0_files
{
	my ($role) = @_;
	$n++;
	$node->safe_psql('postgres', "SET ROLE $role; SET client_min_messages = warning;
		SELECT cq.create_query('q$n', '$oracle', output_mode => 'update', \"trigger\" => 'available_now',
		  state_storage => 'unlogged')");
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', "SET client_min_messages = warning;
		SET cq.run_in_worker = off; SET temp_tablespaces = cq_tmp; CALL cq.run('q$n')");
	is(mismatches($node, 'postgres', $oracle, "q$n"), '0', "batch 0 of q$n (owner $role) equals the plain query");
	my $log = slurp_file($node->logfile, $offset);
	return [ $log =~ /temporary file: path "([^"]+)", size (\d+)/g ];
}

# the owner may create in cq_tmp (a superuser): both key files there, 20,000 rows each
my $files = batch0_files('postgres');
my %f = @$files;
my @keyfiles = grep { $f{$_} == 12 * 20000 } keys %f;
is(scalar(@keyfiles), 2, 'two key files of 20,000 rows (state and target)')
  or diag(explain $files);
is(scalar(grep { m{^pg_tblspc/$ts_oid/} } @keyfiles), 2, 'both in temp_tablespaces')
  or diag(explain $files);

# an owner without CREATE on it may not SET it (core's error) ...
my ($rc, $out, $err) = $node->psql('postgres', 'SET ROLE cq_plain; SET temp_tablespaces = cq_tmp');
like($err, qr/permission denied for tablespace cq_tmp/, 'the owner may not SET temp_tablespaces to cq_tmp');
# ... and when it is set for the batch (by the caller), the batch, running as
# the owner, skips cq_tmp as core skips it: the database's default
$files = batch0_files('cq_plain');
%f = @$files;
@keyfiles = grep { $f{$_} == 12 * 20000 } keys %f;
is(scalar(@keyfiles), 2, "again two key files, the owner's")
  or diag(explain $files);
is(scalar(grep { m{^base/pgsql_tmp/} } @keyfiles), 2, 'both in the default place (no CREATE on cq_tmp)')
  or diag(explain $files);

# once granted, the owner's go to cq_tmp too
$node->safe_psql('postgres', 'GRANT CREATE ON TABLESPACE cq_tmp TO cq_plain');
$files = batch0_files('cq_plain');
%f = @$files;
@keyfiles = grep { $f{$_} == 12 * 20000 } keys %f;
is(scalar(grep { m{^pg_tblspc/$ts_oid/} } @keyfiles), 2, 'with CREATE granted, both in temp_tablespaces')
  or diag(explain $files);

$node->stop;
done_testing();
