-- Adversarial probes (session 30): what sql/11_security.sql and
-- sql/14_tracking_rights.sql leave out, as an attacker and as a careful user.
--  1. A query's internal state table cq_state.s_<id> belongs to the query's
--     owner, who may put triggers on it or turn it into a view.  pg_cq
--     writes it (the image of a shared-memory store) and reads it
--     (cq.state_rows before a store exists): the owner's code there must run
--     as the owner, never as superuser.  (It ran as superuser before.)
--  2. Every cq.* function on another role's query is refused (or shows
--     nothing); cq.state_store_info showed another role's store size before.
--     The internal functions granted to PUBLIC refuse forged input.
--  3. The DDL hooks against another role's tables, by a role with CREATE in
--     the other role's schema; names that need quoting; option extremes.
--  4. The source's privileges after creation: a REVOKE makes the query fail,
--     row-level security filters every batch, batch 0 over history included.
-- Errors whose text holds an internal id go through try(), which shows the
-- SQLSTATE and the message with its digits as #.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE FUNCTION public.cq117_try(stmt text, mask boolean DEFAULT true) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE stmt;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || CASE WHEN mask THEN regexp_replace(SQLERRM, '[0-9]+', '#', 'g') ELSE SQLERRM END;
END $$;

CREATE ROLE regress_cq117_attacker;
CREATE ROLE regress_cq117_victim;
CREATE SCHEMA cq117_evil AUTHORIZATION regress_cq117_attacker;
CREATE SCHEMA cq117_victim AUTHORIZATION regress_cq117_victim;
GRANT USAGE ON SCHEMA cq117_victim TO PUBLIC;

-- what the attacker's code saw: who ran it, as superuser or not
CREATE TABLE cq117_evil.log (who name, su boolean, what text);
ALTER TABLE cq117_evil.log OWNER TO regress_cq117_attacker;
GRANT INSERT ON cq117_evil.log TO PUBLIC;

-- the victim: a query on the shared-memory store with a batch, and one whose
-- text holds a literal
SET ROLE regress_cq117_victim;
CREATE TABLE cq117_victim.src (k int, v int, secret text);
CREATE TABLE cq117_victim.counts WITH (cq.trigger = 'available_now', cq.output_mode = 'update',
                                       cq.state_storage = 'memory')
  AS SELECT k, count(*) AS n, sum(v) AS s FROM cq117_victim.src GROUP BY k WITH NO DATA;
INSERT INTO cq117_victim.src VALUES (1, 10, 'password=hunter2'), (2, 20, 'x'), (1, 5, 'y');
CALL cq.run('cq117_victim.counts');
CREATE TABLE cq117_victim.filtered WITH (cq.trigger = 'available_now')
  AS SELECT k FROM cq117_victim.src WHERE secret <> 'password=hunter2' WITH NO DATA;
RESET ROLE;
SELECT id AS filtered_id FROM cq.queries WHERE name = 'filtered' \gset
SELECT id AS victim_id, state_table AS victim_state FROM cq.queries WHERE name = 'counts' \gset
SELECT cq.state_store_info('cq117_victim.counts') IS NOT NULL AS victim_store_in_memory;

-- the attacker's code: notes who runs it; as superuser it makes its role one
SET ROLE regress_cq117_attacker;
CREATE FUNCTION cq117_evil.note(what text) RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  su boolean := (SELECT rolsuper FROM pg_roles WHERE rolname OPERATOR(pg_catalog.=) current_user);
BEGIN
  INSERT INTO cq117_evil.log VALUES (current_user, su, what);
  IF su THEN
    EXECUTE 'ALTER ROLE regress_cq117_attacker SUPERUSER';
  END IF;
  RETURN true;
END $$;
CREATE FUNCTION cq117_evil.on_state() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM cq117_evil.note(TG_WHEN || ' ' || TG_OP || ' ' || TG_LEVEL || ' on the state table');
  IF TG_LEVEL = 'ROW' THEN
    RETURN NEW;
  END IF;
  RETURN NULL;
END $$;
CREATE TABLE cq117_evil.src (k int, v int);
INSERT INTO cq117_evil.src VALUES (1, 1), (2, 2), (1, 3);

