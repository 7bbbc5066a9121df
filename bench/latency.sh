#!/usr/bin/env bash
# bench/latency.sh -- commit-to-target latency of a trigger '0' query.
#
# A writer (pgbench, one single-row INSERT per transaction, Poisson arrivals
# with --rate) feeds a source at about 1, 100 and 1,000 rows/s; a stateless
# append query copies every row to its target in the background.  With
# track_commit_timestamp = on, the latency of a row is exact:
#     commit time of the target row (the batch's transaction)
#   - commit time of the source row (the writer's transaction)
# i.e. from the moment a row is visible in the source until it is visible in
# the target.  p50 and p99 per rate.
#
# Env: PGBIN (server binaries), CQ_BENCH_PORT (default 55462), CQ_TMPBASE,
#      LAT_RATES (default "1 100 1000"), LAT_SECONDS (default "60 20 20"),
#      LAT_DURABLE=1: fsync = on, synchronous_commit = on (default: the test
#      clusters' fsync = off, synchronous_commit = off),
#      LAT_REPORT (report file; default bench/results/latency-<time>.txt).
# Needs pg_cq installed for $PGBIN (make install, or scripts/test.sh's build).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

PORT="${CQ_BENCH_PORT:-55462}"
read -r -a RATES <<<"${LAT_RATES:-1 100 1000}"
read -r -a SECS <<<"${LAT_SECONDS:-60 20 20}"
OUT="$REPO_ROOT/bench/results"
mkdir -p "$OUT"
trap 'stop_cluster latency' EXIT

durable=()
[[ "${LAT_DURABLE:-}" == 1 ]] && durable=("fsync = on" "synchronous_commit = on")
start_cluster latency "$PORT" "track_commit_timestamp = on" "cq.max_workers = 2" "${durable[@]}"
PSQL=("$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -At)
PGBENCH="$PGBIN/pgbench"

"${PSQL[@]}" <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION pg_cq;
CREATE TABLE lat_src (id bigserial, payload text);
CREATE TABLE lat_out WITH (cq.output_mode = 'append', cq.trigger = '0')
  AS SELECT id, payload FROM lat_src WITH NO DATA;
SQL
printf "INSERT INTO lat_src (payload) VALUES ('x');\n" >"$OUT/latency_insert.sql"
chmod 644 "$OUT/latency_insert.sql"

machine="$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
report="${LAT_REPORT:-$OUT/latency-$(date -u +%Y%m%dT%H%M%SZ).txt}"
{
    echo "pg_cq commit-to-target latency, trigger '0', append query; $machine"
    echo "server: $("${PSQL[@]}" -c "SELECT string_agg(name || '=' || setting, ', ') FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'track_commit_timestamp')")"
    printf '%-10s %8s %8s %10s %10s %10s\n' "rate/s" "rows" "batches" "p50 ms" "p99 ms" "max ms"
} | tee "$report"

for i in "${!RATES[@]}"; do
    rate="${RATES[$i]}" secs="${SECS[$i]:-20}"
    "${PSQL[@]}" -o /dev/null -c "SET cq.allow_source_truncate = on" -c "TRUNCATE lat_src" -c "SELECT cq.reset('lat_out')"
    # batch 0 of the new run (empty history) first
    for _ in $(seq 1 500); do
        [[ "$("${PSQL[@]}" -c "SELECT count(*) FROM cq.offsets WHERE name = 'lat_out'")" != 0 ]] && break
        sleep 0.02
    done
    b0=$("${PSQL[@]}" -c "SELECT coalesce(max(batch_id), 0) FROM cq.offsets WHERE name = 'lat_out'")
    "$PGBENCH" -n -c 1 -j 1 -R "$rate" -T "$secs" -f "$OUT/latency_insert.sql" >"$OUT/pgbench-$rate.log" 2>&1
    # wait (bounded) until every row reached the target
    for _ in $(seq 1 500); do
        done_=$("${PSQL[@]}" -c "SELECT (SELECT count(*) FROM lat_out) = (SELECT count(*) FROM lat_src)")
        [[ "$done_" == t ]] && break
        sleep 0.02
    done
    "${PSQL[@]}" -F ' ' <<SQL | while read -r n p50 p99 mx; do
SELECT count(*),
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::numeric, 2),
       round((percentile_cont(0.99) WITHIN GROUP (ORDER BY ms))::numeric, 2),
       round(max(ms)::numeric, 2)
  FROM (SELECT extract(epoch FROM pg_xact_commit_timestamp(o.xmin) - pg_xact_commit_timestamp(s.xmin)) * 1000 AS ms
          FROM lat_src s JOIN lat_out o USING (id)) l;
SQL
        batches=$("${PSQL[@]}" -c "SELECT max(batch_id) - $b0 FROM cq.offsets WHERE name = 'lat_out'")
        printf '%-10s %8s %8s %10s %10s %10s\n' "$rate" "$n" "$batches" "$p50" "$p99" "$mx" | tee -a "$report"
    done
done
echo "report: ${report#"$REPO_ROOT"/}"
