#!/usr/bin/env bash
# bench/results/cold-s31-D.sh -- session 31 (helper D): bench/run.sh's
# scenario 2 phases A/B/C, round by round, with what the pool worker that
# served each CALL spent (CPU from /proc/PID/schedstat, minor faults from
# /proc/PID/stat) and its DEBUG1 split of the fold (relayed to the caller).
#
# Setup as run.sh's incremental(): N history rows, an index on id, the
# benchmark's update query (available_now), a matview, VACUUM, CHECKPOINT.
# Phase A: D_ROUNDS rounds of 10k new rows + CALL from a fresh session with
# cq.run_in_worker on; with D_REFRESH=1 the first D_SLOW rounds are followed
# by REFRESH MATERIALIZED VIEW and the plain GROUP BY (as run.sh does).
# Phase B: the same after ANALYZE of the source (no REFRESH).
# Phase C: D_ROUNDS batches in one session (in-process, as run.sh).
#
# Env: BENCH_PORT (56300), D_SIZES ("1000000 10000000"), D_ROUNDS (5),
# D_SLOW (3), D_REFRESH (1), D_NEW (10000), BENCH_OUT (/tmp/hD/cold.md),
# plus scripts/common.sh's PGBIN, CQ_TMPBASE, CQ_SKIP_APT, CQ_SKIP_BUILD.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
cd "$REPO_ROOT"

BENCH_PORT="${BENCH_PORT:-56300}"
D_SIZES="${D_SIZES:-1000000 10000000}"
D_ROUNDS="${D_ROUNDS:-5}"
D_SLOW="${D_SLOW:-3}"
D_REFRESH="${D_REFRESH:-1}"
D_NEW="${D_NEW:-10000}"
# D_CALL_OPTIONS: more settings of the timed CALLs (they apply in the worker),
# e.g. auto_explain's with CQ_PRELOAD=pg_cq,auto_explain; D_LOG: their output
D_CALL_OPTIONS="${D_CALL_OPTIONS:-}"
BENCH_OUT="${BENCH_OUT:-/tmp/hD/cold.md}"

trap 'stop_cluster bench_d' EXIT
ensure_packages
build_install
CQ_PRELOAD="${CQ_PRELOAD-pg_cq}" start_cluster bench_d "$BENCH_PORT" \
    "shared_buffers = 1GB" "work_mem = 64MB" "maintenance_work_mem = 256MB" \
    "max_wal_size = 4GB" "checkpoint_timeout = 30min" ${D_EXTRA_CONF:+"$D_EXTRA_CONF"}
psql_run "SET client_min_messages = warning;" "CREATE EXTENSION pg_cq;" >/dev/null

# worker_stats: "PID CPU_NS MINFLT" per pg_cq worker
worker_stats() {
    local p
    for p in $(psql_val "SELECT pid FROM pg_catalog.pg_stat_activity WHERE backend_type = 'pg_cq worker'"); do
        [[ -r /proc/$p/schedstat ]] || continue
        printf '%s %s %s\n' "$p" "$(cut -d' ' -f1 "/proc/$p/schedstat")" \
            "$(awk '{ sub(/^.*\) /, ""); print $8 }' "/proc/$p/stat")"
    done
}

# timed_call Q LABEL: one CALL from a fresh session handed to a worker
timed_call() {
    local q="$1" label="$2" before after out wall dur srv
    before="$(worker_stats)"
    out="$(printf '\\timing on\nCALL cq.run(%s);\n' "'$q'" \
        | PGOPTIONS="-c cq.run_in_worker=on -c client_min_messages=debug1 $D_CALL_OPTIONS" "${PSQL[@]}" -At 2>&1)" \
        || { printf '%s\n' "$out" >&2; die "CALL failed"; }
    after="$(worker_stats)"
    wall="$(awk '/^Time: /{print $2}' <<<"$out" | tail -1)"
    dur="$(psql_val "SELECT round(duration_ms::numeric, 1) || ' ' || num_input_rows FROM cq.progress WHERE name = '$q' ORDER BY batch_id DESC LIMIT 1")"
    srv="$(join -a2 <(sort <<<"$before") <(sort <<<"$after") \
        | awk 'NF == 5 { c = ($4 - $2) / 1e6; f = $5 - $3 } NF == 3 { c = $2 / 1e6; f = $3; n = " (new)" }
               c > best { best = c; line = sprintf("worker %s%s CPU %.1f ms, %d faults", $1, n, c, f) } END { print (line == "" ? "in-process" : line) }')"
    printf '%s: wall %s ms, progress %s rows; %s; %s\n' "$label" "$wall" "$dur" "$srv" \
        "$(grep -E 'store fold|table fold' <<<"$out" | sed -E 's/^.*pg_cq: //; s/ \(CPU time\)//; s/, each looked up and put as d makes it//' | paste -sd';' -)"
    echo "$wall" >>"$WALLS"
    [[ -z "${D_LOG:-}" ]] || printf '==== %s\n%s\n' "$label" "$out" >>"$D_LOG"
}

