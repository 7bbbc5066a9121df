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
# two GROUP BYs run in an order that rotates by round for BENCH_FOLD_REPS
# rounds: the plain GROUP BY, the query itself with its result rows sent to
# the client (psql discards them: the backend forms and sends every row, as
# the fold forms and writes every row of its target), and the count-only one
# (groupby_sql: every aggregate evaluated, one row sent; the baseline before
# session 42).  Figures are medians, the ratios the medians of the rounds'
# fold / GROUP BY with their spread (min-max), in CPU time of the backend
# (/proc/self/schedstat; the goal's measure, and robust to other jobs on
# the machine); wall times are shown too.  BENCH_FOLD_BASELINE (rows, or
# count) names the GROUP BY the verdict (≤ 1.2x) uses.  Every run's user
# and system time and page faults, and the cluster's buffer, temp-file and
# WAL counters around it, are listed after the table.  All run in one
# backend without parallel workers (max_parallel_maintenance_workers
# = 0 too: a parallel build of the batch's indexes would put part of its CPU
# in worker processes, which the backend's CPU time does not count).
# The cluster runs with glibc's malloc thresholds fixed (BENCH_FOLD_MALLOC,
# GLIBC_TUNABLES; empty: glibc's defaults): with the default, dynamic ones
# whether a hash aggregation's batches give their memory back to the kernel
# and fault it in again depends on the sizes of the batches, i.e. on the
# random rows: the same GROUP BY took 16k, 60k or 85k page faults on
# different data sets of the same size (~1 s of CPU on this VM, where a
# page mapped costs ~15 us), fixed within one data set, so that the ratio
# moved between bench runs by the data set drawn (bench/README.md, "Round 14").
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
# Env: BENCH_PORT (default 55454), BENCH_FOLD_ROWS (5000000), BENCH_FOLD_BASELINE
# (rows), BENCH_FOLD_MALLOC (mmap_threshold 32MB, trim_threshold 256MB),
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
BENCH_FOLD_BASELINE="${BENCH_FOLD_BASELINE:-rows}"
[[ $BENCH_FOLD_BASELINE == rows || $BENCH_FOLD_BASELINE == count ]] || die "BENCH_FOLD_BASELINE must be rows or count"

# spread X...: "min–max" of the values
spread() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%.2f–%.2f\n", a, b }'; }

# glibc's malloc thresholds fixed for the cluster's processes (see the header)
BENCH_FOLD_MALLOC="${BENCH_FOLD_MALLOC-glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=268435456}"
[[ -z $BENCH_FOLD_MALLOC ]] || export GLIBC_TUNABLES="$BENCH_FOLD_MALLOC"

trap 'stop_cluster bench_fold' EXIT
section "build + cluster"
ensure_packages
build_install
fold_cluster bench_fold "$BENCH_PORT"
psql_run "SET client_min_messages = warning;" "CREATE EXTENSION IF NOT EXISTS pg_cq;" >/dev/null

