#!/usr/bin/env bash
# bench/fold_ab.sh -- batch 0 of the store (or any state storage) over a
# backlog, two builds of pg_cq side by side: two installations of PostgreSQL
# with pg_cq (FAB_OLD_PGBIN, FAB_NEW_PGBIN: e.g. a copy of an installation
# made with `cp -a` before installing the change; PostgreSQL finds its
# libraries relative to its binaries), each its own cluster (ports
# BENCH_PORT and BENCH_PORT + 1) with the same rows (bench/fold.sh's source
# and query, setseed(0.5)), the CALLs interleaved old/new, the order
# alternating by round.  Each round: CREATE TABLE ... AS ... WITH NO DATA,
# CHECKPOINT, CALL cq.run (CPU time of the backend, /proc/self/schedstat),
# the target's row count, drop, CHECKPOINT, then the plain GROUP BY's CPU in
# the same cluster.  Prints one line per CALL (CPU ms, wall ms, the GROUP
# BY's CPU ms, rows, the state storage after the batch, load average).
# With FAB_PERF=1 each CALL runs under `perf record -e cpu-clock -g` of its
# backend instead (files $CQ_TMPBASE/fold_ab/perf.{old,new}.ROUND; CPU
# not measured then): `perf report --no-children -g none --sort symbol -n`.
#
# Env: FAB_OLD_PGBIN, FAB_NEW_PGBIN (required), BENCH_PORT (55454),
# FAB_REPS (5), FAB_ROWS (5000000), FAB_SPAN (20000 minutes: ~1M groups),
# FAB_STORAGE (memory; default: the query's default), FAB_STATE_MEMORY
# (512MB, the CALL's cq.state_memory; empty: the server's), FAB_WORK_MEM
# (4MB), FAB_PERF, plus scripts/common.sh's CQ_TMPBASE, CQ_SKIP_APT.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"

: "${FAB_OLD_PGBIN:?set FAB_OLD_PGBIN}" "${FAB_NEW_PGBIN:?set FAB_NEW_PGBIN}"
BENCH_PORT="${BENCH_PORT:-55454}"
REPS="${FAB_REPS:-5}" ROWS_="${FAB_ROWS:-5000000}" SPAN="${FAB_SPAN:-20000}"
STORAGE="${FAB_STORAGE:-memory}" STMEM="${FAB_STATE_MEMORY-512MB}" WM="${FAB_WORK_MEM:-4MB}"
OUT="$CQ_TMPBASE/fold_ab"
mkdir -p "$OUT"
declare -A BIN=([old]=$FAB_OLD_PGBIN [new]=$FAB_NEW_PGBIN) PORT=([old]=$BENCH_PORT [new]=$((BENCH_PORT + 1)))
trap 'PGBIN=$FAB_OLD_PGBIN stop_cluster fab_old; PGBIN=$FAB_NEW_PGBIN stop_cluster fab_new' EXIT
use() {
    PGBIN=${BIN[$1]}
    PSQL=("$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -P pager=off)
    PGHOST=$(cluster_dir "fab_$1") PGPORT=${PORT[$1]} PGUSER=postgres PGDATABASE=postgres
    export PGHOST PGPORT PGUSER PGDATABASE
}
for w in old new; do
    PGBIN=${BIN[$w]} CQ_PRELOAD=pg_cq start_cluster "fab_$w" "${PORT[$w]}" "shared_buffers = 1GB" "max_wal_size = 4GB" \
        "checkpoint_timeout = 30min" "maintenance_work_mem = 256MB" "autovacuum = off" \
        "max_parallel_workers_per_gather = 0" "max_parallel_maintenance_workers = 0" "jit = off" >/dev/null
    use "$w"
    psql_run "SET client_min_messages = warning;" "CREATE EXTENSION IF NOT EXISTS pg_cq;" \
        "CREATE TABLE fold_ev (ts timestamptz, device_id int, category text, amount numeric(10,2)) WITH (autovacuum_enabled = off);" \
        "SELECT setseed(0.5);" "$(gen_rows fold_ev "$ROWS_" '2024-01-01' "$SPAN minutes")" "VACUUM ANALYZE fold_ev;" "CHECKPOINT;" >/dev/null
done
opt="" setm=""
[[ $STORAGE == default ]] || opt=", cq.state_storage = '$STORAGE'"
[[ -z $STMEM ]] || setm="SET cq.state_memory = '$STMEM'; "
call="${setm}SET cq.work_mem = '$WM'; CALL cq.run('fold_agg');"
for ((r = 1; r <= REPS; r++)); do
    for w in $( ((r % 2)) && echo "old new" || echo "new old"); do
        use "$w"
        psql_run "CREATE TABLE fold_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now'$opt) AS $(agg_select fold_ev) WITH NO DATA;" "CHECKPOINT;" >/dev/null 2>&1
        if [[ -n ${FAB_PERF:-} ]]; then
            rm -f "$OUT/pid"
            printf '%s\n' "\\o $OUT/pid" "SELECT pg_backend_pid();" "\\o" "SELECT pg_sleep(1);" "$call" | "${PSQL[@]}" -At >/dev/null &
            ppsql=$!
            until [[ -s $OUT/pid ]]; do sleep 0.1; done
            perf record -q -e cpu-clock -g -p "$(cat "$OUT/pid")" -o "$OUT/perf.$w.$r" >/dev/null 2>&1 &
            pperf=$!
            wait "$ppsql"
            kill -INT "$pperf"
            wait "$pperf" || true
            c=- wall=-
        else
            read -r c wall < <(cpu_sql "$call" 2>/dev/null)
        fi
        n=$(psql_val "SELECT count(*) FROM fold_agg")
        st=$(psql_val "SELECT state_storage FROM cq.queries WHERE name = 'fold_agg'")
        psql_run "SELECT cq.drop_query('fold_agg', drop_target => true);" "CHECKPOINT;" >/dev/null
        read -r g _ < <(cpu_sql "SET work_mem = '$WM'; $(groupby_sql fold_ev)")
        echo "round $r $w fold_cpu $c wall $wall gb_cpu $g rows $n storage $st load $(cut -d' ' -f1-3 /proc/loadavg)"
    done
done
