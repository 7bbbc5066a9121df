-- Update mode on the store: a batch whose changed groups are all new to
-- the state writes them by the plain INSERT alone (CqStoreSql.sink_new,
-- session 34) instead of the upsert.  A statement-level trigger on the
-- target fires in every batch that reads rows, as PostgreSQL fires one
-- for a statement that writes no row (docs/semantics.md): with HAVING the
-- upsert's od (DELETE of the groups that no longer pass it) fires the
-- target's statement-level DELETE triggers in every batch, the INSERT
-- alone fired none (before session 35).  Compared with the twin on the
-- table path, whose batches run the upsert: the same triggers fire, as
-- often, and cq.explain names the statement a batch of new groups runs.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SELECT pause_others() AS others_paused;
SET cq.run_in_worker = off;

CREATE TABLE sn162_src (k int, v int);
CREATE TABLE sn162_fired (target text, tg text);
CREATE FUNCTION sn162_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.sn162_fired VALUES (TG_TABLE_NAME, TG_WHEN || ' ' || TG_OP || ' ' || TG_LEVEL);
  RETURN NULL;
END $$;
CREATE TABLE sn162_mem WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM sn162_src GROUP BY k HAVING count(*) > 1;
CREATE TABLE sn162_tab WITH (cq.output_mode = 'update', cq.trigger = 'available_now', cq.state_storage = 'unlogged') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM sn162_src GROUP BY k HAVING count(*) > 1;
SELECT name, state_storage FROM cq.queries WHERE name LIKE 'sn162%' ORDER BY name;
INSERT INTO sn162_src VALUES (1, 1), (1, 2);
CALL cq.run('sn162_mem');
CALL cq.run('sn162_tab');
CREATE TRIGGER sn162_bd BEFORE DELETE ON sn162_mem FOR EACH STATEMENT EXECUTE FUNCTION sn162_note();
CREATE TRIGGER sn162_ad AFTER DELETE ON sn162_mem FOR EACH STATEMENT EXECUTE FUNCTION sn162_note();
CREATE TRIGGER sn162_ai AFTER INSERT ON sn162_mem FOR EACH STATEMENT EXECUTE FUNCTION sn162_note();
CREATE TRIGGER sn162_bd BEFORE DELETE ON sn162_tab FOR EACH STATEMENT EXECUTE FUNCTION sn162_note();
CREATE TRIGGER sn162_ad AFTER DELETE ON sn162_tab FOR EACH STATEMENT EXECUTE FUNCTION sn162_note();
CREATE TRIGGER sn162_ai AFTER INSERT ON sn162_tab FOR EACH STATEMENT EXECUTE FUNCTION sn162_note();
CREATE VIEW sn162_check AS
  SELECT (SELECT string_agg(tg || ' x' || c, ', ' ORDER BY tg) FROM (SELECT tg, count(*) AS c FROM sn162_fired
            WHERE target = 'sn162_mem' GROUP BY tg) x) AS mem_fired,
         (SELECT count(*) FROM sn162_fired WHERE target = 'sn162_mem') =
         (SELECT count(*) FROM sn162_fired WHERE target = 'sn162_tab') AS as_table_path,
         mismatches('sn162_mem', 'SELECT k, count(*), sum(v) FROM sn162_src GROUP BY k HAVING count(*) > 1') AS mem_bad,
         mismatches('sn162_tab', 'SELECT k, count(*), sum(v) FROM sn162_src GROUP BY k HAVING count(*) > 1') AS tab_bad;

-- existing groups only (the upsert: od fires the DELETE triggers)
INSERT INTO sn162_src VALUES (1, 3);
CALL cq.run('sn162_mem');
CALL cq.run('sn162_tab');
TABLE sn162_check;
TRUNCATE sn162_fired;
-- new groups only (one passes HAVING): the triggers fire as on the table path
INSERT INTO sn162_src VALUES (2, 1), (2, 2), (3, 5);
CALL cq.run('sn162_mem');
CALL cq.run('sn162_tab');
TABLE sn162_check;
TRUNCATE sn162_fired;
-- without DELETE triggers: the INSERT alone
DROP TRIGGER sn162_bd ON sn162_mem;
DROP TRIGGER sn162_ad ON sn162_mem;
DROP TRIGGER sn162_bd ON sn162_tab;
DROP TRIGGER sn162_ad ON sn162_tab;
INSERT INTO sn162_src VALUES (4, 1), (4, 2);
CALL cq.run('sn162_mem');
CALL cq.run('sn162_tab');
TABLE sn162_check;

-- cq.explain names the target statements a batch chooses from: the upsert,
-- without o1 when no group is new, the INSERT alone when all are
SELECT line FROM regexp_split_to_table(cq.explain('sn162_mem'), E'\n') AS line WHERE line ~ '^-- \d\. ';
SELECT split_part(split_part(cq.explain('sn162_mem'), E'-- 4. only new groups: ', 2), E'\n', 5) AS new_groups_statement;
DROP VIEW sn162_check;
SELECT cq.drop_query('sn162_mem', drop_target => true);
SELECT cq.drop_query('sn162_tab', drop_target => true);
DROP TABLE sn162_src, sn162_fired;
DROP FUNCTION sn162_note();
