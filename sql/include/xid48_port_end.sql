-- the end of sql/include/xid48_port_begin.sql's run: its queries and schema dropped,
-- so that the original test, run in public, meets none of them
RESET search_path;
RESET cq.stamp_type;
SET client_min_messages = warning;
\o /dev/null
SELECT cq.drop_query(quote_ident(schema) || '.' || quote_ident(name)) FROM cq.queries WHERE schema = :'port';
\o
SELECT count(*) AS queries_left FROM cq.queries WHERE schema = :'port';
DROP SCHEMA :port CASCADE;
