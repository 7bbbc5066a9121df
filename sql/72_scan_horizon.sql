-- Issue 12 goals 5-6: the scan of a batch's new rows leaves out the pages
-- of the source that cannot hold them: a heap page whose LSN is not after
-- a WAL position L holds no row version created after L, and rows whose
-- cq_xid is at least X were created after L when L was read before X was
-- the next transaction id (tracking.c).  The source's last page range stays
-- unsummarized while it fills, so without this every batch reads all of
-- it.  Rows that land on old pages (free space left by DELETE and VACUUM)
-- make those pages' LSN new: they are still read.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

-- (no autovacuum: its ANALYZE's snapshot would keep VACUUM below from
-- freeing the deleted rows' space)
CREATE TABLE hz_src (id int, g int, v int) WITH (autovacuum_enabled = off);
SELECT cq.create_query('hz_q', 'SELECT g, count(*) AS n, sum(v) AS s FROM hz_src GROUP BY g',
                       output_mode => 'update', "trigger" => 'available_now');
-- every row ever inserted (the target keeps the rows deleted later)
CREATE TABLE hz_all (id int, g int, v int) WITH (autovacuum_enabled = off);
CREATE FUNCTION hz_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.hz_all VALUES (NEW.id, NEW.g, NEW.v); RETURN NULL; END $$;
CREATE TRIGGER hz_log AFTER INSERT ON hz_src FOR EACH ROW EXECUTE FUNCTION hz_log();
CREATE FUNCTION hz_differences() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM
    ((TABLE hz_q EXCEPT ALL SELECT g, count(*), sum(v) FROM hz_all GROUP BY g)
     UNION ALL (SELECT g, count(*), sum(v) FROM hz_all GROUP BY g EXCEPT ALL TABLE hz_q)) d
$$;

-- 3000 rows: about 16 pages, all in the first (unsummarized) range of 32
INSERT INTO hz_src SELECT i, i % 7, i FROM generate_series(1, 3000) i;
CALL cq.run('hz_q');
SELECT pg_relation_size('hz_src') / current_setting('block_size')::int < 32 AS one_range;
-- a few batches of one row each (each batch samples (L, X))
INSERT INTO hz_src VALUES (3001, 1, 1);
CALL cq.run('hz_q');
INSERT INTO hz_src VALUES (3002, 2, 2);
CALL cq.run('hz_q');
INSERT INTO hz_src VALUES (3003, 3, 3);
CALL cq.run('hz_q');
INSERT INTO hz_src VALUES (3004, 4, 4);
-- one new row: the batch reads the rows of the page(s) written since, not
-- the 3000 older rows of the range (it read them all before)
BEGIN;
SELECT pg_stat_get_xact_tuples_fetched('hz_src'::regclass) AS fetched \gset
CALL cq.run('hz_q');
SELECT pg_stat_get_xact_tuples_fetched('hz_src'::regclass) - :fetched < 1000 AS few_rows_read;
COMMIT;
SELECT hz_differences() AS differences;

-- free space in the first pages: new rows go there
-- (VACUUM frees the deleted rows' space only once no other backend of
-- the database runs a transaction older than the DELETE or holds a
-- snapshot that predates it: a batch of another test's query, or
-- autovacuum's ANALYZE, may for a moment; waited for, with a deadline.
-- Autovacuum's plain VACUUM does not hold VACUUM back.  The activity view
-- is read afresh at each try: within a transaction it is read once.)
CREATE FUNCTION hz_wait_horizon(del xid8) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  deadline timestamptz := clock_timestamp() + interval '60 seconds';
BEGIN
  LOOP
    PERFORM pg_stat_clear_snapshot();
    IF NOT EXISTS (SELECT 1 FROM pg_stat_activity
                    WHERE pid <> pg_backend_pid()
                      AND (datid IS NULL OR datid = (SELECT oid FROM pg_database WHERE datname = current_database()))
                      AND (backend_xmin::text::bigint <= (del::text::bigint % 4294967296)
                           OR backend_xid::text::bigint <= (del::text::bigint % 4294967296))
                      AND NOT (backend_type = 'autovacuum worker' AND query LIKE 'autovacuum: VACUUM%'
                               AND query NOT LIKE '%ANALYZE%')) THEN
      RETURN true;
    END IF;
    IF clock_timestamp() > deadline THEN
      RETURN false;
    END IF;
    PERFORM pg_sleep(0.02);
  END LOOP;
END $$;
BEGIN;
DELETE FROM hz_src WHERE id <= 1000;
SELECT pg_current_xact_id() AS hz_del \gset
COMMIT;
CALL cq.run('hz_q');
SELECT hz_wait_horizon(:'hz_del') AS horizon_passed;
VACUUM hz_src;
INSERT INTO hz_src SELECT i, i % 5, i FROM generate_series(5001, 5300) i;
SELECT min((ctid::text::point)[0]) < 5 AS on_old_pages FROM hz_src WHERE id > 5000;
INSERT INTO hz_src VALUES (5301, 1, 1);
CALL cq.run('hz_q');
SELECT hz_differences() AS differences;
-- and again, some in the old pages and some at the end, in several transactions
BEGIN;
DELETE FROM hz_src WHERE id BETWEEN 1001 AND 1500;
SELECT pg_current_xact_id() AS hz_del \gset
COMMIT;
SELECT hz_wait_horizon(:'hz_del') IS NOT NULL AS waited;
VACUUM hz_src;
INSERT INTO hz_src SELECT i, i % 3, i FROM generate_series(6001, 6100) i;
CALL cq.run('hz_q');
INSERT INTO hz_src SELECT i, i % 3, i FROM generate_series(6101, 6400) i;
INSERT INTO hz_src SELECT i, i % 3, i FROM generate_series(6401, 9000) i;
CALL cq.run('hz_q');
SELECT hz_differences() AS differences;

-- the catalog version is read once, not by every batch (a relation cache
-- invalidation, such as an ANALYZE's, makes the next batch read it again):
-- ten batches in ten transactions, each read it (and the cluster id's
-- extension OID) three times before
CREATE FUNCTION hz_ext_scans() RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(pg_catalog.pg_stat_get_xact_numscans(c.oid))::bigint
    FROM pg_catalog.pg_class c
   WHERE c.oid = 'pg_catalog.pg_extension'::regclass
      OR c.oid IN (SELECT indexrelid FROM pg_catalog.pg_index WHERE indrelid = 'pg_catalog.pg_extension'::regclass)
$$;
CREATE TABLE hz_scans (n bigint);
DO $$
DECLARE
  b bigint;
BEGIN
  INSERT INTO hz_src VALUES (9001, 1, 1);
  COMMIT;
  CALL cq.run('hz_q');
  b := hz_ext_scans();
  FOR i IN 1 .. 10 LOOP
    INSERT INTO hz_src VALUES (9001 + i, i % 2, i);
    COMMIT;
    CALL cq.run('hz_q');
  END LOOP;
  INSERT INTO hz_scans VALUES (hz_ext_scans() - b);
END $$;
SELECT n < 10 AS version_read_once FROM hz_scans;
SELECT hz_differences() AS differences;

SELECT cq.drop_query('hz_q', drop_target => true);
DROP TABLE hz_src, hz_all, hz_scans;
DROP FUNCTION hz_differences();
DROP FUNCTION hz_ext_scans();
DROP FUNCTION hz_log();
