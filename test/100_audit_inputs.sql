-- Session 42's audit of inputs that reach pg_cq's C code from SQL: each must
-- fail with a PostgreSQL-style error (its own SQLSTATE, never XX000) or work.
-- cq.node_visible is granted to PUBLIC (Citus workers call it with offsets
-- the coordinator sends as text): malformed offsets raised XX000 ("pg_cq:
-- invalid per-node offset"), now 22P02 as any input syntax error.
BEGIN;
SET client_min_messages = warning;
SELECT plan(6);

SELECT throws_ok($$SELECT cq.node_visible('x', 1, '1'::xid8)$$, '22P02',
                 'invalid per-node offset "x"', 'a per-node offset without node=');
SELECT throws_ok($$SELECT cq.node_visible('a=1:1:', 1, '1'::xid8)$$, '22P02',
                 'invalid per-node offset "a=1:1:"', 'a per-node offset whose node is not a number');
SELECT throws_ok($$SELECT cq.node_visible('1=x', 1, '1'::xid8)$$, '22P02',
                 'invalid input syntax for type pg_snapshot: "x"', 'a node''s snapshot that is not one');
SELECT throws_ok($$SELECT cq.node_visible('1=1:2:a', 1, '1'::xid8)$$, '22P02',
                 'invalid input syntax for type pg_snapshot: "1:2:a"', 'a snapshot with a bad in-progress id');
SELECT is(cq.node_visible('1=1:5:3;2=1:1:', 1, '3'::xid8), false, 'an id in progress on its node is not visible');
SELECT is(cq.node_visible('1=1:5:3;2=1:1:', 1, '4'::xid8), true, 'an id finished on its node is visible');

SELECT * FROM finish();
ROLLBACK;
