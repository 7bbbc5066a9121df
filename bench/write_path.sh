#!/usr/bin/env bash
# bench/write_path.sh -- what tracking costs a writer (issue 9 item 10,
# issue 12 goal 1).
#
# Two twin tables (ts timestamptz, device_id int, category text,
# amount numeric(10,2)) on a throwaway cluster:
#   w_plain   untracked
#   w_trk     the source of a paused query (cq.trigger = 'available_now',
#             so no background worker competes with the writers): what
#             tracking adds to a table (cq_xid, its BRIN index, pg_cq's
#             triggers), the write path alone
# For each kind of write and 1 and 2 clients (pgbench -M prepared):
#   single  single-row INSERT
#   multi   1000-row INSERT ... SELECT
#   copy    COPY of a 10,000-row CSV file (server side)
# BENCH_PAIRS interleaved pairs of BENCH_PGBENCH_SECS runs (plain then
# tracked, tracked then plain, ...); the ratio is the median of the
# per-pair ratios tps(tracked) / tps(plain), the spread their min and max.
# Each run also records the CPU time of the backends that served it
# (reaped children of the postmaster), per transaction: on a shared, loaded
# machine wall-clock tps swings widely, CPU per transaction much less.
#
# Then (part "mix", the goal's figure) BENCH_MIX_ROUNDS rounds of
# BENCH_MIX_SECS in which one pgbench runs both tables' scripts at equal
# weights: every transaction picks its table at random, so both meet the
# same load, and the ratio is that of the median latencies of the two
# tables' transactions (pgbench's per-transaction log), untracked / tracked;
# the figure is the median of the rounds' ratios, the spread their min-max.
# Separate runs seconds apart (above) meet different load on a shared
# machine: their per-pair ratios swung 0.52x-1.33x (session 33) where the
# interleaved rounds agree within a few percent.
#
# Then, when valgrind is installed: the instructions the executor runs per
# row, counted by callgrind in a single-user backend on a second throwaway
# data directory (deterministic, unlike wall-clock figures on a shared
# machine), for untracked, tracked, and tracked with explicit cq_xid values
# (the stamp must replace them).
#
# BENCH_FLOOR=1 adds a third twin, w_const: plain PostgreSQL with the same
# nullable xid8 column and a constant default ('0'), no index, no trigger
# (what any 8-byte column with a default costs a writer: the floor that
# tracking cannot go below); the runs become triplets (plain, tracked,
# const, then const, tracked, plain, ...) and the report gains its ratios.
#
# BENCH_PREFILL rows (default 0) go into both tables before each kind's
# pairs: 5,500,000 puts the tracked table past the 43,520 heap pages (340 MB)
# that the first revmap page of its BRIN index covers, where every row used to
# read the index's metapage until a summarization extends the revmap.
#
# Env: BENCH_PORT (default 55452), BENCH_PAIRS (7), BENCH_PGBENCH_SECS (3),
# BENCH_MIX_ROUNDS (9), BENCH_MIX_SECS (3; single-row INSERTs),
# BENCH_MIX_SECS_LONG (8; 1000-row INSERTs and COPYs),
# BENCH_PREFILL (0), BENCH_FLOOR (0), BENCH_CLIENTS ("1 2"), BENCH_KINDS ("single multi copy"),
# BENCH_PARTS ("tps mix callgrind"), BENCH_OUT (bench/results/write_path.md),
# BENCH_DATA (file: appends "writepath KIND CLIENTS RATIO MIN MAX CPU_RATIO"
# and "writepathmix KIND CLIENTS RATIO MIN MAX MEAN_RATIO" lines for
# bench/run.sh), plus scripts/common.sh's PGBIN, CQ_TMPBASE,
# CQ_SKIP_APT, CQ_SKIP_BUILD.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
cd "$REPO_ROOT"