-- 1a. state_storage 'logged' on the store: every batch 0 writes the image
-- into the state table (TRUNCATE, then the rows).  The owner's triggers on
-- it run as the owner.
CREATE TABLE cq117_evil.imaged WITH (cq.trigger = 'available_now', cq.output_mode = 'update',
                                     cq.state_storage = 'logged')
  AS SELECT k, count(*) AS n FROM cq117_evil.src GROUP BY k WITH NO DATA;
SELECT state_path FROM cq.queries WHERE name = 'imaged';
DO $$
DECLARE
  st regclass := (SELECT state_table FROM cq.queries WHERE name = 'imaged');
BEGIN
  EXECUTE format('CREATE TRIGGER t_truncate BEFORE TRUNCATE ON %s '
                 'FOR EACH STATEMENT EXECUTE FUNCTION cq117_evil.on_state()', st);
  EXECUTE format('CREATE TRIGGER t_insert BEFORE INSERT ON %s '
                 'FOR EACH ROW EXECUTE FUNCTION cq117_evil.on_state()', st);
END $$;
CALL cq.run('cq117_evil.imaged');
SELECT k, n FROM cq117_evil.imaged ORDER BY k;
RESET ROLE;
SELECT count(*) AS image_rows FROM cq.logged_state_images i JOIN cq.queries q ON q.id = i.query_id
 WHERE q.name = 'imaged';
SELECT who, su, what, count(*) FROM cq117_evil.log GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_cq117_attacker';
TRUNCATE cq117_evil.log;

-- 1b. The owner cannot add an index to it (pg_cq rebuilds the state
-- table's indexes in superuser sections): CREATE INDEX needs CREATE on
-- schema cq_state.
SET ROLE regress_cq117_attacker;
CREATE TABLE cq117_evil.indexed WITH (cq.trigger = 'available_now', cq.output_mode = 'update',
                                      cq.state_storage = 'unlogged')
  AS SELECT k, count(*) AS n FROM cq117_evil.src GROUP BY k WITH NO DATA;
SELECT public.cq117_try(format('CREATE INDEX ON %s (n)', state_table))
  FROM cq.queries WHERE name = 'indexed';
CALL cq.run('cq117_evil.indexed');
SELECT k, n FROM cq117_evil.indexed ORDER BY k;
RESET ROLE;

-- 1c. Before its first batch a query on the store has no store:
-- cq.state_rows reads its state table.  Its owner drops the table's indexes
-- and turns the (empty) table into a view (PostgreSQL 15 still converts an
-- empty table with a "_RETURN" rule) that runs the attacker's code.
SET ROLE regress_cq117_attacker;
CREATE TABLE cq117_evil.viewed WITH (cq.trigger = 'available_now', cq.output_mode = 'update',
                                     cq.state_storage = 'logged')
  AS SELECT k, count(*) AS n FROM cq117_evil.src GROUP BY k WITH NO DATA;
DO $$
DECLARE
  st regclass := (SELECT state_table FROM cq.queries WHERE name = 'viewed');
  i regclass;
BEGIN
  FOR i IN SELECT indexrelid::regclass FROM pg_index WHERE indrelid = st LOOP
    EXECUTE format('DROP INDEX %s', i);
  END LOOP;
END $$;
-- (VACUUM clears relhasindex, which the conversion checks; it skips the
-- tables of other roles)
SET client_min_messages = error;
VACUUM;
SET client_min_messages = warning;
DO $$
DECLARE
  st regclass := (SELECT state_table FROM cq.queries WHERE name = 'viewed');
BEGIN
  EXECUTE format('CREATE RULE "_RETURN" AS ON SELECT TO %s DO INSTEAD SELECT %s WHERE cq117_evil.note(%L)',
                 st, (SELECT string_agg(format('NULL::%s AS %I', format_type(atttypid, atttypmod), attname),
                                        ', ' ORDER BY attnum)
                        FROM pg_attribute WHERE attrelid = st AND attnum > 0 AND NOT attisdropped),
                 'the state table, a view now, read');
END $$;
SELECT relkind FROM pg_class WHERE oid = (SELECT state_table FROM cq.queries WHERE name = 'viewed');
SELECT public.cq117_try(format('SELECT * FROM cq.state_rows(%s, NULL::%s)', id, state_table))
  FROM cq.queries WHERE name = 'viewed';
RESET ROLE;
SELECT who, su, what, count(*) FROM cq117_evil.log GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_cq117_attacker';
TRUNCATE cq117_evil.log;

-- 1d. The columns of a state table are pg_cq's: the store keeps its rows in
-- the table's layout (a column type changed under it had its rows read as
-- the new type), batches name its columns.  Its owner may not ALTER it or
-- rename its columns, nor make it a source (tracking alters it).
SET ROLE regress_cq117_attacker;
SELECT a AS change, public.cq117_try(format('ALTER TABLE %s %s', state_table, a))
  FROM cq.queries, unnest(ARRAY['ALTER COLUMN n TYPE text', 'ADD COLUMN x int', 'DROP COLUMN n',
                                'ALTER COLUMN n SET DEFAULT 0', 'ENABLE ROW LEVEL SECURITY',
                                'RENAME COLUMN n TO m']) a
 WHERE name = 'imaged';
