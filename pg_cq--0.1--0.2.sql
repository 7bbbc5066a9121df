-- pg_cq 0.1 -> 0.2
-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_cq UPDATE TO '0.2'" to load this file. \quit

-- pg_cq--0.2.sql is built from pg_cq--0.1.sql followed by this file (see
-- Makefile), so a new install and an upgraded one have the same objects.
-- Each change below says which issue item it belongs to.

-- issue 9 item 10: every row that reaches a source is stamped with the id of
-- the transaction that inserted it, whatever the statement gave cq_xid (an
-- explicit value, a copy of another table's cq_xid, NULL for want of a
-- default); an UPDATE cannot change it.  The row trigger zz_cq_stamp fires
-- after the table's other BEFORE triggers (they fire in name order), also
-- under session_replication_role = replica, and PostgreSQL clones it to
-- partitions, present and future.  Sources tracked by 0.1 get it here.
CREATE FUNCTION cq.stamp() RETURNS trigger
AS 'MODULE_PATHNAME', 'cq_stamp'
LANGUAGE C;
COMMENT ON FUNCTION cq.stamp() IS 'pg_cq internal: row trigger of tracked sources, stamps cq_xid with the inserting transaction';

DO $$
DECLARE
  r record;
BEGIN
  -- each source, and the tables inheriting from it that are not partitions
  -- (row triggers are cloned to partitions only); partitioned tables before
  -- their partitions, whose own trigger the clone replaces
  FOR r IN
    WITH RECURSIVE t(rel, root) AS (
      SELECT DISTINCT q.source::pg_catalog.oid, true FROM cq.queries q
      UNION
      SELECT i.inhrelid, false FROM pg_catalog.pg_inherits i JOIN t ON i.inhparent OPERATOR(pg_catalog.=) t.rel
    )
    SELECT c.oid::pg_catalog.regclass AS rel, c.relispartition AS part,
           (SELECT pg_catalog.count(*) FROM pg_catalog.pg_partition_ancestors(c.oid)) AS depth
      FROM t JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.rel
     WHERE c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'p']::pg_catalog."char"[])
     GROUP BY c.oid, c.relispartition
    HAVING pg_catalog.bool_or(t.root) OR NOT c.relispartition
     ORDER BY depth
  LOOP
    CONTINUE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_trigger g
                           WHERE g.tgrelid OPERATOR(pg_catalog.=) r.rel
                             AND g.tgname OPERATOR(pg_catalog.=) 'zz_cq_stamp');
    EXECUTE pg_catalog.format('CREATE TRIGGER zz_cq_stamp BEFORE INSERT OR UPDATE OR DELETE ON %s '
                              'FOR EACH ROW EXECUTE FUNCTION cq.stamp()', r.rel);
    EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER zz_cq_stamp', r.rel);
  END LOOP;
END
$$;

-- issue 9 item 18: a query's offsets are transaction ids, valid wherever its
-- sources' cq_xid values are: in this database and in a copy of its files
-- (pg_upgrade, CREATE DATABASE ... TEMPLATE, a base backup), not in a
-- restored dump.  The system identifier cannot tell them apart (pg_upgrade
-- changes it), this installation id can: pg_upgrade carries the table over
-- with the other files, while pg_dump leaves it out (it is not a
-- configuration table) and the restore's CREATE EXTENSION makes a new one.
-- cq.queries.cluster_id now holds it; rows recorded by 0.1 in this cluster
-- (cluster_id = its system identifier) are converted, rows restored from
-- another cluster keep a value that matches nothing (they start over).
CREATE TABLE cq.installation (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    id  uuid NOT NULL DEFAULT pg_catalog.gen_random_uuid()
);
COMMENT ON TABLE cq.installation IS 'pg_cq internal: identifies the installation the offsets of cq.queries belong to (kept by pg_upgrade, new after a restore)';
INSERT INTO cq.installation DEFAULT VALUES;
UPDATE cq.queries SET cluster_id = (SELECT i.id::pg_catalog.text FROM cq.installation i)
 WHERE cluster_id OPERATOR(pg_catalog.=)
       (SELECT s.system_identifier::pg_catalog.text FROM pg_catalog.pg_control_system() s);
