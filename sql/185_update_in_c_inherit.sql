-- Session 39 review: the C writer of an update target on the store
-- (store_update.c) stands for the upsert statement, whose UPDATE, DELETE
-- and NOT EXISTS name the target without ONLY: they read and write the
-- rows of a table that inherits from it too.  The C writer found rows
-- through the target's own key-hash index only, so a child's row of a
-- changed group kept its old values.  An inheritance parent now takes the
-- statement; the same rows with the setting on and off.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET cq.run_in_worker = off;
CREATE TABLE ih_src (k int, v int);
INSERT INTO ih_src VALUES (1, 1), (2, 2);
CREATE TABLE ih_t WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM ih_src GROUP BY k;
SELECT state_path FROM cq.queries WHERE name = 'ih_t';
CREATE TABLE ih_child () INHERITS (ih_t);
INSERT INTO ih_child VALUES (1, 100, 100), (2, 200, 200);
-- group 1 changes, group 2 does not: the child's row of 1 is updated
INSERT INTO ih_src VALUES (1, 5);
CALL cq.run('ih_t');
SELECT tableoid::regclass AS tbl, * FROM ih_t ORDER BY 1, 2;
SET cq.target_update_in_c = off;
INSERT INTO ih_src VALUES (2, 7);
CALL cq.run('ih_t');
RESET cq.target_update_in_c;
SELECT tableoid::regclass AS tbl, * FROM ih_t ORDER BY 1, 2;
-- with HAVING: a group that leaves it is deleted from the child too
CREATE TABLE ih_h WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS
  SELECT k, sum(v) AS s FROM ih_src GROUP BY k HAVING sum(v) < 20;
CREATE TABLE ih_hchild () INHERITS (ih_h);
INSERT INTO ih_hchild VALUES (1, 6);
INSERT INTO ih_src VALUES (1, 50);
CALL cq.run('ih_h');
SELECT tableoid::regclass AS tbl, * FROM ih_h ORDER BY 1, 2;
DROP TABLE ih_child, ih_hchild;
DROP TABLE ih_t, ih_h, ih_src;
