# The BRIN summaries a backend caches per cq_xid index (horizon.c,
# cached_getbitmap) are forgotten once their index is dropped: a relcache
# invalidation of the index marks its entry, and the next scan through the
# cache looks the index up and removes the entry of one that is gone
# (session 28; before, such entries stayed until the backend exited).  An
# invalidation of an index that still exists (VACUUM updates its pg_class
# row) keeps the entry.  One session runs every batch (in its own process),
# so one cache sees the whole drop/recreate cycle; results stay exact.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('brin_cache_dropped', 'wal_level = replica', 'max_wal_senders = 2');
$node->safe_psql('postgres', 'CREATE EXTENSION pg_cq');

my $s = $node->background_psql('postgres');
$s->query_safe('SET client_min_messages = warning; SET cq.run_in_worker = off; SET log_min_messages = debug1;');

# a source of five BRIN ranges and its query; returns its BRIN index's OID
sub make_source
{
	my ($t) = @_;
	$node->safe_psql('postgres', qq{SET client_min_messages = warning;
	  CREATE TABLE $t (id int, v int, pad text) WITH (fillfactor = 50, autovacuum_enabled = off);
	  SELECT cq.create_query('${t}_q', 'SELECT count(*) AS n, sum(v) AS s FROM $t', output_mode => 'update',
	    "trigger" => 'available_now');
	  INSERT INTO $t SELECT i, i, repeat('p', 100) FROM generate_series(1, 6000) i});
	return $node->safe_psql('postgres', qq{SELECT i.indexrelid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
	  WHERE i.indrelid = '$t'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'brin')});
}

# batches of t's query in session s, after a new row each; the log they wrote
sub batches
{
	my ($t, $k) = @_;
	my $offset = -s $node->logfile;
	for (1 .. $k)
	{
		$node->safe_psql('postgres', "INSERT INTO $t VALUES (7000, 1, 'x')");
		$s->query_safe("CALL cq.run('${t}_q')");
	}
	is($node->safe_psql('postgres', "SELECT n = (SELECT count(*) FROM $t) AND s = (SELECT sum(v) FROM $t) FROM ${t}_q"),
		't', "$t: the query equals the plain one");
	return slurp_file($node->logfile, $offset);
}

my $a_idx = make_source('sa');
my $b_idx = make_source('sb');
batches('sa', 3);
batches('sb', 3);

# sb's query and table dropped: the next scan in s (of sa's index) forgets sb's entry
$node->safe_psql('postgres', "SELECT cq.drop_query('sb_q', drop_target => true); DROP TABLE sb");
my $log = batches('sa', 1);
like($log, qr/forgot the cached BRIN summaries of dropped index $b_idx\b/, "the dropped index's entry is removed");
unlike($log, qr/forgot the cached BRIN summaries of dropped index $a_idx\b/, "the scanned index's is kept");

# VACUUM of sa invalidates its index's relcache entry; the index exists: kept
$node->safe_psql('postgres', 'VACUUM sa');
$log = batches('sa', 2);
unlike($log, qr/forgot the cached BRIN summaries/, 'an invalidation of an existing index removes nothing');

# recreated under the same name: a new index, a new entry, exact batches
my $b2_idx = make_source('sb');
isnt($b2_idx, $b_idx, 'sb recreated with a new index');
batches('sb', 3);
$node->safe_psql('postgres', "SELECT cq.drop_query('sb_q', drop_target => true); DROP TABLE sb");
$log = batches('sa', 1);
like($log, qr/forgot the cached BRIN summaries of dropped index $b2_idx\b/, "the recreated index's entry is removed after its drop too");

$s->quit;
$node->stop;
done_testing();
