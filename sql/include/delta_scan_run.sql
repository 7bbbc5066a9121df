-- sql/180_delta_scan_c.sql: a batch of each pair of queries, the C twin's
-- (ds_c, ds_kc) with cq.delta_scan_in_c on, the statement twin's (ds_sql,
-- ds_ksql) with it off.  read_in_c: the C twins' batches made fewer calls
-- of cq.xid_new than the statement's (the batches' other statements make
-- the same); then the twins compared row for row.
\o /dev/null
SELECT pg_stat_force_next_flush();
\o
SELECT ds_calls() AS c0 \gset
SET cq.delta_scan_in_c = on;
CALL cq.run('ds_c');
CALL cq.run('ds_kc');
\o /dev/null
SELECT pg_stat_force_next_flush();
\o
SELECT ds_calls() AS c1 \gset
SET cq.delta_scan_in_c = off;
CALL cq.run('ds_sql');
CALL cq.run('ds_ksql');
RESET cq.delta_scan_in_c;
\o /dev/null
SELECT pg_stat_force_next_flush();
\o
SELECT ds_calls() AS c2 \gset
SELECT :c1 - :c0 < :c2 - :c1 AS read_in_c,
       ds_diff('ds_c', 'TABLE ds_sql') AS c_vs_sql, ds_diff('ds_kc', 'TABLE ds_ksql') AS k_c_vs_sql,
       (SELECT count(*) FROM ds_c) AS c_rows;
