-- Issue 12 goal 1: a statement that writes a BRIN index on xid8 (src/brin_insert.c) takes
-- the index's pages per range and last revmap page from what this backend read before,
-- kept per index (eight indexes) for as long as the index keeps its storage and no
-- invalidation of it comes.  Wrong figures make a row read the revmap entry of another
-- range: a row of a summarized range whose entry it does not read leaves the summary
-- as it was, and an index scan then misses the row.  Here every check is such a scan.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

-- rows an index scan of table t finds with x = v
CREATE FUNCTION bmc_found(t regclass, v xid8) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  SET LOCAL enable_seqscan = off;
  SET LOCAL enable_indexscan = off;
  EXECUTE format('SELECT count(*) FROM %s WHERE x = $1', t) INTO n USING v;
  RETURN n;
END $$;

-- the rows of t from the single-row INSERTs below (x >= 100000): how many, on which
-- blocks, and how many an index scan finds, each by its value
CREATE FUNCTION bmc_check(t regclass, OUT rows bigint, OUT blocks text, OUT n_found bigint)
LANGUAGE plpgsql AS $$
DECLARE v xid8;
BEGIN
  EXECUTE format('SELECT count(*), string_agg(DISTINCT (ctid::text::point)[0]::text, %L) FROM %s WHERE x >= %L', ',', t, '100000')
    INTO rows, blocks;
  n_found := 0;
  FOR v IN EXECUTE format('SELECT x FROM %s WHERE x >= %L', t, '100000') LOOP
    n_found := n_found + bmc_found(t, v);
  END LOOP;
END $$;

-- 1. A TRUNCATE of a table created in the same transaction rebuilds its index in place:
-- the same relfilenode, but the pages per range of the index's options (4 before, 1
-- after).  The INSERTs before it read 4; the row after it lands in block 10, whose
-- range is summarized, while the entry of range 2 (block 10 at 4 pages a range) is
-- empty: with the figures of before, the row would read that entry and skip its summary.
BEGIN;
CREATE TABLE bmc_t (x xid8);
CREATE INDEX bmc_t_idx ON bmc_t USING brin (x cq.xid8_minmax_ops) WITH (pages_per_range = 4);
INSERT INTO bmc_t SELECT g::text::xid8 FROM generate_series(1, 2400) g;
INSERT INTO bmc_t VALUES ('5000');
SELECT brin_summarize_new_values('bmc_t_idx') > 0 AS summarized;
ALTER INDEX bmc_t_idx SET (pages_per_range = 1);
SELECT relfilenode AS bmc_node FROM pg_class WHERE relname = 'bmc_t_idx' \gset
TRUNCATE bmc_t;
SELECT relfilenode = :bmc_node AS same_storage FROM pg_class WHERE relname = 'bmc_t_idx';
INSERT INTO bmc_t SELECT g::text::xid8 FROM generate_series(1, 2400) g;
SELECT (max(ctid)::text::point)[0] AS last_block FROM bmc_t;
SELECT brin_summarize_new_values('bmc_t_idx') > 0 AS summarized;
SELECT brin_desummarize_range('bmc_t_idx', 2);
INSERT INTO bmc_t VALUES ('999999');
SELECT (ctid::text::point)[0] AS block FROM bmc_t WHERE x = '999999';
SELECT bmc_found('bmc_t', '999999') AS found;
COMMIT;

-- 2. REINDEX with other pages per range between two single-row INSERTs of a session
-- (new storage): at 2 pages a range, block 2's range has entry 1; at 1 page, entry 2.
CREATE TABLE bmc_r (x xid8);
CREATE INDEX bmc_r_idx ON bmc_r USING brin (x cq.xid8_minmax_ops) WITH (pages_per_range = 2);
INSERT INTO bmc_r SELECT g::text::xid8 FROM generate_series(1, 500) g;
INSERT INTO bmc_r VALUES ('600');
ALTER INDEX bmc_r_idx SET (pages_per_range = 1);
REINDEX INDEX bmc_r_idx;
SELECT brin_summarize_new_values('bmc_r_idx') >= 0 AS summarized;
SELECT brin_desummarize_range('bmc_r_idx', 1);
INSERT INTO bmc_r VALUES ('777777');
SELECT (ctid::text::point)[0] AS block FROM bmc_r WHERE x = '777777';
SELECT bmc_found('bmc_r', '777777') AS found;

-- 3. Single-row INSERTs that go round ten indexes (more than the eight kept), at 1 and
-- 2 pages a range in turn, each table summarized up to its last page (block 2), the
-- entry of range 1 cleared on those at 1 page a range: a row written with another
-- index's figures reads entry 1 (at 1 page a range: empty) or entry 2 (at 2: none).
SELECT format('CREATE TABLE bmc_%s (x xid8)', i) FROM generate_series(1, 10) i \gexec
SELECT format('CREATE INDEX bmc_%s_idx ON bmc_%s USING brin (x cq.xid8_minmax_ops) WITH (pages_per_range = %s)',
              i, i, 2 - i % 2) FROM generate_series(1, 10) i \gexec
SELECT format('INSERT INTO bmc_%s SELECT g::text::xid8 FROM generate_series(1, 500) g', i)
  FROM generate_series(1, 10) i \gexec
SELECT format('SELECT brin_summarize_new_values(%L) AS summarized_%s', 'bmc_' || i || '_idx', i)
  FROM generate_series(1, 10) i \gexec
SELECT format('SELECT brin_desummarize_range(%L, 1)', 'bmc_' || i || '_idx')
  FROM generate_series(1, 10) i WHERE i % 2 = 1 \gexec
SELECT format('INSERT INTO bmc_%s VALUES (%L)', i, 100000 * r + i)
  FROM generate_series(1, 3) r, generate_series(1, 10) i ORDER BY r, i \gexec
SELECT i, c.* FROM generate_series(1, 10) i, LATERAL bmc_check(('bmc_' || i)::regclass) c ORDER BY i;

SELECT format('DROP TABLE bmc_%s', i) FROM generate_series(1, 10) i \gexec
DROP TABLE bmc_t, bmc_r;
DROP FUNCTION bmc_found(regclass, xid8), bmc_check(regclass);
