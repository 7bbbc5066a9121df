#!/usr/bin/env bash
# bench/fold.sh -- fold efficiency (issue 12 goal 2): the first batch of an
# update query over a backlog (CREATE TABLE ... AS ... WITH NO DATA, then one
# CALL cq.run) vs the plain GROUP BY of the same query, serial, with the same
# memory budget (the GROUP BY's work_mem = the batch's cq.work_mem).
#
# The query is bench/lib.sh's agg_select (1-minute buckets x ~50 categories,
# count, sum, avg, max of a numeric); the groups are set by the time span of
# the rows: 80 minutes -> ~4k groups, 20000 minutes -> 1M groups.
# For each work_mem in BENCH_FOLD_WORK_MEM and each group count, the fold and
# the GROUP BY alternate (which one goes first alternates too) for
# BENCH_FOLD_REPS rounds; figures are medians, the ratio the median of the rounds' fold / GROUP BY
# in CPU time of the backend (/proc/self/schedstat; the goal's measure, and
# robust to other jobs on the machine); wall times are shown too.  Both run
# in one backend without parallel workers (max_parallel_maintenance_workers
# = 0 too: a parallel build of the batch's indexes would put part of its CPU
# in worker processes, which the backend's CPU time does not count).
# BENCH_FOLD_STORAGES names the state storages measured: "default" (the
# query's default: the shared-memory store where it can hold the query,
# which at ~1M groups outgrows cq.state_memory in batch 0 and moves to the
# table, so that the batch pays for both), "unlogged" (the state table) and
# "memory" (state_storage = 'memory' with the batch's cq.state_memory =
# BENCH_FOLD_STATE_MEMORY, default 512MB: the store holds every group, so
# batch 0 writes the target alone; the CALL's session SETs it).
#
# BENCH_FOLD_AB: settings (e.g. "SET cq.fold_page_economy = off;") for a
# second fold in every round, against the same GROUP BY, so that a change and
# its absence alternate in one run (each round runs the three in a rotating
# order); its rows are labelled with the settings.
#
# Env: BENCH_PORT (default 55454), BENCH_FOLD_ROWS (5000000),
# BENCH_FOLD_REPS (3), BENCH_FOLD_WORK_MEM ('4MB 64MB'),
# BENCH_FOLD_SPANS ('80 20000', minutes), BENCH_FOLD_STORAGES ('default
# unlogged'; also "memory"), BENCH_FOLD_STATE_MEMORY (512MB),
# BENCH_OUT (bench/results/fold.md),
# plus scripts/common.sh's PGBIN, CQ_TMPBASE, CQ_SKIP_APT, CQ_SKIP_BUILD,
# CQ_KEEP_CLUSTER.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
cd "$REPO_ROOT"

BENCH_PORT="${BENCH_PORT:-55454}"
BENCH_FOLD_ROWS="${BENCH_FOLD_ROWS:-5000000}"
BENCH_FOLD_REPS="${BENCH_FOLD_REPS:-3}"
BENCH_FOLD_WORK_MEM="${BENCH_FOLD_WORK_MEM:-4MB 64MB}"
BENCH_FOLD_SPANS="${BENCH_FOLD_SPANS:-80 20000}"
BENCH_FOLD_STORAGES="${BENCH_FOLD_STORAGES:-default unlogged}"
BENCH_FOLD_STATE_MEMORY="${BENCH_FOLD_STATE_MEMORY:-512MB}"
BENCH_OUT="${BENCH_OUT:-$REPO_ROOT/bench/results/fold.md}"
BENCH_FOLD_AB="${BENCH_FOLD_AB:-}"

trap 'stop_cluster bench_fold' EXIT
section "build + cluster"
ensure_packages
build_install
fold_cluster bench_fold "$BENCH_PORT"
psql_run "SET client_min_messages = warning;" "CREATE EXTENSION IF NOT EXISTS pg_cq;" >/dev/null

