#!/bin/bash
# 10k new rows over 10M rows of history: a cold CALL (new session, handed off / in-process)
# against REFRESH MATERIALIZED VIEW from a fresh session.
# Against a running cluster with pg_cq preloaded: PGBIN, R10_HOST, R10_PORT;
# R10_ROUNDS rounds (5), REFRESH timed in the first R10_REFRESH_ROUNDS (3).
# Session 27's runs: helper A's with the defaults below (/tmp/hA:55700; new
# rows then dated 2026-01-0(4+r) and 2026-01-1r), the lead's quiet one with
# PGBIN=/opt/pgI/... R10_HOST=/tmp/hI R10_PORT=55791 R10_ROUNDS=9
# R10_REFRESH_ROUNDS=9 (refresh10m-s27-quiet.md).
set -e
PGBIN=${PGBIN:-/opt/pgA/usr/lib/postgresql/15/bin}
P="$PGBIN/psql -X -q -h ${R10_HOST:-/tmp/hA} -p ${R10_PORT:-55700} -U postgres -v ON_ERROR_STOP=1"
AGG="SELECT date_bin('1 minute', ts, '2000-01-01') AS minute, category, count(*) AS n, sum(amount) AS total, avg(amount) AS avg_amount, max(amount) AS max_amount FROM r10 GROUP BY 1, 2"
gen() { echo "INSERT INTO r10 (ts, device_id, category, amount) SELECT timestamptz '$3' + (g - 1) * (interval '$4' / $2), 1 + (random() * 999)::int, 'cat_' || lpad(floor(random() * 50)::int::text, 2, '0'), round((random() * 1000)::numeric, 2) FROM generate_series(1, $2) g;"; }
$P -c "DROP TABLE IF EXISTS r10 CASCADE" -c "SET client_min_messages=warning" -c "SELECT cq.drop_query('r10_agg', drop_target => true) FROM cq.queries WHERE name = 'r10_agg'" >/dev/null
$P -c "CREATE TABLE r10 (id bigserial, ts timestamptz, device_id int, category text, amount numeric(10,2)) WITH (autovacuum_enabled = off)"
$P -c "$(gen r10 10000000 '2026-01-01' '3 days')"
$P -c "CREATE MATERIALIZED VIEW r10_mv AS $AGG"
$P -c "SET client_min_messages = warning" -c "CREATE TABLE r10_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $AGG"
$P -c "VACUUM ANALYZE r10" -c "CHECKPOINT"
$P -c "SET client_min_messages = warning" -c "CALL cq.run('r10_agg')"
sleep 3
t() { awk '/^Time: /{print $2}'; }
for ((r = 1; r <= ${R10_ROUNDS:-5}; r++)); do
  $P -c "$(gen r10 10000 "2026-01-$((10 + r)) 00:00" '10 minutes')"
  on=$(printf '\\timing on\nCALL cq.run($$r10_agg$$);\n' | $P 2>/dev/null | t)
  $P -c "$(gen r10 10000 "2026-02-$((10 + r)) 00:00" '10 minutes')"
  off=$(printf '\\timing on\nCALL cq.run($$r10_agg$$);\n' | PGOPTIONS='-c cq.run_in_worker=off' $P 2>/dev/null | t)
  ref=""
  if [ $r -le ${R10_REFRESH_ROUNDS:-3} ]; then ref=$(printf '\\timing on\nREFRESH MATERIALIZED VIEW r10_mv;\n' | $P | t); fi
  echo "round $r: cold CALL handed off $on ms, in-process $off ms, REFRESH $ref ms"
done
$P -At -c "SELECT count(*) FROM ((TABLE r10_agg EXCEPT ALL $AGG) UNION ALL ($AGG EXCEPT ALL TABLE r10_agg)) x" | sed 's/^/mismatches: /'
