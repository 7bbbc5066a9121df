-- sql/198_delta_scan_pages.sql: a batch of each C twin (dp_fc, dp_vc) with
-- cq.delta_scan_in_c on, then of each statement twin (dp_fs, dp_vs) with
-- it off; read_in_c: the C twins made fewer cq.xid_new calls
\o /dev/null
SELECT pg_stat_force_next_flush();
\o
SELECT ds_calls() AS c0 \gset
SET cq.delta_scan_in_c = on;
CALL cq.run('dp_fc');
CALL cq.run('dp_vc');
\o /dev/null
SELECT pg_stat_force_next_flush();
\o
SELECT ds_calls() AS c1 \gset
SET cq.delta_scan_in_c = off;
CALL cq.run('dp_fs');
CALL cq.run('dp_vs');
RESET cq.delta_scan_in_c;
\o /dev/null
SELECT pg_stat_force_next_flush();
\o
SELECT ds_calls() AS c2 \gset
SELECT :c1 - :c0 < :c2 - :c1 AS read_in_c;