: >"$BENCH_OUT"
for n in $D_SIZES; do
    h="$(human "$n")"; ev="ev_${h,,}" q="agg_${h,,}" mv="mv_${h,,}"
    section "$h history rows"
    psql_run "CREATE TABLE $ev (id bigserial, ts timestamptz, device_id int, category text, amount numeric(10,2)) WITH (autovacuum_enabled = off);" \
        "$(gen_rows "$ev" "$n" '2024-01-01' '3 days')" "CREATE INDEX ON $ev (id);" >/dev/null
    psql_run "SET client_min_messages = warning;" \
        "CREATE TABLE $q WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $(agg_select "$ev");" \
        "CREATE MATERIALIZED VIEW $mv AS $(agg_select "$ev");" "VACUUM $ev;" "CHECKPOINT;" >/dev/null
    rnd=0
    new_rows() {
        rnd=$((rnd + 1))
        psql_run "$(gen_rows "$ev" "$D_NEW" "$(psql_val "SELECT timestamptz '2024-01-04' + ($rnd - 1) * interval '10 minutes'")" '10 minutes')" >/dev/null
    }
    for phase in A B; do
        WALLS="/tmp/hD/walls_${h}_$phase"; : >"$WALLS"
        [[ "$phase" == B ]] && psql_run "ANALYZE $ev;" "CHECKPOINT;" >/dev/null
        for ((r = 1; r <= D_ROUNDS; r++)); do
            new_rows
            timed_call "$q" "$h $phase round $r" | tee -a "$BENCH_OUT"
            if [[ "$phase" == A && "$D_REFRESH" == 1 ]] && ((r <= D_SLOW)); then
                ref="$(time_sql "REFRESH MATERIALIZED VIEW $mv;")"
                gb="$(time_sql "$(groupby_sql "$ev")")"
                echo "$h A round $r: REFRESH $ref ms, GROUP BY $gb ms" | tee -a "$BENCH_OUT"
            fi
        done
        echo "$h $phase median wall: $(median $(cat "$WALLS")) ms" | tee -a "$BENCH_OUT"
    done
    # phase C: one session, in-process
    script=""
    for ((r = 1; r <= D_ROUNDS; r++)); do
        rnd=$((rnd + 1))
        script+=$'\\timing off\n'"$(gen_rows "$ev" "$D_NEW" "$(psql_val "SELECT timestamptz '2024-01-04' + ($rnd - 1) * interval '10 minutes'")" '10 minutes')"$'\n\\timing on\n'"CALL cq.run('$q');"$'\n'
    done
    c="$(printf '%s' "$script" | "${PSQL[@]}" -At 2>/dev/null | awk '/^Time: /{print $2}' | paste -sd' ' -)"
    echo "$h C (one session): $c; median $(median $c) ms" | tee -a "$BENCH_OUT"
    psql_run "REFRESH MATERIALIZED VIEW $mv;" >/dev/null
    echo "$h check: $(diff_count() { psql_val "SELECT (SELECT count(*) FROM (TABLE $1 EXCEPT ALL TABLE $2) x) + (SELECT count(*) FROM (TABLE $2 EXCEPT ALL TABLE $1) y)"; }; diff_count "$q" "$mv") differing rows" | tee -a "$BENCH_OUT"
    psql_run "SELECT cq.drop_query('$q', drop_target => true);" "DROP MATERIALIZED VIEW $mv;" "DROP TABLE $ev;" "CHECKPOINT;" >/dev/null
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$BENCH_OUT"
