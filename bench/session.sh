#!/usr/bin/env bash
# bench/session.sh -- batch cost of session windows (issue 11).
#
#   sv (u, v, ts); BENCH_SESSION_KEYS users (20k);
#   SELECT u, session_start, session_end, count(*), sum(v), max(v)
#     FROM sv, LATERAL cq.session_window(ts, interval '5 minutes') s
#    GROUP BY u, s.session_start, s.session_end
#   watermark 10 minutes on ts; one query in update mode (ss_u), one in
#   append mode (ss_a), trigger 'available_now'.
#
# Event time is simulated: each round adds one minute of event time, B rows
# over random users (B in BENCH_SESSION_BATCHES, 1k and 10k: at 1k a user
# has a row every 20 minutes, so most rows start a session; at 10k every
# 2 minutes, so most rows extend or merge an open one).  After a warm-up of
# BENCH_SESSION_WARM rounds (the state levels off: sessions close 15
# minutes after their last row), BENCH_SESSION_ROUNDS rounds run both
# queries (order alternating) with CALL cq.run; reported: medians of
# cq.progress.duration_ms (the whole batch) and of durations->'addBatch'
# (the batch statement), the state rows (open sessions) and the rows written.
# Sanity: the update target equals the gaps-and-islands sessionization.
#
# Env: BENCH_PORT (default 55461), BENCH_SESSION_KEYS (20000),
# BENCH_SESSION_BATCHES ("1000 10000"), BENCH_SESSION_WARM (20),
# BENCH_SESSION_ROUNDS (9), BENCH_OUT (bench/results/session.md), plus
# scripts/common.sh's PGBIN, CQ_TMPBASE, CQ_SKIP_APT, CQ_SKIP_BUILD,
# CQ_KEEP_CLUSTER.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
cd "$REPO_ROOT"

BENCH_PORT="${BENCH_PORT:-55461}"
KEYS="${BENCH_SESSION_KEYS:-20000}"
BATCHES="${BENCH_SESSION_BATCHES:-1000 10000}"
WARM="${BENCH_SESSION_WARM:-20}"
ROUNDS="${BENCH_SESSION_ROUNDS:-9}"
BENCH_OUT="${BENCH_OUT:-$REPO_ROOT/bench/results/session.md}"
Q="SELECT u, s.session_start, s.session_end, count(*) AS n, sum(v) AS sv, max(v) AS mx FROM sv, LATERAL cq.session_window(ts, interval '5 minutes') AS s GROUP BY u, s.session_start, s.session_end"
ORACLE="WITH b AS (SELECT x.*, CASE WHEN ts <= max(ts + interval '5 minutes') OVER (PARTITION BY x.u ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) THEN 0 ELSE 1 END AS brk FROM sv x), i AS (SELECT b.*, sum(brk) OVER (PARTITION BY b.u ORDER BY ts ROWS UNBOUNDED PRECEDING) AS isl FROM b) SELECT i.u, min(ts) AS session_start, max(ts) + interval '5 minutes' AS session_end, count(*) AS n, sum(v) AS sv, max(v) AS mx FROM i GROUP BY i.u, isl"

trap 'stop_cluster bench_session' EXIT
section "build + cluster"
ensure_packages
build_install
CQ_PRELOAD="${CQ_PRELOAD-pg_cq}" start_cluster bench_session "$BENCH_PORT" \
    "shared_buffers = 512MB" "max_wal_size = 4GB" "autovacuum = off" "jit = off"

minute=0
# add_round B: one minute of event time, B rows over random users
add_round() {
    minute=$((minute + 1))
    psql_run "INSERT INTO sv (u, v, ts) SELECT (random() * ($KEYS - 1))::int, (random() * 100)::int, timestamptz '2026-01-01' + ($minute - 1 + random()) * interval '1 minute' FROM generate_series(1, $1);" >/dev/null
}
# run Q: one CALL; prints "duration addBatch state output" summed over its batches
run_q() {
    local last
    last=$(psql_val "SELECT coalesce(max(batch_id), -1) FROM cq.progress WHERE name = '$1'")
    psql_run "SET client_min_messages = warning;" "CALL cq.run('$1');" >/dev/null
    psql_val "SELECT sum(duration_ms) || ' ' || sum((durations->>'addBatch')::float8) || ' ' || (array_agg(num_state_rows_total ORDER BY batch_id DESC))[1] || ' ' || sum(num_output_rows) FROM cq.progress WHERE name = '$1' AND batch_id > $last"
}

