# Sources tracked with a cq.xid48 cq_xid (cq.stamp_type = 'xid48',
# docs/design-stamp.md step 2) where a regress test cannot go:
#   - concurrent writers committing out of order (their transactions
#     overlap batches run by background workers), rolled-back transactions,
#     every output mode: once the writers stop and the queries catch up,
#     every target equals its plain SELECT oracle;
#   - max_rows_per_trigger = 1 across a power of ten of transaction ids
#     (t/020_xid_order.pl): the cut takes transactions in numeric order of
#     their 6-byte stamps;
#   - every statement a batch runs over an xid48 source (the batch, d, the
#     count statements written as text with OPERATOR(cq.>=), the per-
#     transaction counts of the row limit), logged by auto_explain, scans
#     the source through its BRIN index, never sequentially;
#   - the upgrade path: on a 0.1 catalog cq.stamp_type = 'xid48' refuses to
#     track a source, clearly, and nothing is half done; a source tracked
#     with xid8 there keeps working after ALTER EXTENSION pg_cq UPDATE (its
#     column stays xid8) while a new source gets cq.xid48;
#   - epochs raised by pg_resetwal -e: past 2^47 tracking gives a new source
#     xid8 with a NOTICE, while an xid48 source goes on with stamps above
#     2^47; at 2^48 an xid48 source's writes fail ("does not fit", 54000)
#     and nothing of them is counted, while xid8 sources go on.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('xid48_sources', 'max_prepared_transactions = 4');
my $db = 'postgres';
$node->safe_psql($db, q{ALTER DATABASE postgres SET cq.stamp_type = 'xid48'});

# ---- concurrent writers, every output mode ----
$node->safe_psql($db, writers_sql() . q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	CALL cq_write(1, 20, 20, 0, 0, true);
} . all_modes_sql());
is($node->safe_psql($db, q{SELECT format_type(atttypid, NULL) FROM pg_attribute
	WHERE attrelid = 'ev'::regclass AND attname = 'cq_xid'}), 'cq.xid48', 'the source is stamped with cq.xid48');

# three writers whose transactions overlap: they commit out of the order of
# their ids, with the workers' batches between and during them; a prepared
# transaction holds rows of a low id across batches
$node->safe_psql($db, q{BEGIN;
	INSERT INTO ev (id, w, k, ts, v) SELECT n, 9, n % 5, '2024-01-01'::timestamptz + n * interval '1 millisecond', s
	  FROM (SELECT nextval('ev_id') AS n, s FROM generate_series(1, 50) s) x;
	PREPARE TRANSACTION 'low_id';});
# (synthetic event times, id milliseconds: the windows' watermarks close
# windows within the few seconds the writers run)
my @w = map { start_writer($node, $db, "CALL cq_write($_, 300, 40, 15, 0, true)") } 1 .. 3;
# the batches move on past the prepared transaction's rows
ok($node->poll_query_until($db, q{SELECT count(DISTINCT name) >= 5 FROM cq.offsets WHERE batch_id > 2}),
	'batches ran while the writers wrote');
$node->safe_psql($db, q{COMMIT PREPARED 'low_id'});
ok(end_writers($node, $db, @w), 'the writers ended');
wait_caught_up($node, $db, 'ev', 'after the writers', @ALL_MODES);
check_all_modes($node, $db, 'after concurrent writers (cq.xid48 stamps)');
is($node->safe_psql($db, q{SELECT count(*) FILTER (WHERE w = 9) = 50 AND count(*) > 200 FROM ev}), 't',
	'the prepared transaction\'s rows and the writers\' are there');

# ---- the row limit across a power of ten (t/020_xid_order.pl) ----
$node->safe_psql($db, q{
	SET client_min_messages = warning;
	CREATE TABLE src1 (id int);
	SELECT cq.create_query('one_by_one', 'SELECT id FROM src1', output_mode => 'append',
	                       "trigger" => 'available_now', max_rows_per_trigger => 1);
});
my $xid = $node->safe_psql($db, 'SELECT pg_current_xact_id()::text::bigint');
my $p = 10;
$p *= 10 while $p <= $xid + 20;
$node->safe_psql($db,
	"DO \$\$ BEGIN WHILE pg_current_xact_id()::text::bigint < $p - 5 LOOP COMMIT; END LOOP; END \$\$");