ROWS=()
for span in $BENCH_FOLD_SPANS; do
    section "$(human "$BENCH_FOLD_ROWS") rows over $span minutes"
    psql_run "DROP TABLE IF EXISTS fold_ev;" \
        "CREATE TABLE fold_ev (ts timestamptz, device_id int, category text, amount numeric(10,2)) WITH (autovacuum_enabled = off);" \
        "$(gen_rows fold_ev "$BENCH_FOLD_ROWS" '2024-01-01' "$span minutes")" \
        "VACUUM ANALYZE fold_ev;" "CHECKPOINT;" >/dev/null
    groups=$(psql_val "SELECT count(*) FROM ($(agg_select fold_ev)) s;")
    for storage in $BENCH_FOLD_STORAGES; do
    opt="" set_mem=""
    [[ $storage == default ]] || opt=", cq.state_storage = '$storage'"
    [[ $storage != memory ]] || set_mem="SET cq.state_memory = '$BENCH_FOLD_STATE_MEMORY'; "
    for wm in $BENCH_FOLD_WORK_MEM; do
        cq=() gb=() cqw=() gbw=() ab=() abw=()
        for ((r = 1; r <= BENCH_FOLD_REPS; r++)); do
            if [[ -z $BENCH_FOLD_AB ]]; then order=$( ((r % 2)) && echo "cq gb" || echo "gb cq")
            else order=$(case $((r % 3)) in 1) echo "cq ab gb" ;; 2) echo "ab gb cq" ;; *) echo "gb cq ab" ;; esac)
            fi
            for which in $order; do
                if [[ $which == cq || $which == ab ]]; then
                    psql_run "CREATE TABLE fold_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now'$opt) AS $(agg_select fold_ev) WITH NO DATA;" >/dev/null 2>&1
                    psql_run "CHECKPOINT;" >/dev/null
                    set_ab=""
                    [[ $which == cq ]] || set_ab="$BENCH_FOLD_AB "
                    read -r c w < <(cpu_sql "${set_mem}${set_ab}SET cq.work_mem = '$wm'; CALL cq.run('fold_agg');" 2>/dev/null)
                    if [[ $which == cq ]]; then cq+=("$c") cqw+=("$w"); else ab+=("$c") abw+=("$w"); fi
                    n=$(psql_val "SELECT count(*) FROM fold_agg")
                    [[ $n == "$groups" ]] || die "fold_agg has $n rows, want $groups"
                    if ((r == 1)); then
                        d=$(psql_val "SELECT count(*) FROM (SELECT * FROM fold_agg EXCEPT ALL $(agg_select fold_ev)) x")
                        [[ $d == 0 ]] || die "fold_agg differs from the GROUP BY in $d rows"
                    fi
                    psql_run "SELECT cq.drop_query('fold_agg', drop_target => true);" "CHECKPOINT;" >/dev/null
                else
                    read -r c w < <(cpu_sql "SET work_mem = '$wm'; $(groupby_sql fold_ev)")
                    gb+=("$c") gbw+=("$w")
                fi
            done
        done
        # the ratio: the median of the rounds' own ratios (each round's fold
        # and GROUP BY ran back to back, under the same load), as issue 12
        # asks ("medians of interleaved pairs"); the CPU columns are medians
        rs=()
        for ((i = 0; i < ${#cq[@]}; i++)); do rs+=("$(calc "${cq[$i]} / ${gb[$i]}")"); done
        c=$(median "${cq[@]}"); g=$(median "${gb[@]}"); x=$(median "${rs[@]}")
        cw=$(median "${cqw[@]}"); gw=$(median "${gbw[@]}")
        info "groups $groups work_mem $wm state $storage: fold CPU ${cq[*]} | group by CPU ${gb[*]} | per-round ratios ${rs[*]} -> $(fmt_x "$x")"
        ROWS+=("| $(human "$BENCH_FOLD_ROWS") rows → $groups groups | $storage | $wm | $(fmt_ms "$g") ($(fmt_ms "$gw")) | $(fmt_ms "$c") ($(fmt_ms "$cw")) | $(fmt_x "$x") | $(met "$x" '<=' 1.2) |")
        if [[ -n $BENCH_FOLD_AB ]]; then
            rs=()
            for ((i = 0; i < ${#ab[@]}; i++)); do rs+=("$(calc "${ab[$i]} / ${gb[$i]}")"); done
            c=$(median "${ab[@]}"); x=$(median "${rs[@]}"); cw=$(median "${abw[@]}")
            info "groups $groups work_mem $wm state $storage, $BENCH_FOLD_AB: fold CPU ${ab[*]} | per-round ratios ${rs[*]} -> $(fmt_x "$x")"
            ROWS+=("| $(human "$BENCH_FOLD_ROWS") rows → $groups groups | $storage, \`$BENCH_FOLD_AB\` | $wm | $(fmt_ms "$g") ($(fmt_ms "$gw")) | $(fmt_ms "$c") ($(fmt_ms "$cw")) | $(fmt_x "$x") | $(met "$x" '<=' 1.2) |")
        fi
    done
    done
    psql_run "DROP TABLE fold_ev;" "CHECKPOINT;" >/dev/null
done

{
    echo "# Fold efficiency ($(date -u '+%Y-%m-%d %H:%M UTC'), git $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
    echo
    echo "Medians of $BENCH_FOLD_REPS interleaved rounds; serial (no parallel workers, jit off); the GROUP BY's work_mem = the batch's cq.work_mem. CPU time of the backend (wall time in parentheses); ratio: the median of the rounds' ratios of CPU times (fold / GROUP BY of the same round)."
    echo
    echo "| backlog | state | memory | plain GROUP BY: CPU (wall) | pg_cq fold (CALL cq.run): CPU (wall) | ratio (CPU) | ≤ 1.2x |"
    echo "|---|---|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
} | tee "$BENCH_OUT"
