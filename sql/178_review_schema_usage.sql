-- Session 38 review: a batch writes its target with its owner's rights,
-- and the statement that writes it names the target: without USAGE on the
-- target's schema it fails ("permission denied for schema").  The writes
-- from C (store_update.c for existing groups, store_load.c for new ones)
-- opened the target by OID and wrote it anyway.  They now leave such a
-- target to the statement, whose error the batch gets, writing nothing.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET cq.run_in_worker = off;
-- the error by its SQLSTATE (42501: insufficient_privilege)
\set VERBOSITY sqlstate
CREATE ROLE regress_rs_owner;
CREATE SCHEMA rs_tgt;
CREATE SCHEMA rs_src AUTHORIZATION regress_rs_owner;
GRANT USAGE, CREATE ON SCHEMA rs_tgt TO regress_rs_owner;
SET ROLE regress_rs_owner;
CREATE TABLE rs_src.src (k int, v int);
INSERT INTO rs_src.src VALUES (1, 1), (2, 2);
CREATE TABLE rs_tgt.rs_t WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM rs_src.src GROUP BY k;
RESET ROLE;
SELECT state_path FROM cq.queries WHERE name = 'rs_t';
CALL cq.run('rs_tgt.rs_t');
REVOKE USAGE ON SCHEMA rs_tgt FROM regress_rs_owner;
-- new groups only (the C insert), then with an existing one (the C
-- update): the statement's error both times, the target as it was
INSERT INTO rs_src.src VALUES (3, 30);
CALL cq.run('rs_tgt.rs_t');
SELECT * FROM rs_tgt.rs_t ORDER BY k;
INSERT INTO rs_src.src VALUES (1, 10);
CALL cq.run('rs_tgt.rs_t');
SELECT * FROM rs_tgt.rs_t ORDER BY k;
-- the same with the statement (the setting off)
SET cq.target_update_in_c = off;
CALL cq.run('rs_tgt.rs_t');
RESET cq.target_update_in_c;
-- USAGE granted again: the batch writes
GRANT USAGE ON SCHEMA rs_tgt TO regress_rs_owner;
INSERT INTO rs_src.src VALUES (1, 100);
CALL cq.run('rs_tgt.rs_t');
SELECT * FROM rs_tgt.rs_t ORDER BY k;
SELECT count(*) AS mismatches FROM (
  (SELECT k, n, s FROM rs_tgt.rs_t EXCEPT SELECT k, count(*), sum(v) FROM rs_src.src GROUP BY k)
  UNION ALL
  (SELECT k, count(*), sum(v) FROM rs_src.src GROUP BY k EXCEPT SELECT k, n, s FROM rs_tgt.rs_t)) x;
DROP TABLE rs_tgt.rs_t;
DROP SCHEMA rs_src CASCADE;
DROP SCHEMA rs_tgt;
DROP ROLE regress_rs_owner;
