-- Issue 12 goal 4, issue 15: the first batch of a query in a new backend
-- (how pg_cron runs CALL cq.run) leaves out the old pages of the source's
-- last page range too.  The samples (L, X) that let a scan skip a heap page
-- whose LSN is not after L (horizon.c; sql/72) are kept in shared memory:
-- a sample holds for every backend's rows, so a new backend uses those its
-- predecessors took.  And it stays exact while another backend's
-- transaction that inserted rows is still running when samples are taken
-- (its rows are older than those samples' X: only samples taken before it
-- got its id may leave out its pages).
CREATE EXTENSION IF NOT EXISTS pg_cq;
CREATE EXTENSION IF NOT EXISTS dblink;
SET client_min_messages = warning;

CREATE TABLE shz_src (id int, g int, v int) WITH (autovacuum_enabled = off);
SELECT cq.create_query('shz_q', 'SELECT g, count(*) AS n, sum(v) AS s FROM shz_src GROUP BY g',
                       output_mode => 'update', "trigger" => 'available_now');
-- every row ever inserted, logged by the inserting transaction
CREATE TABLE shz_all (id int, g int, v int) WITH (autovacuum_enabled = off);
CREATE FUNCTION shz_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.shz_all VALUES (NEW.id, NEW.g, NEW.v); RETURN NULL; END $$;
CREATE TRIGGER shz_log AFTER INSERT ON shz_src FOR EACH ROW EXECUTE FUNCTION shz_log();
CREATE FUNCTION shz_differences() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM
    ((TABLE shz_q EXCEPT ALL SELECT g, count(*), sum(v) FROM shz_all GROUP BY g)
     UNION ALL (SELECT g, count(*), sum(v) FROM shz_all GROUP BY g EXCEPT ALL TABLE shz_q)) d
$$;
-- a connection string to this database (each dblink connection is a new backend)
CREATE FUNCTION shz_conn() RETURNS text LANGUAGE sql AS $$
  SELECT format('host=%s port=%s dbname=%s user=%s',
                split_part(current_setting('unix_socket_directories'), ',', 1),
                current_setting('port'), current_database(), current_user)
$$;

-- 3000 rows: about 16 pages, all in the first (unsummarized) range of 32
INSERT INTO shz_src SELECT i, i % 7, i FROM generate_series(1, 3000) i;
CALL cq.run('shz_q');
SELECT pg_relation_size('shz_src') / current_setting('block_size')::int < 32 AS one_range;
-- a few batches of one row each in this backend (each batch samples (L, X))
INSERT INTO shz_src VALUES (3001, 1, 1);
CALL cq.run('shz_q');
INSERT INTO shz_src VALUES (3002, 2, 2);
CALL cq.run('shz_q');
INSERT INTO shz_src VALUES (3003, 3, 3);

-- a new backend: its first batch reads the rows of the page(s) written
-- since the samples, not the 3000 older rows of the range
\c
SET client_min_messages = warning;
BEGIN;
SELECT pg_stat_get_xact_tuples_fetched('shz_src'::regclass) AS fetched \gset
CALL cq.run('shz_q');
SELECT pg_stat_get_xact_tuples_fetched('shz_src'::regclass) - :fetched < 1000 AS few_rows_read_in_new_backend;
COMMIT;
SELECT shz_differences() AS differences;

-- another backend inserts 1000 rows (5 pages, 4 of them full: nothing is
-- written there later) and keeps its transaction open
SELECT dblink_connect('shz_hold', shz_conn());
SELECT dblink_exec('shz_hold', 'BEGIN');
SELECT dblink_exec('shz_hold', 'INSERT INTO shz_src SELECT i, i % 11, i FROM generate_series(10001, 11000) i');
-- batches in new backends meanwhile, each after a committed row: they take
-- samples whose X is above the open transaction's id and whose L is after
-- its rows
INSERT INTO shz_src VALUES (3004, 4, 4);
SELECT dblink_exec(shz_conn(), 'CALL cq.run(''shz_q'')');
INSERT INTO shz_src VALUES (3005, 5, 5);
SELECT dblink_exec(shz_conn(), 'CALL cq.run(''shz_q'')');
INSERT INTO shz_src VALUES (3006, 6, 6);
SELECT dblink_exec(shz_conn(), 'CALL cq.run(''shz_q'')');
SELECT shz_differences() AS differences_before_commit;	-- the open rows are not in shz_all yet
SELECT dblink_exec('shz_hold', 'COMMIT');
SELECT dblink_disconnect('shz_hold');
-- the next batch (a new backend) must read the 1000 rows: their pages are
-- older than the newest samples, but those samples' X is above their cq_xid
INSERT INTO shz_src VALUES (3007, 0, 7);
SELECT dblink_exec(shz_conn(), 'CALL cq.run(''shz_q'')');
SELECT count(*) AS logged_rows FROM shz_all;
SELECT shz_differences() AS differences;
-- and a batch in this backend agrees
INSERT INTO shz_src VALUES (3008, 1, 8);
CALL cq.run('shz_q');
SELECT shz_differences() AS differences;

SELECT cq.drop_query('shz_q');
DROP TABLE shz_src, shz_all;
DROP FUNCTION shz_log(), shz_differences(), shz_conn();
