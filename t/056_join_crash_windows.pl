# t/050_join_crash.pl with Spark's window in the join keys as the time bound:
# date_bin(20 s) of both event times equal.  The buffers evict the rows whose
# bin ended at or before the watermark; after a kill -9 of the postmaster
# mid-batch the unlogged buffers are rebuilt with that bound, and hold what
# the logged twin's hold.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
# loaded here, at compile time, for their INIT blocks: t/050 is run with do
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

our $time_bound = q{date_bin('20 seconds', c.ts, 'epoch') = date_bin('20 seconds', i.ts, 'epoch')};
our $node_name = 'join_crash_windows';
do "$FindBin::RealBin/050_join_crash.pl";
die $@ if $@;
