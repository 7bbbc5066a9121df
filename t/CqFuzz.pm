# t/CqFuzz.pm -- the seeded generator of t/062_fuzz.pl and t/063_fuzz_concurrent.pl:
# random rows (special values included), random continuous queries of many
# shapes, and their oracle (SPEC.md section 2): the query itself, run as a
# plain SELECT over the rows each query processed so far minus the rows it
# dropped as late.
#
# Which rows a query processed, and with which watermark, comes from its
# committed batches: cq.offsets gives each batch's snapshot range and the
# watermark in effect (batch_watermark); record_batches() copies them into
# fz_batch and maps every source row to the batch that read it (fz_read,
# unique per query and row: a row two batches read is reported).  cq.offsets
# keeps the last 100 batches of a query, so fz_record_sql must run before
# a query runs 100 more (t/063 copies them with a trigger instead).
#
# Exactness: floats are multiples of 1/4 below 2^20 (sums exact in any
# order; the float variance family, whose result depends on the order of
# the additions, is not generated); numerics, int8, intervals are exact.
# Values equal under = that print differently (numeric 1.0 / 1.00, float
# -0 / 0, interval '1 day' / '24 hours', 'a' / 'A' under a case-insensitive
# collation, NaNs of either sign) are compared by value only where the
# result depends on which one a plan reads first (keys, min/max, DISTINCT
# sums: docs/semantics.md says so); every other column is also compared as
# text.
#
# Everything random comes from Perl's rand() after srand(seed): a seed
# reproduces the queries and rows of a run (t/062 exactly; t/063's timing
# is not reproducible).
package CqFuzz;

use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Exporter 'import';

our @EXPORT = qw(fz_setup_sql fz_rows_sql fz_gen_query fz_record_sql fz_diff_sql
  fz_wm_check_sql fz_unread_sql fz_pick fz_session fz_send fz_close fz_report);

sub fz_pick { return $_[ int(rand(scalar @_)) ]; }
sub chance { return rand() < $_[0]; }

# The source fz, the static table dim, a user aggregate with a combine
# function (the generic path), and the bookkeeping tables.  $ci: a
# case-insensitive nondeterministic ICU collation exists (column c uses it).
sub fz_setup_sql
{
	my ($ci) = @_;
	my $coll = $ci ? ' COLLATE fz_ci' : '';
	return ($ci ? "CREATE COLLATION fz_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);\n" : '')
	  . qq{
	CREATE TABLE fz (id bigint, k int, t text, c text$coll, n numeric, f float8, b int8,
	                 ts timestamptz, iv interval, arr int[], ok boolean);
	CREATE TABLE dim (k int, label text);
	INSERT INTO dim VALUES (0, 'zero'), (1, 'one'), (2, 'two'), (2, 'deux'), (3, 'three'), (NULL, 'none'), (5, 'five');
	CREATE AGGREGATE fz_nsum(numeric) (sfunc = numeric_add, stype = numeric, combinefunc = numeric_add);
	-- batches of each query (copied from cq.offsets) and the rows each read
	CREATE TABLE fz_batch (name text, batch_id bigint, start_offset pg_snapshot, end_offset pg_snapshot,
	                       wm timestamptz, watermark timestamptz, PRIMARY KEY (name, batch_id));
	CREATE TABLE fz_read (name text, id bigint, batch_id bigint, wm timestamptz, PRIMARY KEY (name, id));
	};
}

my @TEXTS = ('a', 'A', 'b', 'B', '', 'ä', 'Ä', 'a ', 'z', 'Z');

sub num_value
{
	my $r = rand();
	return 'NULL' if $r < 0.07;
	return "'NaN'" if $r < 0.09;
	return "'Infinity'" if $r < 0.105;
	return "'-Infinity'" if $r < 0.12;
	return fz_pick('1e30', '-1e30', '123456789012345678901234567890.123456789') if $r < 0.13;
	return fz_pick('1', '1.0', '1.00', '-0', '0.000') if $r < 0.25;
	my $scale = int(rand(4));
	return sprintf("%.${scale}f", rand(100) - 50);
}