SELECT public.cq117_try(format('SELECT cq.create_query(%L, %L, "trigger" => %L, target => %L)',
                               'from_state', format('SELECT g1 FROM %s', state_table), 'available_now',
                               'cq117_evil.from_state'))
  FROM cq.queries WHERE name = 'imaged';
RESET ROLE;

-- 2. the victim's query, through every function, by the attacker
SET ROLE regress_cq117_attacker;
\set VERBOSITY terse
SELECT * FROM cq.state_store_info('cq117_victim.counts');
SELECT cq.explain('cq117_victim.counts');
SELECT public.cq117_try(format('SELECT * FROM cq.state_rows(%s, NULL::%s)', :victim_id, :'victim_state'));
SELECT public.cq117_try(format('SELECT * FROM cq.state_rows(%s, NULL::cq117_evil.src)', :victim_id));
SELECT public.cq117_try(format('SELECT * FROM %s', :'victim_state'));
SELECT public.cq117_try(format('SELECT * FROM cq_state.f_%s', :victim_id));
SELECT public.cq117_try(format('SELECT * FROM cq_state.q_%s', :victim_id));
SELECT public.cq117_try(format('ALTER VIEW cq_state.q_%s OWNER TO regress_cq117_attacker', :victim_id));
SELECT public.cq117_try(format('CREATE TRIGGER t BEFORE TRUNCATE ON %s '
                               'FOR EACH STATEMENT EXECUTE FUNCTION cq117_evil.on_state()', :'victim_state'));
SELECT public.cq117_try('SELECT * FROM cq117_victim.counts');
SELECT count(*) AS victim_rows_seen FROM cq.queries WHERE schema = 'cq117_victim';
SELECT count(*) AS victim_text_seen FROM cq.queries WHERE query LIKE '%hunter2%';
-- (documented: the text stays readable in the definition of the query's
-- internal view, as every view's definition is: keep secrets out of it)
SELECT pg_get_viewdef(format('cq_state.q_%s', :filtered_id)::regclass) LIKE '%hunter2%' AS view_definition_shows_text;
SELECT count(*) AS victim_slots_seen FROM cq.status_slots() WHERE query_id = :victim_id;
-- the internal functions granted to PUBLIC: forged states, others' aggregates
SELECT cq.agg_combine('x'::cq.agg_state, 'x'::cq.agg_state);
SELECT cq.agg_final('x'::cq.agg_state, NULL::numeric, 'pg_catalog.sum(bigint)'::regprocedure, NULL::bigint);
SELECT cq.stamp();
SELECT cq.wakeup();
SELECT * FROM cq."window"(now(), '0 seconds');
SELECT * FROM cq."window"(now(), '-1 hour');
RESET ROLE;
-- an aggregate whose EXECUTE was revoked from PUBLIC cannot be run through cq.agg_partial
CREATE FUNCTION cq117_victim.sum_sfunc(bigint, bigint) RETURNS bigint LANGUAGE sql
  AS 'SELECT coalesce($1, 0) + $2';
CREATE AGGREGATE cq117_victim.private_sum(bigint) (sfunc = cq117_victim.sum_sfunc, stype = bigint,
                                                   combinefunc = cq117_victim.sum_sfunc);
REVOKE EXECUTE ON FUNCTION cq117_victim.private_sum(bigint) FROM PUBLIC;
SET ROLE regress_cq117_attacker;
SELECT cq.agg_partial('cq117_victim.private_sum(bigint)'::regprocedure, true, v::bigint) FROM cq117_evil.src;
RESET ROLE;
\set VERBOSITY default

-- 3. a role with CREATE in the victim's schema (the privilege that once
-- sufficed to become superuser) against the victim's tables and names
GRANT CREATE ON SCHEMA cq117_victim TO regress_cq117_attacker;
SET ROLE regress_cq117_attacker;
\set VERBOSITY terse
CREATE TABLE IF NOT EXISTS cq117_victim.counts WITH (cq.trigger = 'available_now')
  AS SELECT k FROM cq117_evil.src;
