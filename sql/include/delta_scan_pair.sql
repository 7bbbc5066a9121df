-- sql/180_delta_scan_c.sql: a batch of the query :c with cq.delta_scan_in_c
-- on (the rows read in C), then one of its twin :s with it off (the statement)
SET cq.delta_scan_in_c = on;
CALL cq.run(:'c');
SET cq.delta_scan_in_c = off;
CALL cq.run(:'s');
RESET cq.delta_scan_in_c;