BENCH_PORT="${BENCH_PORT:-55452}"
BENCH_PAIRS="${BENCH_PAIRS:-7}"
BENCH_CLIENTS="${BENCH_CLIENTS:-1 2}"
BENCH_KINDS="${BENCH_KINDS:-single multi copy}"
BENCH_PGBENCH_SECS="${BENCH_PGBENCH_SECS:-3}"
BENCH_OUT="${BENCH_OUT:-$REPO_ROOT/bench/results/write_path.md}"
BENCH_PARTS="${BENCH_PARTS:-tps mix callgrind}"
BENCH_MIX_ROUNDS="${BENCH_MIX_ROUNDS:-9}"
BENCH_MIX_SECS="${BENCH_MIX_SECS:-3}"
BENCH_MIX_SECS_LONG="${BENCH_MIX_SECS_LONG:-8}"
BENCH_PREFILL="${BENCH_PREFILL:-0}"
BENCH_FLOOR="${BENCH_FLOOR:-0}"
TABLES="w_plain w_trk"
((BENCH_FLOOR)) && TABLES="w_plain w_trk w_const"
part() { [[ " $BENCH_PARTS " == *" $1 "* ]]; }
# part_kinds PART: the kinds of write to measure in PART, none if it is off
part_kinds() { if part "$1"; then echo "$BENCH_KINDS"; fi; }
WORK="$(cluster_dir bench_write)_files"

trap 'stop_cluster bench_write' EXIT
section "build + cluster"
ensure_packages
build_install
start_cluster bench_write "$BENCH_PORT" "shared_buffers = 256MB" "max_wal_size = 4GB" "autovacuum = off"
rm -rf "$WORK" && mkdir -p "$WORK"
LOAD0="$(cut -d" " -f1-3 /proc/loadavg)"
is_root && chown postgres:postgres "$WORK"

COLS="ts timestamptz, device_id int, category text, amount numeric(10,2)"
ROW_SELECT="SELECT now(), 1 + (random() * 999)::int, 'cat_' || lpad(floor(random() * 50)::int::text, 2, '0'), round((random() * 1000)::numeric, 2)"

# the floor's twin (BENCH_FLOOR): the column as pg_cq adds it, with a constant default
CONST_DDL=""
((BENCH_FLOOR)) && CONST_DDL="CREATE TABLE w_const ($COLS); ALTER TABLE w_const ADD COLUMN cq_xid pg_catalog.xid8; ALTER TABLE w_const ALTER COLUMN cq_xid SET DEFAULT '0'::pg_catalog.xid8;"

# setup_tables: fresh w_plain and w_trk (and w_const)
setup_tables() {
    psql_run "SET client_min_messages = warning;" \
        "DROP TABLE IF EXISTS q_trk, w_plain, w_trk, w_const;" \
        "CREATE EXTENSION IF NOT EXISTS pg_cq;" \
        "CREATE TABLE w_plain ($COLS);" "CREATE TABLE w_trk ($COLS);" \
        "CREATE TABLE q_trk WITH (cq.trigger = 'available_now') AS SELECT device_id FROM w_trk WITH NO DATA;" \
        "$CONST_DDL" "CHECKPOINT;" >/dev/null
    if ((BENCH_PREFILL > 0)); then
        local pid
        pid="$(psql_run "SELECT pg_backend_pid();" \
            "INSERT INTO w_plain (ts, device_id, category, amount) $ROW_SELECT FROM generate_series(1, $BENCH_PREFILL);" \
            "INSERT INTO w_trk (ts, device_id, category, amount) $ROW_SELECT FROM generate_series(1, $BENCH_PREFILL);" \
            "$( ((BENCH_FLOOR)) && echo "INSERT INTO w_const (ts, device_id, category, amount) $ROW_SELECT FROM generate_series(1, $BENCH_PREFILL);")" \
            "CHECKPOINT;" | head -n 1)"
        # until the postmaster reaped that backend: its CPU must not count in a run
        local deadline=$((SECONDS + 10))
        while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.01; done
    fi
}

