#!/usr/bin/env bash
# bench/run.sh -- `make bench`: pg_cq performance against same-run baselines.
#
#   1. incremental batch at 1M history rows vs REFRESH MATERIALIZED VIEW and
#      the plain GROUP BY                                      (issue 2)
#   2. incremental batch at 1M/5M/10M history rows: pg_cq vs REFRESH and a
#      hand-written incremental upsert; at 10M also goal 4's "10k new rows
#      ≥ 250x faster than REFRESH"                             (issue 6, 12)
#   3. fold: goal 2's profile: one fold of a 5M-row backlog into ~4k and
#      into ~1M groups under DEBUG1 (each phase's CPU time) against the
#      plain GROUP BY (CPU time, EXPLAIN ANALYZE)              (issue 12)
#   4. ingest: pgbench 1000-row INSERTs into a tracked vs an untracked table
#      while a trigger '0' query folds the tracked rows (goal 3), with the
#      CPU of the writers' backends and of pg_cq's workers and the batches'
#      sizes (goal 3's profile)                                (issue 6, 12)
#   5. latency: bench/latency.sh on its own cluster: commit-to-target
#      latency at 100/1,000/10,000 rows/s (goal 6) and with 1/10/100 queries
#      over one source (goal 5), with pg_cq's CPU              (issue 6, 12)
#   6. memory: peak private memory of the backend running one unlimited
#      batch over a large backlog into a large state           (issue 6)
# and the standalone scripts, each on its own cluster and port:
#   write_path  bench/write_path.sh  tracked vs untracked writes (goal 1)
#   cold        bench/cold.sh        first batch in a new backend (goal 4)
#   fold_goal   bench/fold.sh        fold CPU per row (goal 2)
#   merge       bench/merge.sh       MERGE vs upsert (goal 7)
# and, only when named (BENCH_ONLY, BENCH_ALSO, or BENCH_ONLY=all):
#   aggregates  bench/aggregates.sh  generic aggregates (issue 10)
#   join        bench/join.sh        join of two streams, 10k rows/s each (issue 11)
#   session     bench/session.sh     session windows, 1k/10k-row batches (issue 11)
#   soak        bench/soak.sh        10 min correctness soak (not in "all")
# The report starts with one table of issue 12's eight goals (target,
# figure, met/missed, the profile that explains a miss) and gnuplot charts
# (PNG) go next to it (goal 8).  The default run takes ~20 min on a quiet
# 2-core machine, ~55 min on a loaded one (bench/README.md, "How long").
# Every figure is a ratio against a baseline measured in the same run
# (the machine is small and noisy); repeated measurements report the median.
# Output: a markdown report printed at the end and written to
# bench/results/latest.md; raw logs and plans in bench/results/raw/.
#
# Env knobs (all optional; see bench/README.md):
#   BENCH_SCALE=1           multiply every row count; below 0.1 also fewer
#                           rounds and shorter runs (0.01 = smoke run)
#   BENCH_ONLY="incremental fold ingest latency memory write_path cold fold_goal merge"
#                           scenarios to run (names, or 1-6 for the built-in ones;
#                           BENCH_SCENARIOS is the old name); "all" = these and
#                           aggregates join session; add soak for the soak
#   BENCH_ALSO=""           scenarios to run on top of BENCH_ONLY (e.g. "join session")
#   BENCH_SKIP=""           scenarios not to run
#   BENCH_RESULTS=bench/results   where latest.md, raw/ and the PNG charts go
#   BENCH_SIZES="1000000 5000000 10000000"   history sizes of scenario 2
#   BENCH_MAX_ROWS=10000000 drop sizes above this
#   BENCH_NEW_ROWS=10000    new rows per incremental batch
#   BENCH_REPS=5            incremental rounds per size (and per phase)
#   BENCH_SLOW_REPS=3       rounds that also time REFRESH and the plain GROUP BY
#   BENCH_FOLD_ROWS=5000000 backlog of scenario 3 and bench/fold.sh
#   BENCH_FOLD_SPANS="80 20000"   scenario 3: minutes of event time (~4k, ~1M groups)
#   BENCH_FOLD_STORAGES=default BENCH_FOLD_WORK_MEM=4MB   bench/fold.sh's cells ("default unlogged", "4MB 64MB": all)
#   BENCH_INGEST="multi:1 multi:2"   scenario 4: KIND:CLIENTS (single|multi)
#   BENCH_INGEST_PAUSED=0   scenario 4: 1 = the writers run with ing_agg paused
#                           (resumed after the last run, to fold the backlog):
#                           their CPU per row without the fold beside them
#   BENCH_PGBENCH_SECS=3    seconds per pgbench run (scenario 4, write_path)
#   BENCH_PGBENCH_ROUNDS=7  tracked/untracked pairs per config (ratio = median of pair ratios)
#   BENCH_LAT_RATES="100 1000 10000" BENCH_LAT_SECS="20 20 20"   scenario 5 (bench/latency.sh)
#   BENCH_LAT_QUERIES="1 10 100" BENCH_LAT_Q_SECS=20   goal 5 (bench/latency.sh)
#   BENCH_MERGE_CHANGED=1000   bench/merge.sh: changed groups per batch (at 4k and 1M groups)
#   BENCH_SOAK_SECS=600     bench/soak.sh (only with BENCH_ONLY=... soak)
#   BENCH_MEM_GROUPS=1000000 BENCH_MEM_ROWS=5000000 BENCH_MEM_WORK_MEM=4MB   scenario 6
#   BENCH_AUTOVACUUM=off    autovacuum_enabled of the scenario 1-2 sources
#   BENCH_PROFILE=1         capture auto_explain plans of extra, untimed batches
#   BENCH_EXTRA_CONF=""     more postgresql.conf lines of the bench cluster, ';'-separated
#                           (e.g. "cq.coalesce_max_delay = 0" to measure without coalescing)
#   BENCH_PORT=55450        port of the throwaway cluster /tmp/pg_cq_bench; the
#                           other clusters take BENCH_PORT+1 .. BENCH_PORT+9
# plus scripts/common.sh's CQ_SKIP_APT, CQ_SKIP_BUILD, CQ_KEEP_CLUSTER, PGBIN.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
cd "$REPO_ROOT"

BENCH_SCALE="${BENCH_SCALE:-1}"
SMOKE=$(awk -v s="$BENCH_SCALE" 'BEGIN { print (s < 0.1) ? 1 : 0 }')
# small: VALUE_IF_SMOKE VALUE_OTHERWISE
small() { if ((SMOKE)); then echo "$1"; else echo "$2"; fi; }
BENCH_SIZES="${BENCH_SIZES:-1000000 5000000 10000000}"
BENCH_MAX_ROWS="${BENCH_MAX_ROWS:-10000000}"
BENCH_NEW_ROWS="${BENCH_NEW_ROWS:-10000}"
BENCH_REPS="${BENCH_REPS:-$(small 2 5)}"
BENCH_SLOW_REPS="${BENCH_SLOW_REPS:-$(small 2 3)}"
BENCH_FOLD_ROWS="${BENCH_FOLD_ROWS:-5000000}"
BENCH_FOLD_SPANS="${BENCH_FOLD_SPANS:-80 20000}"
BENCH_PGBENCH_SECS="${BENCH_PGBENCH_SECS:-$(small 1 3)}"
BENCH_PGBENCH_ROUNDS="${BENCH_PGBENCH_ROUNDS:-$(small 3 7)}"
BENCH_INGEST="${BENCH_INGEST:-multi:1 multi:2}"
DEFAULT_SCENARIOS="incremental fold ingest latency memory write_path cold fold_goal merge"
ALL_SCENARIOS="$DEFAULT_SCENARIOS aggregates join session"
BENCH_ONLY="${BENCH_ONLY:-${BENCH_SCENARIOS:-$DEFAULT_SCENARIOS}}"
BENCH_ONLY="${BENCH_ONLY//all/$ALL_SCENARIOS} ${BENCH_ALSO:-}"
BENCH_SKIP="${BENCH_SKIP:-}"
BENCH_LAT_RATES="${BENCH_LAT_RATES:-100 1000 10000}"
BENCH_LAT_SECS="${BENCH_LAT_SECS:-$(small "3 3 3" "20 20 20")}"
BENCH_LAT_QUERIES="${BENCH_LAT_QUERIES:-1 10 100}"
BENCH_LAT_Q_SECS="${BENCH_LAT_Q_SECS:-$(small 3 20)}"
BENCH_SOAK_SECS="${BENCH_SOAK_SECS:-600}"
BENCH_MEM_GROUPS="${BENCH_MEM_GROUPS:-1000000}"
BENCH_MEM_ROWS="${BENCH_MEM_ROWS:-5000000}"
BENCH_MEM_WORK_MEM="${BENCH_MEM_WORK_MEM:-4MB}"
BENCH_PROFILE="${BENCH_PROFILE:-1}"
BENCH_PORT="${BENCH_PORT:-55450}"
BENCH_AUTOVACUUM="${BENCH_AUTOVACUUM:-off}"
BENCH_RESULTS="${BENCH_RESULTS:-$REPO_ROOT/bench/results}"
BENCH_OUT="${BENCH_OUT:-$BENCH_RESULTS/latest.md}"
RAW="$BENCH_RESULTS/raw"
# machine-readable results of the standalone scripts (BENCH_DATA / LAT_DATA)
DATA="$RAW/bench.data"

# Cluster settings (on top of scripts/common.sh's fsync = off,
# synchronous_commit = off, full_page_writes = off).
BENCH_CONF=(
    "shared_buffers = 1GB"
    "work_mem = 64MB"
    "maintenance_work_mem = 256MB"
    "max_wal_size = 4GB"
    "checkpoint_timeout = 30min"
)
# BENCH_EXTRA_CONF: more lines, separated by ';' (e.g. "cq.coalesce_max_delay = 0")
IFS=';' read -r -a _extra <<<"${BENCH_EXTRA_CONF:-}"
BENCH_CONF+=("${_extra[@]}")

# scenario numbers of the built-in scenarios (BENCH_ONLY/BENCH_SKIP take both)
declare -A SCEN_NUM=([incremental]="1 2" [fold]=3 [ingest]=4 [latency]=5 [memory]=6)
tok_matches() {   # TOKEN NAME_OR_NUMBER
    [[ "$1" == "$2" || " ${SCEN_NUM[$1]:-} " == *" $2 "* || " ${SCEN_NUM[$2]:-} " == *" $1 "* ]]
}
want() {
    local t
    for t in $BENCH_SKIP; do tok_matches "$t" "$1" && return 1; done
    for t in $BENCH_ONLY; do tok_matches "$t" "$1" && return 0; done
    return 1
}

