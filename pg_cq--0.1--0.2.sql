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
  -- (row triggers are cloned to partitions only)
  FOR r IN
    WITH RECURSIVE t(rel, root) AS (
      SELECT DISTINCT q.source::pg_catalog.oid, true FROM cq.queries q
      UNION
      SELECT i.inhrelid, false FROM pg_catalog.pg_inherits i JOIN t ON i.inhparent OPERATOR(pg_catalog.=) t.rel
    )
    SELECT DISTINCT c.oid::pg_catalog.regclass AS rel
      FROM t JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.rel
     WHERE (t.root OR NOT c.relispartition)
       AND c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'p']::pg_catalog."char"[])
       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger g
                        WHERE g.tgrelid OPERATOR(pg_catalog.=) c.oid
                          AND g.tgname OPERATOR(pg_catalog.=) 'zz_cq_stamp')
  LOOP
    EXECUTE pg_catalog.format('CREATE TRIGGER zz_cq_stamp BEFORE INSERT OR UPDATE OR DELETE ON %s '
                              'FOR EACH ROW EXECUTE FUNCTION cq.stamp()', r.rel);
    EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER zz_cq_stamp', r.rel);
  END LOOP;
END
$$;