SELECT cq.create_query('counts', 'SELECT k FROM cq117_evil.src', target => 'cq117_victim.counts');
SELECT cq.create_query('steal', 'SELECT k FROM cq117_evil.src', target => 'cq117_victim.counts');
SELECT cq.create_query('steal', 'SELECT k, v FROM cq117_victim.src', target => 'cq117_evil.steal');
SELECT cq.create_query('steal', 'SELECT k FROM cq117_evil.src', target => 'cq117_victim.src');
ALTER TABLE cq117_victim.counts RESET (cq.trigger);
ALTER TABLE cq117_victim.counts SET (cq.trigger = '1 hour');
ALTER TABLE cq117_victim.src SET (cq.trigger = '1 hour');
CREATE TABLE cq117_victim.mine WITH (cq.trigger = 'available_now')
  AS SELECT k, v FROM cq117_victim.src;
-- the attacker's query in the victim's schema is the attacker's: the victim
-- cannot run it, and runs its own under its own name
CREATE TABLE cq117_victim.planted WITH (cq.trigger = 'available_now')
  AS SELECT k FROM cq117_evil.src WITH NO DATA;
RESET ROLE;
SET ROLE regress_cq117_victim;
CALL cq.run('cq117_victim.planted');
SELECT cq.drop_query('cq117_victim.planted');
RESET ROLE;
SELECT name, owner FROM cq.queries WHERE schema = 'cq117_victim' ORDER BY name;
REVOKE CREATE ON SCHEMA cq117_victim FROM regress_cq117_attacker;

-- the hooks on other shapes of statement, by the attacker on its own tables
SET ROLE regress_cq117_attacker;
\set VERBOSITY terse
PREPARE cq117_p AS SELECT k FROM cq117_evil.src;
CREATE TABLE cq117_evil.prepared WITH (cq.trigger = 'available_now') AS EXECUTE cq117_p;
DEALLOCATE cq117_p;
CREATE TABLE cq117_evil.plain (k int) WITH (cq.trigger = 'available_now');
CREATE MATERIALIZED VIEW cq117_evil.mv WITH (cq.trigger = 'available_now') AS SELECT k FROM cq117_evil.src;
CREATE TABLE cq117_evil.bad_option WITH (cq.no_such_option = 'x') AS SELECT k FROM cq117_evil.src;
CREATE TABLE cq117_evil.bad_value WITH (cq.trigger = 'available_now', cq.max_rows_per_trigger = 'lots')
  AS SELECT k FROM cq117_evil.src;
CREATE TABLE cq117_evil.not_target (k int);
ALTER TABLE cq117_evil.not_target SET (cq.trigger = '1 hour');
ALTER TABLE cq117_evil.not_target RESET (cq.trigger);
\set VERBOSITY default
SELECT count(*) AS created FROM cq.queries WHERE schema = 'cq117_evil'
   AND name IN ('prepared', 'plain', 'mv', 'bad_option', 'bad_value', 'not_target');
RESET ROLE;