NEW=$(scaled "$BENCH_NEW_ROWS" 100)
FOLD=$(scaled "$BENCH_FOLD_ROWS" 1000)
SIZES=()
for s in $BENCH_SIZES; do
    ((s <= BENCH_MAX_ROWS)) || continue
    SIZES+=("$(scaled "$s" 1000)")
done
# Scenario 1 is the smallest size of the incremental runs.
if want 2; then
    INC_SIZES=("${SIZES[@]}")
elif want 1; then
    INC_SIZES=("$(scaled 1000000 1000)")
else
    INC_SIZES=()
fi

mkdir -p "$RAW"
rm -rf "$RAW"/*.txt "$RAW"/*.sql "$RAW"/*.log "$RAW"/*.md "$RAW"/*.dat "$DATA" "$RAW/samples"
: >"$DATA"
RUN_START=$SECONDS
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"

trap 'stop_cluster bench' EXIT
trap 'exit 130' INT TERM

# shellcheck source=bench/charts.sh
source "$REPO_ROOT/bench/charts.sh"
section "packages"
ensure_packages
ensure_gnuplot || true   # goal 8's charts (gnuplot-nox), installed when missing
section "build + install"
build_install
section "cluster"
CQ_PRELOAD="${CQ_PRELOAD-pg_cq,pg_cron}" start_cluster bench "$BENCH_PORT" "${BENCH_CONF[@]}"
psql_run "CREATE EXTENSION pg_cq;" >/dev/null
so_stamp() { date -u -r "$("$PG_CONFIG" --pkglibdir)/pg_cq.so" '+%Y-%m-%d %H:%M:%S UTC' 2>/dev/null || echo '?'; }
SO_START="$(so_stamp)"   # the cluster loaded this build (preload at start)

# Results, keyed by size.
declare -A CQ_C CQ_A CQD_A HW_A CQ_B CQD_B HW_B REF GB LOAD_MS CREATE_MS CHECK PROF_A PROF_B
declare -a SUMMARY_ROWS=()
declare -A ING_T=() ING_U=() ING_R=() LAT_LINE=() LATQ_LINE=() EXT_STATUS=() MEM_PEAK=() MEM_BASE=() MEM_HWM=() MEM_TIME=() MEM_SPILL=()

# last_progress QUERY -> "duration_ms num_input_rows"
last_progress() {
    psql_val "SELECT duration_ms || ' ' || num_input_rows FROM cq.progress WHERE name = '$1' ORDER BY batch_id DESC LIMIT 1"
}

# check_batch QUERY EXPECTED_ROWS -> prints duration_ms; dies if the batch
# did not see exactly the expected rows
check_batch() {
    local p dur rows
    p="$(last_progress "$1")"
    read -r dur rows <<<"$p"
    [[ "$rows" == "$2" ]] || die "pg_cq: query $1 batch saw $rows input rows, expected $2"
    echo "$dur"
}

# auto_explain preamble: plans (with actual times) of every statement,
# including those run inside CALL cq.run, as NOTICEs on stderr.
EXPLAIN_ON="LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_analyze = on;
SET auto_explain.log_buffers = on;
SET auto_explain.log_timing = on;
SET auto_explain.log_nested_statements = on;
SET auto_explain.log_level = notice;
SET client_min_messages = debug1;"

# profile_batch QUERY FILE [WARM_SQL]   run one batch under auto_explain, keep
# the plans, print a one-line breakdown of where the time went.  With
# WARM_SQL (which adds rows), run it and a second batch in the same session:
# its breakdown (plans cached, catalogs warm) is printed on a second line.
profile_batch() {
    local q="$1" file="$2" warm="${3:-}"
    {
        printf '%s\n\\timing on\nCALL cq.run(%s);\n' "$EXPLAIN_ON" "'$q'"
        if [[ -n "$warm" ]]; then
            printf '%s\n' "DO \$\$ BEGIN RAISE NOTICE '==WARM=='; END \$\$;" "$warm" "CALL cq.run('$q');"
        fi
    } | "${PSQL[@]}" >"$file" 2>&1 || { cat "$file" >&2; die "profiled batch of $q failed"; }
    profile_summary "$file" 1
    [[ -z "$warm" ]] || profile_summary "$file" 2
}

# profile_summary: see bench/lib.sh

# hw_step TABLE SUMMARY OFFSET: the hand-written incremental step (a psql script)
hw_step() {
    local t="$1" s="$2" o="$3"
    cat <<EOF
BEGIN;
SELECT last_id AS lo, (SELECT max(id) FROM $t) AS hi FROM $o \gset
INSERT INTO $s AS s (minute, category, n, total, avg_amount, max_amount)
SELECT date_bin('1 minute', ts, '2000-01-01'), category, count(*), sum(amount), avg(amount), max(amount)
FROM $t WHERE id > :lo AND id <= :hi GROUP BY 1, 2
ON CONFLICT (minute, category) DO UPDATE SET n = s.n + excluded.n, total = s.total + excluded.total,
    avg_amount = (s.total + excluded.total) / (s.n + excluded.n),
    max_amount = greatest(s.max_amount, excluded.max_amount);
UPDATE $o SET last_id = :hi;
COMMIT;
EOF
}

# diff_count A B: rows of A not in B plus rows of B not in A
diff_count() {
    psql_val "SELECT (SELECT count(*) FROM (TABLE $1 EXCEPT ALL TABLE $2) x) + (SELECT count(*) FROM (TABLE $2 EXCEPT ALL TABLE $1) y)"
}

# ---------------------------------------------------------------------------
# Scenarios 1 + 2: incremental batches at each history size
# ---------------------------------------------------------------------------
incremental() {
    local n="$1" h ev q mv hw off r t d ts rounds_a=() durs_a=() hws_a=() refs=() gbs=() rounds_b=() durs_b=() hws_b=()
    h="$(human "$n")"
    ev="ev_$h" q="agg_$h" mv="mv_$h" hw="hw_$h" off="hw_off_$h"
    ev="${ev,,}" q="${q,,}" mv="${mv,,}" hw="${hw,,}" off="${off,,}"
    section "incremental: $h history rows, $(human "$NEW") new rows per batch"

    psql_run "CREATE TABLE $ev (id bigserial, ts timestamptz, device_id int, category text, amount numeric(10,2)) WITH (autovacuum_enabled = $BENCH_AUTOVACUUM);"
    LOAD_MS[$n]=$(time_sql "$(gen_rows "$ev" "$n" '2024-01-01' '3 days')")
    info "loaded $n rows in $(fmt_ms "${LOAD_MS[$n]}")"
    psql_run "CREATE INDEX ON $ev (id);"
    CREATE_MS[$n]=$(time_sql "CREATE TABLE $q WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $(agg_select "$ev");" 2>/dev/null)
    info "CREATE TABLE $q ... AS (batch 0 over the history): $(fmt_ms "${CREATE_MS[$n]}")"
    psql_run "CREATE MATERIALIZED VIEW $mv AS $(agg_select "$ev");" \
             "CREATE TABLE $hw (minute timestamptz, category text, n bigint, total numeric, avg_amount numeric, max_amount numeric);" \
             "CREATE UNIQUE INDEX ON $hw (minute, category);" \
             "INSERT INTO $hw $(agg_select "$ev");" \
             "CREATE TABLE $off AS SELECT max(id) AS last_id FROM $ev;" \
             "VACUUM $ev;" "CHECKPOINT;" >/dev/null
    info "history ready: $(psql_val "SELECT pg_size_pretty(pg_total_relation_size('$ev'))") source, $(psql_val "SELECT count(*) FROM $q") groups"

    local rnd=0
    next_rows() {   # NEW_SQL = INSERT of the next NEW rows, 10 minutes after the previous ones
        rnd=$((rnd + 1))
        NEW_SQL="$(gen_rows "$ev" "$NEW" "$(psql_val "SELECT timestamptz '2024-01-04' + ($rnd - 1) * interval '10 minutes'")" '10 minutes')"
    }
    new_rows() { next_rows; psql_run "$NEW_SQL"; }

    # Phase A: as a user gets it (history loaded, query created, VACUUM);
    # the CALL in a fresh session with pg_cq's default hand-off to a pool
    # worker (bench/lib.sh turns it off for the scripts' other sessions)
    local CALL_AS_USER="-c cq.run_in_worker=${BENCH_RUN_IN_WORKER:-on}"
    for ((r = 1; r <= BENCH_REPS; r++)); do
        new_rows
        t=$(PGOPTIONS="$CALL_AS_USER" time_sql "CALL cq.run('$q');" 2>/dev/null); d=$(check_batch "$q" "$NEW")
        rounds_a+=("$t"); durs_a+=("$d")
        hws_a+=("$(time_sql "$(hw_step "$ev" "$hw" "$off")")")
        if ((r <= BENCH_SLOW_REPS)); then
            refs+=("$(time_sql "REFRESH MATERIALIZED VIEW $mv;")")
            gbs+=("$(time_sql "$(groupby_sql "$ev")")")
        fi
        info "A round $r: pg_cq $(fmt_ms "$t") (progress $(fmt_ms "$d")), hand-written $(fmt_ms "${hws_a[-1]}")${refs[r-1]:+, REFRESH $(fmt_ms "${refs[r-1]}"), GROUP BY $(fmt_ms "${gbs[r-1]}")}"
    done
    if [[ "$BENCH_PROFILE" == 1 ]]; then
        new_rows
        PROF_A[$n]="$(profile_batch "$q" "$RAW/profile_${h}_A.txt")"
        time_sql "$(hw_step "$ev" "$hw" "$off")" >/dev/null
        info "A profile: ${PROF_A[$n]}"
    fi

    # Phase B: after ANALYZE of the source, so that the planner has
    # statistics (correlation) for cq_xid.
    psql_run "ANALYZE $ev;" "CHECKPOINT;" >/dev/null
    for ((r = BENCH_REPS + 2; r <= 2 * BENCH_REPS + 1; r++)); do
        new_rows
        t=$(PGOPTIONS="$CALL_AS_USER" time_sql "CALL cq.run('$q');" 2>/dev/null); d=$(check_batch "$q" "$NEW")
        rounds_b+=("$t"); durs_b+=("$d")
        hws_b+=("$(time_sql "$(hw_step "$ev" "$hw" "$off")")")
        info "B round $r: pg_cq $(fmt_ms "$t") (progress $(fmt_ms "$d")), hand-written $(fmt_ms "${hws_b[-1]}")"
    done
    if [[ "$BENCH_PROFILE" == 1 ]]; then
        new_rows
        next_rows
        PROF_B[$n]="$(profile_batch "$q" "$RAW/profile_${h}_B.txt" "$NEW_SQL")"
        time_sql "$(hw_step "$ev" "$hw" "$off")" >/dev/null
        info "B profile: ${PROF_B[$n]}"
    fi

    # Phase C: BENCH_REPS batches in one session (as a long-lived worker
    # would run them: plans cached), after ANALYZE.
    local script="" warm=()
    for ((r = 1; r <= BENCH_REPS; r++)); do
        next_rows
        script+=$'\\timing off\n'"$NEW_SQL"$'\n\\timing on\n'"CALL cq.run('$q');"$'\n'
    done
    mapfile -t warm < <(printf '%s' "$script" | "${PSQL[@]}" -At 2>/dev/null | awk '/^Time: /{print $2}')
    ((${#warm[@]} == BENCH_REPS)) || die "warm session: expected $BENCH_REPS timings, got ${#warm[@]}"
    [[ "$(psql_val "SELECT count(*) FROM (SELECT num_input_rows FROM cq.progress WHERE name = '$q' ORDER BY batch_id DESC LIMIT $BENCH_REPS) p WHERE num_input_rows = $NEW")" == "$BENCH_REPS" ]] \
        || die "warm session: batches did not see $NEW rows each"
    time_sql "$(hw_step "$ev" "$hw" "$off")" >/dev/null
    CQ_C[$n]=$(median "${warm[@]}")
    info "C (one session): ${warm[*]} ms"

    CQ_A[$n]=$(median "${rounds_a[@]}"); CQD_A[$n]=$(median "${durs_a[@]}"); HW_A[$n]=$(median "${hws_a[@]}")
    CQ_B[$n]=$(median "${rounds_b[@]}"); CQD_B[$n]=$(median "${durs_b[@]}"); HW_B[$n]=$(median "${hws_b[@]}")
    REF[$n]=$(median "${refs[@]}"); GB[$n]=$(median "${gbs[@]}")

    # Correctness: the target, the matview and the hand-written summary agree.
    psql_run "REFRESH MATERIALIZED VIEW $mv;" >/dev/null
    CHECK[$n]="target vs matview: $(diff_count "$q" "$mv") differing rows; hand-written vs matview: $(diff_count "$hw" "$mv")"
    info "check: ${CHECK[$n]}"

    psql_run "SELECT cq.drop_query('$q', drop_target => true);" "DROP MATERIALIZED VIEW $mv;" \
             "DROP TABLE $hw, $off, $ev;" "CHECKPOINT;" >/dev/null
}

# ---------------------------------------------------------------------------
# Scenario 3: goal 2's profile: where a fold's CPU goes
# ---------------------------------------------------------------------------
# For each span of event time (BENCH_FOLD_SPANS minutes: 80 -> ~4k groups,
# 20000 -> ~1M groups at 5M rows), one fold of the backlog (WITH NO DATA,
# then CALL cq.run) with client_min_messages = debug1, which prints the CPU
# time of each phase of the store's or the state table's fold (with
# cq.bench_split_batch on, the store's d, puts and target rows timed apart), and
# the plain GROUP BY's CPU time and its EXPLAIN ANALYZE (scan vs
# aggregation).  Both serial, jit off, the GROUP BY's work_mem = cq.work_mem
# (as bench/fold.sh, which measures the goal's medians).  One run each: a
# profile, not the figure.
declare -a FOLD_ROWS=()
FOLD_RATIOS=""
# plan_split FILE: "scan S ms, aggregation A ms (its batches/memory)" of an EXPLAIN ANALYZE
plan_split() {
    awk 'function endt(l,  s, a) { match(l, /actual time=[0-9.]+\.\.[0-9.]+/); s = substr(l, RSTART + 12, RLENGTH - 12); split(s, a, /\.\./); return a[2] + 0 }
        agg == "" && /(HashAggregate|GroupAggregate|MixedAggregate)/ { agg = $0; sub(/^ *(-> *)?/, "", agg); sub(/ +\(.*/, "", agg); agg_t = endt($0); look = 3; next }
        look > 0 { look--; if (/Batches:/) { x = $0; sub(/^ +/, "", x); info = x; look = 0 } }
        scan == "" && /(Seq Scan|Index Scan|Bitmap Heap Scan) on / { scan = $0; sub(/^ *(-> *)?/, "", scan); sub(/ +\(.*/, "", scan); scan_t = endt($0) }
        /^ *Sort Method/ { x = $0; sub(/^ +/, "", x); info = info (info == "" ? "" : "; ") x }
        /Execution Time:/ { ex = $3 }
        END { printf "%s %.0f ms, %s %.0f ms (%s); execution %.0f ms under EXPLAIN ANALYZE\n", scan, scan_t, agg, agg_t - scan_t, info, ex }' "$1"
}
fold() {
    local span groups c w gc gw wm phases pathx x
    wm="$(psql_val "SHOW cq.work_mem")"
    local serial="SET max_parallel_workers_per_gather = 0; SET max_parallel_maintenance_workers = 0; SET jit = off;"
    for span in $BENCH_FOLD_SPANS; do
        section "fold profile: $(human "$FOLD") rows over $span minutes of event time"
        psql_run "CREATE TABLE fold_ev (ts timestamptz, device_id int, category text, amount numeric(10,2)) WITH (autovacuum_enabled = off);" \
            "$(gen_rows fold_ev "$FOLD" '2024-01-01' "$span minutes")" "VACUUM ANALYZE fold_ev;" >/dev/null
        groups=$(psql_val "SELECT count(*) FROM ($(agg_select fold_ev)) s")
        psql_run "SET client_min_messages = warning;" \
            "CREATE TABLE fold_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $(agg_select fold_ev) WITH NO DATA;" "CHECKPOINT;" >/dev/null
        read -r c w < <(CPU_SQL_LOG="$RAW/profile_fold_$span.txt" cpu_sql "$serial SET cq.bench_split_batch = on; SET client_min_messages = debug1; CALL cq.run('fold_agg'); SET client_min_messages = warning;")
        check_batch fold_agg "$FOLD" >/dev/null
        [[ "$(psql_val "SELECT count(*) FROM fold_agg")" == "$groups" ]] || die "fold_agg does not have the $groups groups of the GROUP BY"
        # the phases: pg_cq's DEBUG1 lines of the fold (CPU time)
        phases="$(grep -E 'pg_cq: (store|table) fold|batch 0 estimated|wrote its target by' "$RAW/profile_fold_$span.txt" | sed -E 's/^DEBUG: +pg_cq: //; s/ \(CPU time\)//' | paste -sd ';' - | sed 's/;/; /g')"
        pathx="$(psql_val "SELECT state_path FROM cq.queries WHERE name = 'fold_agg'")"
        psql_run "SELECT cq.drop_query('fold_agg', drop_target => true);" "CHECKPOINT;" >/dev/null
        read -r gc gw < <(cpu_sql "$serial SET work_mem = '$wm'; $(groupby_sql fold_ev)")
        printf '%s\n' "$serial SET work_mem = '$wm';" "EXPLAIN (ANALYZE, BUFFERS) $(groupby_sql fold_ev)" \
            | "${PSQL[@]}" >"$RAW/profile_fold_groupby_$span.txt" 2>&1 || true
        x=$(calc "$c / $gc")
        FOLD_RATIOS+="${FOLD_RATIOS:+; }$(human "$FOLD") rows → $groups groups: $(fmt_x "$x") (one run)"
        FOLD_ROWS+=("| $(human "$FOLD") rows → $groups groups | ${pathx//|/\\|} | $(fmt_ms "$c") (wall $(fmt_ms "$w")) | ${phases:-no DEBUG1 line} | $(fmt_ms "$gc") (wall $(fmt_ms "$gw")) | $(plan_split "$RAW/profile_fold_groupby_$span.txt") | $(fmt_x "$x") |")
        info "fold CPU $(fmt_ms "$c"), GROUP BY CPU $(fmt_ms "$gc") ($(fmt_x "$x")); phases: $phases"
        psql_run "DROP TABLE fold_ev;" "CHECKPOINT;" >/dev/null
    done
}

