#!/usr/bin/env bash
# bench/fold_next.sh -- what a batch-0 setting costs the batches after it
# (issue 12 goal 2, session 41): bench/fold.sh's backlog and update query
# (store, cq.work_mem 4MB), then two incremental batches, each over
# BENCH_NEXT_ROWS new rows spread over the whole span (so they change
# existing groups: random pages of the target's heap and index), each CALL
# in a fresh session as a pool worker's first batch after a restart would
# run.  For each round the settings BENCH_NEXT_A and BENCH_NEXT_B (set in
# every CALL's session) alternate in order; the CPU time of the
# backend (/proc/self/schedstat) of batch 0, batch 1 and batch 2, and the
# backend's minor page faults (/proc/self/stat), medians of the rounds.
#
# Env: BENCH_PORT (55454), BENCH_FOLD_ROWS (5000000), BENCH_FOLD_SPANS
# (20000 minutes), BENCH_NEXT_ROWS (20000), BENCH_NEXT_REPS (3),
# BENCH_NEXT_A ("SET cq.batch0_read_back = off;"), BENCH_NEXT_B ("SET
# cq.batch0_read_back = on;"),
# BENCH_OUT (bench/results/fold_next.md), plus scripts/common.sh's.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
cd "$REPO_ROOT"

BENCH_PORT="${BENCH_PORT:-55454}"
BENCH_FOLD_ROWS="${BENCH_FOLD_ROWS:-5000000}"
BENCH_FOLD_SPANS="${BENCH_FOLD_SPANS:-20000}"
BENCH_NEXT_ROWS="${BENCH_NEXT_ROWS:-20000}"
BENCH_NEXT_REPS="${BENCH_NEXT_REPS:-3}"
BENCH_NEXT_A="${BENCH_NEXT_A-SET cq.batch0_read_back = off;}"
BENCH_NEXT_B="${BENCH_NEXT_B-SET cq.batch0_read_back = on;}"
BENCH_OUT="${BENCH_OUT:-$REPO_ROOT/bench/results/fold_next.md}"

trap 'stop_cluster bench_next' EXIT
section "build + cluster"
ensure_packages
build_install
fold_cluster bench_next "$BENCH_PORT"
psql_run "SET client_min_messages = warning;" "CREATE EXTENSION IF NOT EXISTS pg_cq;" >/dev/null

# faults_cpu SCRIPT: "CPU_MS MINFLT SYS_MS" of a fresh session running SCRIPT
# (/proc/self/stat fields 10 and 15: minor faults, system time in ticks)
faults_cpu() {
    local st="pg_catalog.split_part(pg_catalog.pg_read_file('/proc/self/stat'), ' ', 10)::bigint"
    local sy="pg_catalog.split_part(pg_catalog.pg_read_file('/proc/self/stat'), ' ', 15)::bigint"
    local sched="pg_catalog.split_part(pg_catalog.pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint"
    printf '%s\n' "SELECT $sched AS c0, $st AS f0, $sy AS s0 \\gset" "$1" \
        "SELECT 'fc ' || (($sched - :c0) / 1e6)::numeric(14,1) || ' ' || ($st - :f0) || ' ' || (($sy - :s0) * 1000 / $CLK_TCK);" \
        | "${PSQL[@]}" -At 2>&1 | grep -oE '^fc [0-9.]+ [0-9]+ [0-9]+' | tail -1 | cut -d' ' -f2- | grep . \
        || die "no CPU time for: $1"
}

