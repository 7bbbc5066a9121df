# A money constant in a query's statements reads back as the same value
# whatever lc_monetary the session running the batch has (src/plan.c,
# "Settings").  The statements are printed from the query's tree and read
# back when prepared, and again when PostgreSQL's plan cache analyzes a
# saved statement anew (a relation it reads changed: ANALYZE), each time
# under the lc_monetary of that moment; no text of a money value reads back
# the same under every locale (its symbol, separators, decimal places).
# Before session 35 a statement printed under lc_monetary C ('$1,000.00')
# and analyzed anew under de_DE failed the batch (invalid input syntax for
# type money); since then lc_monetary is in the plan cache's key, so the
# statements are printed and read under the same one.  Checked in one
# session (batches in it, cq.run_in_worker off): C, then de_DE with the
# saved statements analyzed anew, then C again; the target equals the
# plain query each time.  The de_DE locale is built by localedef into the
# test's directory (LOCPATH): no system locale is needed or changed.
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
my $node = cq_node('money_constants');

# $1,000.00 without text: 1000 * 10^frac_digits cents, 2 in both locales
my $oracle = q{SELECT k, count(*) AS n FROM src WHERE m > 1000::int8::money GROUP BY k};
$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  SET lc_monetary = 'C';
  CREATE EXTENSION pg_cq;
  CREATE TABLE src (k int, m money);
  SELECT cq.create_query('q', 'SELECT k, count(*) AS n FROM src WHERE m > ''$1,000.00''::money GROUP BY k',
                         output_mode => 'update', "trigger" => 'available_now');
});
my $diff = qq{SELECT count(*) FROM ((TABLE q EXCEPT ALL $oracle) UNION ALL ($oracle EXCEPT ALL TABLE q)) x};

my $s = $node->background_psql('postgres', on_error_stop => 0);
$s->query_safe(q{SET client_min_messages = warning; SET cq.run_in_worker = off; SET lc_monetary = 'C';});
is($s->query_safe(q{SELECT '$1,000.00'::money::numeric}), '1000.00', 'lc_monetary C reads $1,000.00');

# rows of cents around the constant, added as integers (no text read)
my $rows = q{INSERT INTO src SELECT i % 3, (99990 + i)::int8::money / 100 FROM generate_series(0, 30) i; ANALYZE src;};

# 1. C: the statements printed and prepared under C
$s->query_safe($rows);
$s->query_safe(q{CALL cq.run('q')});
is($node->safe_psql('postgres', $diff), '0', '1: under C the target matches the query');

# 2. de_DE: ANALYZE has the saved statements analyzed anew under it
$s->query_safe(q{SET lc_monetary = 'de_DE.UTF-8'});
is($s->query_safe(q{SELECT 1000::int8::money::text}), '1.000,00 €', '2: lc_monetary de_DE prints 1.000,00 €');
$s->query_safe($rows);
$s->query(q{CALL cq.run('q')});
is($s->{stderr}, '', '2: the batch under de_DE succeeds');
is($node->safe_psql('postgres', q{SELECT state || ' ' || coalesce(last_error, '-') FROM cq.queries WHERE name = 'q'}),
	'active -', '2: the query is active, no error');
is($node->safe_psql('postgres', $diff), '0', '2: under de_DE the target matches the query');

# 3. back to C
$s->query_safe(q{SET lc_monetary = 'C'});
$s->query_safe($rows);
$s->query(q{CALL cq.run('q')});
is($s->{stderr}, '', '3: the batch under C again succeeds');
is($node->safe_psql('postgres', $diff), '0', '3: under C again the target matches the query');
is($node->safe_psql('postgres', q{SELECT sum(n) FROM q}), $node->safe_psql('postgres',
	q{SELECT count(*) FROM src WHERE m > 1000::int8::money}), '3: every row above the constant counted once');

$s->quit;
$node->stop;
done_testing();