# ---------------------------------------------------------------------------
# Scenario 4: live ingest (goal 3), with its CPU profile
# ---------------------------------------------------------------------------
# BENCH_INGEST configurations KIND:CLIENTS; for each, BENCH_PGBENCH_ROUNDS
# interleaved pairs of pgbench runs into a tracked and an untracked table
# while a trigger '0' update query folds the tracked rows in the background
# (on the same 2 cores).  The profile: the CPU time of the backends that
# served the writers (the postmaster's reaped children, per run) and of
# pg_cq's worker and scheduler processes (from the first run until the
# query caught up after the last), per row; the batches (count, rows each,
# duration) from cq.progress.
declare -A ING_KIND_LABEL=([single]="single-row INSERT" [multi]="1000-row INSERT")
ING_CONFIGS=()
for cfg in $BENCH_INGEST; do
    k="${cfg%%:*}" c="${cfg##*:}"
    [[ -n "${ING_KIND_LABEL[$k]:-}" && "$c" =~ ^[0-9]+$ ]] || die "BENCH_INGEST: KIND:CLIENTS with KIND single or multi, not '$cfg'"
    pl=""; ((c == 1)) || pl=s
    ING_CONFIGS+=("${ING_KIND_LABEL[$k]}, $c client$pl|$k|$c")
done
declare -A ING_LAG=() ING_PROF=() ING_FOLDX=()