-- names: quoted, with dots, upper case and multibyte characters; 63 bytes
-- is the limit
SET ROLE regress_cq117_attacker;
SET search_path = cq117_evil;
CREATE TABLE cq117_evil."We.ird ""Näme""" WITH (cq.trigger = 'available_now', cq.output_mode = 'complete')
  AS SELECT k, count(*) AS n FROM cq117_evil.src GROUP BY k;
CALL cq.run('cq117_evil."We.ird ""Näme"""');
SELECT name, schema FROM cq.queries WHERE name LIKE 'We%';
SELECT * FROM cq117_evil."We.ird ""Näme""" ORDER BY k;
SELECT cq.drop_query('cq117_evil."We.ird ""Näme"""', drop_target => true);
SELECT cq.create_query(repeat('é', 31) || 'x', 'SELECT k FROM cq117_evil.src', "trigger" => 'available_now');
SELECT octet_length(name) FROM cq.queries WHERE name LIKE 'éé%';
SELECT cq.drop_query(repeat('é', 31) || 'x', drop_target => true);
\set VERBOSITY terse
SELECT cq.create_query(repeat('é', 32), 'SELECT k FROM cq117_evil.src', "trigger" => 'available_now');
SELECT cq.create_query('cq117_evil.' || repeat('q', 64), 'SELECT k FROM cq117_evil.src');
SELECT cq.create_query('cq117_evil."a"b"', 'SELECT k FROM cq117_evil.src');
SELECT cq.create_query('', 'SELECT k FROM cq117_evil.src');
SELECT cq.create_query('opt', 'SELECT k FROM cq117_evil.src', event_time => 'k"; DROP TABLE cq117_evil.src; --');
\set VERBOSITY default