$node->safe_psql($db, "INSERT INTO src1 VALUES ($_)") for 1 .. 10;
is($node->safe_psql($db,
		"SELECT min(cq_xid)::text::bigint < $p AND max(cq_xid)::text::bigint >= $p FROM src1"),
	't', "the rows' stamps straddle $p");
$node->safe_psql($db, "SET client_min_messages = warning; CALL cq.run('one_by_one')");
is($node->safe_psql($db, 'SELECT count(*) FROM one_by_one'), '10', 'every row was processed');
is($node->safe_psql($db, "SELECT max(num_input_rows) FROM cq.progress WHERE name = 'one_by_one'"),
	'1', 'no batch took more than max_rows_per_trigger rows');

# ---- every statement of a batch uses the BRIN index ----
$node->safe_psql($db, q{
	SET client_min_messages = warning;
	CREATE TABLE bsrc (k int, v int, ts timestamptz DEFAULT clock_timestamp()) WITH (autovacuum_enabled = off);
	CREATE TABLE b_store WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
	  AS SELECT k, count(*) AS n, sum(v) AS s FROM bsrc GROUP BY k;
	CREATE TABLE b_table WITH (cq.output_mode = 'update', cq.trigger = 'available_now', cq.state_storage = 'unlogged')
	  AS SELECT k, count(*) AS n, sum(v) AS s FROM bsrc GROUP BY k;
	CREATE TABLE b_limit WITH (cq.output_mode = 'update', cq.trigger = 'available_now', cq.max_rows_per_trigger = 500,
	                           cq.state_storage = 'unlogged')
	  AS SELECT k, count(*) AS n FROM bsrc GROUP BY k;
	CREATE TABLE b_rows WITH (cq.output_mode = 'append', cq.trigger = 'available_now')
	  AS SELECT k, v FROM bsrc WHERE v % 3 = 0;
	CREATE TABLE b_win WITH (cq.output_mode = 'append', cq.trigger = 'available_now', cq.event_time = 'ts',
	                         cq.watermark = '1 second')
	  AS SELECT w.window_start, count(*) AS n FROM bsrc, LATERAL cq.window(ts, '1 minute') AS w GROUP BY 1;
	-- a statement trigger on a target: the batch counts its rows first (count_sql)
	CREATE FUNCTION b_noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
	CREATE TRIGGER b_noop AFTER INSERT OR UPDATE ON b_table FOR EACH STATEMENT EXECUTE FUNCTION b_noop();
});
my @bq = qw(b_store b_table b_limit b_rows b_win);
# batch 0 of each (it reads the whole table, history included), then rows
# over many pages in several transactions
my $runs = join('', map { "CALL cq.run('$_');" } @bq);
$node->safe_psql($db, "SET client_min_messages = warning; SET cq.run_in_worker = off; $runs");
for my $i (1 .. 4)
{
	$node->safe_psql($db, "INSERT INTO bsrc (k, v) SELECT g % 11, g FROM generate_series($i * 10000, $i * 10000 + 4999) g");
}
my ($rc, $out, $err) = $node->psql($db, qq{
	LOAD 'auto_explain';
	SET auto_explain.log_min_duration = 0;
	SET auto_explain.log_nested_statements = on;
	SET client_min_messages = log;
	SET cq.run_in_worker = off;
	SET cq.delta_scan_in_c = off;
	$runs $runs
});
is($rc, 0, 'the batches ran under auto_explain') or diag($err);
# one message per plan ("psql:<stdin>:N: LOG:  duration: ...  plan:")
my @plans = grep { /\bbsrc\b/ } split(/\n(?=(?:psql:\S+\s+)?LOG:\s+duration:)/, $err);
my @bad = grep { /Seq Scan on (?:public\.)?bsrc\b/ || !/Bitmap Index Scan on bsrc_cq_xid_idx/ } @plans;
my @count = grep { /OPERATOR\(cq\.>=\)/ } @plans;
cmp_ok(scalar(@plans), '>=', 5, 'statements of the batches over the source were logged');
cmp_ok(scalar(@count), '>=', 2, 'count statements written with OPERATOR(cq.>=) were among them');
ok(scalar(grep { /count\(\*\)/ && /ORDER BY/i && /OPERATOR\(cq\.>=\)/ } @plans) >= 1,
	'the row limit\'s per-transaction count was among them');