ingest() {
    local cfg label kind c r first second tbl out tps pm kids c0 c1 t0 caught b0 b1 rows_t0 rows_u0 rows_t rows_u pid w1 lost
    section "ingest: pgbench, tracked vs untracked, live trigger '0' query"
    pm="$(head -n 1 "$(cluster_dir bench)/data/postmaster.pid")"
    psql_run "CREATE TABLE ing_tracked (ts timestamptz, device_id int, category text, amount numeric(10,2)) WITH (autovacuum_enabled = off);" \
             "CREATE TABLE ing_untracked (ts timestamptz, device_id int, category text, amount numeric(10,2)) WITH (autovacuum_enabled = off);" >/dev/null
    psql_run "CREATE TABLE ing_agg WITH (cq.output_mode = 'update') AS $(agg_select ing_tracked);" >/dev/null 2>&1
    # -M prepared turns :variables into parameters: one script per table
    for tbl in ing_tracked ing_untracked; do
        printf '%s\n' '\set dev random(1, 1000)' '\set cat random(10, 59)' '\set amt random(0, 99999)' \
            "INSERT INTO $tbl (ts, device_id, category, amount) VALUES (now(), :dev, 'cat_' || :cat, :amt / 100.0);" \
            >"$RAW/ingest_single_$tbl.sql"
        printf '%s\n' "INSERT INTO $tbl (ts, device_id, category, amount)" \
            "SELECT now(), 1 + (random() * 999)::int, 'cat_' || lpad(floor(random() * 50)::int::text, 2, '0'), round((random() * 1000)::numeric, 2)" \
            "FROM generate_series(1, 1000);" >"$RAW/ingest_multi_$tbl.sql"
    done
    for cfg in "${ING_CONFIGS[@]}"; do
        IFS='|' read -r label kind c <<<"$cfg"
        psql_run "CHECKPOINT;" >/dev/null
        [[ "${BENCH_INGEST_PAUSED:-0}" != 1 ]] || psql_run "SELECT cq.pause('ing_agg');" >/dev/null
        local tt=() tu=() ratios=()
        declare -A cpu=([ing_tracked]=0 [ing_untracked]=0) W0=()
        rows_t0=$(psql_val "SELECT count(*) FROM ing_tracked"); rows_u0=$(psql_val "SELECT count(*) FROM ing_untracked")
        b0=$(psql_val "SELECT coalesce(max(batch_id), 0) FROM cq.progress WHERE name = 'ing_agg'")
        for pid in $(cq_procs); do W0[$pid]=$(proc_cpu_ms "$pid"); done
        # Short runs, alternating A B B A ...: each round's tracked/untracked
        # pair ran back to back, so the median of the pair ratios is robust
        # to the machine's slow drifts.
        for ((r = 1; r <= BENCH_PGBENCH_ROUNDS; r++)); do
            if ((r % 2)); then first=ing_tracked second=ing_untracked; else first=ing_untracked second=ing_tracked; fi
            declare -A pair=()
            for tbl in "$first" "$second"; do
                kids="$(pgrep -P "$pm" | paste -sd ' ' -)"; c0=$(children_cpu_ms "$pm")
                out="$("$PGBIN/pgbench" -n -M prepared -T "$BENCH_PGBENCH_SECS" -c "$c" -j "$c" \
                        -f "$RAW/ingest_${kind}_$tbl.sql" 2>&1)" \
                    || { printf '%s\n' "$out" >&2; die "pgbench failed"; }
                wait_reaped "$pm" "$kids"; c1=$(children_cpu_ms "$pm")
                cpu[$tbl]=$(calc "${cpu[$tbl]} + $c1 - $c0")
                printf '== %s %s round %s\n%s\n' "$label" "$tbl" "$r" "$out" >>"$RAW/pgbench.log"
                tps=$(printf '%s\n' "$out" | sed -nE 's/^tps = ([0-9.]+) .*without.*/\1/p')
                [[ -n "$tps" ]] || die "no tps in pgbench output"
                pair[$tbl]=$tps
            done
            tt+=("${pair[ing_tracked]}"); tu+=("${pair[ing_untracked]}")
            ratios+=("$(calc "${pair[ing_tracked]} / ${pair[ing_untracked]}")")
            info "$label, round $r: tracked ${pair[ing_tracked]%.*} tps, untracked ${pair[ing_untracked]%.*} tps"
            unset pair
        done
        ING_T[$label]=$(median "${tt[@]}")
        ING_U[$label]=$(median "${tu[@]}")
        ING_R[$label]=$(median "${ratios[@]}")
        # goal 3: the query caught up at the end (the workers, no CALL)
        [[ "${BENCH_INGEST_PAUSED:-0}" != 1 ]] || psql_run "SELECT cq.resume('ing_agg');" >/dev/null
        t0=$SECONDS caught=""
        for _ in $(seq 1 6000); do
            if [[ "$(psql_val "SELECT (SELECT coalesce(sum(n), 0) FROM ing_agg) = (SELECT count(*) FROM ing_tracked)")" == t ]]; then
                caught=$((SECONDS - t0)); break
            fi
            sleep 0.02
        done
        ING_LAG[$label]="${caught:+caught up ${caught} s after the last run}"
        ING_LAG[$label]="${ING_LAG[$label]:-**not caught up** 120 s after the last run}"
        # the profile: CPU per row of the writers and of the fold, the batches
        local wcpu=0
        lost=0
        for pid in $(cq_procs); do
            w1=$(proc_cpu_ms "$pid")
            wcpu=$(calc "$wcpu + $w1 - ${W0[$pid]:-0}")
        done
        for pid in "${!W0[@]}"; do [[ -d "/proc/$pid" ]] || lost=$((lost + 1)); done
        local lostnote=""
        ((lost == 0)) || lostnote="; $lost pg_cq processes exited: CPU undercounted"
        rows_t=$(( $(psql_val "SELECT count(*) FROM ing_tracked") - rows_t0 ))
        rows_u=$(( $(psql_val "SELECT count(*) FROM ing_untracked") - rows_u0 ))
        b1=$(psql_val "SELECT coalesce(max(batch_id), 0) FROM cq.progress WHERE name = 'ing_agg'")
        local us_t us_u us_f bstats
        us_t=$(calc "${cpu[ing_tracked]} * 1000 / ($rows_t > 0 ? $rows_t : 1)")
        us_u=$(calc "${cpu[ing_untracked]} * 1000 / ($rows_u > 0 ? $rows_u : 1)")
        us_f=$(calc "$wcpu * 1000 / ($rows_t > 0 ? $rows_t : 1)")
        # the batches of this configuration that cq.progress still has (the last 100)
        bstats="$(psql_val "SELECT count(*) || ' ' || coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY num_input_rows), 0)::bigint || ' ' || coalesce(max(num_input_rows), 0) || ' ' || coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms)::numeric, 1), 0) || ' ' || coalesce(round((sum(duration_ms) / greatest(sum(num_input_rows), 1) * 1000)::numeric, 2), 0) FROM cq.progress WHERE name = 'ing_agg' AND batch_id > $b0 AND num_input_rows > 0")"
        local nb pr_n pr_med pr_max pr_dur pr_us
        read -r pr_n pr_med pr_max pr_dur pr_us <<<"$bstats"
        nb=$((b1 - b0))
        ING_FOLDX[$label]=$(calc "$us_f / ($us_u > 0 ? $us_u : 1)")
        ING_PROF[$label]="| $label | **$(fmt_x "${ING_R[$label]}")** ($(printf '%.0f / %.0f' "${ING_T[$label]}" "${ING_U[$label]}") tps) | $rows_t / $rows_u | $(printf '%.2f' "$us_u") | $(printf '%.2f' "$us_t") ($(fmt_x "$(calc "$us_t / ($us_u > 0 ? $us_u : 1)")")) | $(printf '%.2f' "$us_f") | **$(printf '%.0f' "$(calc "100 * ${ING_FOLDX[$label]}")") %** | $(fmt_x "$(calc "$us_u / ($us_t + $us_f > 0 ? $us_t + $us_f : 1)")") | $nb batches, $(calc "$rows_t / ($nb > 0 ? $nb : 1)" | xargs printf '%.0f') rows each | $pr_n: median $pr_med rows (max $pr_max), $pr_dur ms, $pr_us µs/row | ${ING_LAG[$label]}${lostnote} |"
        info "$label: ratio ${ING_R[$label]}, ${ING_LAG[$label]}; CPU per row: insert untracked $us_u µs, tracked $us_t µs, fold $us_f µs ($(fmt_x "${ING_FOLDX[$label]}") of the insert); $nb batches"
        unset cpu W0
    done
    # the tracked rows really are visible to pg_cq
    psql_run "CALL cq.run('ing_agg');" >/dev/null 2>&1
    ING_ROWS="$(psql_val "SELECT count(*) FROM ing_tracked")"
    ING_CHECK="ing_agg covers $(psql_val "SELECT sum(n) FROM ing_agg") of $ING_ROWS tracked rows"
    info "$ING_CHECK"
    psql_run "SELECT cq.drop_query('ing_agg', drop_target => true);" "DROP TABLE ing_tracked, ing_untracked;" >/dev/null
}

# ---------------------------------------------------------------------------
# Scenario 5: commit-to-target latency (bench/latency.sh, own cluster)
# ---------------------------------------------------------------------------
latency() {
    local rate n b p50 p99 mx
    section "latency: trigger '0', rates $BENCH_LAT_RATES rows/s"
    CQ_BENCH_PORT=$((BENCH_PORT + 2)) LAT_RATES="$BENCH_LAT_RATES" LAT_SECONDS="$BENCH_LAT_SECS" LAT_WORK="$RAW" \
        LAT_QUERIES="$BENCH_LAT_QUERIES" LAT_Q_SECS="$BENCH_LAT_Q_SECS" LAT_DATA="$DATA" LAT_SAMPLES="$RAW/samples" \
        LAT_REPORT="$RAW/latency.txt" "$REPO_ROOT/bench/latency.sh" >"$RAW/latency.log" 2>&1 \
        || { tail -n 30 "$RAW/latency.log" >&2; die "bench/latency.sh failed"; }
    while read -r tag rate n b p50 p99 mx reached cpu _; do
        [[ "$tag" == rate ]] || continue
        LAT_LINE[$rate]="$n $b $p50 $p99 $mx $reached ${cpu:-nan}"
        info "rate $rate/s (reached $reached/s): $n rows in $b batches, p50 $p50 ms, p99 $p99 ms, max $mx ms, pg_cq CPU ${cpu:-?} s"
    done <"$DATA"
    while read -r tag nq rate n p50 p99 mx cpu lost; do
        [[ "$tag" == queries ]] || continue
        LATQ_LINE[$nq]="$n $p50 $p99 $mx $cpu $lost"
        info "$nq queries at $rate rows/s: p50 $p50 ms, p99 $p99 ms, pg_cq CPU $cpu s"
    done <"$DATA"
}

