\set ECHO none
-- Helpers of the files that port cases from Spark's streaming test suites
-- (114, 115, 116), loaded with
--   \i sql/include/spark_steps.sql
-- after the file has set its search_path: the objects are made in the
-- file's own schema (the first of its search_path) and go with it.  Not
-- echoed (ECHO none, first line), as sql/include/helpers.sql.

-- sp_step(query, run, via): run a query's batches (unless run is false), then
-- show the rows new in its target (or in the relation via, a view over it)
-- since the last step (Spark's CheckNewAnswer) as text, sorted
CREATE TABLE sp_seen (q text, r text);
CREATE FUNCTION sp_step(qname text, run bool DEFAULT true, via text DEFAULT NULL) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  rel text := coalesce(via, qname);
  shown text;
BEGIN
  IF run THEN
    CALL cq.run(qname);
  END IF;
  EXECUTE format('WITH n AS (SELECT t::text AS r FROM %I t EXCEPT ALL SELECT r FROM sp_seen WHERE q = %L), '
                 'i AS (INSERT INTO sp_seen SELECT %L, r FROM n RETURNING r) '
                 'SELECT string_agg(r, '' '' ORDER BY r) FROM i', rel, rel, rel) INTO shown;
  RETURN 'new: ' || coalesce(shown, 'none');
END $$;

-- the batches of a query, as Spark's progress reports them
CREATE VIEW sp_batches AS
  SELECT name, batch_id, num_input_rows AS input, extract(epoch FROM watermark)::int AS wm,
         num_output_rows AS output, num_state_rows_total AS total, num_state_rows_updated AS updated,
         num_state_rows_removed AS removed, num_rows_dropped_by_watermark AS dropped
    FROM cq.progress;
\set ECHO all