is(scalar(@bad), 0, 'every one scans the source through its BRIN index') or diag(join("\n----\n", @bad));
my %oracle = (
	b_store => 'SELECT k, count(*), sum(v) FROM bsrc GROUP BY k',
	b_table => 'SELECT k, count(*), sum(v) FROM bsrc GROUP BY k',
	b_rows => 'SELECT k, v FROM bsrc WHERE v % 3 = 0');
$node->safe_psql($db, "SET client_min_messages = warning; SET cq.run_in_worker = off; "
	  . join('', map { "CALL cq.run('b_limit');" } 1 .. 40));
$oracle{b_limit} = 'SELECT k, count(*) FROM bsrc GROUP BY k';
is(mismatches($node, $db, $oracle{$_}, $_), '0', "$_ equals its oracle") for sort keys %oracle;

# ---- the upgrade path ----
$node->safe_psql($db, 'CREATE DATABASE up');
$node->safe_psql('up', q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq VERSION '0.1';
	CREATE TABLE old_src (k int, v int);
	CREATE TABLE new_src (k int, v int);
});
my ($urc, $uout, $uerr) = $node->psql('up', q{SET cq.stamp_type = 'xid48';
	SELECT cq.create_query('refused', 'SELECT k, count(*) AS n FROM new_src GROUP BY k', output_mode => 'update')});
isnt($urc, 0, 'a 0.1 catalog refuses cq.stamp_type = xid48');
like($uerr, qr/cq\.stamp_type "xid48" needs pg_cq 0\.2/, 'with a clear message');
like($uerr, qr/HINT:\s+Run ALTER EXTENSION pg_cq UPDATE/, 'and the hint to update');
is($node->safe_psql('up', q{SELECT count(*) FROM pg_attribute WHERE attrelid = 'new_src'::regclass AND attname = 'cq_xid'
	UNION ALL SELECT count(*) FROM cq.queries}), "0\n0", 'nothing was half done');
$node->safe_psql('up', q{SET client_min_messages = warning; SET cq.stamp_type = 'xid8';
	SELECT cq.create_query('old_q', 'SELECT k, count(*) AS n, sum(v) AS s FROM old_src GROUP BY k',
	                       output_mode => 'update', "trigger" => 'available_now');
	INSERT INTO old_src SELECT g % 4, g FROM generate_series(1, 1000) g;
	CALL cq.run('old_q');});
$node->safe_psql('up', 'ALTER EXTENSION pg_cq UPDATE');
is($node->safe_psql('up', q{SELECT extversion FROM pg_extension WHERE extname = 'pg_cq'}), '0.2', 'updated to 0.2');
# sessions of this database have cq.stamp_type = 'xid48' (the database's
# default is postgres's only: set it here)
$node->safe_psql('up', q{ALTER DATABASE up SET cq.stamp_type = 'xid48'});
$node->safe_psql('up', q{SET client_min_messages = warning;
	INSERT INTO old_src SELECT g % 4, g FROM generate_series(1, 1000) g;
	CALL cq.run('old_q');
	SELECT cq.create_query('new_q', 'SELECT k, count(*) AS n, sum(v) AS s FROM new_src GROUP BY k',
	                       output_mode => 'update', "trigger" => 'available_now');
	INSERT INTO new_src SELECT g % 4, g FROM generate_series(1, 1000) g;
	CALL cq.run('new_q');
	INSERT INTO old_src SELECT g % 4, g FROM generate_series(1, 500) g;
	INSERT INTO new_src SELECT g % 4, g FROM generate_series(1, 500) g;
	CALL cq.run('old_q');
	CALL cq.run('new_q');});
is($node->safe_psql('up', q{SELECT string_agg(format_type(atttypid, NULL), ' ' ORDER BY attrelid::regclass::text)
	FROM pg_attribute WHERE attrelid IN ('old_src'::regclass, 'new_src'::regclass) AND attname = 'cq_xid'}),
	'cq.xid48 xid8', 'the source tracked under 0.1 keeps xid8, the new one has cq.xid48');