sub float_value
{
	my $r = rand();
	return 'NULL' if $r < 0.07;
	return "'NaN'::float8" if $r < 0.085;
	# the NaN of an operation: on x86 its sign bit is set, unlike 'NaN'
	return "('Infinity'::float8 - 'Infinity'::float8)" if $r < 0.1;
	return "'Infinity'::float8" if $r < 0.11;
	return "'-Infinity'::float8" if $r < 0.12;
	return "'-0'::float8" if $r < 0.16;
	return "0::float8" if $r < 0.19;
	return sprintf('%.2f', (int(rand(8000)) - 4000) / 4);
}

sub int8_value
{
	my $r = rand();
	return 'NULL' if $r < 0.07;
	return 9223372036854775807 - int(rand(1000)) if $r < 0.17;
	return '(-9223372036854775807 - 1 + ' . int(rand(1000)) . ')' if $r < 0.22;
	return int(rand(2000000)) - 1000000;
}

sub interval_value
{
	return fz_pick('NULL', "'1 day'", "'24 hours'", "'1 mon'", "'30 days'", "'720 hours'",
		"'-1 day'", "'00:00:01.5'", "'1 day 1 second'", "'0'");
}

sub array_value
{
	return fz_pick('NULL', "'{}'", "'{1,2}'", "'{NULL,3}'", "'{2,2,2}'", "'{1}'", "'{0,1,2,3,4}'");
}

# SQL inserting $n rows; ids from $state->{next_id}; event times around
# $state->{base} (a Perl epoch): up to $state->{spread} seconds behind it
# (some rows are then late for the watermarked queries), NULL now and then,
# +-infinity rarely.
sub fz_rows_sql
{
	my ($state, $n) = @_;
	return '' if $n <= 0;
	my @rows;
	for (1 .. $n)
	{
		my $id = $state->{next_id}++;
		my $k = chance(0.08) ? 'NULL' : int(rand(7)) - 1;
		my $t = chance(0.08) ? 'NULL' : "'" . fz_pick(@TEXTS) . "'";
		my $c = chance(0.08) ? 'NULL' : "'" . fz_pick(@TEXTS) . "'";
		my $ts;
		my $r = rand();
		if ($r < 0.03) { $ts = 'NULL'; }
		elsif ($r < 0.04) { $ts = "'infinity'"; }
		elsif ($r < 0.05) { $ts = "'-infinity'"; }
		else
		{
			my $sec = $state->{base} - rand($state->{spread});
			$sec = int($sec) if chance(0.5);    # rows at the same time, on window bounds
			$ts = sprintf("to_timestamp(%.3f)", $sec);
		}
		my $ok = fz_pick('NULL', 'true', 'false', 'true');
		push @rows, "($id, $k, $t, $c, " . num_value() . ', ' . float_value() . ', ' . int8_value()
		  . ", $ts, " . interval_value() . ', ' . array_value() . ", $ok)";
	}
	return 'INSERT INTO fz (id, k, t, c, n, f, b, ts, iv, arr, ok) VALUES ' . join(",\n  ", @rows) . ";\n";
}

# grouping keys: [expression, safe as text]
my @KEYS = (
	[ 'fz.k', 1 ], [ 'fz.t', 1 ], [ 'fz.c', 0 ], [ 'fz.n', 0 ], [ 'fz.f', 0 ], [ 'fz.iv', 0 ],
	[ 'fz.ok', 1 ], [ "date_trunc('hour', fz.ts)", 1 ], [ 'fz.k % 3', 1 ], [ 'lower(fz.t)', 1 ],
	[ 'fz.b % 5', 1 ], [ 'fz.n > 0', 1 ], [ 'round(fz.n)', 0 ]);

