# The per-backend cache of a query's analysis and SQL (src/plan.c) keeps an
# entry while what it was built from is unchanged (src/plan_deps.c), in one
# long-lived backend running batch after batch (CALL cq.run in-process):
#   1. invalidations of other objects -- ANALYZE and VACUUM of another
#      table, CREATE TEMP TABLE, a new function, type or table -- keep it
#      (session 32: any of them rebuilt every query's entry);
#   2. ANALYZE and VACUUM of the query's own source and target keep it too
#      (the relations are checked: unchanged);
#   3. every change of a dependency rebuilds it, and the batch after it is
#      right: a column added to, renamed in and dropped from the source,
#      a column type changed, the source renamed, a column added to the
#      target, a function of the query replaced and renamed, a type of the
#      query renamed, an aggregate's support function renamed, the schema
#      of all three renamed.
# Each step is followed by new rows and a batch; the target is compared
# with the plain query after each.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('plan_cache_deps');

$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE SCHEMA s;
  CREATE TYPE s.mood AS ENUM ('sad', 'ok', 'happy');
  CREATE FUNCTION s.bucket(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 % 4';
  -- a user-defined aggregate: its state and merge are made of its support functions
  CREATE FUNCTION s.isum_step(bigint, int) RETURNS bigint LANGUAGE sql IMMUTABLE
    AS 'SELECT coalesce($1, 0) + coalesce($2, 0)';
  CREATE FUNCTION s.isum_merge(bigint, bigint) RETURNS bigint LANGUAGE sql IMMUTABLE
    AS 'SELECT coalesce($1, 0) + coalesce($2, 0)';
  CREATE AGGREGATE s.isum(int) (SFUNC = s.isum_step, STYPE = bigint, COMBINEFUNC = s.isum_merge,
                                INITCOND = '0');
  CREATE TABLE src (k int, m s.mood, v int, spare int);
  INSERT INTO src SELECT i % 7, (ARRAY['sad','ok','happy'])[i % 3 + 1]::s.mood, i, 0
    FROM generate_series(1, 700) i;
  CREATE TABLE other (x int);
  INSERT INTO other SELECT generate_series(1, 1000);
  -- the plain query, as a view: it follows the renames below
  CREATE VIEW oracle AS
    SELECT s.bucket(k) AS b, m, count(*) AS n, sum(v) AS sv, s.isum(v) AS iv
      FROM src GROUP BY 1, 2;
  SELECT cq.create_query('q', 'SELECT s.bucket(k) AS b, m, count(*) AS n, sum(v) AS sv, s.isum(v) AS iv FROM src GROUP BY 1, 2',
                         output_mode => 'update', "trigger" => 'available_now');
});
my $id = $node->safe_psql('postgres', q{SELECT id FROM cq.queries WHERE name = 'q'});
my $src = 'src';
my $vcol = 'v';

# one session: each step's DDL, new rows, a batch in this backend, then a
# NOTICE with the step's name and the target's mismatches
my @steps = (
	[ 'batch 0', '', 1 ],
	[ 'no change', '', 0 ],
	[ 'other table analyzed and vacuumed', 'ANALYZE other; VACUUM other;', 0 ],
	[ 'temporary table created', 'CREATE TEMP TABLE tt (x int); CREATE TEMP TABLE tt2 (y text);', 0 ],
	[ 'other function, type and table created',
	  q{CREATE FUNCTION public.unrelated() RETURNS int LANGUAGE sql AS 'SELECT 1';
	    CREATE TYPE public.unrelated_t AS (a int); CREATE TABLE public.unrelated_r (a int);}, 0 ],
	[ 'source and target analyzed and vacuumed', 'ANALYZE src; ANALYZE q; VACUUM src; VACUUM q;', 0 ],
	[ 'column added to the source', 'ALTER TABLE src ADD COLUMN extra text;', 1 ],
	[ 'source column renamed', 'ALTER TABLE src RENAME COLUMN v TO w;', 1 ],
	[ 'source column dropped', 'ALTER TABLE src DROP COLUMN spare;', 1 ],
	[ 'source column type changed', 'ALTER TABLE src ALTER COLUMN extra TYPE varchar(20);', 1 ],
	[ 'source renamed', 'ALTER TABLE src RENAME TO src_r;', 1 ],
	[ 'column added to the target', 'ALTER TABLE q ADD COLUMN note text DEFAULT \'x\';', 1 ],
	[ 'function replaced', q{CREATE OR REPLACE FUNCTION s.bucket(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT abs($1) % 4';}, 1 ],
	[ 'function renamed', 'ALTER FUNCTION s.bucket(int) RENAME TO bucket2;', 1 ],
	[ 'type renamed', 'ALTER TYPE s.mood RENAME TO mood2;', 1 ],
	[ 'aggregate support function renamed', 'ALTER FUNCTION s.isum_merge(bigint, bigint) RENAME TO isum_merge2;', 1 ],
	[ 'schema renamed', 'ALTER SCHEMA s RENAME TO s_r;', 1 ],
	[ 'no change at the end', '', 0 ],
);

my $sql = "SET client_min_messages = debug1;\nSET cq.run_in_worker = off;\n";
my $i = 0;
for my $s (@steps)
{
	my ($name, $ddl) = @$s;

	$src = 'src_r' if $name eq 'source renamed';
	$vcol = 'w' if $name eq 'source column renamed';
	$sql .= "DO \$\$ BEGIN RAISE NOTICE 'step $i start'; END \$\$;\n";
	$sql .= "$ddl\n";
	# new rows (columns by name: they follow the renames)
	if ($i > 0)
	{
		$sql .= "INSERT INTO $src (k, m, $vcol) SELECT i % 9, 'ok', i FROM generate_series(1, 50) i;\n";
	}
	$sql .= "CALL cq.run('q');\n";
	$sql .= "DO \$\$ BEGIN RAISE NOTICE 'step $i mismatches %', (SELECT count(*) FROM ((SELECT b, m, n, sv, iv FROM q EXCEPT ALL TABLE oracle) UNION ALL (TABLE oracle EXCEPT ALL SELECT b, m, n, sv, iv FROM q)) x); END \$\$;\n";
	$i++;
}

my ($stdout, $stderr);
$node->psql('postgres', $sql, stdout => \$stdout, stderr => \$stderr, on_error_stop => 1);
unlike($stderr, qr/ERROR/, 'no step failed') or diag($stderr);

$i = 0;
for my $s (@steps)
{
	my ($name, $ddl, $build) = @$s;
	my ($seg) = $stderr =~ /NOTICE:  step $i start\n(.*?)NOTICE:  step $i mismatches/s;
	my ($mm) = $stderr =~ /NOTICE:  step $i mismatches (\d+)/;

	ok(defined $seg, "step '$name' ran");
	$seg //= '';
	my $built = () = $seg =~ /pg_cq: analysis and SQL of continuous query $id built/g;
	if ($build)
	{
		is($built, 1, "$name: the analysis and SQL are rebuilt");
	}
	else
	{
		is($built, 0, "$name: the analysis and SQL are kept");
	}
	is($mm, '0', "$name: the target matches the query");
	$i++;
}
like($stderr, qr/pg_cq: analysis and SQL of continuous query $id kept: its relations are unchanged/,
	'a relation of the query invalidated without a change: checked and kept');

$node->stop;
done_testing();