-- option extremes: a clear error, or a query with the value as given
CREATE TABLE cq117_evil.ev (k int, ts timestamptz);
CREATE FUNCTION cq117_evil.try_create(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  r text := public.cq117_try(stmt, false);
  q record;
BEGIN
  FOR q IN SELECT name, "trigger", watermark_delay, max_rows_per_trigger FROM cq.queries
            WHERE schema = 'cq117_evil' AND name = 'opt' LOOP
    r := format('created: trigger %s, watermark %s, max_rows_per_trigger %s',
                q."trigger", q.watermark_delay, q.max_rows_per_trigger);
    PERFORM cq.drop_query('cq117_evil.opt', drop_target => true);
  END LOOP;
  RETURN r;
END $$;
SELECT t AS "trigger", cq117_evil.try_create(format(
         'SELECT cq.create_query(%L, %L, "trigger" => %L)', 'opt', 'SELECT k FROM cq117_evil.src', t))
  FROM unnest(ARRAY['-1 second', '0 seconds', '1 microsecond', '1000000 years', 'infinity',
                    'soon', 'available_now']) t;
SELECT m AS max_rows_per_trigger, cq117_evil.try_create(format(
         'SELECT cq.create_query(%L, %L, "trigger" => %L, max_rows_per_trigger => %s)',
         'opt', 'SELECT k FROM cq117_evil.src', 'available_now', m))
  FROM unnest(ARRAY[-1, 0, 9223372036854775807]) m;
SELECT w AS watermark, cq117_evil.try_create(format(
         'SELECT cq.create_query(%L, %L, %L, event_time => %L, watermark => %L)',
         'opt', 'SELECT k, count(*) AS n FROM cq117_evil.ev GROUP BY k', 'update', 'ts', w))
  FROM unnest(ARRAY['-1 minute', '0 seconds', 'infinity', '1000000 years', 'never']) w;
SELECT cq117_evil.try_create(format(
         'SELECT cq.create_query(%L, %L, %L, event_time => %L, watermark => %L)',
         'opt', 'SELECT k, count(*) AS n FROM cq117_evil.ev GROUP BY k', 'update', 'k', '1 minute'));
-- the same values given to cq.alter_query
SELECT cq.create_query('opt', 'SELECT k FROM cq117_evil.src', "trigger" => 'available_now',
                       max_rows_per_trigger => 9223372036854775807) IS NOT NULL AS created;
SELECT a AS change, public.cq117_try(format('SELECT cq.alter_query(%L, %s)', 'opt', a), false)
  FROM unnest(ARRAY['max_rows_per_trigger => -5', '"trigger" => ''-5 minutes''',
                    '"trigger" => ''1000000 years''', 'complete_refresh => ''shred''',
                    'query => ''SELECT k FROM cq117_evil.src; DROP TABLE cq117_evil.src''',
                    'query => ''''', 'max_rows_per_trigger => 1']) a;
SELECT "trigger", max_rows_per_trigger FROM cq.queries WHERE name = 'opt';
INSERT INTO cq117_evil.src VALUES (3, 3);
CALL cq.run('opt');
SELECT count(*) AS opt_rows FROM cq117_evil.opt;
SELECT cq.drop_query('opt', drop_target => true);
SELECT count(*) AS left_over FROM cq.queries WHERE schema = 'cq117_evil' AND name = 'opt';
-- a query cannot read its own target as its stream: each batch's rows would
-- be new rows for the next, without end; refused at creation and when its
-- text changes before batch 0 (the latter was accepted before session 30)
CREATE TABLE cq117_evil.echo WITH (cq.trigger = 'available_now') AS SELECT k FROM cq117_evil.src WITH NO DATA;
\set VERBOSITY terse
SELECT cq.alter_query('echo', query => 'SELECT k FROM cq117_evil.echo');
CREATE TABLE cq117_evil.echo_t (k int);
SELECT cq.create_query('echo2', 'SELECT k FROM cq117_evil.echo_t', target => 'cq117_evil.echo_t');
\set VERBOSITY default
SELECT source::regclass FROM cq.queries WHERE name = 'echo';
SELECT count(*) AS echo_tracked FROM pg_attribute WHERE attrelid = 'cq117_evil.echo'::regclass AND attname = 'cq_xid';
RESET search_path;
RESET ROLE;

-- 4. the source's privileges after creation.  The victim grants SELECT on a
-- table with row-level security: the attacker's query sees the rows the
-- policy shows it, in batch 0 over history (on the store and on the table
-- path) and after; once SELECT is revoked, its next batch fails.
SET ROLE regress_cq117_victim;
CREATE TABLE cq117_victim.shared (k int, v int);
INSERT INTO cq117_victim.shared SELECT g % 4, g FROM generate_series(1, 40) g;
CREATE TABLE cq117_victim.shared_counts WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM cq117_victim.shared GROUP BY k WITH NO DATA;
ALTER TABLE cq117_victim.shared ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_k1 ON cq117_victim.shared FOR SELECT TO regress_cq117_attacker USING (k = 1);
GRANT SELECT ON cq117_victim.shared TO regress_cq117_attacker;
RESET ROLE;
SET ROLE regress_cq117_attacker;
CREATE TABLE cq117_evil.rls_mem WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n, sum(v) AS s FROM cq117_victim.shared GROUP BY k WITH NO DATA;
CREATE TABLE cq117_evil.rls_tab WITH (cq.trigger = 'available_now', cq.output_mode = 'update',
                                      cq.state_storage = 'unlogged')
  AS SELECT k, count(*) AS n, sum(v) AS s FROM cq117_victim.shared GROUP BY k WITH NO DATA;
CREATE TABLE cq117_evil.rls_rows WITH (cq.trigger = 'available_now')
  AS SELECT k, v FROM cq117_victim.shared WITH NO DATA;
CALL cq.run('cq117_evil.rls_mem');
CALL cq.run('cq117_evil.rls_tab');
CALL cq.run('cq117_evil.rls_rows');
SELECT k, n, s FROM cq117_evil.rls_mem ORDER BY k;
SELECT k, n, s FROM cq117_evil.rls_tab ORDER BY k;
SELECT k, count(*), sum(v) FROM cq117_evil.rls_rows GROUP BY k ORDER BY k;
RESET ROLE;
SET ROLE regress_cq117_victim;
INSERT INTO cq117_victim.shared SELECT g % 4, g FROM generate_series(41, 60) g;
RESET ROLE;
SET ROLE regress_cq117_attacker;
CALL cq.run('cq117_evil.rls_mem');
CALL cq.run('cq117_evil.rls_tab');
CALL cq.run('cq117_evil.rls_rows');
SELECT k, n, s FROM cq117_evil.rls_mem ORDER BY k;
SELECT k, n, s FROM cq117_evil.rls_tab ORDER BY k;
SELECT k, count(*), sum(v) FROM cq117_evil.rls_rows GROUP BY k ORDER BY k;
RESET ROLE;
-- the victim's own query, as the table's owner, sees every row
SET ROLE regress_cq117_victim;
CALL cq.run('cq117_victim.shared_counts');
SELECT k, n FROM cq117_victim.shared_counts ORDER BY k;
REVOKE SELECT ON cq117_victim.shared FROM regress_cq117_attacker;
INSERT INTO cq117_victim.shared VALUES (1, 1000);
RESET ROLE;
SET ROLE regress_cq117_attacker;
\set VERBOSITY terse
CALL cq.run('cq117_evil.rls_mem');
\set VERBOSITY default
SELECT state, last_error FROM cq.queries WHERE name = 'rls_mem';
SELECT k, n, s FROM cq117_evil.rls_mem ORDER BY k;
RESET ROLE;

-- 5. default_tablespace: pg_cq creates a query's internal tables as
-- superuser, who may create in any tablespace; the caller's
-- default_tablespace must not place them where the caller may not create
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE regress_cq117_ts LOCATION '';
RESET allow_in_place_tablespaces;
SET ROLE regress_cq117_attacker;
CREATE TABLE cq117_evil.ts_target (k int, n bigint);
SET default_tablespace = regress_cq117_ts;
\set VERBOSITY terse
CREATE TABLE cq117_evil.ts_direct (k int);
\set VERBOSITY default
SELECT cq.create_query('ts_q', 'SELECT k, count(*) AS n FROM cq117_evil.src GROUP BY k', 'complete',
                       target => 'cq117_evil.ts_target', "trigger" => 'available_now',
                       state_storage => 'unlogged') IS NOT NULL AS created;
CALL cq.run('cq117_evil.ts_q');
RESET default_tablespace;
SELECT k, n FROM cq117_evil.ts_target ORDER BY k;
RESET ROLE;
SELECT count(*) AS in_regress_cq117_ts FROM pg_class
 WHERE reltablespace = (SELECT oid FROM pg_tablespace WHERE spcname = 'regress_cq117_ts');
-- a role that may create there keeps its default_tablespace for them
GRANT CREATE ON TABLESPACE regress_cq117_ts TO regress_cq117_attacker;
SET ROLE regress_cq117_attacker;
SET default_tablespace = regress_cq117_ts;
SELECT cq.create_query('ts_ok', 'SELECT k, count(*) AS n FROM cq117_evil.src GROUP BY k', 'complete',
                       target => 'cq117_evil.ts_ok', "trigger" => 'available_now',
                       state_storage => 'unlogged') IS NOT NULL AS created;
RESET default_tablespace;
RESET ROLE;
SELECT c.oid = q.state_table AS is_state_table, count(*) FROM pg_class c, cq.queries q
 WHERE q.name = 'ts_ok' AND c.relkind = 'r'
   AND c.reltablespace = (SELECT oid FROM pg_tablespace WHERE spcname = 'regress_cq117_ts')
 GROUP BY 1 ORDER BY 1;
SELECT cq.drop_query('cq117_evil.ts_ok', drop_target => true);
REVOKE CREATE ON TABLESPACE regress_cq117_ts FROM regress_cq117_attacker;

-- nothing of the attacker's ran as anyone else, and it is no superuser
SELECT who, su, what, count(*) FROM cq117_evil.log GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_cq117_attacker';
-- the victim's query is intact
SELECT k, n, s FROM cq117_victim.counts ORDER BY k;

-- clean up
DROP SCHEMA cq117_evil, cq117_victim CASCADE;
DROP OWNED BY regress_cq117_attacker;
DROP OWNED BY regress_cq117_victim;
DROP ROLE regress_cq117_attacker, regress_cq117_victim;
DROP FUNCTION public.cq117_try(text, boolean);
DROP TABLESPACE regress_cq117_ts;
SELECT count(*) AS left_behind FROM cq.queries WHERE schema LIKE 'cq117%';