is(mismatches($node, 'up', 'SELECT k, count(*), sum(v) FROM old_src GROUP BY k', 'old_q'), '0',
	'the xid8 source works on after the update');
is(mismatches($node, 'up', 'SELECT k, count(*), sum(v) FROM new_src GROUP BY k', 'new_q'), '0',
	'the cq.xid48 source works after the update');

$node->stop;

# ---- epochs: 2^47 and 2^48 ----
my $en = cq_node('xid48_epochs');
my $same_a = q{SELECT (SELECT count(*) FROM ((TABLE qa EXCEPT ALL SELECT k, count(*), sum(v) FROM sa GROUP BY k)
	UNION ALL (SELECT k, count(*), sum(v) FROM sa GROUP BY k EXCEPT ALL TABLE qa)) d)};
$en->safe_psql($db, q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_cq;
	SET cq.stamp_type = 'xid48';
	CREATE TABLE sa (k int, v int);
	CREATE TABLE qa WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
	  AS SELECT k, count(*) AS n, sum(v) AS s FROM sa GROUP BY k;
	INSERT INTO sa SELECT g % 3, g FROM generate_series(1, 300) g;
	CALL cq.run('qa');
});
sub epoch
{
	my ($e) = @_;
	$en->stop;
	command_ok(['pg_resetwal', '-e', $e, $en->data_dir], "pg_resetwal -e $e");
	$en->start;
}
epoch(32768);
my ($erc, $eout, $eerr) = $en->psql($db, q{SET cq.stamp_type = 'xid48';
	CREATE TABLE sb (k int, v int);
	CREATE TABLE qb WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
	  AS SELECT k, count(*) AS n, sum(v) AS s FROM sb GROUP BY k;});
is($erc, 0, 'past 2^47 a source is tracked') or diag($eerr);
like($eerr, qr/NOTICE:  pg_cq stamps this source with xid8, not cq\.xid48/, 'with xid8, and a NOTICE');
is($en->safe_psql($db, q{SELECT string_agg(format_type(atttypid, NULL), ' ' ORDER BY attrelid::regclass::text)
	FROM pg_attribute WHERE attrelid IN ('sa'::regclass, 'sb'::regclass) AND attname = 'cq_xid'}),
	'cq.xid48 xid8', 'the older source keeps cq.xid48');
$en->safe_psql($db, q{SET client_min_messages = warning;
	INSERT INTO sa SELECT g % 3, g FROM generate_series(1, 300) g;
	INSERT INTO sb SELECT g % 3, g FROM generate_series(1, 300) g;
	CALL cq.run('qa'); CALL cq.run('qb');});
is($en->safe_psql($db, q{SELECT count(*) FILTER (WHERE cq_xid OPERATOR(cq.>=) '140737488355328'::xid8) FROM sa}),
	'300', 'the xid48 source\'s new stamps are above 2^47');
is($en->safe_psql($db, $same_a), '0', 'and its query reads them exactly');
epoch(65536);
($erc, $eout, $eerr) = $en->psql($db, q{INSERT INTO sa SELECT g % 3, g FROM generate_series(1, 10) g});
isnt($erc, 0, 'at 2^48 a write into the xid48 source fails');
like($eerr, qr/ERROR:  transaction id \d+ does not fit in cq\.xid48/, 'saying why');
($erc, $eout, $eerr) = $en->psql($db, q{COPY sa (k, v) FROM PROGRAM 'seq 1 10 | sed s/$/,1/' (FORMAT csv)});
like($eerr, qr/does not fit in cq\.xid48/, 'a COPY too');
$en->safe_psql($db, q{SET client_min_messages = warning;
	INSERT INTO sb SELECT g % 3, g FROM generate_series(1, 300) g;
	CALL cq.run('qa'); CALL cq.run('qb');});
is($en->safe_psql($db, $same_a), '0', 'the xid48 source\'s query counts nothing of the failed writes');
is($en->safe_psql($db, q{SELECT (SELECT count(*) FROM ((TABLE qb EXCEPT ALL SELECT k, count(*), sum(v) FROM sb GROUP BY k)
	UNION ALL (SELECT k, count(*), sum(v) FROM sb GROUP BY k EXCEPT ALL TABLE qb)) d)}), '0',
	'the xid8 source goes on');
$en->stop;
done_testing();
