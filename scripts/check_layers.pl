#!/usr/bin/env perl
# scripts/check_layers.pl -- the module layers of src/ (issue 13).
#
# Each module (src/NAME.c with its header src/NAME.h) has a rank in @LAYERS,
# lowest first.  A module may use only its own header and those of lower
# layers, so there is no upward dependency and no import cycle.  Checked:
#   1. includes: a .c file includes only its own header and lower modules'
#      headers; a .h file only lower modules' headers;
#   2. call graph: every cq_* function or variable a .c file uses that another
#      .c file defines belongs to a lower module (no extern declared by hand
#      to get around rule 1);
#   3. no "extern" declaration in a .c file: declarations live in headers;
#   4. every src/*.c and src/*.h belongs to a module listed here (a new file
#      must be given its layer).
# Prints one line per violation; exits 1 if there is any.
# Usage: scripts/check_layers.pl [SRCDIR]   (default: src next to this script)
use strict;
use warnings;
use File::Basename qw(basename dirname);

my @LAYERS = qw(
    guc prefault shmem inval wakeup security settings_pin sql_builder colmap rowcache snapmemo timeexpr xid48
    options catalog catalog_name catalog_ddl stamp_type citus citus_copy progress combine numagg aggregates joinspec determinism analyze
    horizon tracking insert_check summarize brin_insert brin_heap stamp offsets shard delta delta_plan state sink heappage rowload merge dedup session store_table store_private store_setup store_node store_xact store deltagg delta_page delta_scan store_sql store_load store_update store_fold store_estimate bulkload plan_deps plan
    objects restore status join_sql join batch_guard batch_index batch runner callrun handoff warm
    launcher scheduler worker
    api explain control ddl truncate window
    pg_cq
);
my %rank;
@rank{@LAYERS} = (0 .. $#LAYERS);

my $src = shift // dirname(__FILE__) . '/../src';
my @files = sort glob("$src/*.c $src/*.h");
my $bad = 0;
sub fail { print "layers: $_[0]\n"; $bad++; }

sub module_of { my $m = basename($_[0]); $m =~ s/\.[ch]$//; return $m; }

# text of a C file without comments and string literals
sub code_of {
    my ($f) = @_;
    open(my $fh, '<', $f) or die "$f: $!";
    local $/;
    my $t = <$fh>;
    $t =~ s{/\*.*?\*/}{ my $c = $&; "\n" x ($c =~ tr/\n//) }gse;
    $t =~ s{"(?:\\.|[^"\\\n])*"}{""}g;
    return $t;
}

my (%defined_in, %code);
for my $f (@files) {
    my $m = module_of($f);
    unless (exists $rank{$m}) { fail("$f: module \"$m\" has no layer (add it to \@LAYERS)"); next; }
    $code{$f} = code_of($f);
    next unless $f =~ /\.c$/;
    # definitions at the start of a line: "cq_name(" (functions) and
    # "type cq_name =" / "type cq_name;" (variables)
    while ($code{$f} =~ /^(cq_\w+)\(/mg) { $defined_in{$1} = $m; }
    while ($code{$f} =~ /^(?!static|extern)[A-Za-z][\w \t\*]*?\b(cq_\w+)\s*(?:=|;)/mg) { $defined_in{$1} = $m; }
}

for my $f (@files) {
    my $m = module_of($f);
    next unless exists $rank{$m};
    my $is_h = $f =~ /\.h$/;
    open(my $fh, '<', $f) or die "$f: $!";
    while (my $line = <$fh>) {
        next unless $line =~ /^\s*#\s*include\s+"([^"]+)\.h"/;
        my $h = $1;
        next unless -f "$src/$h.h";
        unless (exists $rank{$h}) { fail("$f:$.: includes $h.h, which has no layer"); next; }
        if ($is_h ? $rank{$h} >= $rank{$m} : ($rank{$h} > $rank{$m} || ($rank{$h} == $rank{$m} && $h ne $m))) {
            fail("$f:$.: upward include of $h.h ($h is layer $rank{$h}, $m is layer $rank{$m})");
        }
    }
    close $fh;
    next if $is_h;
    my %seen;
    my @lines = split /\n/, $code{$f};
    for my $i (0 .. $#lines) {
        fail("$f:" . ($i + 1) . ": extern declaration in a .c file (declare it in a header)")
            if $lines[$i] =~ /^\s*(?:PGDLLEXPORT\s+)?extern\b/;
        while ($lines[$i] =~ /\b(cq_\w+)\b/g) {
            my $d = $defined_in{$1} // next;
            next if $d eq $m || $seen{"$1"}++;
            fail("$f:" . ($i + 1) . ": calls up: $1 is defined in $d (layer $rank{$d}), $m is layer $rank{$m}")
                if $rank{$d} > $rank{$m};
        }
    }
}
if ($bad) { print "layers: $bad violation(s); layer order (lowest first): @LAYERS\n"; exit 1; }
print "layers: ok (" . scalar(@files) . " files; lowest first: @LAYERS)\n";
exit 0;
