-- Issue 12 goal 5: a batch builds cq.progress.durations directly (a jsonb
-- of numbers of scale 3, no text formatted and parsed).  What a batch
-- records must not change: the keys, numbers with three decimals (the
-- "%.3f" text they were), triggerExecution = duration_ms to the
-- microsecond, stateRebuild only after a rebuild, and the same through the
-- statement that tables not as pg_cq made them get (a trigger on
-- cq.progress).
CREATE EXTENSION IF NOT EXISTS pg_cq;
SET client_min_messages = warning;

CREATE TABLE pd_src (k int, v int);
SELECT cq.create_query('pd_q', 'SELECT k, count(*) AS n FROM pd_src GROUP BY k',
                       output_mode => 'update', "trigger" => 'available_now');
CREATE FUNCTION pd_check(p_batch bigint) RETURNS TABLE (keys text, numbers bool, scale3 bool, total_ok bool)
LANGUAGE sql AS $$
  SELECT (SELECT string_agg(k, ',' ORDER BY k) FROM jsonb_object_keys(p.durations) k),
         (SELECT bool_and(jsonb_typeof(d.value) = 'number') FROM jsonb_each(p.durations) d),
         (SELECT bool_and(d.value::text ~ '^[0-9]+\.[0-9]{3}$') FROM jsonb_each(p.durations) d),
         abs((p.durations->>'triggerExecution')::numeric - p.duration_ms::numeric) <= 0.001
    FROM cq.progress p WHERE p.name = 'pd_q' AND p.batch_id = p_batch
$$;

INSERT INTO pd_src VALUES (1, 1);
CALL cq.run('pd_q');
SELECT * FROM pd_check(0);
INSERT INTO pd_src VALUES (2, 1);
CALL cq.run('pd_q');
SELECT * FROM pd_check(1);

-- the statement (a trigger on cq.progress): the same
CREATE TABLE pd_seen (batch_id bigint, durations jsonb);
CREATE FUNCTION pd_seen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.pd_seen VALUES (NEW.batch_id, NEW.durations); RETURN NEW; END $$;
CREATE TRIGGER pd_seen AFTER INSERT ON cq.progress FOR EACH ROW EXECUTE FUNCTION pd_seen();
INSERT INTO pd_src VALUES (3, 1);
CALL cq.run('pd_q');
DROP TRIGGER pd_seen ON cq.progress;
SELECT batch_id FROM pd_seen;
SELECT * FROM pd_check(2);

SELECT cq.drop_query('pd_q');
DROP TABLE pd_src, pd_seen;
DROP FUNCTION pd_seen(), pd_check(bigint);