# aggregates: [call, safe as text, generic (not allowed with DISTINCT/session), distinct]
my @AGGS = (
	[ 'count(*)', 1 ], [ 'count(fz.n)', 1 ], [ 'count(fz.c)', 1 ],
	[ 'sum(fz.k)', 1 ], [ 'sum(fz.n)', 1 ], [ 'sum(fz.f)', 1 ], [ 'sum(fz.b)', 1 ], [ 'sum(fz.iv)', 1 ],
	[ 'avg(fz.k)', 1 ], [ 'avg(fz.n)', 1 ], [ 'avg(fz.f)', 1 ], [ 'avg(fz.b)', 1 ], [ 'avg(fz.iv)', 1 ],
	[ 'min(fz.k)', 1 ], [ 'max(fz.n)', 0 ], [ 'min(fz.f)', 0 ], [ 'max(fz.t)', 1 ], [ 'min(fz.c)', 0 ],
	[ 'max(fz.ts)', 1 ], [ 'min(fz.ts)', 1 ], [ 'max(fz.iv)', 0 ],
	[ 'bool_and(fz.ok)', 1 ], [ 'bool_or(fz.ok)', 1 ], [ 'every(fz.ok)', 1 ],
	[ 'bit_and(fz.k)', 1 ], [ 'bit_or(fz.b)', 1 ], [ 'bit_xor(fz.k)', 1 ],
	[ 'var_samp(fz.n)', 1 ], [ 'var_pop(fz.b)', 1 ], [ 'stddev_samp(fz.k)', 1 ], [ 'stddev_pop(fz.n)', 1 ],
	[ 'regr_count(fz.f, fz.k)', 1, 1 ], [ 'regr_avgx(fz.f, fz.k)', 1, 1 ], [ 'fz_nsum(fz.n)', 1, 1 ],
	[ 'count(DISTINCT fz.t)', 1, 0, 1 ], [ 'count(DISTINCT fz.c)', 1, 0, 1 ], [ 'count(DISTINCT fz.f)', 1, 0, 1 ],
	[ 'sum(DISTINCT fz.k)', 1, 0, 1 ], [ 'sum(DISTINCT fz.n)', 0, 0, 1 ], [ 'avg(DISTINCT fz.b)', 1, 0, 1 ],
	[ 'count(DISTINCT fz.iv)', 1, 0, 1 ], [ 'var_pop(DISTINCT fz.k)', 1, 0, 1 ]);

my @FILTERS = ('fz.k > 2', 'fz.n > 0', 'fz.t IS NOT NULL', 'fz.ok', 'fz.f < 0', "fz.c = 'a'");
my @HAVING = ('count(*) % 2 = 0', 'sum(fz.k) > 5', 'max(fz.k) < 5', 'count(*) > 1', 'bool_or(fz.ok)',
	'min(fz.n) < 0');
my @WHERE = ('fz.k IS DISTINCT FROM 3', 'fz.n IS NULL OR fz.n < 40', "fz.t <> 'b'",
	'NOT coalesce(fz.ok, false)', "fz.c <> 'a'");
my @DELAYS = ('10 seconds', '30 seconds', '1 minute', '3 minutes');