ROWS=() RATIOS=()
for span in $BENCH_FOLD_SPANS; do
    psql_run "DROP TABLE IF EXISTS fold_ev;" \
        "CREATE TABLE fold_ev (ts timestamptz, device_id int, category text, amount numeric(10,2)) WITH (autovacuum_enabled = off);" \
        "$(gen_rows fold_ev "$BENCH_FOLD_ROWS" '2024-01-01' "$span minutes")" \
        "VACUUM ANALYZE fold_ev;" "CHECKPOINT;" >/dev/null
    declare -A cpu=() flt=() sys=()
    for ((r = 1; r <= BENCH_NEXT_REPS; r++)); do
        order=$( ((r % 2)) && echo "A B" || echo "B A")
        for which in $order; do
            set_x="$BENCH_NEXT_A"
            [[ $which == A ]] || set_x="$BENCH_NEXT_B"
            psql_run "CREATE TABLE fold_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $(agg_select fold_ev) WITH NO DATA;" >/dev/null 2>&1
            psql_run "CHECKPOINT;" >/dev/null
            read -r c f y < <(faults_cpu "${set_x} SET cq.work_mem = '4MB'; CALL cq.run('fold_agg');")
            cpu[$which,0]+="$c " flt[$which,0]+="$f " sys[$which,0]+="$y "
            for b in 1 2; do
                psql_run "INSERT INTO fold_ev SELECT timestamptz '2024-01-01' + random() * interval '$span minutes', 0, 'cat_' || lpad(floor(random() * 50)::int::text, 2, '0'), round((random() * 1000)::numeric, 2) FROM generate_series(1, $BENCH_NEXT_ROWS);" >/dev/null
                read -r c f y < <(faults_cpu "${set_x} CALL cq.run('fold_agg');")
                cpu[$which,$b]+="$c " flt[$which,$b]+="$f " sys[$which,$b]+="$y "
            done
            d=$(psql_val "SELECT count(*) FROM (SELECT * FROM fold_agg EXCEPT ALL $(agg_select fold_ev)) x")
            [[ $d == 0 ]] || die "fold_agg differs from the GROUP BY in $d rows"
            psql_run "SELECT cq.drop_query('fold_agg', drop_target => true);" "DELETE FROM fold_ev WHERE device_id = 0;" "VACUUM fold_ev;" "CHECKPOINT;" >/dev/null
        done
    done
    for which in A B; do
        label=$([[ $which == A ]] && echo "${BENCH_NEXT_A:-(default)}" || echo "${BENCH_NEXT_B:-(default)}")
        line="| $span min | \`$label\` |"
        for b in 0 1 2; do
            # shellcheck disable=SC2086
            line+=" $(median ${cpu[$which,$b]}) ms ($(median ${sys[$which,$b]}) ms) / $(median ${flt[$which,$b]}) |"
            info "$label batch $b: CPU ${cpu[$which,$b]}| system ${sys[$which,$b]}| faults ${flt[$which,$b]}"
        done
        ROWS+=("$line")
    done
    # the rounds' own ratios A / B of each batch (A and B ran back to back)
    for b in 0 1 2; do
        read -ra xa <<<"${cpu[A,$b]}"
        read -ra xb <<<"${cpu[B,$b]}"
        rs=()
        for ((i = 0; i < ${#xa[@]}; i++)); do rs+=("$(calc "${xa[$i]} / ${xb[$i]}")"); done
        RATIOS+=("batch $b: the rounds' A / B ${rs[*]} -> median $(median "${rs[@]}")")
    done
done

{
    echo "# Batch 0 and the two batches after it ($(date -u '+%Y-%m-%d %H:%M UTC'), git $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
    echo
    echo "$(human "$BENCH_FOLD_ROWS") rows, bench/fold.sh's query and cluster (store, cq.work_mem 4MB); batches 1 and 2: $BENCH_NEXT_ROWS new rows each over the whole span, each CALL in a fresh session. Medians of $BENCH_NEXT_REPS alternating rounds: backend CPU time (of it system time) / minor page faults."
    echo
    echo "| span | settings | batch 0 | batch 1 | batch 2 |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    echo "A = \`$BENCH_NEXT_A\`, B = \`$BENCH_NEXT_B\` (CPU time):"
    echo
    printf -- '- %s\n' "${RATIOS[@]}"
} | tee "$BENCH_OUT"