# cpu_detail SCRIPT: run SCRIPT in a fresh session (as cpu_sql); print
# "CPU_MS WALL_MS USER_MS SYS_MS MINFLT MAJFLT" of its backend
# (/proc/self/schedstat, /proc/self/stat fields 10, 12, 14, 15)
cpu_detail() {
    local out sched="pg_catalog.split_part(pg_catalog.pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint"
    local st="pg_catalog.string_to_array(pg_catalog.pg_read_file('/proc/self/stat'), ' ')"
    out="$(printf '%s\n' "SELECT $sched AS c0, pg_catalog.clock_timestamp() AS t0, $st AS s0 \\gset" "$1" \
        "SELECT 'cpu_detail ' || (($sched - :c0) / 1e6)::numeric(14,1) || ' ' || (extract(epoch FROM pg_catalog.clock_timestamp() - :'t0') * 1000)::numeric(14,1) || ' ' || (SELECT (((s[14])::bigint - (:'s0'::text[])[14]::bigint) * 1000 / $CLK_TCK) || ' ' || (((s[15])::bigint - (:'s0'::text[])[15]::bigint) * 1000 / $CLK_TCK) || ' ' || ((s[10])::bigint - (:'s0'::text[])[10]::bigint) || ' ' || ((s[12])::bigint - (:'s0'::text[])[12]::bigint) FROM (SELECT $st AS s) x);" \
        | "${PSQL[@]}" -At 2>&1)" || { printf '%s\n' "$out" >&2; die "timed script failed: $1"; }
    grep -oE '^cpu_detail [0-9.]+ [0-9.]+ [0-9]+ [0-9]+ [0-9]+ [0-9]+' <<<"$out" | tail -1 | cut -d' ' -f2- | grep . || die "no CPU time in output of: $1"
}
# db_counters: the cluster's cumulative counters (another session):
# "BLKS_HIT BLKS_READ TEMP_BYTES WAL_BYTES CHECKPOINTS STEAL_TICKS"
db_counters() {
    local steal
    steal=$(awk '$1 == "cpu" { print $9 }' /proc/stat)
    psql_val "SELECT d.blks_hit || ' ' || d.blks_read || ' ' || d.temp_bytes || ' ' || (SELECT w.wal_bytes FROM pg_stat_wal w) || ' ' || (SELECT b.checkpoints_timed + b.checkpoints_req FROM pg_stat_bgwriter b) || ' $steal' FROM pg_stat_database d WHERE d.datname = current_database();"
}
# timed WHICH SCRIPT: cpu_detail of SCRIPT and the counters' change around
# it; sets C, W (CPU, wall) and appends a line to DETAIL
timed() {
    local a b c w u y f m
    a=$(db_counters)
    read -r c w u y f m < <(cpu_detail "$2")
    b=$(db_counters)
    C=$c W=$w
    DETAIL+=("$(awk -v a="$a" -v b="$b" -v k="$1" -v c="$c" -v w="$w" -v u="$u" -v y="$y" -v f="$f" -v m="$m" -v l="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
        split(a, x, " "); split(b, z, " ")
        printf "| %s | %.0f | %.0f | %d | %d | %d | %d | %d | %d | %.1f | %.1f | %d | %d | %s |", k, c, w, u, y, f, m, z[1] - x[1], z[2] - x[2], (z[3] - x[3]) / 1048576, (z[4] - x[4]) / 1048576, z[5] - x[5], z[6] - x[6], l }')")
}