# A random query: a hash with name, sql (the continuous query), opts (the
# cq.create_query arguments), and what its oracle needs: from (the FROM
# clause, "fz" the source), win_end (window end expression, for late rows),
# cols (output columns: [name, safe as text]).  $kinds: the kinds allowed.
sub fz_gen_query
{
	my ($name, @kinds) = @_;
	my $kind = fz_pick(@kinds);
	my %q = (name => $name, kind => $kind, opts => {});
	my @storage = ('', "'unlogged'", "'logged'");

	if ($kind eq 'agg' || $kind eq 'win' || $kind eq 'session')
	{
		my (@sel, @group, @cols);
		my $from = 'fz';
		my $extra_key = [];
		my $srf = 0;
		if ($kind eq 'agg')
		{
			my $r = rand();
			if ($r < 0.12) { $from = 'fz JOIN dim d ON d.k = fz.k'; $extra_key = [ 'd.label', 1 ]; }
			elsif ($r < 0.2) { $from = 'fz LEFT JOIN dim d ON d.k = fz.k'; $extra_key = [ 'd.label', 1 ]; }
			elsif ($r < 0.3) { $from = 'fz, LATERAL unnest(fz.arr) AS u(x)'; $extra_key = [ 'u.x', 1 ]; $srf = 1; }
			$q{opts}{source} = "'fz'" if $from =~ /dim/;
			my @keys = (@KEYS, @$extra_key ? ($extra_key) x 3 : ());
			my $nk = int(rand(3));
			$nk = 0 if chance(0.1);
			my %seen;
			for (1 .. $nk)
			{
				my $key = fz_pick(@keys);
				next if $seen{ $key->[0] }++;
				push @group, $key;
			}
		}
		elsif ($kind eq 'win')
		{
			my $r = rand();
			my $delay = fz_pick(@DELAYS);
			$q{opts}{event_time} = "'ts'";
			$q{opts}{watermark} = "'$delay'";
			$q{delay} = $delay;
			# a static table joined: the watermark counts the rows that find a partner
			my $j = rand();
			$from = 'fz JOIN dim d ON d.k = fz.k' if $j < 0.15;
			$from = 'fz LEFT JOIN dim d ON d.k = fz.k' if $j >= 0.15 && $j < 0.25;
			$q{opts}{source} = "'fz'" if $from ne 'fz';
			$q{wm_from} = $from;
			if ($r < 0.35)
			{
				my $size = fz_pick(10, 30, 60);
				my $slide = chance(0.5) ? fz_pick(grep { $_ < $size } (5, 10, 20)) : undef;
				$from .= ($from eq 'fz' ? ', LATERAL' : ' CROSS JOIN LATERAL')
				  . " cq.window(fz.ts, '$size seconds'" . (defined $slide ? ", '$slide seconds'" : '') . ') AS w';
				push @group, [ 'w.window_start', 1 ], [ 'w.window_end', 1 ];
				$q{win_end} = 'w.window_end';
			}
			elsif ($r < 0.6)
			{
				my $size = fz_pick(7, 20, 45);
				push @group, [ "date_bin('$size seconds', fz.ts, '2024-01-01')", 1 ];
				$q{win_end} = "date_bin('$size seconds', fz.ts, '2024-01-01') + interval '$size seconds'";
			}
			elsif ($r < 0.8)
			{
				push @group, [ "date_trunc('minute', fz.ts)", 1 ];
				$q{win_end} = "date_trunc('minute', fz.ts) + interval '1 minute'";
			}
			else
			{
				push @group, [ 'fz.ts', 1 ];
				$q{win_end} = 'fz.ts';
			}
			push @group, fz_pick(grep { $_->[0] !~ /ts/ } @KEYS) if chance(0.5);
			push @group, [ 'd.label', 1 ] if $from =~ /dim/ && chance(0.5);
		}
		else
		{
			my $gap = fz_pick(20, 45, 90);
			$from = "fz, LATERAL cq.session_window(fz.ts, interval '$gap seconds') AS s";
			$q{gap} = $gap;
			push @group, fz_pick([ 'fz.k', 1 ], [ 'fz.t', 1 ], [ 'fz.ok', 1 ], [ 'fz.k % 3', 1 ]);
			push @group, [ 's.session_start', 1 ], [ 's.session_end', 1 ];
		}
		my $i = 0;
		for my $g (@group)
		{
			push @sel, "$g->[0] AS g$i";
			push @cols, [ "g$i", $g->[1] ];
			$i++;
		}
		my $mode;
		if ($kind eq 'agg') { $mode = chance(0.7) ? 'update' : 'complete'; }
		elsif ($kind eq 'win') { $mode = fz_pick('append', 'append', 'update', 'update', 'complete'); }
		else
		{
			$mode = chance(0.75) ? 'update' : 'complete';
			# complete mode drops no row and evicts nothing, with a watermark too
			if ($mode eq 'complete' && chance(0.5))
			{
				$q{opts}{event_time} = "'ts'";
				$q{opts}{watermark} = "'" . fz_pick(@DELAYS) . "'";
			}
		}
		my $na = 1 + int(rand(5));
		my ($distinct, $generic) = (0, 0);
		my %seen;
		for my $j (1 .. $na)
		{
			my $a = fz_pick(@AGGS);
			next if ($kind eq 'session' && $a->[3]);
			my $call = $a->[0];
			$call =~ s/fz\.\w+/u.x/ if $srf && chance(0.5) && $call =~ /fz\.(k|b)\b/;
			if (chance(0.2) && $call ne 'count(*)')
			{
				$call .= ' FILTER (WHERE ' . fz_pick(@FILTERS) . ')';
			}
			elsif (chance(0.15) && $call eq 'count(*)')
			{
				$call .= ' FILTER (WHERE ' . fz_pick(@FILTERS) . ')';
			}
			next if $seen{$call}++;
			$distinct = 1 if $a->[3];
			$generic = 1 if $a->[2];
			push @sel, "$call AS a$j";
			push @cols, [ "a$j", $a->[1] ];
		}
		push @sel, 'count(*) AS a0' if !grep { /^(count|sum|avg|min|max|bool|every|bit|var|stddev|regr|fz_nsum)/ } @sel;
		push @cols, [ 'a0', 1 ] if $sel[-1] eq 'count(*) AS a0';
		$q{where} = chance(0.3) ? fz_pick(@WHERE) : undef;
		$q{having} = chance(0.25) ? fz_pick(@HAVING) : undef;
		$q{from} = $from;
		$q{group} = [ map { $_->[0] } @group ];
		$q{sel} = [@sel];
		$q{sql} = build_sql(\%q, $from, [ $q{where} ], [ $q{having} ]);
		$q{cols} = \@cols;
		$q{mode} = $mode;
		$q{opts}{output_mode} = "'$mode'";
		$q{opts}{complete_refresh} = "'delete'" if $mode eq 'complete' && chance(0.5);
		push @storage, '', "'memory'", "'memory'" if !$distinct && $kind ne 'session';
		my $st = fz_pick(@storage);
		$q{opts}{state_storage} = $st if $st ne '';
	}
	elsif ($kind eq 'dedup')
	{
		my @pool = ([ 'fz.k', 1 ], [ 'fz.t', 1 ], [ 'fz.c', 0 ], [ 'fz.n', 0 ], [ 'fz.f', 0 ], [ 'fz.iv', 0 ], [ 'fz.ok', 1 ]);
		my @keys;
		my %seen;
		for (1 .. 1 + int(rand(2)))
		{
			my $k = fz_pick(@pool);
			push @keys, $k unless $seen{ $k->[0] }++;
		}
		my $i = 0;
		my @sel = map { "$_->[0] AS g" . $i++ } @keys;
		$q{cols} = [ map { [ 'g' . $_, $keys[$_][1] ] } 0 .. $#keys ];
		$q{where} = chance(0.3) ? fz_pick(@WHERE) : undef;
		my $where = defined $q{where} ? " WHERE $q{where}" : '';
		if (chance(0.5))
		{
			$q{sql} = 'SELECT DISTINCT ' . join(', ', @sel) . " FROM fz$where";
		}
		else
		{
			# DISTINCT ON: which row of a key is written is unspecified: the
			# oracle compares the keys, and checks the row is one of the key's
			$q{distinct_on} = scalar @keys;
			$q{sql} = 'SELECT DISTINCT ON (' . join(', ', map { $_->[0] } @keys) . ') ' . join(', ', @sel)
			  . ", fz.id AS rid FROM fz$where";
			$q{keys} = [ map { $_->[0] } @keys ];
		}
		$q{from} = 'fz';
		$q{mode} = 'append';
		$q{opts}{output_mode} = "'append'";
		my $st = fz_pick(@storage);
		$q{opts}{state_storage} = $st if $st ne '';
	}
	else    # stateless
	{
		my $r = rand();
		my ($sel, $from);
		if ($r < 0.3)
		{
			$sel = 'fz.id AS rid, fz.k AS g0, u.x AS g1, u.o AS g2';
			$from = 'fz LEFT JOIN LATERAL unnest(fz.arr) WITH ORDINALITY AS u(x, o) ON true';
			$q{cols} = [ [ 'rid', 1 ], [ 'g0', 1 ], [ 'g1', 1 ], [ 'g2', 1 ] ];
		}
		elsif ($r < 0.5)
		{
			$sel = 'fz.id AS rid, unnest(fz.arr) AS g0, fz.n * 2 AS g1';
			$from = 'fz';
			$q{cols} = [ [ 'rid', 1 ], [ 'g0', 1 ], [ 'g1', 1 ] ];
		}
		elsif ($r < 0.75)
		{
			$sel = 'fz.id AS rid, d.label AS g0, fz.iv AS g1, fz.c AS g2';
			$from = 'fz ' . fz_pick('JOIN', 'LEFT JOIN') . ' dim d ON d.k = fz.k';
			$q{opts}{source} = "'fz'";
			$q{cols} = [ [ 'rid', 1 ], [ 'g0', 1 ], [ 'g1', 1 ], [ 'g2', 1 ] ];
		}
		else
		{
			$sel = 'fz.id AS rid, fz.f AS g0, fz.ts AS g1, fz.b AS g2, fz.n AS g3';
			$from = 'fz';
			$q{cols} = [ [ 'rid', 1 ], [ 'g0', 1 ], [ 'g1', 1 ], [ 'g2', 1 ], [ 'g3', 1 ] ];
		}
		$q{where} = chance(0.4) ? fz_pick(@WHERE) : undef;
		$q{sql} = "SELECT $sel FROM $from" . (defined $q{where} ? " WHERE $q{where}" : '');
		$q{from} = $from;
		$q{mode} = fz_pick('append', 'update');
		$q{opts}{output_mode} = "'$q{mode}'";
	}
	$q{opts}{max_rows_per_trigger} = 3 + int(rand(40)) if chance(0.25);
	return \%q;
}

# The oracle of query $q: its SELECT over the rows it read (fz_read), late
# rows left out; append mode: the windows closed by the watermark in effect
# for the query's last batch ($wm: SQL for it, by default from fz_batch).
sub oracle_sql
{
	my ($q, $wm) = @_;
	my $name = $q->{name};
	$wm //= "(SELECT wm FROM fz_batch WHERE name = '$name' ORDER BY batch_id DESC LIMIT 1)";
	my $src = "(SELECT fz.*, r.wm AS fz_wm FROM fz JOIN fz_read r ON r.id = fz.id AND r.name = '$name') fz";
	(my $from = $q->{from}) =~ s/^fz\b/$src/;
	if ($q->{kind} eq 'session')
	{
		# gaps and islands over the rows read (no late rows: no watermark, or complete mode)
		my $gap = "interval '$q->{gap} seconds'";
		my $key = $q->{group}[0];
		my @sel = @{ $q->{sel} };
		my @out;
		for my $s (@sel)
		{
			(my $e = $s) =~ s/\s+AS\s+(\w+)$//;
			my $alias = $1;
			if ($e eq $key) { push @out, "fz.g AS $alias"; next; }
			$e =~ s/^s\.session_start$/min(fz.ts)/;
			$e =~ s/^s\.session_end$/max(fz.ts) + $gap/;
			push @out, "$e AS $alias";
		}
		my $where = defined $q->{where} ? "AND ($q->{where})" : '';
		my $having = defined $q->{having} ? " HAVING $q->{having}" : '';
		return qq{WITH r AS (SELECT fz.*, $key AS g FROM $src WHERE fz.ts IS NOT NULL AND isfinite(fz.ts) $where),
		  b AS (SELECT r.*, CASE WHEN ts <= max(ts + $gap) OVER (PARTITION BY g ORDER BY ts
		                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) THEN 0 ELSE 1 END AS brk FROM r),
		  fz AS (SELECT b.*, sum(brk) OVER (PARTITION BY g ORDER BY ts ROWS UNBOUNDED PRECEDING) AS isl FROM b)
		SELECT } . join(', ', @out) . " FROM fz GROUP BY fz.g, fz.isl$having";
	}
	if ($q->{distinct_on})
	{
		my @g = map { "g$_" } 0 .. $q->{distinct_on} - 1;
		my $where = defined $q->{where} ? " WHERE $q->{where}" : '';
		return 'SELECT DISTINCT ' . join(', ', map { "$q->{keys}[$_] AS g$_" } 0 .. $#{ $q->{keys} }) . " FROM $from$where";
	}
	if (!$q->{sel})
	{
		(my $sql = $q->{sql}) =~ s/ FROM \Q$q->{from}\E/ FROM $from/;
		return $sql;
	}
	my @where = ($q->{where});
	my @having = ($q->{having});
	if ($q->{win_end} && $q->{mode} ne 'complete')
	{
		push @where, "NOT coalesce($q->{win_end} <= fz.fz_wm, false)";
		push @having, "$q->{win_end} <= $wm" if $q->{mode} eq 'append';
	}
	return build_sql($q, $from, \@where, \@having);
}

# SELECT sel FROM from WHERE (w1) AND ... GROUP BY group HAVING (h1) AND ...
# (undefined conditions left out)
sub build_sql
{
	my ($q, $from, $where, $having) = @_;
	my @w = grep { defined } @$where;
	my @h = grep { defined } @$having;
	return 'SELECT ' . join(', ', @{ $q->{sel} }) . " FROM $from"
	  . (@w ? ' WHERE ' . join(' AND ', map { "($_)" } @w) : '')
	  . (@{ $q->{group} } ? ' GROUP BY ' . join(', ', @{ $q->{group} }) : '')
	  . (@h ? ' HAVING ' . join(' AND ', map { "($_)" } @h) : '');
}

# SQL counting the rows of target $q->{name} that differ from its oracle,
# both ways, by value and (for the columns safe as text) as text.  $wm:
# see oracle_sql.  For DISTINCT ON, the keys are compared and each written
# row must be a row of its key.
sub fz_diff_sql
{
	my ($q, $wm) = @_;
	my $t = $q->{name};
	my $o = oracle_sql($q, $wm);
	if ($q->{distinct_on})
	{
		my @g = map { "g$_" } 0 .. $q->{distinct_on} - 1;
		my $g = join(', ', @g);
		my $match = join(' AND ', map { "$q->{keys}[$_] IS NOT DISTINCT FROM t.g$_" } 0 .. $#g);
		return qq{SELECT (SELECT count(*) FROM ((SELECT $g FROM ($o) o EXCEPT ALL SELECT $g FROM $t)
		                  UNION ALL (SELECT $g FROM $t EXCEPT ALL SELECT $g FROM ($o) o)) x)
		  + (SELECT count(*) FROM $t t WHERE NOT EXISTS (SELECT 1 FROM fz WHERE fz.id = t.rid AND $match))};
	}
	# before its first batch a target is empty, even where the query over
	# no rows has one (an aggregate without GROUP BY, starting = 'latest')
	my $ran = "EXISTS (SELECT 1 FROM fz_batch WHERE name = '$t')";
	my @all = map { $_->[0] } @{ $q->{cols} };
	my @safe = map { $_->[0] } grep { $_->[1] } @{ $q->{cols} };
	my $cols = join(', ', @all);
	my $sql = qq{SELECT (SELECT count(*) FROM ((SELECT $cols FROM ($o) o EXCEPT ALL SELECT $cols FROM $t)
	                  UNION ALL (SELECT $cols FROM $t EXCEPT ALL SELECT $cols FROM ($o) o)) x)};
	if (@safe)
	{
		my $row = 'format(\'%s\', ROW(' . join(', ', @safe) . '))';
		$sql .= qq{ + (SELECT count(*) FROM ((SELECT $row FROM ($o) o EXCEPT ALL SELECT $row FROM $t)
		                  UNION ALL (SELECT $row FROM $t EXCEPT ALL SELECT $row FROM ($o) o)) y)};
	}
	return "SELECT CASE WHEN $ran THEN ($sql) ELSE 0 END";
}

# SQL recording the batches query $name committed since the last call and
# the rows each read (rows without a stamp, written before the source was
# tracked, belong to batch 0 unless $latest: starting = 'latest').  Returns, as one row: the number of batches
# recorded, the batch ids missing before them (cq.offsets keeps 100), and
# the rows read that another batch had already read.  $offsets: where the
# batches are (default cq.offsets; a table with its columns).
sub fz_record_sql
{
	my ($name, $offsets, $latest) = @_;
	$offsets //= 'cq.offsets';
	my $history = $latest ? 'false' : 'o.batch_id = 0';
	return qq{
	WITH lb AS (SELECT coalesce(max(batch_id), -1) AS b FROM fz_batch WHERE name = '$name'),
	nb AS (INSERT INTO fz_batch SELECT name, batch_id, start_offset, end_offset, batch_watermark, watermark
	         FROM $offsets, lb WHERE name = '$name' AND batch_id > lb.b RETURNING batch_id),
	nr AS (SELECT DISTINCT ON (s.id) s.id, o.batch_id, o.batch_watermark, count(*) OVER (PARTITION BY s.id) AS times
	         FROM $offsets o, lb, fz s
	        WHERE o.name = '$name' AND o.batch_id > lb.b
	          AND (CASE WHEN s.cq_xid IS NULL THEN $history
	                    ELSE pg_visible_in_snapshot(s.cq_xid, o.end_offset)
	                         AND NOT pg_visible_in_snapshot(s.cq_xid, o.start_offset) END)
	        ORDER BY s.id, o.batch_id),
	ins AS (INSERT INTO fz_read SELECT '$name', id, batch_id, batch_watermark FROM nr
	         WHERE NOT EXISTS (SELECT 1 FROM fz_read r WHERE r.name = '$name' AND r.id = nr.id) RETURNING id)
	SELECT (SELECT count(*) FROM nb) || '|' ||
	       coalesce((SELECT min(batch_id) FROM nb) - (SELECT b FROM lb) - 1, 0) || '|' ||
	       ((SELECT count(*) FROM nr WHERE times > 1)
	        + (SELECT count(*) FROM nr WHERE EXISTS (SELECT 1 FROM fz_read r WHERE r.name = '$name' AND r.id = nr.id
	                                                   AND r.batch_id <> nr.batch_id)))};
}

# Committed rows query $name has not read (after it ran over everything).
sub fz_unread_sql
{
	my ($name) = @_;
	return "SELECT count(*) FROM fz WHERE NOT EXISTS (SELECT 1 FROM fz_read r WHERE r.name = '$name' AND r.id = fz.id)";
}

# For a query with a watermark (not complete mode): its last watermark must
# be the largest finite event time of the rows it read and kept by WHERE,
# minus the delay (SPEC section 4).  Returns 't' when so.
sub fz_wm_check_sql
{
	my ($q) = @_;
	my $name = $q->{name};
	my $where = defined $q->{where} ? "AND ($q->{where})" : '';
	(my $from = $q->{wm_from} // 'fz') =~
	  s/^fz\b/(SELECT fz.* FROM fz JOIN fz_read r ON r.id = fz.id AND r.name = '$name') fz/;
	return qq{SELECT (SELECT watermark FROM fz_batch WHERE name = '$name' ORDER BY batch_id DESC LIMIT 1)
	  IS NOT DISTINCT FROM (SELECT max(fz.ts) - interval '$q->{delay}' FROM $from
	                         WHERE fz.ts IS NOT NULL AND isfinite(fz.ts) $where)};
}

# The rows that differ between query $q's oracle and its target, for a
# failure's diagnostics.
sub fz_report
{
	my ($node, $db, $q) = @_;
	my $o = oracle_sql($q);
	return "  oracle: $o\n  oracle rows not in the target:\n"
	  . $node->safe_psql($db, "SELECT * FROM (($o) EXCEPT ALL TABLE $q->{name}) x LIMIT 8")
	  . "\n  target rows not in the oracle:\n"
	  . $node->safe_psql($db, "SELECT * FROM (TABLE $q->{name} EXCEPT ALL ($o)) x LIMIT 8");
}

# A psql session in the background (a writer, or a transaction kept open).
sub fz_session
{
	my ($node, $db) = @_;
	my %b = (in => '', out => '', err => '', open => 0);
	$b{h} = IPC::Run::start([ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db) ],
		'<', \$b{in}, '>', \$b{out}, '2>', \$b{err}, IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	return \%b;
}

# Run $sql in session $b and wait for it.
sub fz_send
{
	my ($b, $sql) = @_;
	my $mark = 'fz_done_' . int(rand(1e9));
	$b->{in} .= "$sql\nSELECT '$mark';\n";
	$b->{h}->pump until $b->{out} =~ /$mark/ || !$b->{h}->pumpable;
	die "background psql failed: $b->{err}" unless $b->{out} =~ /$mark/;
	$b->{out} = '';
}

# End session $b (its server may be gone).
sub fz_close
{
	my ($b) = @_;
	$b->{in} .= "\\q\n";
	eval { $b->{h}->finish; };
	$b->{h}->kill_kill if $b->{h}->pumpable;
}

1;
