#!/usr/bin/env bash
# bench/store.sh -- the shared-memory state store against the state table
# (issue 15), in one run.
#
# Two update queries `SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m
# FROM src GROUP BY k` over the same source: st_mem (state_storage =
# 'memory') and st_tab (the default unlogged state table), both folded over
# G groups first (BENCH_STORE_GROUPS).  Then, for each batch size B
# (BENCH_STORE_BATCHES), R rounds (BENCH_STORE_ROUNDS): insert B rows over
# random existing keys (10% new keys), run both queries with CALL cq.run in
# an order that alternates round by round, and take each batch's
# cq.progress.duration_ms (the whole batch: offsets, count, fold, target
# writes, bookkeeping).  Reported: medians and the ratio table/store.
# Sanity: both targets equal the plain query at the end.
#
# Memory: cq.state_store_info's bytes (rows and per-group overhead, as
# counted against cq.state_memory) of st_mem, scaled to 1M groups.
#
# Env: BENCH_PORT (default 55455), BENCH_STORE_GROUPS (100000),
# BENCH_STORE_BATCHES ("1000 10000"), BENCH_STORE_ROUNDS (9),
# BENCH_OUT (bench/results/store.md), plus scripts/common.sh's PGBIN,
# CQ_TMPBASE, CQ_SKIP_APT, CQ_SKIP_BUILD, CQ_KEEP_CLUSTER.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
cd "$REPO_ROOT"

BENCH_PORT="${BENCH_PORT:-55455}"
BENCH_STORE_GROUPS="${BENCH_STORE_GROUPS:-100000}"
BENCH_STORE_BATCHES="${BENCH_STORE_BATCHES:-1000 10000}"
BENCH_STORE_ROUNDS="${BENCH_STORE_ROUNDS:-9}"
BENCH_OUT="${BENCH_OUT:-$REPO_ROOT/bench/results/store.md}"
G="$BENCH_STORE_GROUPS"

trap 'stop_cluster bench_store' EXIT
section "build + cluster"
ensure_packages
build_install
CQ_PRELOAD="${CQ_PRELOAD-pg_cq}" start_cluster bench_store "$BENCH_PORT" \
    "shared_buffers = 512MB" "max_wal_size = 4GB" "autovacuum = off" "cq.state_memory = 1GB"

section "setup: $(human "$G") groups"
psql_run "SET client_min_messages = warning;" \
    "CREATE EXTENSION IF NOT EXISTS pg_cq;" \
    "CREATE TABLE src (k int NOT NULL, v int NOT NULL) WITH (autovacuum_enabled = off);" \
    "SELECT cq.create_query('st_mem', 'SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m FROM src GROUP BY k', output_mode => 'update', \"trigger\" => 'available_now', state_storage => 'memory');" \
    "SELECT cq.create_query('st_tab', 'SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m FROM src GROUP BY k', output_mode => 'update', \"trigger\" => 'available_now');" \
    "INSERT INTO src SELECT g % $G, (g * 7) % 1000 FROM generate_series(1, 2 * $G) g;" \
    "CALL cq.run('st_mem');" "CALL cq.run('st_tab');" \
    "ANALYZE src, st_mem, st_tab;" >/dev/null
bytes=$(psql_val "SELECT state_bytes FROM cq.state_store_info('st_mem');")
rows=$(psql_val "SELECT state_rows FROM cq.state_store_info('st_mem');")
per_group=$(calc "$bytes / $rows")
mb_per_m=$(calc "$bytes / $rows * 1000000 / 1048576")

declare -A MED
for B in $BENCH_STORE_BATCHES; do
    section "batches of $(human "$B") rows, $BENCH_STORE_ROUNDS rounds"
    mem=() tab=() memf=() tabf=()
    for ((r = 1; r <= BENCH_STORE_ROUNDS; r++)); do
        psql_run "INSERT INTO src SELECT CASE WHEN random() < 0.1 THEN $G + (random() * 1000000)::int ELSE (random() * ($G - 1))::int END, (random() * 1000)::int FROM generate_series(1, $B);" >/dev/null
        if ((r % 2)); then order=(st_mem st_tab); else order=(st_tab st_mem); fi
        for q in "${order[@]}"; do
            psql_run "SET client_min_messages = warning;" "CALL cq.run('$q');" >/dev/null
        done
        mem+=("$(psql_val "SELECT duration_ms FROM cq.progress WHERE name = 'st_mem' ORDER BY batch_id DESC LIMIT 1;")")
        tab+=("$(psql_val "SELECT duration_ms FROM cq.progress WHERE name = 'st_tab' ORDER BY batch_id DESC LIMIT 1;")")
        memf+=("$(psql_val "SELECT durations->>'addBatch' FROM cq.progress WHERE name = 'st_mem' ORDER BY batch_id DESC LIMIT 1;")")
        tabf+=("$(psql_val "SELECT durations->>'addBatch' FROM cq.progress WHERE name = 'st_tab' ORDER BY batch_id DESC LIMIT 1;")")
    done
    MED["mem_$B"]=$(median "${mem[@]}")
    MED["tab_$B"]=$(median "${tab[@]}")
    MED["memf_$B"]=$(median "${memf[@]}")
    MED["tabf_$B"]=$(median "${tabf[@]}")
    info "store $(fmt_ms "${MED["mem_$B"]}"), table $(fmt_ms "${MED["tab_$B"]}")"
done

section "sanity"
for q in st_mem st_tab; do
    bad=$(psql_val "SELECT count(*) FROM ((SELECT k, count(*), sum(v), max(v) FROM src GROUP BY k EXCEPT ALL TABLE $q) UNION ALL (TABLE $q EXCEPT ALL SELECT k, count(*), sum(v), max(v) FROM src GROUP BY k)) x;")
    [[ "$bad" == 0 ]] || die "$q differs from the plain query ($bad rows)"
done
info "both targets equal the plain query"

mkdir -p "$(dirname "$BENCH_OUT")"
{
    echo "# bench/store.sh: shared-memory state store vs state table"
    echo
    echo "$(human "$G") groups, update mode, \`k, count(*), sum(v), max(v)\`; median of $BENCH_STORE_ROUNDS batches (cq.progress.duration_ms, whole batch)."
    echo
    echo "| batch rows | store: batch | table: batch | table / store | store: fold + target | table: fold + target | table / store |"
    echo "|---|---|---|---|---|---|---|"
    for B in $BENCH_STORE_BATCHES; do
        echo "| $(human "$B") | $(fmt_ms "${MED["mem_$B"]}") | $(fmt_ms "${MED["tab_$B"]}") | $(fmt_x "$(calc "${MED["tab_$B"]} / ${MED["mem_$B"]}")") | $(fmt_ms "${MED["memf_$B"]}") | $(fmt_ms "${MED["tabf_$B"]}") | $(fmt_x "$(calc "${MED["tabf_$B"]} / ${MED["memf_$B"]}")") |"
    done
    echo
    echo "fold + target: cq.progress.durations->'addBatch' (the main statement(s): for the store, d, the merge statement and the target statement; for the table, the one statement with its state CTEs)."
    echo
    echo "State memory: $bytes bytes for $rows groups ($per_group bytes per group, about $mb_per_m MB per 1M groups; DSA and hash-table overhead not counted)."
} >"$BENCH_OUT"
cat "$BENCH_OUT"
