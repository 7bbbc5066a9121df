-- sql/215, sql/216: run an unchanged test once more on cq.xid48 sources, in schema
-- :port of its own (cq on the search_path: users' own "cq_xid >= x" finds cq.xid48's
-- indexable operators); sql/include/xid48_port_end.sql drops what it made
CREATE SCHEMA :port;
GRANT USAGE, CREATE ON SCHEMA :port TO PUBLIC;
RESET client_min_messages;
SET search_path = :port, public, cq;
SET cq.stamp_type = 'xid48';
