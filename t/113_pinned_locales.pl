# A query's batches run with its creator's lc_monetary, lc_numeric and
# lc_time (src/settings_pin.c, session 42), as with its DateStyle: money as
# text, to_char's D and G, and to_char's TM month names are the creator's
# whoever runs the batch, CALL cq.run in a session of other locales or a
# background worker with the database's.  Before, the worker's batch
# wrote 'January', '$2,000.00' and '1,234.50' where the creator's session
# had written 'Januar', '2.000,00 €' and '1.234,50': new groups.  A money
# constant of the query is printed under the query's lc_monetary and read
# back under it (its SQL is built under its settings).  A locale is the
# server's: with it gone (the server started without it), the batch fails
# with an error that names the setting, and no row is written under
# another locale.  The de_DE locale is built by localedef into the test's
# directory (LOCPATH), as in t/099.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $locdir = PostgreSQL::Test::Utils::tempdir();
if (system("localedef -i de_DE -f UTF-8 '$locdir/de_DE.UTF-8' >/dev/null 2>&1") != 0
	|| !-d "$locdir/de_DE.UTF-8")
{
	plan skip_all => 'localedef cannot build de_DE.UTF-8';
}
$ENV{LOCPATH} = $locdir;
my $node = cq_node('pinned_locales');

my $keys = q{SELECT to_char(ts, 'TMMonth') AS month, m::text AS amount, to_char(x, 'FM9G999D00') AS num,
                    count(*) AS n FROM src WHERE m > '1.000,00 €'::money GROUP BY 1, 2, 3};
my $add = q{INSERT INTO src VALUES ('2026-01-15 10:00+00', 2000::numeric::money, 1234.5)};
my $de = q{SET lc_monetary = 'de_DE.UTF-8'; SET lc_numeric = 'de_DE.UTF-8'; SET lc_time = 'de_DE.UTF-8';};
$node->safe_psql('postgres', qq{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE ROLE loc113 LOGIN;
  CREATE SCHEMA loc113 AUTHORIZATION loc113;
  SET ROLE loc113;
  SET search_path = loc113;
  CREATE TABLE src (ts timestamptz, m money, x numeric);
  $add;
  $de
  SELECT cq.create_query('q', \$q\$$keys\$q\$, output_mode => 'update', "trigger" => 'available_now');
});
is($node->safe_psql('postgres', q{
	SELECT string_agg(s, ' ' ORDER BY s) FROM cq.queries, unnest(settings) s WHERE name = 'q' AND s LIKE 'lc%'}),
	'lc_monetary=de_DE.UTF-8 lc_numeric=de_DE.UTF-8 lc_time=de_DE.UTF-8', 'the creator\'s locales are recorded');
my $creator_keys = $node->safe_psql('postgres', qq{$de SET search_path = loc113; $keys});
is($creator_keys, 'Januar|2.000,00 €|1.234,50|1', 'the keys under the creator\'s locales');

# batch 0 by CALL cq.run in a session of the database's locales (C.UTF-8)
my $s = $node->background_psql('postgres', on_error_stop => 0);
$s->query_safe(q{SET client_min_messages = warning; SET cq.run_in_worker = off; SET ROLE loc113; SET search_path = loc113});
is($s->query_safe(q{SELECT to_char('2026-01-15'::date, 'TMMonth') || ' ' || 2000::numeric::money}),
	'January $2,000.00', 'the caller\'s locales write other keys');
my $locales = q{SELECT current_setting('lc_monetary') || ' ' || current_setting('lc_numeric') || ' ' || current_setting('lc_time')};
my $before = $s->query_safe($locales);
$s->query(q{CALL cq.run('loc113.q')});
is($s->{stderr}, '', 'batch 0 under the caller\'s locales succeeds');
is($s->query_safe($locales), $before, 'the caller\'s locales are back after the batch');
is($node->safe_psql('postgres', q{SELECT * FROM loc113.q}), 'Januar|2.000,00 €|1.234,50|1',
	'batch 0 wrote the creator\'s keys');

# batch 1 by a background worker, with the database's locales
$node->safe_psql('postgres', qq{SET search_path = loc113; $add});
$node->safe_psql('postgres', q{SELECT cq.alter_query('loc113.q', "trigger" => '0')});
ok($node->poll_query_until('postgres', q{SELECT sum(n) = 2 FROM loc113.q}), 'the background worker ran batch 1');
is($node->safe_psql('postgres', q{SELECT * FROM loc113.q}), 'Januar|2.000,00 €|1.234,50|2',
	'batch 1 counted into the same group');
is($node->safe_psql('postgres', q{SELECT state || ' ' || coalesce(last_error, '-') FROM cq.queries WHERE name = 'q'}),
	'active -', 'the query is active, no error');
$node->safe_psql('postgres', q{SELECT cq.pause('loc113.q')});
$s->quit;

# the locale gone: the server started without LOCPATH has no de_DE.UTF-8
delete $ENV{LOCPATH};
$node->restart;
my ($rc, $out, $err) = $node->psql('postgres', q{SET lc_monetary = 'de_DE.UTF-8'});
like($err, qr/invalid value for parameter "lc_monetary"/, 'the restarted server has no de_DE.UTF-8');
$node->safe_psql('postgres', qq{SET search_path = loc113; $add});
($rc, $out, $err) = $node->psql('postgres', q{SET cq.run_in_worker = off; SET ROLE loc113; CALL cq.run('loc113.q')});
like($err, qr/could not set "lc_monetary" to "de_DE\.UTF-8" for a batch of a continuous query/,
	'CALL cq.run fails, naming the setting');
like($err, qr/DETAIL:  The query's batches run with the value its creator had \(cq\.queries\.settings\), which this server refuses: invalid value for parameter "lc_monetary"/,
	'the detail says why');
like($err, qr/HINT:  Make the value valid on this server/, 'the hint says what to do');
is($node->safe_psql('postgres', q{SELECT * FROM loc113.q}), 'Januar|2.000,00 €|1.234,50|2',
	'no batch ran under other locales');
# a background worker's batch fails the query with the same error
$node->safe_psql('postgres', q{SELECT cq.resume('loc113.q')});
ok($node->poll_query_until('postgres', q{SELECT state = 'failed' FROM cq.queries WHERE name = 'q'}),
	'the worker\'s batch failed the query');
like($node->safe_psql('postgres', q{SELECT last_error FROM cq.queries WHERE name = 'q'}),
	qr/could not set "lc_monetary" to "de_DE\.UTF-8"/, 'last_error names the setting');
is($node->safe_psql('postgres', q{SELECT sum(n) FROM loc113.q}), '2', 'the target is as it was');

$node->stop;
done_testing();
