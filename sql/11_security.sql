-- Security (issue 9, items 1, 4, 5).
--  1. An unprivileged role with a hostile search_path (operators, functions
--     and types of its own shadowing pg_catalog's for every type pg_cq's
--     SQL compares or casts to) attacks every entry point that runs with
--     rights it lacks: nothing of it may ever run, as superuser or as anyone
--     else.  Every shadowing object notes who ran it in a table: it must stay
--     empty, and the attacker must not become superuser.
--  4. A role sees only the queries of roles whose privileges it has.
--  5. The owner of a query is a dependency: REASSIGN OWNED moves the query,
--     DROP OWNED drops it, DROP ROLE is refused while the role owns one.
-- (The hostile database-level search_path of background processes is tested
-- by t/011_security_bgw.pl.)
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE ROLE regress_cq_sec_attacker;
CREATE ROLE regress_cq_sec_victim;
CREATE ROLE regress_cq_sec_member IN ROLE regress_cq_sec_victim;
CREATE ROLE regress_cq_sec_heir;
CREATE SCHEMA cq_sec_evil AUTHORIZATION regress_cq_sec_attacker;
CREATE SCHEMA cq_sec_victim AUTHORIZATION regress_cq_sec_victim;
GRANT USAGE ON SCHEMA cq_sec_victim TO PUBLIC;

-- what the attacker's objects saw: who ran them, as superuser or not
CREATE TABLE cq_sec_evil.log (who name, su boolean, what text);
ALTER TABLE cq_sec_evil.log OWNER TO regress_cq_sec_attacker;
GRANT INSERT ON cq_sec_evil.log TO PUBLIC;

-- the victim: a query with a few batches
SET ROLE regress_cq_sec_victim;
CREATE TABLE cq_sec_victim.src (k int, v int);
CREATE TABLE cq_sec_victim.counts WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n, sum(v) AS s FROM cq_sec_victim.src GROUP BY k WITH NO DATA;
INSERT INTO cq_sec_victim.src VALUES (1, 10), (2, 20);
CALL cq.run('cq_sec_victim.counts');
RESET ROLE;

-- the attacker's objects
SET ROLE regress_cq_sec_attacker;
CREATE FUNCTION cq_sec_evil.note(what text) RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  su boolean := (SELECT rolsuper FROM pg_roles WHERE rolname OPERATOR(pg_catalog.=) current_user);
BEGIN
  INSERT INTO cq_sec_evil.log VALUES (current_user, su, what);
  IF su THEN
    EXECUTE 'ALTER ROLE regress_cq_sec_attacker SUPERUSER';
  END IF;
  RETURN true;
END $$;

-- operators: an exact match in the first schema of the path wins (regclass,
-- regrole and name have no "=" of their own: an exact match wins even behind
-- pg_catalog)
DO $$
DECLARE
  r record;
  f text;
BEGIN
  FOR r IN SELECT * FROM (VALUES ('=', 'text'), ('<>', 'text'), ('=', 'name'),
      ('=', 'regclass'), ('=', 'regrole'), ('=', 'oid'), ('=', 'integer'),
      ('=', 'bigint'), ('<=', 'bigint'), ('>=', 'bigint'), ('<', 'bigint'), ('>', 'bigint'),
      ('=', 'xid'), ('=', 'xid8'), ('<', 'xid8'), ('>=', 'xid8'), ('=', 'uuid'),
      ('=', 'timestamptz'), ('>', 'timestamptz')) AS v(op, typ)
  LOOP
    f := 'op_' || md5(r.op || r.typ);
    EXECUTE format('CREATE FUNCTION cq_sec_evil.%I(a %s, b %s) RETURNS boolean '
                   'LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS %L',
                   f, r.typ, r.typ,
                   format('BEGIN PERFORM cq_sec_evil.note(%L); RETURN a OPERATOR(pg_catalog.%s) b; END',
                          r.op || '(' || r.typ || ')', r.op));
    EXECUTE format('CREATE OPERATOR cq_sec_evil.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = cq_sec_evil.%I)',
                   r.op, r.typ, r.typ, f);
  END LOOP;
END $$;