# scripts per kind and table
for tbl in $TABLES; do
    printf '%s\n' '\set dev random(1, 1000)' '\set cat random(10, 59)' '\set amt random(0, 99999)' \
        "INSERT INTO $tbl (ts, device_id, category, amount) VALUES (now(), :dev, 'cat_' || :cat, :amt / 100.0);" \
        >"$WORK/single_$tbl.sql"
    printf '%s\n' "INSERT INTO $tbl (ts, device_id, category, amount) $ROW_SELECT FROM generate_series(1, 1000);" \
        >"$WORK/multi_$tbl.sql"
    printf '%s\n' "COPY $tbl (ts, device_id, category, amount) FROM '$WORK/rows.csv' (FORMAT csv);" >"$WORK/copy_$tbl.sql"
done
psql_run "COPY ($ROW_SELECT FROM generate_series(1, 10000)) TO '$WORK/rows.csv' (FORMAT csv);" >/dev/null

# children_cpu: CPU ms of the postmaster's exited (reaped) children, i.e. of
# the backends that served finished runs (/proc/PID/stat cutime + cstime)
PM_PID="$(head -n 1 "$(cluster_dir bench_write)/data/postmaster.pid")"
CLK_TCK="$(getconf CLK_TCK)"
children_cpu() {
    awk -v t="$CLK_TCK" '{ sub(/^.*\) /, ""); print ($14 + $15) * 1000 / t }' "/proc/$PM_PID/stat"
}
# children_sys: the system (kernel) part of it (cstime)
children_sys() {
    awk -v t="$CLK_TCK" '{ sub(/^.*\) /, ""); print $15 * 1000 / t }' "/proc/$PM_PID/stat"
}
# wait_children N: until the postmaster has N children again (the run's
# backends exited and were reaped, so their CPU is in children_cpu)
wait_children() {
    local deadline=$((SECONDS + 10))
    while (($(pgrep -c -P "$PM_PID" || true) > $1)) && ((SECONDS < deadline)); do sleep 0.01; done
}

# run KIND TABLE CLIENTS: "tps cpu_ms_per_transaction sys_ms_per_transaction"
# of one pgbench run;
# the CPU is that of the backends serving the run, robust to the other
# load of a shared machine (wall-clock tps is not)
run() {
    local out t n0 c0 c1 s0 s1 xacts
    n0="$(pgrep -c -P "$PM_PID" || true)"; c0="$(children_cpu)"; s0="$(children_sys)"
    out="$("$PGBIN/pgbench" -n -M prepared -T "$BENCH_PGBENCH_SECS" -c "$3" -j "$3" -f "$WORK/${1}_$2.sql" 2>&1)" \
        || { printf '%s\n' "$out" >&2; die "pgbench failed"; }
    wait_children "$n0"; c1="$(children_cpu)"; s1="$(children_sys)"
    t=$(printf '%s\n' "$out" | sed -nE 's/^tps = ([0-9.]+) .*without.*/\1/p')
    xacts=$(printf '%s\n' "$out" | sed -nE 's/^number of transactions actually processed: ([0-9]+).*/\1/p')
    [[ -n "$t" && -n "$xacts" && "$xacts" -gt 0 ]] || die "no tps in pgbench output"
    echo "$t $(calc "($c1 - $c0) / $xacts") $(calc "($s1 - $s0) / $xacts")"
}