# ---------------------------------------------------------------------------
# Scenario 6: memory of one unlimited batch over a large backlog
# ---------------------------------------------------------------------------
# One backend runs the batch; a loop here samples its /proc/PID/status
# every 20 ms: RssAnon (private memory: palloc, hash tables, in-memory
# tuplestores; shared buffers are RssShmem) and VmHWM.
memory() {
    local wm pid psql_pid peak hwm base a h spill groups rows
    groups=$(scaled "$BENCH_MEM_GROUPS" 1000); rows=$(scaled "$BENCH_MEM_ROWS" 1000)
    section "memory: $(human "$groups") groups in state, one batch over $(human "$rows") new rows"
    for wm in $BENCH_MEM_WORK_MEM; do
        psql_run "CREATE TABLE mem_src (k int, v numeric(10,2)) WITH (autovacuum_enabled = off);" \
                 "INSERT INTO mem_src SELECT g, (g % 1000) / 10.0 FROM generate_series(1, $groups) g;" >/dev/null
        psql_run "CREATE TABLE mem_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS SELECT k, count(*) AS n, sum(v) AS total, max(v) AS top FROM mem_src GROUP BY k;" >/dev/null 2>&1
        psql_run "INSERT INTO mem_src SELECT 1 + g % $groups, (g % 997) / 10.0 FROM generate_series(1, $rows) g;" "VACUUM mem_src;" "CHECKPOINT;" >/dev/null
        rm -f "$RAW/mem_pid" "$RAW/mem_$wm.txt"
        {
            printf '%s\n' "SET work_mem = '$wm';" "$EXPLAIN_ON" \
                "SET auto_explain.log_min_duration = '500ms';" "SET auto_explain.log_timing = off;" \
                "SELECT pg_backend_pid() \\g $RAW/mem_pid" "SELECT pg_sleep(1);" \
                "\\timing on" "CALL cq.run('mem_agg');" "\\timing off" "SELECT pg_sleep(0.3);"
        } | "${PSQL[@]}" -At >"$RAW/mem_$wm.txt" 2>&1 &
        psql_pid=$!
        for _ in $(seq 1 250); do [[ -s "$RAW/mem_pid" ]] && break; sleep 0.02; done
        pid="$(tr -dc 0-9 <"$RAW/mem_pid" 2>/dev/null || true)"
        [[ -n "$pid" ]] || die "memory: no backend pid"
        base=$(awk '/^RssAnon:/ {print $2}' "/proc/$pid/status")
        peak=$base hwm=0
        while kill -0 "$psql_pid" 2>/dev/null; do
            read -r a h < <(awk '/^RssAnon:/ {a = $2} /^VmHWM:/ {h = $2} END {print a + 0, h + 0}' "/proc/$pid/status" 2>/dev/null || echo "0 0")
            ((a > peak)) && peak=$a
            ((h > hwm)) && hwm=$h
            sleep 0.02
        done
        wait "$psql_pid" || { cat "$RAW/mem_$wm.txt" >&2; die "memory: batch failed"; }
        MEM_BASE[$wm]=$base MEM_PEAK[$wm]=$peak MEM_HWM[$wm]=$hwm
        MEM_TIME[$wm]=$(awk '/^Time: /{print $2}' "$RAW/mem_$wm.txt" | tail -n 1)
        spill="$(grep -Eo 'Batches: [0-9]+ +Memory Usage: [0-9]+kB( +Disk Usage: [0-9]+kB)?' "$RAW/mem_$wm.txt" | head -n 3 | paste -sd ';' - || true)"
        MEM_SPILL[$wm]="${spill:-n/a}"
        check_batch mem_agg "$rows" >/dev/null
        info "work_mem $wm: batch $(fmt_ms "${MEM_TIME[$wm]}"), backend RssAnon $((base / 1024)) MB before, peak $((peak / 1024)) MB (+$(((peak - base) / 1024)) MB), VmHWM $((hwm / 1024)) MB; hash aggregates: ${MEM_SPILL[$wm]}"
        psql_run "SELECT cq.drop_query('mem_agg', drop_target => true);" "DROP TABLE mem_src;" "CHECKPOINT;" >/dev/null 2>&1
    done
}

# timed NAME ARGS...: run scenario NAME, add its seconds to PART_S[NAME]
declare -A PART_S=()
timed() { local t0=$SECONDS; "$@"; PART_S[$1]=$(( ${PART_S[$1]:-0} + SECONDS - t0 )); }
PART_S[setup]=$((SECONDS - RUN_START))
for n in "${INC_SIZES[@]}"; do timed incremental "$n"; done
want 3 && timed fold
want 4 && timed ingest
want 5 && timed latency
want 6 && timed memory

# ---------------------------------------------------------------------------
# The standalone scripts, each on its own cluster (port BENCH_PORT + k)
# ---------------------------------------------------------------------------
# ext NAME SCRIPT PORT_OFFSET [VAR=VALUE...]: run SCRIPT with the bench's
# knobs; its markdown report goes to raw/NAME.md (included in latest.md),
# its log to raw/NAME.log; a failure is reported, not fatal.  Contract for
# the scripts: BENCH_SCALE, BENCH_PORT, BENCH_OUT (report file) and
# BENCH_DATA (a file to append machine-readable lines to; a line
# "goal N yes|no FIGURE TEXT" fills goal N's row of the goal table).
ext() {
    local name="$1" script="$2" off="$3" t0=$SECONDS rc=0
    shift 3
    if [[ ! -x "$REPO_ROOT/$script" ]]; then EXT_STATUS[$name]="not present"; return 0; fi
    section "$name: $script"
    env CQ_SKIP_APT=1 CQ_SKIP_BUILD=1 BENCH_SCALE="$BENCH_SCALE" BENCH_PORT=$((BENCH_PORT + off)) \
        BENCH_OUT="$RAW/$name.md" BENCH_DATA="$DATA" "$@" "$REPO_ROOT/$script" >"$RAW/$name.log" 2>&1 || rc=$?
    if ((rc == 0)); then
        EXT_STATUS[$name]="ok, $((SECONDS - t0)) s"
    else
        EXT_STATUS[$name]="**failed** (exit $rc, $((SECONDS - t0)) s; log: raw/$name.log)"
        tail -n 20 "$RAW/$name.log" >&2
    fi
    info "$name: ${EXT_STATUS[$name]}"
}
want write_path && ext write_path bench/write_path.sh 3 BENCH_PAIRS="${BENCH_PAIRS:-$(small 3 7)}" \
    BENCH_PGBENCH_SECS="$BENCH_PGBENCH_SECS" BENCH_PARTS="${BENCH_PARTS:-$(small "tps mix" "tps mix callgrind")}" \
    BENCH_MIX_ROUNDS="${BENCH_MIX_ROUNDS:-$(small 3 9)}" BENCH_STAMP_TYPE="${BENCH_STAMP_TYPE:-xid8 xid48}"
want cold && ext cold bench/cold.sh 4 BENCH_COLD_HISTORY="$(scaled 1000000 1000)" \
    BENCH_COLD_NEW="$(scaled 10000 100)" BENCH_COLD_ROUNDS="${BENCH_COLD_ROUNDS:-$(small 3 9)}"
want fold_goal && ext fold_goal bench/fold.sh 5 BENCH_FOLD_ROWS="$FOLD" BENCH_FOLD_REPS="${BENCH_FOLD_REPS:-$(small 1 7)}" \
    BENCH_FOLD_STORAGES="${BENCH_FOLD_STORAGES:-default}" BENCH_FOLD_WORK_MEM="${BENCH_FOLD_WORK_MEM:-4MB}"
# goal 7 is decided in the code (on the store the C writer where the
# target qualifies; otherwise MERGE for NOT NULL keys, cq.merge_max_groups;
# the upsert statement for nullable keys): measure the three writers and
# the code's choice at 1k and 100k changed groups (capped at the target's
# groups) of ~4k and ~1M groups; BENCH_MERGE_CHANGED="1000 10000 30000
# 100000 300000" for more
want merge && ext merge bench/merge.sh 6 BENCH_MERGE_GROUPS="$(scaled 4000 100) $(scaled 1000000 1000)" \
    BENCH_MERGE_IMPL_CHANGED="${BENCH_MERGE_CHANGED:-$(scaled 1000 100) $(scaled 100000 1000)}" BENCH_MERGE_IMPL_ROUNDS="${BENCH_MERGE_ROUNDS:-$(small 2 7)}"
want aggregates && ext aggregates bench/aggregates.sh 7 BENCH_AGG_REPORT="$RAW/aggregates.md" \
    BENCH_AGG_REPS="${BENCH_AGG_REPS:-$(small 1 3)}"
want soak && ext soak bench/soak.sh 8 SOAK_SECONDS="$BENCH_SOAK_SECS"
want join && ext join bench/join.sh 9 BENCH_JOIN_SECONDS="$(small 5 60)"
want session && ext session bench/session.sh 1 BENCH_SESSION_KEYS="$(scaled 20000 100)" \
    BENCH_SESSION_WARM="$(small 3 20)" BENCH_SESSION_ROUNDS="$(small 2 9)"

section "charts"
CHARTS=()
timed make_charts
PART_S[charts]="${PART_S[make_charts]}"

# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------
section "report"
ELAPSED=$((SECONDS - RUN_START))
SETTINGS="$(psql_val "SELECT string_agg(name || ' = ' || setting || coalesce(unit, ''), ', ' ORDER BY name) FROM pg_settings WHERE name IN ('shared_buffers','work_mem','maintenance_work_mem','max_wal_size','checkpoint_timeout','fsync','synchronous_commit','full_page_writes','max_parallel_workers_per_gather','jit')")"
PGVER="$(psql_val "SELECT version()")"

row() { SUMMARY_ROWS+=("| $1 | $2 | $3 | $4 | $5 | $6 | $7 | $8 |"); }

