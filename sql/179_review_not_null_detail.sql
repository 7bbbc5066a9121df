-- Session 38 review: a NOT NULL column of the target that a batch would
-- set to NULL fails the batch with the executor's error, and the writes
-- from C (store_update.c for existing groups, store_load.c for new ones)
-- must give it as the statement does, its DETAIL the failing row (values
-- cut at 64 bytes; the columns named when the owner may not read the
-- table).  They gave no DETAIL.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET cq.run_in_worker = off;
\set SHOW_CONTEXT never
CREATE TABLE nd_src (k int, t text);
INSERT INTO nd_src VALUES (1, repeat('x', 70)), (2, 'b');
-- c is NULL when a group has two rows
CREATE TABLE nd_t WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, t, nullif(count(*), 2) AS c FROM nd_src GROUP BY k, t;
SELECT state_path FROM cq.queries WHERE name = 'nd_t';
CALL cq.run('nd_t');
ALTER TABLE nd_t ALTER COLUMN c SET NOT NULL;
-- a new group (the C insert), then the statement (the setting off)
INSERT INTO nd_src VALUES (3, 'new'), (3, 'new');
CALL cq.run('nd_t');
SET cq.bulk_load = off;
CALL cq.run('nd_t');
RESET cq.bulk_load;
DELETE FROM nd_src WHERE k = 3;
SELECT cq.reset('nd_t');
CALL cq.run('nd_t');
-- an existing group (the C update), then the statement
INSERT INTO nd_src VALUES (1, repeat('x', 70));
CALL cq.run('nd_t');
SET cq.target_update_in_c = off;
CALL cq.run('nd_t');
RESET cq.target_update_in_c;
SELECT k, left(t, 3) AS t, c FROM nd_t ORDER BY k;
DROP TABLE nd_t, nd_src;
-- an owner who may not read its target: the columns it writes are named
CREATE ROLE regress_nd_owner;
CREATE SCHEMA nd AUTHORIZATION regress_nd_owner;
SET ROLE regress_nd_owner;
CREATE TABLE nd.src (k int);
INSERT INTO nd.src VALUES (1);
CREATE TABLE nd.t WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, nullif(count(*), 2) AS c FROM nd.src GROUP BY k;
CALL cq.run('nd.t');
ALTER TABLE nd.t ALTER COLUMN c SET NOT NULL;
REVOKE SELECT ON nd.t FROM regress_nd_owner;
INSERT INTO nd.src VALUES (2), (2);
CALL cq.run('nd.t');
SET cq.bulk_load = off;
CALL cq.run('nd.t');
RESET cq.bulk_load;
RESET ROLE;
DROP SCHEMA nd CASCADE;
DROP ROLE regress_nd_owner;