# ---- A: throughput (pgbench tps, wall clock, and backend CPU per
# transaction), interleaved pairs ----
declare -A LABEL=([single]="single-row INSERT" [multi]="1000-row INSERT ... SELECT" [copy]="COPY, 10,000 rows")
REPORT=() CPU_REPORT=() FLOOR_REPORT=()
for kind in $(part_kinds tps); do
    for clients in $BENCH_CLIENTS; do
        section "tps: ${LABEL[$kind]}, $clients client(s)"
        setup_tables
        ratios=() tp=() tt=() cratios=() cp=() ct=() tk=() ck=() kratios=() kcratios=() tkratios=() tkcratios=() sp=() st=() sk=()
        for ((r = 1; r <= BENCH_PAIRS; r++)); do
            if ((r % 2)); then rp="$(run "$kind" w_plain "$clients")"; rt="$(run "$kind" w_trk "$clients")"
                ((!BENCH_FLOOR)) || rk="$(run "$kind" w_const "$clients")"
            else ((!BENCH_FLOOR)) || rk="$(run "$kind" w_const "$clients")"
                rt="$(run "$kind" w_trk "$clients")"; rp="$(run "$kind" w_plain "$clients")"; fi
            read -r p pc ps <<<"$rp"; read -r t tc ts <<<"$rt"
            tp+=("$p"); tt+=("$t"); ratios+=("$(calc "$t / $p")")
            cp+=("$pc"); ct+=("$tc"); cratios+=("$(calc "$pc / $tc")")
            info "pair $r: plain ${p%.*} tps ($pc ms CPU/xact), tracked ${t%.*} tps ($tc ms CPU/xact), ratio ${ratios[-1]}, CPU ratio ${cratios[-1]}"
            if ((BENCH_FLOOR)); then
                read -r k kc ks <<<"$rk"
                sp+=("$ps"); st+=("$ts"); sk+=("$ks")
                tk+=("$k"); ck+=("$kc"); kratios+=("$(calc "$k / $p")"); kcratios+=("$(calc "$pc / $kc")")
                tkratios+=("$(calc "$t / $k")"); tkcratios+=("$(calc "$kc / $tc")")
                info "  const-default twin ${k%.*} tps ($kc ms CPU/xact), ratio to plain ${kratios[-1]} (CPU ${kcratios[-1]}), tracked to it ${tkratios[-1]} (CPU ${tkcratios[-1]})"
            fi
        done
        if ((BENCH_FLOOR)); then
            mapfile -t sorted < <(printf '%s\n' "${kratios[@]}" | sort -g)
            FLOOR_REPORT+=("| ${LABEL[$kind]} | $clients | $(printf '%.0f' "$(median "${tk[@]}")") ($(printf '%.3f' "$(median "${ck[@]}")") ms) | **$(fmt_x "$(median "${kratios[@]}")")** ($(fmt_x "${sorted[0]}")–$(fmt_x "${sorted[-1]}")) | **$(fmt_x "$(median "${kcratios[@]}")")** | $(fmt_x "$(median "${tkratios[@]}")") | $(fmt_x "$(median "${tkcratios[@]}")") | $(printf '%.3f / %.3f / %.3f' "$(median "${sp[@]}")" "$(median "${st[@]}")" "$(median "${sk[@]}")") |")
        fi
        mapfile -t sorted < <(printf '%s\n' "${ratios[@]}" | sort -g)
        REPORT+=("| ${LABEL[$kind]} | $clients | $(printf '%.0f' "$(median "${tp[@]}")") | $(printf '%.0f' "$(median "${tt[@]}")") | **$(fmt_x "$(median "${ratios[@]}")")** | $(fmt_x "${sorted[0]}")–$(fmt_x "${sorted[-1]}") | $(printf '%.2f ' "${ratios[@]}")|")
        [[ -z "${BENCH_DATA:-}" ]] || echo "writepath $kind $clients $(median "${ratios[@]}") ${sorted[0]} ${sorted[-1]} $(median "${cratios[@]}")" >>"$BENCH_DATA"
        mapfile -t sorted < <(printf '%s\n' "${cratios[@]}" | sort -g)
        CPU_REPORT+=("| ${LABEL[$kind]} | $clients | $(printf '%.3f' "$(median "${cp[@]}")") | $(printf '%.3f' "$(median "${ct[@]}")") | **$(fmt_x "$(median "${cratios[@]}")")** | $(fmt_x "${sorted[0]}")–$(fmt_x "${sorted[-1]}") | $(printf '%.2f ' "${cratios[@]}")|")
    done
done