-- functions pg_cq calls, with the same signatures
CREATE FUNCTION cq_sec_evil.now() RETURNS timestamptz LANGUAGE plpgsql AS
  $$ BEGIN PERFORM cq_sec_evil.note('now()'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION cq_sec_evil.gen_random_uuid() RETURNS uuid LANGUAGE plpgsql AS
  $$ BEGIN PERFORM cq_sec_evil.note('gen_random_uuid()'); RETURN pg_catalog.gen_random_uuid(); END $$;
CREATE FUNCTION cq_sec_evil.pg_current_snapshot() RETURNS pg_snapshot LANGUAGE plpgsql AS
  $$ BEGIN PERFORM cq_sec_evil.note('pg_current_snapshot()'); RETURN pg_catalog.pg_current_snapshot(); END $$;
CREATE FUNCTION cq_sec_evil.quote_ident(text) RETURNS text LANGUAGE plpgsql AS
  $$ BEGIN PERFORM cq_sec_evil.note('quote_ident(text)'); RETURN pg_catalog.quote_ident($1); END $$;
CREATE FUNCTION cq_sec_evil.max_sfunc(bigint, bigint) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN PERFORM cq_sec_evil.note('max(bigint)'); RETURN pg_catalog.greatest($1, $2); END $$;
CREATE AGGREGATE cq_sec_evil.max(bigint) (sfunc = cq_sec_evil.max_sfunc, stype = bigint);
CREATE FUNCTION cq_sec_evil.string_agg_sfunc(text, text, text) RETURNS text LANGUAGE plpgsql AS
  $$ BEGIN PERFORM cq_sec_evil.note('string_agg(text, text)'); RETURN $1 || $2; END $$;
CREATE AGGREGATE cq_sec_evil.string_agg(text, text) (sfunc = cq_sec_evil.string_agg_sfunc, stype = text);
CREATE FUNCTION cq_sec_evil.count_sfunc(bigint) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN PERFORM cq_sec_evil.note('count(*)'); RETURN $1 + 1; END $$;
CREATE AGGREGATE cq_sec_evil.count(*) (sfunc = cq_sec_evil.count_sfunc, stype = bigint, initcond = '0');
CREATE FUNCTION cq_sec_evil.pg_has_role(oid, text) RETURNS boolean LANGUAGE plpgsql AS
  $$ BEGIN PERFORM cq_sec_evil.note('pg_has_role(oid, text)'); RETURN true; END $$;

-- types pg_cq casts to: domains whose check runs the note
CREATE DOMAIN cq_sec_evil.text AS pg_catalog.text CHECK (cq_sec_evil.note('::text'));
CREATE DOMAIN cq_sec_evil.oid AS pg_catalog.oid CHECK (cq_sec_evil.note('::oid'));
CREATE DOMAIN cq_sec_evil.regclass AS pg_catalog.regclass CHECK (cq_sec_evil.note('::regclass'));
CREATE DOMAIN cq_sec_evil.regrole AS pg_catalog.regrole CHECK (cq_sec_evil.note('::regrole'));
CREATE DOMAIN cq_sec_evil.pg_snapshot AS pg_catalog.pg_snapshot CHECK (cq_sec_evil.note('::pg_snapshot'));
CREATE DOMAIN cq_sec_evil.uuid AS pg_catalog.uuid CHECK (cq_sec_evil.note('::uuid'));
CREATE DOMAIN cq_sec_evil.jsonb AS pg_catalog.jsonb CHECK (cq_sec_evil.note('::jsonb'));

-- the attacker's own tables; nothing of the above runs yet
CREATE TABLE cq_sec_evil.src (k int, v int);
CREATE TABLE cq_sec_evil.src2 (k int);
CREATE TABLE cq_sec_evil.junk (x int);
INSERT INTO cq_sec_evil.src VALUES (1, 1), (2, 2);
RESET ROLE;
SELECT count(*) AS noted_so_far FROM cq_sec_evil.log;

-- now with the hostile search_path, as the attacker
SET ROLE regress_cq_sec_attacker;
SET search_path = cq_sec_evil, pg_catalog;
\set VERBOSITY terse

-- someone else's query (a query lives in its target's schema): refused before
-- anything runs
SELECT cq.drop_query('cq_sec_victim.counts');
SELECT cq.alter_query('cq_sec_victim.counts', "trigger" => '1 hour');
SELECT cq.alter_query('cq_sec_victim.counts', query => 'SELECT 1');
SELECT cq.pause('cq_sec_victim.counts');
SELECT cq.resume('cq_sec_victim.counts');
SELECT cq.reset('cq_sec_victim.counts');
CALL cq.run('cq_sec_victim.counts');
CALL cq.run('no_such_query');
ALTER TABLE cq_sec_victim.counts SET (cq.trigger = '1 hour');
DROP TABLE cq_sec_victim.counts;
DROP TABLE cq_sec_victim.src CASCADE;
TRUNCATE cq_sec_victim.src;

