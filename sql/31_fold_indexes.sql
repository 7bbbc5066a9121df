-- Issue 12 goal 2: batch 0 over history loads the empty state (and the table of DISTINCT
-- pairs) without its indexes and builds them after the load, in the batch's transaction.
-- The indexes come back with the same definitions and names (new OIDs: built after the
-- load); a failed batch 0 leaves them as they were; later batches probe them as before.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE TABLE fi_src (k int, t text, v int);
INSERT INTO fi_src SELECT g % 10, CASE WHEN g % 3 = 0 THEN NULL ELSE 't' || (g % 4) END, g
  FROM generate_series(1, 2000) g;
CREATE VIEW fi_oracle AS
  SELECT k, t, count(*) AS n, sum(v) AS s, count(DISTINCT v % 7) AS d FROM fi_src GROUP BY k, t;
SELECT cq.create_query('fi_q', pg_get_viewdef('fi_oracle'), output_mode => 'update',
                       "trigger" => 'available_now');

-- the indexes of the query's state and pairs tables (names without the query id) and target
CREATE FUNCTION fi_indexes() RETURNS TABLE (tab text, def text, oid oid) LANGUAGE sql AS $$
  SELECT regexp_replace(c.relname, '_[0-9]+$', '_N'),
         regexp_replace(pg_get_indexdef(i.indexrelid), '_[0-9]+', '_N', 'g'), i.indexrelid
    FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
   WHERE (c.relnamespace = 'cq_state'::regnamespace
          AND c.relname IN (SELECT format('%s_%s', p, q.id) FROM cq.queries q, unnest('{s,sd}'::text[]) p
                             WHERE q.name = 'fi_q'))
      OR c.oid = 'fi_q'::regclass
   ORDER BY 1, 2 $$;
SELECT tab, def FROM fi_indexes();
CREATE TABLE fi_before AS SELECT * FROM fi_indexes();

-- a failed batch 0 (the target refuses a row) leaves the state and its indexes as they were
ALTER TABLE fi_q ADD CONSTRAINT fi_no CHECK (n < 0);
\set VERBOSITY terse
CALL cq.run('fi_q');
\set VERBOSITY default
SELECT (SELECT array_agg(oid ORDER BY tab, def) FROM fi_indexes())
       = (SELECT array_agg(oid ORDER BY tab, def) FROM fi_before) AS same_indexes_after_failure;
ALTER TABLE fi_q DROP CONSTRAINT fi_no;

-- batch 0: same definitions, built anew after the load
CALL cq.run('fi_q');
SELECT tab, def FROM fi_indexes();
SELECT count(*) AS rebuilt FROM fi_indexes() a JOIN fi_before b USING (tab, def) WHERE a.oid <> b.oid;
SELECT count(*) AS differing FROM (SELECT * FROM fi_q EXCEPT ALL SELECT * FROM fi_oracle) x;

-- later batches update existing groups through the rebuilt indexes, add new ones
INSERT INTO fi_src SELECT g % 13, CASE WHEN g % 5 = 0 THEN NULL ELSE 't' || (g % 4) END, g
  FROM generate_series(1, 500) g;
CALL cq.run('fi_q');
SELECT count(*) AS differing FROM (SELECT * FROM fi_q EXCEPT ALL SELECT * FROM fi_oracle) x;
SELECT count(*) AS missing FROM (SELECT * FROM fi_oracle EXCEPT ALL SELECT * FROM fi_q) x;
SELECT tab, def FROM fi_indexes();

SELECT cq.drop_query('fi_q', drop_target => true);

-- a target the user added an index to keeps its indexes (only the state's are rebuilt;
-- the table path, pinned: the shared-memory store writes its state table as an image)
SELECT cq.create_query('fi_q', 'SELECT k, count(*) AS n FROM fi_src GROUP BY k', output_mode => 'update',
                       "trigger" => 'available_now', state_storage => 'unlogged');
CREATE INDEX fi_q_n ON fi_q (n);
DROP TABLE fi_before;
CREATE TABLE fi_before AS SELECT * FROM fi_indexes();
CALL cq.run('fi_q');
SELECT a.tab, a.def, a.oid = b.oid AS same_index FROM fi_indexes() a JOIN fi_before b USING (tab, def) ORDER BY 1, 2;
SELECT count(*) AS differing FROM (SELECT * FROM fi_q EXCEPT ALL SELECT k, count(*) FROM fi_src GROUP BY k) x;
SELECT cq.drop_query('fi_q', drop_target => true);
DROP VIEW fi_oracle;
DROP TABLE fi_src, fi_before;
DROP FUNCTION fi_indexes();