# ---- B: interleaved within one run (pgbench with both scripts, equal
# weights: each transaction of each client picks the table at random) ----
# Separate runs (part A) compare seconds apart, and on a shared machine the
# other load changes between them: a pair's ratio swung 0.52x-1.33x for a
# difference of a few percent.  Here the two tables' transactions alternate
# at random within one run, so both meet the same load; pgbench's log gives
# every transaction's latency and script, and the ratio is that of the
# median latencies (untracked / tracked: as a throughput ratio, < 1 when
# tracked is slower).  The median leaves out the preempted transactions
# (the log's mean is dominated by them, and they hit either table by
# chance); the ratio of the means, what a throughput ratio would be, is
# reported next to it.  Rounds alternate which table is script 0.  The
# 1000-row INSERTs and COPYs (5-40 ms each) get BENCH_MIX_SECS_LONG rounds:
# at 3 s a round held 13-80 of them per table and its ratio spread +-10 %
# (the single-row rounds, thousands of transactions, +-3 %).
# mix_round KIND CLIENTS SWAP: "median_ratio mean_ratio n_plain n_tracked"
mix_round() {
    local kind="$1" clients="$2" swap="$3" a=w_plain b=w_trk out
    ((swap)) && { a=w_trk b=w_plain; }
    rm -f "$WORK"/mixlog.*
    local secs="$BENCH_MIX_SECS"
    [[ "$kind" == single ]] || secs="$BENCH_MIX_SECS_LONG"
    out="$("$PGBIN/pgbench" -n -M prepared -T "$secs" -c "$clients" -j "$clients" -l --log-prefix="$WORK/mixlog" \
        -f "$WORK/${kind}_$a.sql@1" -f "$WORK/${kind}_$b.sql@1" 2>&1)" || { printf '%s\n' "$out" >&2; die "pgbench failed"; }
    # log lines: client transaction latency_us script epoch epoch_us
    cat "$WORK"/mixlog.* | awk -v swap="$swap" '{ print (($4 == 0) == (swap == 0) ? "p" : "t"), $3 }' | sort -k1,1 -k2,2n |
        awk '{ n[$1]++; sum[$1] += $2; v[$1, n[$1]] = $2 }
        function med(s,    m) { m = n[s]; return m % 2 ? v[s, (m + 1) / 2] : (v[s, m / 2] + v[s, m / 2 + 1]) / 2 }
        END {
            if (n["p"] < 3 || n["t"] < 3) { print "nan nan 0 0"; exit }
            printf "%.6f %.6f %d %d\n", med("p") / med("t"), (sum["p"] / n["p"]) / (sum["t"] / n["t"]), n["p"], n["t"] }'
}
MIX_REPORT=()
for kind in $(part_kinds mix); do
    for clients in $BENCH_CLIENTS; do
        section "interleaved: ${LABEL[$kind]}, $clients client(s)"
        setup_tables
        mr=() mm=() np=0 nt=0
        for ((r = 1; r <= BENCH_MIX_ROUNDS; r++)); do
            read -r a b c d <<<"$(mix_round "$kind" "$clients" $((r % 2 == 0)))"
            [[ "$a" != nan ]] || die "too few transactions in an interleaved round ($kind, $clients clients)"
            mr+=("$a") mm+=("$b"); np=$((np + c)) nt=$((nt + d))
            info "round $r: median latency ratio $a, mean latency ratio $b ($c untracked, $d tracked transactions)"
        done
        mapfile -t sorted < <(printf '%s\n' "${mr[@]}" | sort -g)
        mapfile -t msorted < <(printf '%s\n' "${mm[@]}" | sort -g)
        MIX_REPORT+=("| ${LABEL[$kind]} | $clients | $np / $nt | **$(fmt_x "$(median "${mr[@]}")")** | $(fmt_x "${sorted[0]}")–$(fmt_x "${sorted[-1]}") | $(printf '%.3f ' "${mr[@]}")| $(fmt_x "$(median "${mm[@]}")") ($(fmt_x "${msorted[0]}")–$(fmt_x "${msorted[-1]}")) |")
        [[ -z "${BENCH_DATA:-}" ]] || echo "writepathmix $kind $clients $(median "${mr[@]}") ${sorted[0]} ${sorted[-1]} $(median "${mm[@]}")" >>"$BENCH_DATA"
    done
done