-- dropping one's own table while other roles' queries exist
DROP TABLE cq_sec_evil.junk;

-- the attacker's own queries, through every route
SELECT cq.create_query('evil_fn', 'SELECT k, v FROM cq_sec_evil.src',
                       "trigger" => 'available_now', target => 'cq_sec_evil.evil_fn');
CREATE TABLE cq_sec_evil.evil_ctas WITH (cq.trigger = 'available_now', cq.output_mode = 'complete')
  AS SELECT k, pg_catalog.count(*) AS n FROM cq_sec_evil.src GROUP BY k;
CREATE TABLE cq_sec_evil.evil_upd WITH (cq.trigger = 'available_now', cq.output_mode = 'update',
                                        cq.max_rows_per_trigger = '1')
  AS SELECT k, pg_catalog.sum(v) AS s FROM cq_sec_evil.src GROUP BY k WITH NO DATA;
CREATE TABLE cq_sec_evil.evil_src2 WITH (cq.trigger = 'available_now')
  AS SELECT k FROM cq_sec_evil.src2 WITH NO DATA;
ALTER TABLE cq_sec_evil.evil_ctas SET (cq.complete_refresh = 'delete', cq.trigger = 'available_now');
INSERT INTO cq_sec_evil.src VALUES (1, 3), (3, 4);
CALL cq.run('evil_fn');
CALL cq.run('evil_ctas');
CALL cq.run('evil_upd');
CALL cq.run('evil_upd', once => true);
SELECT cq.alter_query('evil_fn', max_rows_per_trigger => 5, "trigger" => 'available_now');
SELECT cq.alter_query('evil_fn', query => 'SELECT k, v FROM cq_sec_evil.src WHERE v IS NOT NULL');
SELECT cq.pause('evil_ctas');
SELECT cq.resume('evil_ctas');
SELECT cq.reset('evil_upd');
CALL cq.run('evil_upd');
TRUNCATE cq_sec_evil.src;
TRUNCATE cq_sec_evil.evil_ctas;
SELECT name, message FROM cq.status ORDER BY name;
SELECT cq.drop_query('evil_fn');
DROP TABLE cq_sec_evil.evil_ctas;
RESET ROLE;
RESET search_path;

-- a query restored from another cluster starts over at its next batch
UPDATE cq.queries SET cluster_id = 'another cluster' WHERE name = 'evil_upd';
SET ROLE regress_cq_sec_attacker;
SET search_path = cq_sec_evil, pg_catalog;
CALL cq.run('evil_upd');
SELECT k, s FROM cq_sec_evil.evil_upd ORDER BY k;
-- altering one's own query view (the hook that keeps the owner in step)
DO $$
BEGIN
  EXECUTE pg_catalog.format('ALTER VIEW cq_state.%I SET (security_barrier = false)',
                            'q_' OPERATOR(pg_catalog.||) (SELECT id FROM cq.queries
                                                           WHERE name OPERATOR(pg_catalog.=) 'evil_upd'));
END $$;
DROP TABLE cq_sec_evil.src2 CASCADE;
-- an error inside a section leaves the caller's user and path as they were
CREATE TABLE cq_sec_evil.evil_div WITH (cq.trigger = 'available_now')
  AS SELECT k, 100 / (v - v) AS x FROM cq_sec_evil.src WITH NO DATA;
DO $$
BEGIN
  CALL cq.run('evil_div');
EXCEPTION WHEN division_by_zero THEN
  RAISE WARNING 'caught "%" as %, search_path %', SQLERRM, current_user, current_setting('search_path');
END $$;
CALL cq.run('evil_div');
SELECT current_user, current_setting('search_path') AS search_path;
RESET ROLE;
RESET search_path;
\set VERBOSITY default

