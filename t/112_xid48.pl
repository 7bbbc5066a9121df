# cq.xid48 (docs/design-stamp.md step 1, src/xid48.c) where a regress test
# cannot go: a standby, a dump, and epochs raised by pg_resetwal -e.
#   - a table with a cq.xid48 column defaulting to cq.current_xid48() and an
#     xid8 twin defaulting to pg_current_xact_id(): the same values;
#   - a streaming standby reads them, and refuses cq.current_xid48() as it
#     refuses pg_current_xact_id();
#   - pg_dump | psql into another database restores the values;
#   - epoch 65535 (the last that fits): the stamps are the xid8's, above
#     2^47, through comparisons, a BRIN index and binary COPY;
#   - epoch 65536 (2^48): cq.current_xid48() and the cast fail with
#     ERRCODE_PROGRAM_LIMIT_EXCEEDED naming the epoch; xid8 goes on.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqCrash;

my $node = PostgreSQL::Test::Cluster->new('xid48');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_cq'\n");
$node->start;
my $db = 'postgres';

$node->safe_psql($db, q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CREATE TABLE st (k int, x cq.xid48 DEFAULT cq.current_xid48(), y xid8 DEFAULT pg_current_xact_id());
	CREATE INDEX st_brin ON st USING brin (x);
	INSERT INTO st (k) VALUES (1), (2);
	INSERT INTO st (k) VALUES (3);
});
my $same = q{SELECT count(*) || ' ' || count(*) FILTER (WHERE x OPERATOR(cq.=) y) FROM st};
is($node->safe_psql($db, $same), '3 3', 'the default stamps the xid8 twin\'s value');

# a streaming standby
$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('xid48_standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;
$node->safe_psql($db, 'INSERT INTO st (k) VALUES (4)');
$node->wait_for_catchup($standby);
is($standby->safe_psql($db, $same), '4 4', 'the standby reads the stamps');
my ($rc, $out, $err) = $standby->psql($db, 'SELECT cq.current_xid48()');
like($err, qr/ERROR:  cannot execute cq\.current_xid48\(\) during recovery/,
	'the standby refuses cq.current_xid48()');
($rc, $out, $err) = $standby->psql($db, 'SELECT pg_current_xact_id()');
like($err, qr/ERROR:  cannot execute pg_current_xact_id\(\) during recovery/,
	'as it refuses pg_current_xact_id()');
$standby->stop;

# pg_dump: the column's text reads back into a database with pg_cq
$node->safe_psql($db, 'CREATE DATABASE restored');
$node->safe_psql('restored', 'CREATE EXTENSION pg_cq');
my $dump = $node->basedir . '/st.sql';
$node->command_ok(['pg_dump', '-d', $node->connstr($db), '-t', 'st', '-f', $dump], 'pg_dump of the table');
$node->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('restored'), '-f', $dump],
	'restored into another database');
is($node->safe_psql('restored', q{
	SELECT string_agg(k || ':' || (x::xid8 = y) || ':' || pg_typeof(x), ',' ORDER BY k) FROM st}),
	'1:true:cq.xid48,2:true:cq.xid48,3:true:cq.xid48,4:true:cq.xid48', 'the restored values equal the xid8 twin\'s');

# epoch 65535: the largest stamps
sub reset_epoch
{
	my ($epoch) = @_;
	$node->stop;
	command_ok(['pg_resetwal', '-e', $epoch, $node->data_dir], "pg_resetwal -e $epoch");
	$node->start;
}
reset_epoch(65535);
$node->safe_psql($db, 'INSERT INTO st (k) SELECT g FROM generate_series(5, 7) g');
is($node->safe_psql($db, q{
	SELECT count(*) || ' ' || count(*) FILTER (WHERE x OPERATOR(cq.=) y AND x::xid8 = y
	                                             AND x OPERATOR(cq.>=) '281470681743360'::xid8
	                                             AND x OPERATOR(cq.<) '281474976710656'::xid8)
	  FROM st WHERE k >= 5}),
	'3 3', 'epoch 65535: the stamps are the xid8\'s, in [65535 * 2^32, 2^48)');
is($node->safe_psql($db, q{
	SET enable_seqscan = off;
	SELECT string_agg(k::text, ',' ORDER BY k) FROM st
	 WHERE x OPERATOR(cq.>=) '281470681743360'::xid8 AND x OPERATOR(cq.<) '281474976710656'::xid8}),
	'5,6,7', 'the BRIN index serves the bounds above 2^47');
is($node->safe_psql($db, q{
	SELECT x OPERATOR(cq.>) (SELECT max(x::text::bigint) FROM st WHERE k < 5)::text::cq.xid48 FROM st WHERE k = 5}),
	't', 'the new epoch\'s stamps compare above the old ones');
my $bin = $node->basedir . '/st.bin';
$node->safe_psql($db, qq{
	CREATE TABLE st2 (k int, x cq.xid48, y xid8);
	COPY st TO '$bin' (FORMAT binary);
	COPY st2 FROM '$bin' (FORMAT binary);});
is($node->safe_psql($db, q{
	SELECT count(*) FROM st JOIN st2 USING (k) WHERE st.x OPERATOR(cq.=) st2.x AND st2.x OPERATOR(cq.=) st2.y}),
	'7', 'binary COPY round-trips every stamp');

# epoch 65536: the current transaction id is 2^48 and more
reset_epoch(65536);
($rc, $out, $err) = $node->psql($db, q{
	\set VERBOSITY verbose
	INSERT INTO st (k) VALUES (8)});
like($err, qr/ERROR:  54000: transaction id \d+ does not fit in cq\.xid48\nDETAIL:  The cluster's epoch is 65536;/,
	'epoch 65536: the default fails with 54000, naming the epoch');
($rc, $out, $err) = $node->psql($db, q{SELECT pg_current_xact_id()::cq.xid48});
like($err, qr/ERROR:  transaction id \d+ does not fit in cq\.xid48/, 'so does the cast');
is($node->safe_psql($db, q{
	SELECT pg_current_xact_id() >= '281474976710656'::xid8, (SELECT count(*) FROM st)}),
	't|7', 'xid8 goes on; the stored stamps stay readable');

$node->stop;
done_testing();
