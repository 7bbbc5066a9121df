-- A query with DISTINCT aggregates whose batch 0 runs with the analysis
-- the backend cached (plan.c, copy_analysis: here after cq.explain in the
-- same session; also a pool worker's second query run, a retry): the
-- table of (group, value) pairs sd_<id> is filled with its index dropped
-- and built after, as with a fresh analysis.  Before session 29 the
-- cached copy had no DISTINCT value sets, and that batch 0 kept the index
-- while it filled the table (same rows, slower): the index's OID stayed.
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;
\i sql/include/helpers.sql
SET cq.run_in_worker = off;
\set oracle 'SELECT k, count(DISTINCT u) AS du, count(DISTINCT w) FILTER (WHERE w > 3) AS dw, count(*) AS n FROM dc_src GROUP BY k'
CREATE TABLE dc_src (k int, u int, w int);
INSERT INTO dc_src SELECT g % 50, g % 170, g % 7 FROM generate_series(1, 20000) g;
SELECT cq.create_query('dc_q', :'oracle', output_mode => 'update', "trigger" => 'available_now',
                       starting => 'earliest');
SELECT id AS qid FROM cq.queries WHERE name = 'dc_q' \gset
SELECT state_path FROM cq.queries WHERE name = 'dc_q';
CREATE TEMP TABLE dc_idx AS
  SELECT indexrelid AS idx FROM pg_index WHERE indrelid = format('cq_state.sd_%s', :qid)::regclass;
SELECT count(*) AS sd_indexes FROM dc_idx;
-- the analysis cached in this backend
SELECT cq.explain('dc_q') LIKE '%sd_%' AS explained;
CALL cq.run('dc_q');
SELECT count(*) AS sd_indexes_kept FROM pg_index
  WHERE indrelid = format('cq_state.sd_%s', :qid)::regclass AND indexrelid IN (SELECT idx FROM dc_idx);
SELECT count(*) AS sd_indexes FROM pg_index WHERE indrelid = format('cq_state.sd_%s', :qid)::regclass;
SELECT mismatches('dc_q', :'oracle');
-- later batches in the same session, with the cached analysis
INSERT INTO dc_src SELECT g % 60, g % 190, g % 9 FROM generate_series(1, 3000) g;
CALL cq.run('dc_q');
INSERT INTO dc_src SELECT g % 60, g % 190, g % 9 FROM generate_series(1, 3000) g;
CALL cq.run('dc_q');
SELECT mismatches('dc_q', :'oracle');
RESET cq.run_in_worker;
SELECT cq.drop_query('dc_q', drop_target => true);
DROP TABLE dc_src;