-- nothing of the attacker's ran, and the attacker is no superuser
SELECT who, su, what, count(*) FROM cq_sec_evil.log GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_cq_sec_attacker';
-- the victim's query is intact
SELECT name, owner, state FROM cq.queries WHERE name = 'counts';
SELECT k, n, s FROM cq_sec_victim.counts ORDER BY k;

-- item 4: each role sees the queries of the roles whose privileges it has
SET ROLE regress_cq_sec_attacker;
SELECT name, owner FROM cq.queries ORDER BY name;
SELECT DISTINCT name FROM cq.offsets ORDER BY name;
SELECT DISTINCT name FROM cq.progress ORDER BY name;
SELECT name FROM cq.status ORDER BY name;
SELECT count(*) AS slots_of_others FROM cq.status_slots() s
 WHERE s.query_id NOT IN (SELECT id FROM cq.queries);
RESET ROLE;
SET ROLE regress_cq_sec_member;
SELECT name, owner FROM cq.queries ORDER BY name;
SELECT DISTINCT name FROM cq.offsets ORDER BY name;
SELECT DISTINCT name FROM cq.progress ORDER BY name;
SELECT name FROM cq.status ORDER BY name;
-- a member may run the query (as its owner)
RESET ROLE;
SET ROLE regress_cq_sec_victim;
INSERT INTO cq_sec_victim.src VALUES (1, 1);
RESET ROLE;
SET ROLE regress_cq_sec_member;
CALL cq.run('cq_sec_victim.counts');
RESET ROLE;

-- item 5: REASSIGN OWNED moves the query with its tables ...
REASSIGN OWNED BY regress_cq_sec_victim TO regress_cq_sec_heir;
SELECT name, owner FROM cq.queries WHERE name = 'counts';
SELECT (SELECT relowner::regrole FROM pg_class WHERE oid = q.target) AS target_owner,
       (SELECT relowner::regrole FROM pg_class WHERE oid = q.state_table) AS state_owner
  FROM cq.queries q WHERE name = 'counts';
DROP OWNED BY regress_cq_sec_victim;
DROP ROLE regress_cq_sec_member, regress_cq_sec_victim;
-- ... so the heir runs it (as itself) and may alter it
SET ROLE regress_cq_sec_heir;
INSERT INTO cq_sec_victim.src VALUES (2, 5);
CALL cq.run('cq_sec_victim.counts');
SELECT cq.pause('cq_sec_victim.counts');
RESET ROLE;
SELECT k, n, s FROM cq_sec_victim.counts ORDER BY k;
SELECT name, owner, state FROM cq.queries WHERE name = 'counts';

-- DROP ROLE is refused while the role owns a query, even when its target
-- has another owner; DROP OWNED drops the query
CREATE ROLE regress_cq_sec_solo;
GRANT SELECT ON cq_sec_victim.src TO regress_cq_sec_solo;
GRANT CREATE ON SCHEMA cq_sec_victim TO regress_cq_sec_solo;
SET ROLE regress_cq_sec_solo;
CREATE TABLE cq_sec_victim.solo WITH (cq.trigger = 'available_now')
  AS SELECT k FROM cq_sec_victim.src WITH NO DATA;
RESET ROLE;
ALTER TABLE cq_sec_victim.solo OWNER TO regress_cq_sec_heir;
REVOKE SELECT ON cq_sec_victim.src FROM regress_cq_sec_solo;
REVOKE CREATE ON SCHEMA cq_sec_victim FROM regress_cq_sec_solo;
\set VERBOSITY terse
DROP ROLE regress_cq_sec_solo;
\set VERBOSITY default
SELECT name, owner FROM cq.queries WHERE name = 'solo';
DROP OWNED BY regress_cq_sec_solo;
SELECT count(*) AS left_behind FROM cq.queries WHERE name = 'solo';
DROP ROLE regress_cq_sec_solo;
-- (the target stays, as with DROP TABLE of the source ... CASCADE)
SELECT relowner::regrole FROM pg_class WHERE oid = 'cq_sec_victim.solo'::regclass;
DROP OWNED BY regress_cq_sec_heir;
SELECT count(*) AS left_behind FROM cq.queries WHERE name = 'counts';
DROP ROLE regress_cq_sec_heir;

-- clean up
DROP OWNED BY regress_cq_sec_attacker;
DROP ROLE regress_cq_sec_attacker;
SELECT count(*) AS left_behind FROM cq.queries WHERE name LIKE 'evil%';