if ((${#INC_SIZES[@]})); then
    n1="${INC_SIZES[0]}"; h1="$(human "$n1")"
    if want 1; then
        x=$(calc "${REF[$n1]} / ${CQ_A[$n1]}")
        row 1 "$h1 history + $(human "$NEW") new rows: one batch" "REFRESH MATERIALIZED VIEW $(fmt_ms "${REF[$n1]}")" "$(fmt_ms "${CQ_A[$n1]}")" "$(fmt_x "$x") faster" "—" "—" "\`CALL cq.run('agg')\`"
        x=$(calc "${GB[$n1]} / ${CQ_A[$n1]}")
        row 1 "same" "plain GROUP BY $(fmt_ms "${GB[$n1]}")" "$(fmt_ms "${CQ_A[$n1]}")" "$(fmt_x "$x") faster" "—" "—" "\`CALL cq.run('agg')\`"
        x=$(calc "${REF[$n1]} / ${CQ_B[$n1]}")
        row 1 "same, after \`ANALYZE\` of the source" "REFRESH MATERIALIZED VIEW $(fmt_ms "${REF[$n1]}")" "$(fmt_ms "${CQ_B[$n1]}")" "$(fmt_x "$x") faster" "—" "—" "\`CALL cq.run('agg')\`"
    fi
    if want 2 && ((${#INC_SIZES[@]} > 1)); then
        nl="${INC_SIZES[-1]}"; hl="$(human "$nl")"
        for ph in A B; do
            if [[ $ph == A ]]; then tag=""; declare -n CQ=CQ_A HW=HW_A; else tag=", after \`ANALYZE\`"; declare -n CQ=CQ_B HW=HW_B; fi
            x=$(calc "${CQ[$nl]} / ${CQ[$n1]}")
            row 2 "batch cost growth $h1 → $hl history$tag" "pg_cq at $h1: $(fmt_ms "${CQ[$n1]}")" "at $hl: $(fmt_ms "${CQ[$nl]}")" "$(fmt_x "$x")" "≤ 1.3x" "$(met "$x" '<=' 1.3)" "\`CALL cq.run('agg')\`"
            # control: the hand-written upsert does nothing proportional to
            # history, so growth of its own means the machine's load changed
            # between the size phases (bench/history.sh measures the growth
            # by CPU time, sizes interleaved)
            x=$(calc "${HW[$nl]} / ${HW[$n1]}")
            row 2 "same, control: hand-written upsert's growth$tag" "at $h1: $(fmt_ms "${HW[$n1]}")" "at $hl: $(fmt_ms "${HW[$nl]}")" "$(fmt_x "$x")" "—" "—" "hand-written upsert"
            x=$(calc "${REF[$nl]} / ${CQ[$nl]}")
            row 2 "$hl history, one batch$tag" "REFRESH MATERIALIZED VIEW $(fmt_ms "${REF[$nl]}")" "$(fmt_ms "${CQ[$nl]}")" "$(fmt_x "$x") faster" "≥ 200x" "$(met "$x" '>=' 200)" "\`CALL cq.run('agg')\`"
            for n in "${INC_SIZES[@]}"; do
                x=$(calc "${CQ[$n]} / ${HW[$n]}")
                row 2 "$(human "$n") history, one batch$tag" "hand-written upsert $(fmt_ms "${HW[$n]}")" "$(fmt_ms "${CQ[$n]}")" "$(fmt_x "$x")" "≤ 2x" "$(met "$x" '<=' 2)" "\`CALL cq.run('agg')\`"
            done
            unset -n CQ HW
        done
        for n in "$n1" "$nl"; do
            x=$(calc "${CQ_C[$n]} / ${HW_B[$n]}")
            row 2 "$(human "$n") history, batches in one session, after \`ANALYZE\`" "hand-written upsert $(fmt_ms "${HW_B[$n]}")" "$(fmt_ms "${CQ_C[$n]}")" "$(fmt_x "$x")" "≤ 2x" "$(met "$x" '<=' 2)" "\`CALL cq.run('agg')\` ×$BENCH_REPS in one psql"
        done
    fi
fi
if want 4; then
    for cfg in "${ING_CONFIGS[@]}"; do
        IFS='|' read -r label kind c <<<"$cfg"
        x="${ING_R[$label]}"
        if [[ $kind == multi ]]; then unit="tps (×1000 rows)"; else unit="tps"; fi
        row 4 "ingest: $label" "untracked $(printf '%.0f' "${ING_U[$label]}") $unit" "tracked $(printf '%.0f' "${ING_T[$label]}") $unit" "$(fmt_x "$x")" "≥ 0.95x" "$(met "$x" '>=' 0.95)" "pgbench -T $BENCH_PGBENCH_SECS, median of $BENCH_PGBENCH_ROUNDS pairs"
    done
fi

if want 5; then
    for rate in $BENCH_LAT_RATES; do
        [[ -n "${LAT_LINE[$rate]:-}" ]] || continue
        read -r n b p50 p99 mx _ <<<"${LAT_LINE[$rate]}"
        goal="—" ok="—"
        if ((rate == 1000)); then goal="p50 ≤ 5 ms, p99 ≤ 25 ms"; ok=$(awk -v a="$p50" -v b="$p99" 'BEGIN { print (a <= 5 && b <= 25) ? "yes" : "**no**" }'); fi
        row 5 "commit-to-target latency, $rate rows/s (single-row INSERTs)" "—" "p50 $p50 ms, p99 $p99 ms (max $mx; $n rows, $b batches)" "—" "$goal" "$ok" "\`bench/latency.sh\`, trigger '0'"
    done
fi
if want 6; then
    for wm in $BENCH_MEM_WORK_MEM; do
        x=$(( (MEM_PEAK[$wm] - MEM_BASE[$wm]) / 1024 ))
        row 6 "memory: one batch, $(human "$(scaled "$BENCH_MEM_ROWS" 1000)") new rows into $(human "$(scaled "$BENCH_MEM_GROUPS" 1000)") groups, work_mem = $wm" "backend before the batch: $((MEM_BASE[$wm] / 1024)) MB private" "peak $((MEM_PEAK[$wm] / 1024)) MB private" "+$x MB" "≤ +64 MB" "$( ((x <= 64)) && echo yes || echo '**no**')" "\`CALL cq.run('mem_agg')\`, RssAnon sampled every 20 ms"
    done
fi

# ---------------------------------------------------------------------------
# Issue 12's goals: one row each (target, figure, met, the profile of a miss)
# ---------------------------------------------------------------------------
# anchor HEADING: the markdown anchor of a heading (GitHub's rule: lower
# case, punctuation dropped, spaces to hyphens)
anchor() { printf '#%s' "$(tr 'A-Z ' 'a-z-' <<<"$1" | tr -cd 'a-z0-9_-')"; }
H1="Goal 1: write path" H2="Goal 2: fold efficiency" H3="Goal 3: live ingest" H4="Goal 4: cold first batch"
H56="Goals 5 and 6: latency" H7="Goal 7: MERGE" HWHERE="Where a batch's time goes (auto_explain)"
H2P="Where a fold's CPU goes (scenario 3, one profiled run per group count)"
GOAL_ROWS=()
goal() { GOAL_ROWS+=("| $1 | $2 | $3 | $4 | $5 | $6 |"); }
# data_goal N: a "goal N yes|no TEXT" line of a standalone script -> "met|text"
data_goal() {
    awk -v n="$1" '$1 == "goal" && $2 == n { m = ($3 == "yes") ? "yes" : "**no**"; $1 = $2 = $3 = ""; sub(/^ +/, ""); print m "|" $0; exit }' "$DATA" 2>/dev/null
}
not_run() { echo "not measured in this run${1:+ ($1)}"; }

# 1. write path
# the verdict: the interleaved rounds (writepathmix) when measured, else
# the separate runs' tps (bench/README.md, "Write path", says why)
if want write_path && grep -q '^writepathmix ' "$DATA" 2>/dev/null; then
    fig="$(awk '$1 == "writepathmix" { printf "%s%s %s cl. %.2fx (%.2f–%.2f)", sep, $2, $3, $4, $5, $6; sep = "; " }' "$DATA")"
    tps="$(awk '$1 == "writepath" { printf "%s%s %s cl. %.2fx (CPU %.2fx)", sep, $2, $3, $4, $7; sep = "; " }' "$DATA")"
    ok="$(awk '$1 == "writepathmix" { if ($4 < 0.97) bad = 1 } END { print bad ? "**no**" : "yes" }' "$DATA")"
    # (the note apart: an apostrophe inside ${tps:+...} in double quotes
    # broke the $(anchor ...) that follows it in bash 5.2)
    tpsnote=""
    [ -n "$tps" ] && tpsnote="; separate runs' tps: $tps"
    goal 1 "Write path: tracked, query paused / untracked (single-row INSERT, 1000-row INSERT, COPY; 1 and 2 clients)" "≥ 0.97x each" "$fig (interleaved rounds: median latency ratio, median of rounds, spread)$tpsnote" "$ok" "[$H1]($(anchor "$H1")): interleaved rounds, tps, backend CPU per transaction; profile: callgrind instructions per row, untracked vs tracked"
elif want write_path && grep -q '^writepath ' "$DATA" 2>/dev/null; then
    fig="$(awk '$1 == "writepath" { printf "%s%s %s cl. %.2fx (%.2f–%.2f)", sep, $2, $3, $4, $5, $6; sep = "; " }' "$DATA")"
    ok="$(awk '$1 == "writepath" { if ($4 < 0.97) bad = 1 } END { print bad ? "**no**" : "yes" }' "$DATA")"
    goal 1 "Write path: tracked, query paused / untracked (single-row INSERT, 1000-row INSERT, COPY; 1 and 2 clients)" "≥ 0.97x each" "$fig (median of pairs, spread)" "$ok" "[$H1]($(anchor "$H1")): tps, backend CPU per transaction; profile: callgrind instructions per row, untracked vs tracked"
else
    goal 1 "Write path" "≥ 0.97x" "$(not_run "${EXT_STATUS[write_path]:-skipped}")" "—" "bench/write_path.sh"
fi
# 1, xid48: the same rounds' third table, tracked with a cq.xid48 cq_xid
# (cq.stamp_type = 'xid48'; BENCH_STAMP_TYPE), an extra row beside the
# goal's figure (which stays the xid8 default's)
if want write_path && grep -q '^writepathmix48 ' "$DATA" 2>/dev/null; then
    fig="$(awk '$1 == "writepathmix48" { printf "%s%s %s cl. %.2fx (%.2f–%.2f)", sep, $2, $3, $4, $5, $6; sep = "; " }' "$DATA")"
    tps="$(awk '$1 == "writepath48" { printf "%s%s %s cl. %.2fx (CPU %.2fx)", sep, $2, $3, $4, $7; sep = "; " }' "$DATA")"
    ok="$(awk '$1 == "writepathmix48" { if ($4 < 0.97) bad = 1 } END { print bad ? "**no**" : "yes" }' "$DATA")"
    tpsnote=""
    [ -n "$tps" ] && tpsnote="; separate runs' tps: $tps"
    goal "1 (xid48)" "Write path with cq.stamp_type = 'xid48' (not the default): tracked with a cq.xid48 cq_xid / untracked, same rounds" "≥ 0.97x each" "$fig (interleaved rounds)$tpsnote" "$ok" "[$H1]($(anchor "$H1")): the cq.xid48 stamp tables"
fi
# 2. fold efficiency: bench/fold.sh's "goal 2" line, else its table (the
# columns found by their headers), else scenario 3's single profiled runs
dg="$(data_goal 2)"
if [[ -z "$dg" && -s "$RAW/fold_goal.md" ]]; then
    dg="$(awk -F'|' '
        /^\| *backlog/ { for (i = 2; i < NF; i++) { h = $i; gsub(/^ +| +$/, "", h); if (h ~ /^ratio/) rc = i; if (h ~ /^state/) sc = i; if (h ~ /^memory/) mc = i; if (h ~ /1\.2x/) okc = i }; next }
        rc && okc && $rc ~ /[0-9]x/ { b = $2; r = $rc; gsub(/^ +| +$/, "", b); gsub(/^ +| +$/, "", r)
            s = sc ? $sc : ""; m = mc ? $mc : ""; gsub(/^ +| +$/, "", s); gsub(/^ +| +$/, "", m)
            fig = fig sep b (s != "" ? ", " s : "") (m != "" ? ", " m : "") ": " r; sep = "; "; if ($okc !~ /yes/) bad = 1; n++ }
        END { if (n) print (bad ? "**no**" : "yes") "|" fig " (CPU, medians)" }' "$RAW/fold_goal.md")"
fi
if [[ -z "$dg" && -n "$FOLD_RATIOS" ]]; then
    dg="$(awk -v r="$FOLD_RATIOS" 'BEGIN { n = split(r, a, /; /); bad = 0; for (i = 1; i <= n; i++) { x = a[i]; sub(/.*: /, "", x); sub(/x.*/, "", x); if (x + 0 > 1.2) bad = 1 }; print (bad ? "**no**" : "yes") " (one run)" }')|$FOLD_RATIOS; bench/fold.sh ${EXT_STATUS[fold_goal]:-not run}"
fi
if [[ -n "$dg" ]]; then
    goal 2 "Fold efficiency: CPU per folded row / plain GROUP BY (its rows to the client), same memory ($(human "$FOLD") rows, ~4k and ~1M groups)" "≤ 1.2x" "${dg#*|}" "${dg%%|*}" "[$H2]($(anchor "$H2")); profile: [each phase's CPU]($(anchor "$H2P")) (DEBUG1) vs the GROUP BY's plan"
else
    goal 2 "Fold efficiency" "≤ 1.2x" "$(not_run "bench/fold.sh ${EXT_STATUS[fold_goal]:-skipped}")" "—" "—"
fi
# 3. live ingest
l3="1000-row INSERT, 2 clients"
if want 4 && [[ -n "${ING_R[$l3]:-}" ]]; then
    x="${ING_R[$l3]}"
    ok=$(met "$x" '>=' 0.85); [[ "${ING_LAG[$l3]}" == caught* ]] || ok="**no**"
    # the fold's share of the insert's CPU is part of the goal, not only the ratio
    [[ "$(met "${ING_FOLDX[$l3]:-}" '<=' 0.15)" != "**no**" ]] || ok="**no** (fold > 15 %)"
    goal 3 "Live ingest: two writers of 1000-row INSERTs + a trigger '0' update query / untracked" "≥ 0.85x, caught up at the end (fold ≤ 15% of the insert's CPU per row)" "$(fmt_x "$x") (${ING_LAG[$l3]}); fold CPU per row $(printf '%.0f' "$(calc "100 * ${ING_FOLDX[$l3]}")") % of the untracked insert's" "$ok" "[$H3]($(anchor "$H3")); profile: CPU per row of the writers and of pg_cq's workers, the batches"
else
    goal 3 "Live ingest" "≥ 0.85x" "$(not_run "$(want 4 && echo "BENCH_INGEST without multi:2" || echo "scenario 4 skipped")")" "—" "scenario 4"
fi
# 4. cold first batch
c4="$(awk '$1 == "cold" { print $2; exit }' "$DATA" 2>/dev/null)"
if [[ -n "$c4" ]]; then
    goal 4 "Cold first batch: first CALL in a new backend / cached CALL ($(human "$(scaled 10000 100)") new rows, $(human "$(scaled 1000000 1000)") history)" "≤ 1.3x" "$(fmt_x "$c4")" "$(met "$c4" '<=' 1.3)" "[$H4]($(anchor "$H4")): bench/cold.sh's cold vs cached split"
else
    goal 4 "Cold first batch (cold / cached)" "≤ 1.3x" "$(not_run "bench/cold.sh ${EXT_STATUS[cold]:-skipped}")" "—" "bench/cold.sh"
fi
if want 2 && ((${#INC_SIZES[@]} > 1)); then
    nl="${INC_SIZES[-1]}"
    x=$(calc "${REF[$nl]} / ${CQ_A[$nl]}")
    goal 4 "Cold first batch: $(human "$NEW") new rows at $(human "$nl") history, fresh psql session, vs REFRESH MATERIALIZED VIEW" "≥ 250x faster" "$(fmt_x "$x") ($(fmt_ms "${CQ_A[$nl]}") vs $(fmt_ms "${REF[$nl]}"))" "$(met "$x" '>=' 250)" "[$HWHERE]($(anchor "$HWHERE")): the batch statement's CTEs vs the rest (per-backend start-up)"
fi
# 5. many queries
if ((${#LATQ_LINE[@]})); then
    nmax=$(printf '%s\n' "${!LATQ_LINE[@]}" | sort -n | tail -n 1)
    read -r _ _ p99 _ cpu_max _ <<<"${LATQ_LINE[$nmax]}"
    fig="$(for n in $(printf '%s\n' "${!LATQ_LINE[@]}" | sort -n); do read -r _ p50 q99 _ c _ <<<"${LATQ_LINE[$n]}"; printf '%s: p50 %s / p99 %s ms, CPU %s s; ' "$n" "$p50" "$q99" "$c"; done)"
    if [[ -n "${LATQ_LINE[1]:-}" ]]; then
        read -r _ _ _ _ cpu1 _ <<<"${LATQ_LINE[1]}"
        xr=$(calc "$cpu_max / ($cpu1 > 0 ? $cpu1 : 0.01)")
        fig+="CPU $nmax/1 = $(fmt_x "$xr")"
    else xr=nan; fi
    ok=$(awk -v p="$p99" -v x="$xr" 'BEGIN { print (p <= 50 && x != "nan" && x <= 10) ? "yes" : "**no**" }')
    goal 5 "Many queries per source: $(printf '%s\n' "${!LATQ_LINE[@]}" | sort -n | paste -sd /) trigger '0' queries, $(awk '$1 == "queries" { print $3; exit }' "$DATA") rows/s" "p99 ≤ 50 ms at 100; CPU(100) ≤ 10x CPU(1)" "$fig" "$ok" "[$H56]($(anchor "$H56")): percentiles; profile: pg_cq's CPU per batch and per 1k rows, batches run, the share of the cores pg_cq took and the cycle of a query's batches (the latency follows it)"
else
    goal 5 "Many queries per source" "p99 ≤ 50 ms at 100; CPU ≤ 10x" "$(not_run)" "—" "bench/latency.sh LAT_QUERIES"
fi
# 6. latency at rate
if [[ -n "${LAT_LINE[10000]:-}" ]]; then
    read -r n b p50 p99 mx reached cpu <<<"${LAT_LINE[10000]}"
    ok=$(awk -v p="$p99" -v r="$reached" 'BEGIN { print (r < 9000) ? "**no** (rate not reached)" : (p <= 10) ? "yes" : "**no**" }')
    goal 6 "Latency at rate: single-row commits at 10,000/s" "p99 ≤ 10 ms" "p50 $p50 ms, p99 $p99 ms (max $mx); rate reached $reached/s; $b batches; pg_cq CPU $cpu s" "$ok" "[$H56]($(anchor "$H56")): percentiles, latency distribution chart; profile: pg_cq's CPU (share of a core), rows per batch"
else
    goal 6 "Latency at 10,000 commits/s" "p99 ≤ 10 ms" "$(not_run)" "—" "bench/latency.sh"
fi
# 7. MERGE: decided in the code (the C writer on the store, else MERGE for
# NOT NULL keys, cq.merge_max_groups); bench/merge.sh checks the decision
# against its measurement of all three writers, row by row
dg="$(data_goal 7)"
if [[ -n "$dg" ]]; then
    goal 7 "MERGE vs upsert (NOT NULL keys): decided in the code: on the store the C writer where the target qualifies, otherwise MERGE for NOT NULL keys (cq.merge_max_groups, default -1: every batch), the upsert statement for nullable keys" "MERGE where at least as fast" "${dg#*|}" "decided in the code; $([[ ${dg%%|*} == yes ]] && echo "the run agrees in every row" || echo "**the run disagrees** in a row (see the table)")" "[$H7]($(anchor "$H7")): CPU of CALL cq.run by each writer, and the store's target write alone"
else
    goal 7 "MERGE vs upsert" "MERGE where at least as fast" "$(not_run "bench/merge.sh ${EXT_STATUS[merge]:-skipped}")" "decided in the code (README)" "—"
fi
# 8. charts
goal 8 "Plots (PNG, gnuplot)" "latency distribution, batch cost vs history, ingest ratio vs clients, cost vs queries" "${#CHARTS[@]} of 4: ${CHARTS[*]:-none}" "$( ((${#CHARTS[@]} == 4)) && echo yes || echo '**no**')" "charts below the table; bench/README.md"

# report_part NAME [HEADING]: a standalone script's report (raw/NAME.md), or why it is missing
# (its headings of level 1 and 2 become level 3: the report's sections are level 2)
report_part() {
    if [[ -s "$RAW/$1.md" ]]; then echo; awk '/^```/ { f = !f } !f && /^##? / { sub(/^#+ /, "### ") } { print }' "$RAW/$1.md"
    elif want "$1"; then echo; echo "$1: ${EXT_STATUS[$1]:-no report}."; fi
}

{
    echo "# pg_cq benchmark — latest run"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), git $(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$REPO_ROOT" diff --quiet -- src sql 2>/dev/null || echo ' (+ uncommitted changes)'), ${ELAPSED} s; load average at the start $LOAD_START, at the end $(cut -d' ' -f1-3 /proc/loadavg)."
    echo
    echo "- machine: $(nproc) cores ($(lscpu 2>/dev/null | sed -nE 's/^Model name: +//p' | head -n 1)), $(free -g | awk '/^Mem:/ {print $2}') GB RAM"
    echo "- $PGVER; pg_cq.so installed $SO_START$([[ "$(so_stamp)" == "$SO_START" ]] || echo " (reinstalled during the run at $(so_stamp): new backends may have loaded it)")"
    echo "- settings: $SETTINGS (fsync/synchronous_commit/full_page_writes off: throwaway cluster, figures exclude durable-commit cost)"
    echo "- knobs: BENCH_SCALE=$BENCH_SCALE sizes=(${INC_SIZES[*]}) new rows=$NEW reps=$BENCH_REPS slow reps=$BENCH_SLOW_REPS fold rows=$FOLD fold spans=($BENCH_FOLD_SPANS) ingest=($BENCH_INGEST) pgbench ${BENCH_PGBENCH_SECS}s ×$BENCH_PGBENCH_ROUNDS; scenarios: $(for t in incremental fold ingest latency memory write_path cold fold_goal merge aggregates join session soak; do want "$t" && printf '%s ' "$t"; done)"
    echo "- seconds per part: $(for t in setup incremental fold ingest latency memory; do [[ -z "${PART_S[$t]:-}" ]] || printf '%s %s, ' "$t" "${PART_S[$t]}"; done; for t in write_path cold fold_goal merge aggregates soak join session; do [[ -z "${EXT_STATUS[$t]:-}" ]] || printf '%s (%s), ' "$t" "${EXT_STATUS[$t]}"; done)charts ${PART_S[charts]:-0}"
    if ((SMOKE)); then echo "- **smoke run (BENCH_SCALE=$BENCH_SCALE): fewer rows, rounds and seconds; the figures are not results**"; fi
    echo
    echo "## Issue 12 goals"
    echo
    echo "Each row: the goal's measure and target, the figure of this run, met or not, and where the details and the profile that explains a miss are."
    echo
    echo "| goal | measure | target | figure | met | details, profile |"
    echo "|---|---|---|---|---|---|"
    printf '%s\n' "${GOAL_ROWS[@]}"
    echo
    if ((${#CHARTS[@]})); then
        for c in "${CHARTS[@]}"; do echo "![${c%.png}]($c)"; done
        echo
    fi

    if want write_path; then
        echo "## $H1"
        echo
        echo "bench/write_path.sh (its own cluster): tracked (the source of a paused query) vs untracked tables. The profile of a miss is its callgrind table: the executor's instructions per row, untracked vs tracked (what the cq_xid default, its BRIN index and pg_cq's triggers add)."
        report_part write_path
        echo
    fi
    if want fold_goal || want 3; then
        echo "## $H2"
        echo
        echo "bench/fold.sh (its own cluster, glibc's malloc thresholds fixed) measures the goal: the backend's CPU time of the first batch over a $(human "$FOLD")-row backlog against the plain GROUP BY (the query, its rows sent to the client) and the count-only one (no row sent), serial, same memory; medians of interleaved rounds with their spread, then every run's user and system time, page faults and I/O counters. Scenario 3 profiles one fold per group count (below)."
        want fold_goal && report_part fold_goal
        if want 3; then
            echo
            echo "### $H2P"
            echo
            echo "The fold with \`client_min_messages = debug1\` and \`cq.bench_split_batch = on\` (the store times d, the puts into the store and batch 0's target rows apart, on the path the batch takes: the target load since session 32), serial, jit off: pg_cq's DEBUG1 lines give each phase's CPU time. The GROUP BY: its CPU time, then EXPLAIN ANALYZE for scan vs aggregation (timing overhead included), work_mem = cq.work_mem. Raw: raw/profile_fold_*.txt."
            echo
            echo "| backlog | state path | fold CPU | its phases (DEBUG1, CPU ms) | plain GROUP BY CPU | its plan | fold / GROUP BY |"
            echo "|---|---|---|---|---|---|---|"
            printf '%s\n' "${FOLD_ROWS[@]}"
        fi
        echo
    fi
    if want 4; then
        echo "## $H3"
        echo
        echo "Tracked = source of a pg_cq query (column cq_xid DEFAULT pg_current_xact_id() + BRIN index); untracked = identical table without (both autovacuum_enabled = off)."
        echo "A trigger '0' update query (ing_agg) folds the tracked rows in background workers while pgbench inserts (on the same $(nproc) cores); ingest ratio = median of the pairs' tracked / untracked tps (pgbench -T $BENCH_PGBENCH_SECS, $BENCH_PGBENCH_ROUNDS pairs; median tps in brackets). $ING_CHECK."
        echo
        echo "**Profile.** CPU per row inserted (µs): of the backends that served the writers (the postmaster's reaped children, around each pgbench run) and of pg_cq's worker and scheduler processes (/proc/PID/stat, from the first run until the query caught up: the fold of every tracked row of the configuration). The goal wants the fold at ≤ 15% of the insert; on a machine whose cores the writers fill, untracked / (tracked insert + fold) is the ingest ratio the CPU allows. Batches: how many ran and their mean size over the configuration; then the ones cq.progress still keeps (the last 100): median and max rows, median duration, duration per row (larger batches under load amortize the fixed cost per batch)."
        echo
        echo "| configuration | ingest ratio | rows tracked / untracked | insert, untracked | insert, tracked | fold | fold / untracked insert | CPU-bound ratio untracked / (tracked + fold) | batches | last batches (cq.progress) | caught up |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|"
        for cfg in "${ING_CONFIGS[@]}"; do
            IFS='|' read -r label kind c <<<"$cfg"
            echo "${ING_PROF[$label]}"
        done
        echo
    fi
    if want cold || want 2; then
        echo "## $H4"
        echo
        echo "bench/cold.sh (its own cluster): the first CALL in a new backend against a cached one; its split of the cold batch is the profile. The second figure ($(human "$NEW") new rows at the largest history of scenario 2 vs REFRESH) comes from scenario 2; its profile is [$HWHERE]($(anchor "$HWHERE"))."
        want cold && report_part cold
        echo
    fi
    if want 5; then
        echo "## $H56"
        echo
        echo "bench/latency.sh on its own cluster (track_commit_timestamp = on, cq.max_workers = 2): pgbench -R single-row INSERTs; latency = commit time of the target row - commit time of the source row, every row (rates: a stateless append query; many queries: update queries with different groupings, a sample of rows per query). pg_cq CPU = utime + stime of its worker and scheduler processes over the run (the profile: CPU per batch, share of a core)."
        echo
        echo '```'
        cat "$RAW/latency.txt" 2>/dev/null || true
        echo '```'
        echo
    fi
    if want merge; then
        echo "## $H7"
        echo
        echo "Decided in the code (README, \"How an update query writes its target\"): on the store an update query's batch writes its target from C (the C writer) where the target qualifies; otherwise a query whose keys are all NOT NULL writes it by MERGE (up to cq.merge_max_groups changed groups, default -1: every batch), a query whose keys may be NULL by the upsert statement. bench/merge.sh measures the three writers and says, row by row, whether the code's choice is the fastest (within 5%), at ~4k and ~1M groups."
        report_part merge
        echo
    fi

    echo "## Other scenarios"
    echo
    echo "Times are medians of psql \`\\timing\` in a fresh session (the CALL's wall time as the client sees it)."
    echo "Ratios: for \"faster\" rows baseline / pg_cq; otherwise pg_cq / baseline (for ingest: tracked tps / untracked tps)."
    echo
    echo "| # | scenario | baseline | pg_cq | ratio | goal | met | command |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${SUMMARY_ROWS[@]}"
    if ((${#INC_SIZES[@]})); then
        echo
        echo "## Incremental batches ($(human "$NEW") new rows per batch), medians"
        echo
        echo "Phase A: history loaded, query created (batch 0), \`VACUUM\` (BRIN summarized) — what a user gets."
        echo "Phase B: the same after \`ANALYZE\` of the source (the planner then knows cq_xid's correlation)."
        echo
        echo "Phase C: like B, but $BENCH_REPS batches in one session (plans cached, as a long-lived worker would run them)."
        echo
        echo "| history | load | CREATE … AS (batch 0) | pg_cq CALL A | progress.duration_ms A | hand-written A | pg_cq CALL B | progress.duration_ms B | hand-written B | pg_cq CALL C | REFRESH MV | plain GROUP BY |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
        for n in "${INC_SIZES[@]}"; do
            echo "| $(human "$n") | $(fmt_ms "${LOAD_MS[$n]}") | $(fmt_ms "${CREATE_MS[$n]}") | $(fmt_ms "${CQ_A[$n]}") | $(fmt_ms "${CQD_A[$n]}") | $(fmt_ms "${HW_A[$n]}") | $(fmt_ms "${CQ_B[$n]}") | $(fmt_ms "${CQD_B[$n]}") | $(fmt_ms "${HW_B[$n]}") | $(fmt_ms "${CQ_C[$n]}") | $(fmt_ms "${REF[$n]}") | $(fmt_ms "${GB[$n]}") |"
        done
        echo
        echo "Correctness after the runs:"
        for n in "${INC_SIZES[@]}"; do echo "- $(human "$n"): ${CHECK[$n]}"; done
        if [[ "$BENCH_PROFILE" == 1 ]]; then
            echo
            echo "## $HWHERE"
            echo
            echo "One extra batch per phase under auto_explain (log_analyze on), run in the calling session (hand-off off: auto_explain and the DEBUG1 split are the session's), so it profiles the in-process path; phase A's timed CALL is handed off to a pool worker (bench/results/cold10m-s33-cold10m.md splits that path)."
            echo
            echo "d = scan of the new rows + partial aggregation, m = state upsert, o = target upsert (CTEs of the batch statement, each without its input's time);"
            echo "other statements = the rest of the batch's SQL (e.g. the store's target statement, WITH f); rest = the CALL outside those (catalog reads, SQL generation, parse/plan, bookkeeping, the store's fold in C); DEBUG1 = pg_cq's CPU split of the fold. Plans: raw/profile_*.txt."
            echo
            for n in "${INC_SIZES[@]}"; do
                echo "- $(human "$n") A: ${PROF_A[$n]}"
                echo "- $(human "$n") B: $(head -n 1 <<<"${PROF_B[$n]}")"
                echo "- $(human "$n") B, 2nd batch in the same session: $(tail -n 1 <<<"${PROF_B[$n]}")"
            done
        fi
    fi
    if want 6; then
        echo
        echo "## Memory"
        echo
        echo "\`SELECT k, count(*), sum(v), max(v) FROM mem_src GROUP BY k\` (update mode), $(human "$(scaled "$BENCH_MEM_GROUPS" 1000)") groups in state after batch 0, then $(human "$(scaled "$BENCH_MEM_ROWS" 1000)") new rows (every group touched), one \`CALL cq.run\`. Private memory = RssAnon of the backend (shared buffers excluded), sampled every 20 ms."
        echo
        echo "| work_mem | batch | RssAnon before | peak RssAnon | peak − before | VmHWM (incl. shared buffers touched) | hash aggregates |"
        echo "|---|---|---|---|---|---|---|"
        for wm in $BENCH_MEM_WORK_MEM; do
            echo "| $wm | $(fmt_ms "${MEM_TIME[$wm]}") | $((MEM_BASE[$wm] / 1024)) MB | $((MEM_PEAK[$wm] / 1024)) MB | +$(((MEM_PEAK[$wm] - MEM_BASE[$wm]) / 1024)) MB | $((MEM_HWM[$wm] / 1024)) MB | ${MEM_SPILL[$wm]} |"
        done
    fi
    for t in aggregates join session; do
        want "$t" || continue
        report_part "$t"
    done
    if want soak; then
        echo
        echo "## Soak (bench/soak.sh, ${BENCH_SOAK_SECS} s): ${EXT_STATUS[soak]:-}"
        echo
        grep -E '^soak:|^not ok' "$RAW/soak.log" 2>/dev/null | sed 's/^/    /' || true
    fi
} >"$BENCH_OUT"

cat "$BENCH_OUT"
echo
echo "written to ${BENCH_OUT#"$REPO_ROOT"/} (raw logs and plans: ${RAW#"$REPO_ROOT"/}/)"
