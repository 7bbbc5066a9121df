-- scripts/demo.sql -- run by scripts/demo.sh (`make demo`) with
--   psql -X -v ON_ERROR_STOP=1 -P pager=off --echo-queries  against a throwaway cluster
--   (database postgres, superuser postgres, shared_preload_libraries = 'pg_cq,pg_cron').
-- Placeholder: the real continuous-query workload goes here.
CREATE EXTENSION IF NOT EXISTS pg_cq;

SELECT extversion FROM pg_extension WHERE extname = 'pg_cq';
