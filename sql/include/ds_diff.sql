-- ds_diff(a, b): the rows of table a and of query b that the other lacks,
-- counted (0: equal as multisets), for the C reader's tests (sql/180,
-- sql/194, sql/195)
CREATE FUNCTION ds_diff(a regclass, b text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((SELECT r::text FROM %s r EXCEPT ALL SELECT r::text FROM (%s) r) '
                 'UNION ALL (SELECT r::text FROM (%s) r EXCEPT ALL SELECT r::text FROM %s r)) x', a, b, b, a) INTO n;
  RETURN n;
END $$;
