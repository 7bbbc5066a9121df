-- Issue 12 goal 1: an INSERT that leaves cq_xid to its default into the tracked source it
-- wrote last finds the table's write-path entry without a hash look-up and opens the table
-- as the relation cache entry of the statement before (src/stamp.c, fast_table_find and
-- open_fast_table), while no invalidation came.  Between single-row INSERTs of one session
-- the table and others change (a trigger added and rolled back, a source created and written
-- in a subtransaction that aborts, a table dropped and created again under its name): every
-- row is stamped with its transaction's id, and a BEFORE trigger fires while it exists.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE TABLE sro_src (k int, note text);
CREATE TABLE sro_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n FROM sro_src;
-- the rows of sro_src whose cq_xid is not the id of the transaction calling this
CREATE FUNCTION sro_other_xid() RETURNS bigint LANGUAGE sql
  AS $$ SELECT count(*) FROM sro_src WHERE cq_xid <> pg_current_xact_id() $$;
CREATE FUNCTION sro_note() RETURNS trigger LANGUAGE plpgsql
  AS $$ BEGIN NEW.note := 'trigger'; RETURN NEW; END $$;

BEGIN;
INSERT INTO sro_src VALUES (1, 'a');
INSERT INTO sro_src VALUES (2, 'a');
SELECT sro_other_xid() AS other_xid;
COMMIT;
DELETE FROM sro_src;

-- a BEFORE trigger, added and rolled back between two INSERTs of a transaction
BEGIN;
INSERT INTO sro_src VALUES (3, 'b');
SAVEPOINT s;
CREATE TRIGGER sro_before BEFORE INSERT ON sro_src FOR EACH ROW EXECUTE FUNCTION sro_note();
INSERT INTO sro_src VALUES (4, 'b');
SELECT note FROM sro_src WHERE k = 4;
ROLLBACK TO s;
INSERT INTO sro_src VALUES (5, 'b');
SELECT k, note FROM sro_src ORDER BY k;
SELECT sro_other_xid() AS other_xid;
COMMIT;
DELETE FROM sro_src;

-- another source created and written in a subtransaction that aborts, then the first again
\set sro_make_tmp 'CREATE TABLE sro_tmp (k int); CREATE TABLE sro_tmp_q WITH (cq.trigger = ''available_now'', cq.output_mode = ''update'') AS SELECT count(*) AS n FROM sro_tmp;'
BEGIN;
INSERT INTO sro_src VALUES (6, 'c');
SAVEPOINT s;
:sro_make_tmp
INSERT INTO sro_tmp VALUES (1);
INSERT INTO sro_tmp VALUES (2);
ROLLBACK TO s;
INSERT INTO sro_src VALUES (7, 'c');
SAVEPOINT s2;
:sro_make_tmp
INSERT INTO sro_tmp VALUES (3);
SELECT count(*) AS tmp_other_xid FROM sro_tmp WHERE cq_xid <> pg_current_xact_id();
ROLLBACK TO s2;
INSERT INTO sro_src VALUES (8, 'c');
SELECT k, note FROM sro_src ORDER BY k;
SELECT sro_other_xid() AS other_xid;
COMMIT;

-- the source dropped and created again under its name, with a BEFORE trigger this time
SELECT cq.drop_query('sro_q', drop_target => true);
DROP TABLE sro_src;
CREATE TABLE sro_src (k int, note text);
CREATE TABLE sro_q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT count(*) AS n FROM sro_src;
BEGIN;
INSERT INTO sro_src VALUES (9, 'd');
CREATE TRIGGER sro_before BEFORE INSERT ON sro_src FOR EACH ROW EXECUTE FUNCTION sro_note();
INSERT INTO sro_src VALUES (10, 'd');
DROP TRIGGER sro_before ON sro_src;
INSERT INTO sro_src VALUES (11, 'd');
SELECT k, note FROM sro_src ORDER BY k;
SELECT sro_other_xid() AS other_xid;
COMMIT;
CALL cq.run('sro_q');
SELECT n FROM sro_q;

SELECT cq.drop_query('sro_q', drop_target => true);
DROP TABLE sro_src;
DROP FUNCTION sro_other_xid(), sro_note();
