# CALL cq.run handed to a pool worker by name (src/handoff.c, "By name";
# src/catalog_name.c): the caller resolves the name only to the schemas
# to look in (its search_path and rights), the worker reads the query
# there and checks the caller's ownership.  Checked, with one pool worker:
#   1. the worker finds the query of the caller's search_path (two
#      schemas hold a query q; the caller's path picks s2): it runs s2.q
#      (it waits for s2.q's target, which another session locks), and only
#      s2.q moves;
#   2. a role that does not own the query gets the caller's error
#      (SQLSTATE 42501), raised in the worker (its log line), and no batch
#      ran;
#   3. a member of the owner's role runs it in the worker (the check is
#      the caller's role's, not the worker's superuser's);
#   4. a name that no schema of the path holds: 42704, from the worker;
#      a schema that does not exist: 3F000, from the caller as before;
#   5. a qualified name reaches the query of that schema.
use strict;
use warnings;
use lib 't';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CqTest;

my $node = cq_node('handoff_by_name', 'cq.max_workers = 1');

$node->safe_psql('postgres', q{
  SET client_min_messages = warning;
  CREATE EXTENSION pg_cq;
  CREATE ROLE alice LOGIN;
  CREATE ROLE bob LOGIN;
  CREATE ROLE carol LOGIN IN ROLE alice NOINHERIT;
  CREATE ROLE dave LOGIN IN ROLE alice;
  CREATE SCHEMA s1 AUTHORIZATION alice;
  CREATE SCHEMA s2 AUTHORIZATION alice;
  GRANT USAGE ON SCHEMA s1, s2 TO bob, carol, dave;
  SET ROLE alice;
  CREATE TABLE s1.src (k int, v int);
  CREATE TABLE s2.src (k int, v int);
  CREATE TABLE s1.q WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
    AS SELECT k, count(*) AS n, sum(v) AS s FROM s1.src GROUP BY k;
  CREATE TABLE s2.q WITH (cq.output_mode = 'update', cq.trigger = 'available_now')
    AS SELECT k, count(*) AS n, sum(v) AS s FROM s2.src GROUP BY k;
});

my $batches = q{SELECT schema || ':' || count(*) FROM cq.offsets WHERE name = 'q' GROUP BY schema ORDER BY schema};
my $total = q{SELECT (SELECT coalesce(sum(n), 0) FROM s1.q) || '/' || (SELECT coalesce(sum(n), 0) FROM s2.q)};

# an idle worker: the first CALL asks the scheduler for one
$node->safe_psql('postgres', "SET ROLE alice; SET client_min_messages = warning; CALL cq.run('s1.q')");
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_cq worker' AND coalesce(state, 'idle') = 'idle'}),
	'an idle pool worker');
my $worker = $node->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_cq worker'});

# 1. the caller's search_path decides, the worker runs it
$node->safe_psql('postgres', q{
  INSERT INTO s1.src SELECT i % 5, i FROM generate_series(1, 100) i;
  INSERT INTO s2.src SELECT i % 5, i FROM generate_series(1, 30) i;
});
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN; LOCK TABLE s2.q IN ACCESS EXCLUSIVE MODE;');
my $caller = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $caller->query_safe('SELECT pg_backend_pid()');
$caller->query_until(qr/started/, q{
  SET ROLE alice;
  SET search_path = s2, s1;
  SET client_min_messages = warning;
  \echo started
  CALL cq.run('q');
  \echo done
});
ok($node->poll_query_until('postgres', qq{
  SELECT count(*) = 1 FROM pg_stat_activity
   WHERE pid = $worker AND wait_event_type = 'Lock'
     AND query = 'pg_cq: CALL cq.run(''q'') for PID $pid'}),
	'1: the worker runs the call and waits for the lock on s2.q');
$locker->query_safe('COMMIT;');
$caller->query_until(qr/done/, '');
is($caller->{stderr}, '', '1: no error');
is($node->safe_psql('postgres', $total), '0/30', '1: s2.q (first in the path) got its rows, s1.q none');
$caller->quit;
$locker->quit;

# CALL cq.run(NAME) in a new session as ROLE; returns its errors (verbose)
sub call_as
{
	my ($role, $name) = @_;
	my ($ret, $out, $err) = $node->psql('postgres',
		"SET client_min_messages = warning;\n\\set VERBOSITY verbose\n\\set SHOW_CONTEXT never\n"
		  . "CALL cq.run('$name');", extra_params => [ '-U', $role ]);
	return $err;
}

# 2. not the owner: the caller's error, from the worker
my $before = $node->safe_psql('postgres', $batches);
my $offset = -s $node->logfile;
like(call_as('bob', 's1.q'), qr/ERROR:  42501: must be owner of continuous query "q"/,
	'2: a role that does not own the query is refused');
ok($node->log_contains(qr/\[$worker\] ERROR:  must be owner of continuous query "q"/, $offset),
	'2: the worker checked it');
is($node->safe_psql('postgres', $batches), $before, '2: no batch ran');
is($node->safe_psql('postgres', $total), '0/30', '2: no target moved');

# 3. roles: membership without inheritance is not enough, with it it is
like(call_as('carol', 's1.q'), qr/ERROR:  42501: must be owner of continuous query "q"/,
	'3: a member without the owner\'s privileges is refused');
is(call_as('dave', 's1.q'), '', '3: a member with the owner\'s privileges runs it');
is($node->safe_psql('postgres', $total), '100/30', '3: s1.q got its rows');

# 4. names that do not resolve
$offset = -s $node->logfile;
like(call_as('alice', 's1.nope'), qr/ERROR:  42704: continuous query "s1.nope" does not exist/,
	'4: no such query');
ok($node->log_contains(qr/\[$worker\] ERROR:  continuous query "s1.nope" does not exist/, $offset),
	'4: the worker looked for it');
like(call_as('alice', 'nope'), qr/ERROR:  42704: continuous query "nope" does not exist/,
	'4: no such query in the search_path');
like(call_as('alice', 'nosuch.q'), qr/ERROR:  3F000: schema "nosuch" does not exist/,
	'4: no such schema');

# 5. a qualified name
$node->safe_psql('postgres', q{
  INSERT INTO s1.src SELECT i % 5, i FROM generate_series(1, 10) i;
  INSERT INTO s2.src SELECT i % 5, i FROM generate_series(1, 10) i;
});
is(call_as('alice', 's2.q'), '', '5: s2.q by its qualified name');
is($node->safe_psql('postgres', $total), '100/40', '5: only s2.q moved');
is($node->safe_psql('postgres', q{SELECT count(*) FROM
  ((TABLE s2.q EXCEPT ALL SELECT k, count(*), sum(v) FROM s2.src GROUP BY k)
   UNION ALL (SELECT k, count(*), sum(v) FROM s2.src GROUP BY k EXCEPT ALL TABLE s2.q)) x}), '0',
	'5: s2.q is its query');

done_testing();