# ---- C: instructions (valgrind --tool=callgrind), deterministic: the
# executor's work only (standard_ExecutorRun/ExecutorFinish, CopyFrom), in a
# single-user backend; parse, plan and commit are left out ----
CG_REPORT=()
if part callgrind && command -v valgrind >/dev/null; then
    section "instructions (callgrind)"
    CG="$WORK/cg"
    mkdir -p "$CG" && { ! is_root || chown postgres:postgres "$CG"; }
    as_postgres "$PGBIN/initdb" -D "$CG/data" -A trust -U postgres --no-sync >/dev/null
    printf '%s\n' "shared_preload_libraries = 'pg_cq'" "fsync = off" "synchronous_commit = off" \
        "full_page_writes = off" "shared_buffers = 256MB" "autovacuum = off" >>"$CG/data/postgresql.conf"
    # single-user mode: one statement per line
    single_user() { as_postgres "$PGBIN/postgres" --single -D "$CG/data" postgres <"$1"; }
    cat >"$CG/setup.sql" <<SETUP
CREATE EXTENSION pg_cq
CREATE TABLE w_plain ($COLS)
CREATE TABLE w_trk ($COLS)
CREATE TABLE q_trk WITH (cq.trigger = 'available_now') AS SELECT device_id FROM w_trk WITH NO DATA
SETUP
    single_user "$CG/setup.sql" >"$CG/setup.log" 2>&1
    ! grep -q ERROR "$CG/setup.log" || { cat "$CG/setup.log" >&2; die "callgrind setup failed"; }
    # cg_ir TABLE KIND [explicit]: instructions of KIND's work into TABLE
    # (explicit: the statement gives cq_xid a value, which the stamp replaces)
    cg_ir() {
        local tbl="$1" kind="$2" x="${3:-}" i c="" v=""
        local f="$CG/${kind}_$1$x.sql"
        [[ -z "$x" ]] || { c=", cq_xid"; v=", '3'::xid8"; }
        case "$kind" in
            multi) echo "INSERT INTO $tbl (ts, device_id, category, amount$c) $ROW_SELECT$v FROM generate_series(1, 20000)" >"$f" ;;
            copy) if [[ -z "$x" ]]; then echo "COPY $tbl (ts, device_id, category, amount) FROM '$WORK/rows.csv' (FORMAT csv)" >"$f"
                  else echo "COPY $tbl (ts, device_id, category, amount, cq_xid) FROM '$WORK/rows3.csv' (FORMAT csv)" >"$f"; fi ;;
            single) for ((i = 0; i < 2000; i++)); do
                        echo "INSERT INTO $tbl (ts, device_id, category, amount$c) VALUES (now(), $((i % 1000)), 'cat_$((i % 50))', $((i * 7919 % 100000)) / 100.0$v)"
                    done >"$f" ;;
        esac
        as_postgres valgrind --tool=callgrind --callgrind-out-file=/dev/null \
            --toggle-collect=ExecutorStart --toggle-collect=standard_ExecutorRun --toggle-collect=standard_ExecutorFinish --toggle-collect=ProcessUtility \
            "$PGBIN/postgres" --single -D "$CG/data" postgres <"$f" 2>&1 | sed -nE 's/.*Collected : ([0-9]+).*/\1/p'
    }
    sed 's/$/,3/' "$WORK/rows.csv" >"$WORK/rows3.csv"
    for kind_label in "multi|1000-row INSERT ... SELECT|20000" "copy|COPY|10000" "single|single-row INSERT|2000"; do
        IFS='|' read -r kind label rows <<<"$kind_label"
        plain="$(cg_ir w_plain "$kind")"; trk="$(cg_ir w_trk "$kind")"; expl="$(cg_ir w_trk "$kind" explicit)"
        [[ -n "$plain" && -n "$trk" && -n "$expl" ]] || die "no callgrind count for $kind"
        info "$label: plain $plain, tracked $trk, tracked with explicit cq_xid $expl instructions for $rows rows"
        CG_REPORT+=("| $label | $(printf '%.0f' "$(calc "$plain / $rows")") | $(printf '%.0f' "$(calc "$trk / $rows")") ($(fmt_x "$(calc "$trk / $plain")")) | $(printf '%.0f' "$(calc "$expl / $rows")") ($(fmt_x "$(calc "$expl / $plain")")) |")
    done
