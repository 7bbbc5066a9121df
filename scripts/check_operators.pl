#!/usr/bin/env perl
# scripts/check_operators.pl -- fixed SQL that runs with elevated rights spells
# its operators OPERATOR(pg_catalog.x) (issue 13; STYLE.md "SQL built in C").
#
# The rule.  Scope: every module of src/ except the batch-SQL builders
# (@BUILDERS below).  The others run their SQL with rights the caller lacks:
# as the bootstrap superuser (security.c's superuser sections; the scheduler,
# launcher and workers, which connect as superuser) or as a query's owner.
# The builders generate the statements of a batch: they run as the query's
# owner with search_path pinned to pg_catalog, pg_temp, and compare user
# values with operators built from OIDs (OPERATOR(schema.op) from
# pg_operator), never by name.
#
# In scope, every SQL statement written as C string literals (adjacent
# literals are joined, as the compiler does; a statement is a string that
# starts with SELECT, WITH, INSERT, UPDATE, DELETE, WHERE, AND, OR or ON, or
# that has a WHERE, JOIN or RETURNING clause)
# must not use a comparison operator (=, <>, !=, <, >, <=, >=, IS DISTINCT
# is fine) outside OPERATOR(...).  Not comparisons, so allowed: the
# assignments of a SET list (UPDATE ... SET a = $1, b = $2 up to WHERE /
# FROM / RETURNING), named-argument "=>", and "%s" placeholders, whose
# operator text is generated (and then built from OIDs).
# Also: only security.c switches users or sets search_path (elsewhere a
# SetUserIdAndSecContext call or a "search_path" setting is a violation).
# Prints one line per violation; exits 1 if there is any.
# Usage: scripts/check_operators.pl [SRCDIR]
use strict;
use warnings;
use File::Basename qw(basename dirname);

my @BUILDERS = qw(aggregates analyze delta state sink plan);
my %builder = map { $_ => 1 } @BUILDERS;

my $src = shift // dirname(__FILE__) . '/../src';
my $bad = 0;
my $nstmt = 0;

for my $f (sort glob("$src/*.c")) {
    (my $m = basename($f)) =~ s/\.c$//;
    open(my $fh, '<', $f) or die "$f: $!";
    local $/;
    my $t = <$fh>;
    close $fh;
    # blank out comments, keeping line numbers
    $t =~ s{/\*.*?\*/}{ my $c = $&; $c =~ s/[^\n]/ /g; $c }gse;
    if ($m ne 'security') {
        while ($t =~ /(SetUserIdAndSecContext\s*\(|"search_path")/g) {
            my $line = 1 + (substr($t, 0, $-[1]) =~ tr/\n//);
            print "operators: $f:$line: $1 outside security.c (use cq_security_*)\n";
            $bad++;
        }
    }
    next if $builder{$m};
    # runs of adjacent string literals = one C string (a macro between two
    # literals, such as CQ_EARLIEST_OFFSET, is part of the run)
    while ($t =~ /((?:"(?:\\.|[^"\\\n])*"\s*(?:[A-Z][A-Z0-9_]*\s*(?="))?)+)/g) {
        my ($run, $pos) = ($1, $-[1]);
        my $line = 1 + (substr($t, 0, $pos) =~ tr/\n//);
        my $s = join '', ($run =~ /"((?:\\.|[^"\\\n])*)"/g);
        $s =~ s/\\"/"/g;
        next unless $s =~ /^\s*(?:SELECT|WITH|INSERT|UPDATE|DELETE|WHERE|AND|OR|ON)\b/ ||
            $s =~ /\b(?:WHERE|JOIN|RETURNING)\b/;
        $nstmt++;
        my $c = $s;
        $c =~ s/'(?:[^']|'')*'/''/g;                    # SQL string constants
        $c =~ s/OPERATOR\s*\([^)]*\)/ /g;               # spelled operators
        $c =~ s/=>/ /g;                                  # named arguments
        # SET lists: assignments, not comparisons
        $c =~ s/\bSET\b.*?(?=\bWHERE\b|\bFROM\b|\bRETURNING\b|$)/ SET /gs;
        if ($c =~ /(<>|!=|<=|>=|=|<|>)/) {
            print "operators: $f:$line: operator \"$1\" not written OPERATOR(pg_catalog.$1): $s\n";
            $bad++;
        }
    }
}
if ($bad) { print "operators: $bad violation(s) in $nstmt statements\n"; exit 1; }
print "operators: ok ($nstmt fixed SQL statements outside the builders (@BUILDERS))\n";
exit 0;