ROWS=() DETAIL=()
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
        cq=() gb=() gr=() cqw=() gbw=() grw=() ab=() abw=()
        arms=(cq)
        [[ -z $BENCH_FOLD_AB ]] || arms+=(ab)
        arms+=(gr gb)
        for ((r = 1; r <= BENCH_FOLD_REPS; r++)); do
            # the arms in an order that rotates by round: each goes first in turn
            order=()
            for ((i = 0; i < ${#arms[@]}; i++)); do order+=("${arms[$(((r - 1 + i) % ${#arms[@]}))]}"); done
            for which in "${order[@]}"; do
                if [[ $which == cq || $which == ab ]]; then
                    psql_run "CREATE TABLE fold_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now'$opt) AS $(agg_select fold_ev) WITH NO DATA;" >/dev/null 2>&1
                    psql_run "CHECKPOINT;" >/dev/null
                    set_ab=""
                    [[ $which == cq ]] || set_ab="$BENCH_FOLD_AB "
                    timed "$span min $wm $storage r$r $which" "${set_mem}${set_ab}SET cq.work_mem = '$wm'; CALL cq.run('fold_agg');"
                    c=$C w=$W
                    if [[ $which == cq ]]; then cq+=("$c") cqw+=("$w"); else ab+=("$c") abw+=("$w"); fi
                    n=$(psql_val "SELECT count(*) FROM fold_agg")
                    [[ $n == "$groups" ]] || die "fold_agg has $n rows, want $groups"
                    if ((r == 1)); then
                        d=$(psql_val "SELECT count(*) FROM (SELECT * FROM fold_agg EXCEPT ALL $(agg_select fold_ev)) x")
                        [[ $d == 0 ]] || die "fold_agg differs from the GROUP BY in $d rows"
                    fi
                    psql_run "SELECT cq.drop_query('fold_agg', drop_target => true);" "CHECKPOINT;" >/dev/null
                elif [[ $which == gb ]]; then
                    timed "$span min $wm $storage r$r gb (count)" "SET work_mem = '$wm'; $(groupby_sql fold_ev)"
                    gb+=("$C") gbw+=("$W")
                else
                    # the query itself, its rows to the client (psql discards them)
                    timed "$span min $wm $storage r$r gb (rows)" "SET work_mem = '$wm';"$'\n''\o /dev/null'$'\n'"$(agg_select fold_ev);"$'\n''\o'
                    gr+=("$C") grw+=("$W")
                fi
            done
        done
        # the ratios: the medians of the rounds' own ratios (each round's fold
        # and GROUP BYs ran back to back, under the same load), as issue 12
        # asks ("medians of interleaved pairs"), with their spread (min-max);
        # the CPU columns are medians
        row_for() {	# row_for LABEL FOLD_CPUS FOLD_WALLS
            local -a f fw rr=() rc=()
            local i c cw xr xc xv
            read -ra f <<<"$2"
            read -ra fw <<<"$3"
            for ((i = 0; i < ${#f[@]}; i++)); do
                rr+=("$(calc "${f[$i]} / ${gr[$i]}")") rc+=("$(calc "${f[$i]} / ${gb[$i]}")")
            done
            c=$(median "${f[@]}"); cw=$(median "${fw[@]}"); xr=$(median "${rr[@]}"); xc=$(median "${rc[@]}")
            xv=$([[ $BENCH_FOLD_BASELINE == count ]] && echo "$xc" || echo "$xr")
            info "groups $groups work_mem $wm $1: fold CPU ${f[*]} | GROUP BY rows CPU ${gr[*]} | count CPU ${gb[*]} | rounds' ratios to rows ${rr[*]} -> $(fmt_x "$xr") | to count ${rc[*]} -> $(fmt_x "$xc")"
            ROWS+=("| $(human "$BENCH_FOLD_ROWS") rows → $groups groups | $1 | $wm | $(fmt_ms "$(median "${gr[@]}")") ($(fmt_ms "$(median "${grw[@]}")")) | $(fmt_ms "$(median "${gb[@]}")") ($(fmt_ms "$(median "${gbw[@]}")")) | $(fmt_ms "$c") ($(fmt_ms "$cw")) | $(fmt_x "$xr") ($(spread "${rr[@]}")) | $(fmt_x "$xc") ($(spread "${rc[@]}")) | $(met "$xv" '<=' 1.2) |")
        }
        row_for "$storage" "${cq[*]}" "${cqw[*]}"
        [[ -z $BENCH_FOLD_AB ]] || row_for "$storage, \`$BENCH_FOLD_AB\`" "${ab[*]}" "${abw[*]}"
    done
    done
    psql_run "DROP TABLE fold_ev;" "CHECKPOINT;" >/dev/null
done

{
    echo "# Fold efficiency ($(date -u '+%Y-%m-%d %H:%M UTC'), git $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
    echo
    echo "Medians of $BENCH_FOLD_REPS interleaved rounds (the fold and the two GROUP BYs in an order that rotates by round); serial (no parallel workers, jit off); the GROUP BY's work_mem = the batch's cq.work_mem. CPU time of the backend (wall time in parentheses). The plain GROUP BY is the query itself, its result rows sent to the client (psql discards them); the count-only one wraps it in \`SELECT count(*) FROM (...) s WHERE s IS NOT NULL\` (every aggregate evaluated, no row sent; the baseline before session 42). Ratios: the median of the rounds' ratios of CPU times (fold / GROUP BY of the same round), in parentheses their spread (min-max); the verdict (≤ 1.2x) uses the ratio to the $([[ $BENCH_FOLD_BASELINE == count ]] && echo "count-only GROUP BY" || echo "plain GROUP BY (its rows to the client)")."
    echo
    echo "| backlog | state | memory | plain GROUP BY (rows to the client): CPU (wall) | count-only GROUP BY: CPU (wall) | pg_cq fold (CALL cq.run): CPU (wall) | $([[ $BENCH_FOLD_BASELINE == count ]] && echo "fold / plain" || echo "ratio (CPU)") (spread) | $([[ $BENCH_FOLD_BASELINE == count ]] && echo "ratio (CPU)" || echo "fold / count-only") (spread) | ≤ 1.2x |"
    echo "|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    echo "Every run, in order: backend CPU and wall ms, of it user and system ms (/proc/self/stat), minor and major page faults; the cluster's buffer hits and reads, temp and WAL MB, checkpoints, and the machine's steal ticks (/proc/stat) around it; load average after it."
    echo
    echo "| run | CPU | wall | user | sys | minflt | majflt | hits | reads | temp MB | WAL MB | ckpt | steal | load |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${DETAIL[@]}"
} | tee "$BENCH_OUT"
