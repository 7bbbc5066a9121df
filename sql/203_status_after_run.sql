-- cq.status after CALL cq.run (session 41).  The view shows the last batch and
-- watermark of a query's shared-memory status slot, else of cq.offsets.  The
-- slot is written by the scheduler when it loads the queries and by a worker
-- at the end of its batch; a batch of CALL cq.run wrote neither, so a query
-- run by CALLs showed the batch id the scheduler had loaded (batch 0 of
-- CREATE TABLE ... AS) however many batches the calls ran, and a query with
-- a trigger the watermark of its last background batch.  Now a CALL's batch
-- clears the slot's batch and watermark: cq.status shows cq.offsets' last
-- row, in the caller's process, in a pool worker and inside a transaction
-- block (once it commits).  Also: cq.run's NOTICEs name a query as its
-- errors do.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
CREATE SCHEMA st203;
CREATE TABLE st203.src (ts timestamptz, k int);
INSERT INTO st203.src VALUES ('2026-01-01 12:00+00', 1);
CREATE TABLE st203.q WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
  AS SELECT k, count(*) AS n FROM st203.src GROUP BY k;
-- the scheduler has loaded the query: its slot holds batch 0
SELECT wait_until($$EXISTS (SELECT FROM cq.status_slots() s JOIN cq.queries q ON q.id = s.query_id
                            WHERE q.name = 'q' AND s.last_batch_id = 0)$$) AS slot_loaded;
SELECT last_batch_id FROM cq.status WHERE name = 'q';

-- a batch in the caller's process
SET cq.run_in_worker = off;
INSERT INTO st203.src VALUES ('2026-01-01 12:01+00', 1);
CALL cq.run('st203.q');
SELECT last_batch_id, (SELECT max(batch_id) FROM cq.offsets WHERE name = 'q') AS last_offset
  FROM cq.status WHERE name = 'q';
-- in a pool worker, when there is an idle one (else in the caller's process)
RESET cq.run_in_worker;
INSERT INTO st203.src VALUES ('2026-01-01 12:02+00', 2);
CALL cq.run('st203.q');
SELECT last_batch_id FROM cq.status WHERE name = 'q';
-- inside a transaction block: shown once committed, never if rolled back
INSERT INTO st203.src VALUES ('2026-01-01 12:03+00', 2);
BEGIN;
CALL cq.run('st203.q');
ROLLBACK;
SELECT last_batch_id FROM cq.status WHERE name = 'q';
BEGIN;
CALL cq.run('st203.q');
COMMIT;
SELECT last_batch_id FROM cq.status WHERE name = 'q';
SELECT * FROM st203.q ORDER BY k;

-- a query with a trigger and a watermark: its first background batch runs at
-- once and leaves its id and watermark in the slot; a CALL moves both on
CREATE TABLE st203.w WITH (cq.trigger = '1 hour', cq.output_mode = 'append',
                           cq.event_time = 'ts', cq.watermark = '1 minute')
  AS SELECT date_bin('1 minute', ts, '2000-01-01') AS m, count(*) AS n
       FROM st203.src GROUP BY 1 WITH NO DATA;
SELECT wait_until($$EXISTS (SELECT FROM cq.status_slots() s JOIN cq.queries q ON q.id = s.query_id
                            WHERE q.name = 'w' AND s.last_batch_id >= 0 AND s.watermark IS NOT NULL)$$) AS first_batch;
INSERT INTO st203.src VALUES ('2026-01-01 12:10+00', 3);
CALL cq.run('st203.w');
SELECT s.watermark,
       (s.last_batch_id, s.watermark) = (o.batch_id, o.watermark) AS as_offsets
  FROM cq.status s, LATERAL (SELECT batch_id, watermark FROM cq.offsets
                              WHERE name = 'w' ORDER BY batch_id DESC LIMIT 1) o
 WHERE s.name = 'w';
SELECT * FROM st203.w ORDER BY m;

-- the NOTICEs of cq.run name the query as its errors do: parsed, without
-- quotes (they showed the text given, quotes and all: ""Mixed Q"")
CREATE TABLE st203."Mixed Q" WITH (cq.trigger = 'available_now') AS SELECT k FROM st203.src WITH NO DATA;
SET client_min_messages = notice;
CALL cq.run('st203."Mixed Q"');
CALL cq.run('st203."Mixed Q"');
CALL cq.run('st203."No Q"');
SET client_min_messages = warning;

DROP SCHEMA st203 CASCADE;