fi

# report_table INTRO HEADER SEPARATOR ROW...: a markdown table with its
# introduction, nothing without rows
report_table() {
    local intro="$1" head="$2" sep="$3"
    shift 3
    (($# > 0)) || return 0
    printf '%s\n\n%s\n%s\n' "$intro" "$head" "$sep"
    printf '%s\n' "$@"
    echo
}

{
    echo "### Write path (issue 12 goal 1)"
    echo
    echo "\`bench/write_path.sh\` at $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u '+%Y-%m-%d %H:%M UTC'), on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), load average before the run: $LOAD0;"
    echo "untracked vs tracked (the source of a paused query), no background worker$( ((BENCH_PREFILL > 0)) && echo "; both tables prefilled with $BENCH_PREFILL rows before each kind's pairs")."
    echo
    report_table "Throughput: pgbench -M prepared, ${BENCH_PGBENCH_SECS} s per run, ${BENCH_PAIRS} interleaved pairs (plain/tracked, tracked/plain, ...); medians, ratio = median of the per-pair ratios tracked / untracked, spread = their min–max (goal: ≥ 0.97x):" \
        "| write | clients | untracked tps | tracked tps | ratio | spread | per-pair ratios |" \
        "|---|---|---|---|---|---|---|" "${REPORT[@]}"
    report_table "The same runs, by the CPU time of the backends that served them (utime + stime, read from the postmaster's reaped children): ms per transaction, ratio = untracked / tracked (throughput per CPU second; robust to the other load of a shared machine, unlike wall-clock tps):" \
        "| write | clients | untracked ms/xact | tracked ms/xact | ratio | spread | per-pair ratios |" \
        "|---|---|---|---|---|---|---|" "${CPU_REPORT[@]}"
    report_table "Interleaved within one run (the goal's figure): pgbench with both tables' scripts at equal weights, each transaction picking its table at random, ${BENCH_MIX_SECS} s per round (${BENCH_MIX_SECS_LONG} s for 1000-row INSERTs and COPYs), ${BENCH_MIX_ROUNDS} rounds; per round, ratio = median transaction latency untracked / tracked (< 1: tracked slower), from pgbench's per-transaction log; the figure is the median of the rounds' ratios, spread their min–max; the ratio of mean latencies (the throughput ratio within the mix, preempted transactions included) beside it:" \
        "| write | clients | transactions untracked / tracked | ratio | spread | per-round ratios | mean-latency ratio (spread) |" \
        "|---|---|---|---|---|---|---|" "${MIX_REPORT[@]}"
    report_table "The floor (BENCH_FLOOR): the same runs' third twin, plain PostgreSQL with the same nullable xid8 column and a constant default ('0'), no index or trigger: its tps (CPU ms per transaction); ratios = medians of the per-triplet ratios, to untracked (tps, spread; CPU) and of tracked to it (tps; CPU):" \
        "| write | clients | const-default twin tps (ms/xact) | its tps ratio to untracked (spread) | its CPU ratio | tracked / twin tps | tracked / twin CPU | kernel (stime) ms/xact: untracked / tracked / twin |" \
        "|---|---|---|---|---|---|---|---|" "${FLOOR_REPORT[@]}"
    if ((${#CG_REPORT[@]} > 0)); then
        echo "Instructions per row (per statement for single-row INSERTs), counted by valgrind's callgrind in a single-user backend:"
        echo "the executor's work only (ExecutorStart with its hooks, ExecutorRun, ExecutorFinish; ProcessUtility for COPY), not parsing, planning or commit; deterministic."
        echo
        echo "| write | untracked | tracked (ratio) | tracked, explicit cq_xid values (ratio) |"
        echo "|---|---|---|---|"
        for line in "${CG_REPORT[@]}"; do echo "$line"; done
    fi
} | tee "$BENCH_OUT"