ROWS=()
for B in $BATCHES; do
    section "$(human "$KEYS") users, batches of $(human "$B") rows"
    minute=0
    psql_run "SET client_min_messages = warning;" "CREATE EXTENSION IF NOT EXISTS pg_cq;" \
        "SELECT cq.drop_query(name, drop_target => true) FROM cq.queries WHERE name IN ('ss_u', 'ss_a');" \
        "DROP TABLE IF EXISTS sv CASCADE;" \
        "CREATE TABLE sv (u int, v int, ts timestamptz) WITH (autovacuum_enabled = off);" \
        "CREATE VIEW sv_oracle AS $ORACLE;" \
        "SELECT cq.create_query('ss_u', \$q\$$Q\$q\$, output_mode => 'update', event_time => 'ts', watermark => '10 minutes', \"trigger\" => 'available_now');" \
        "SELECT cq.create_query('ss_a', \$q\$$Q\$q\$, output_mode => 'append', event_time => 'ts', watermark => '10 minutes', \"trigger\" => 'available_now');" >/dev/null
    for ((r = 1; r <= WARM; r++)); do
        add_round "$B"; run_q ss_u >/dev/null; run_q ss_a >/dev/null
    done
    psql_run "ANALYZE sv;" "CHECKPOINT;" >/dev/null
    u=() a=() uf=() af=() st=() ou=() oa=()
    for ((r = 1; r <= ROUNDS; r++)); do
        add_round "$B"
        if ((r % 2)); then order=(ss_u ss_a); else order=(ss_a ss_u); fi
        for q in "${order[@]}"; do
            read -r d f s o <<<"$(run_q "$q")"
            if [[ $q == ss_u ]]; then u+=("$d") uf+=("$f") st+=("$s") ou+=("$o"); else a+=("$d") af+=("$f") oa+=("$o"); fi
        done
    done
    info "update $(fmt_ms "$(median "${u[@]}")") (statement $(fmt_ms "$(median "${uf[@]}")")), append $(fmt_ms "$(median "${a[@]}")"), state $(median "${st[@]}") sessions"
    bad=$(psql_val "SELECT count(*) FROM ((TABLE sv_oracle EXCEPT ALL TABLE ss_u) UNION ALL (TABLE ss_u EXCEPT ALL TABLE sv_oracle)) x")
    [[ "$bad" == 0 ]] || die "ss_u differs from the sessionization in $bad rows"
    ROWS+=("| $(human "$B") | $(printf %.0f "$(median "${st[@]}")") | $(fmt_ms "$(median "${u[@]}")") | $(fmt_ms "$(median "${uf[@]}")") | $(printf %.0f "$(median "${ou[@]}")") | $(fmt_ms "$(median "${a[@]}")") | $(fmt_ms "$(median "${af[@]}")") | $(printf %.0f "$(median "${oa[@]}")") |")
done

mkdir -p "$(dirname "$BENCH_OUT")"
{
    echo "# bench/session.sh: session windows ($(date -u '+%Y-%m-%d %H:%M UTC'), git $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
    echo
    echo "$(human "$KEYS") users, gap 5 minutes, watermark 10 minutes, one minute of event time per batch; medians of $ROUNDS batches after $WARM warm-up batches (cq.progress; a CALL's batches summed)."
    echo
    echo "| batch rows | open sessions | update: batch | update: statement | update: rows written | append: batch | append: statement | append: rows written |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    echo "statement: durations->'addBatch' (the batch statement: merge, eviction, target write). The update target equals the gaps-and-islands sessionization after each size."
} >"$BENCH_OUT"
cat "$BENCH_OUT"
