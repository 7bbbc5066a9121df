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
# BENCH_FLOOR_TYPE (default "xid8") is the list of the twins' column types,
# one twin w_const_TYPE per type (a single xid8 twin keeps the name w_const):
# xid8 (8 bytes, 8-byte alignment: pg_cq's cq_xid), tid (6 bytes, 2-byte
# alignment: the stand-in of a 48-bit stamp), int4 (4 bytes), int8 (8 bytes,
# as xid8), bytea (5 bytes, a 6-byte short varlena, no alignment), xid48
# (pg_cq's cq.xid48: 6 bytes, no alignment, by reference); each
# column nullable with a constant default.  With it the parts measure every
# twin: tps in the same rotation (plain, tracked, twins..., then reversed),
# mix with all tables' scripts at equal weights, callgrind per twin, and
# part "bytes" (not in the default BENCH_PARTS; needs BENCH_FLOOR=1 for the
# twins): WAL bytes per row (pg_current_wal_insert_lsn differences) of each
# kind of write and heap bytes per row of BENCH_BYTES_ROWS (1,000,000) rows
# inserted into the (fresh) table by one INSERT ... SELECT.
#
# BENCH_STAMP_TYPE (default "xid8") is the list of cq.stamp_type values of
# the tracked tables: "xid8 xid48" adds w_trk48, a third table tracked the
# same way but with a cq.xid48 cq_xid (cq.stamp_type = 'xid48' when its
# query is created), measured in every part next to w_trk (same rotation,
# same mix); w_trk (xid8) stays the goal's tracked table, and the report
# and BENCH_DATA ("writepath48", "writepathmix48" lines) give w_trk48's
# figures beside it.
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
# BENCH_PARTS ("tps mix callgrind"; "bytes" too), BENCH_FLOOR_TYPE ("xid8"),
# BENCH_BYTES_ROWS (1000000), BENCH_STAMP_TYPE ("xid8"), BENCH_OUT (bench/results/write_path.md),
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
BENCH_FLOOR_TYPE="${BENCH_FLOOR_TYPE:-xid8}"
BENCH_BYTES_ROWS="${BENCH_BYTES_ROWS:-1000000}"
BENCH_STAMP_TYPE="${BENCH_STAMP_TYPE:-xid8}"
# the tracked tables: w_trk (xid8), and w_trk48 (cq.xid48) when asked for
TRK48=()
for ty in $BENCH_STAMP_TYPE; do
    case "$ty" in
        xid8) ;;
        xid48) TRK48=(w_trk48) ;;
        *) die "BENCH_STAMP_TYPE: unknown type $ty (xid8 xid48)" ;;
    esac
done
# the floor's twins (BENCH_FLOOR): TWIN_TYPE[table] = the type of its column,
# TWIN_DEFAULT[type] = its constant default
declare -A TWIN_TYPE=() TWIN_DEFAULT=([xid8]="'0'::pg_catalog.xid8" [tid]="'(0,1)'::pg_catalog.tid"
    [int4]="0" [int8]="0" [bytea]="'\\x0000000000'::pg_catalog.bytea" [xid48]="'0'::cq.xid48")
# the column's type in SQL: pg_catalog's, but pg_cq's cq.xid48
declare -A TWIN_SQLTYPE=([xid8]=pg_catalog.xid8 [tid]=pg_catalog.tid [int4]=pg_catalog.int4
    [int8]=pg_catalog.int8 [bytea]=pg_catalog.bytea [xid48]=cq.xid48)
TWINS=()
if ((BENCH_FLOOR)); then
    for ty in $BENCH_FLOOR_TYPE; do
        [[ -n "${TWIN_DEFAULT[$ty]:-}" ]] || die "BENCH_FLOOR_TYPE: unknown type $ty (xid8 tid int4 int8 bytea xid48)"
        tw=w_const; [[ "$BENCH_FLOOR_TYPE" == xid8 ]] || tw="w_const_$ty"
        TWINS+=("$tw"); TWIN_TYPE[$tw]="$ty"
    done
fi
TABLES="w_plain w_trk ${TRK48[*]} ${TWINS[*]}"
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

# the floor's twins (BENCH_FLOOR): a column as pg_cq adds cq_xid, of each
# type, with a constant default
CONST_DDL="" DROP_TWINS="" TRK48_DDL=""
if ((${#TRK48[@]})); then
    TRK48_DDL="CREATE TABLE w_trk48 ($COLS); SET cq.stamp_type = 'xid48'; CREATE TABLE q_trk48 WITH (cq.trigger = 'available_now') AS SELECT device_id FROM w_trk48 WITH NO DATA; RESET cq.stamp_type;"
    DROP_TWINS+=", q_trk48, w_trk48"
fi
for tw in "${TWINS[@]}"; do
    CONST_DDL+="CREATE TABLE $tw ($COLS); ALTER TABLE $tw ADD COLUMN cq_xid ${TWIN_SQLTYPE[${TWIN_TYPE[$tw]}]}; ALTER TABLE $tw ALTER COLUMN cq_xid SET DEFAULT ${TWIN_DEFAULT[${TWIN_TYPE[$tw]}]};"
    [[ "$tw" == w_const ]] || DROP_TWINS+=", $tw"
done

# setup_tables: fresh w_plain and w_trk (and the twins)
setup_tables() {
    psql_run "SET client_min_messages = warning;" \
        "DROP TABLE IF EXISTS q_trk, w_plain, w_trk, w_const$DROP_TWINS;" \
        "CREATE EXTENSION IF NOT EXISTS pg_cq;" \
        "CREATE TABLE w_plain ($COLS);" "CREATE TABLE w_trk ($COLS);" \
        "CREATE TABLE q_trk WITH (cq.trigger = 'available_now') AS SELECT device_id FROM w_trk WITH NO DATA;" \
        "$TRK48_DDL" "$CONST_DDL" "CHECKPOINT;" >/dev/null
    if ((BENCH_PREFILL > 0)); then
        local pid
        pid="$(psql_run "SELECT pg_backend_pid();" \
            "INSERT INTO w_plain (ts, device_id, category, amount) $ROW_SELECT FROM generate_series(1, $BENCH_PREFILL);" \
            "INSERT INTO w_trk (ts, device_id, category, amount) $ROW_SELECT FROM generate_series(1, $BENCH_PREFILL);" \
            "$(for tw in "${TRK48[@]}" "${TWINS[@]}"; do echo "INSERT INTO $tw (ts, device_id, category, amount) $ROW_SELECT FROM generate_series(1, $BENCH_PREFILL);"; done)" \
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
REPORT=() CPU_REPORT=() FLOOR_REPORT=() REPORT48=()
ORDER=(w_plain w_trk "${TRK48[@]}" "${TWINS[@]}")
for kind in $(part_kinds tps); do
    for clients in $BENCH_CLIENTS; do
        section "tps: ${LABEL[$kind]}, $clients client(s)"
        setup_tables
        ratios=() tp=() tt=() cratios=() cp=() ct=() sp=() st=()
        # per twin, space-separated lists: tps, CPU, stime, ratios
        declare -A tk=() ck=() sk=() kratios=() kcratios=() tkratios=() tkcratios=() res=()
        t48=() c48=() r48=() cr48=() x48=() xc48=()
        for ((r = 1; r <= BENCH_PAIRS; r++)); do
            # plain, tracked, twins...; then the reverse
            if ((r % 2)); then seq=("${ORDER[@]}"); else mapfile -t seq < <(printf '%s\n' "${ORDER[@]}" | tac); fi
            for tbl in "${seq[@]}"; do res[$tbl]="$(run "$kind" "$tbl" "$clients")"; done
            read -r p pc ps <<<"${res[w_plain]}"; read -r t tc ts <<<"${res[w_trk]}"
            tp+=("$p"); tt+=("$t"); ratios+=("$(calc "$t / $p")")
            cp+=("$pc"); ct+=("$tc"); cratios+=("$(calc "$pc / $tc")")
            sp+=("$ps"); st+=("$ts")
            info "pair $r: plain ${p%.*} tps ($pc ms CPU/xact), tracked ${t%.*} tps ($tc ms CPU/xact), ratio ${ratios[-1]}, CPU ratio ${cratios[-1]}"
            if ((${#TRK48[@]})); then
                read -r k kc ks <<<"${res[w_trk48]}"
                t48+=("$k"); c48+=("$kc"); r48+=("$(calc "$k / $p")"); cr48+=("$(calc "$pc / $kc")")
                x48+=("$(calc "$k / $t")"); xc48+=("$(calc "$tc / $kc")")
                info "  tracked xid48 ${k%.*} tps ($kc ms CPU/xact), ratio ${r48[-1]}, CPU ratio ${cr48[-1]}; to tracked xid8 ${x48[-1]} (CPU ${xc48[-1]})"
            fi
            for tw in "${TWINS[@]}"; do
                read -r k kc ks <<<"${res[$tw]}"
                tk[$tw]+=" $k"; ck[$tw]+=" $kc"; sk[$tw]+=" $ks"
                kratios[$tw]+=" $(calc "$k / $p")"; kcratios[$tw]+=" $(calc "$pc / $kc")"
                tkratios[$tw]+=" $(calc "$t / $k")"; tkcratios[$tw]+=" $(calc "$kc / $tc")"
                info "  const-default twin $tw (${TWIN_TYPE[$tw]}) ${k%.*} tps ($kc ms CPU/xact), ratio to plain $(calc "$k / $p") (CPU $(calc "$pc / $kc")), tracked to it $(calc "$t / $k") (CPU $(calc "$kc / $tc"))"
            done
        done
        for tw in "${TWINS[@]}"; do
            # shellcheck disable=SC2086 # the lists split on purpose
            mapfile -t sorted < <(printf '%s\n' ${kratios[$tw]} | sort -g)
            # shellcheck disable=SC2086
            FLOOR_REPORT+=("| ${LABEL[$kind]} | $clients | ${TWIN_TYPE[$tw]} | $(printf '%.0f' "$(median ${tk[$tw]})") ($(printf '%.3f' "$(median ${ck[$tw]})") ms) | **$(fmt_x "$(median ${kratios[$tw]})")** ($(fmt_x "${sorted[0]}")–$(fmt_x "${sorted[-1]}")) | **$(fmt_x "$(median ${kcratios[$tw]})")** | $(fmt_x "$(median ${tkratios[$tw]})") | $(fmt_x "$(median ${tkcratios[$tw]})") | $(printf '%.3f / %.3f / %.3f' "$(median "${sp[@]}")" "$(median "${st[@]}")" "$(median ${sk[$tw]})") |")
        done
        unset tk ck sk kratios kcratios tkratios tkcratios res
        if ((${#TRK48[@]})); then
            mapfile -t sorted < <(printf '%s\n' "${r48[@]}" | sort -g)
            REPORT48+=("| ${LABEL[$kind]} | $clients | $(printf '%.0f' "$(median "${t48[@]}")") ($(printf '%.3f' "$(median "${c48[@]}")") ms) | **$(fmt_x "$(median "${r48[@]}")")** ($(fmt_x "${sorted[0]}")–$(fmt_x "${sorted[-1]}")) | **$(fmt_x "$(median "${cr48[@]}")")** | $(fmt_x "$(median "${x48[@]}")") | $(fmt_x "$(median "${xc48[@]}")") |")
            [[ -z "${BENCH_DATA:-}" ]] || echo "writepath48 $kind $clients $(median "${r48[@]}") ${sorted[0]} ${sorted[-1]} $(median "${cr48[@]}")" >>"$BENCH_DATA"
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
# With BENCH_FLOOR the twins' scripts join the mix at the same weight, and
# each twin's ratio (median latency untracked / twin) is reported too.
# The median of single-row INSERTs (~50 us, logged in whole us) moves in
# steps of ~2 %; the mean of the middle half of each table's latencies (25th
# to 75th percentile) is continuous and as blind to the preempted ones, and
# its ratio is reported beside the figure.
# mix_round KIND CLIENTS ROT: one line "TABLE median_us mean_us n mid_us" per
# table (mid: the mean of the middle half);
# ROT rotates the order of the scripts (script 0 changes every round)
mix_round() {
    local kind="$1" clients="$2" rot="$3" out n=${#ORDER[@]} i args=() names=()
    for ((i = 0; i < n; i++)); do
        names+=("${ORDER[$(((i + rot) % n))]}")
        args+=(-f "$WORK/${kind}_${names[-1]}.sql@1")
    done
    rm -f "$WORK"/mixlog.*
    local secs="$BENCH_MIX_SECS"
    [[ "$kind" == single ]] || secs="$BENCH_MIX_SECS_LONG"
    out="$("$PGBIN/pgbench" -n -M prepared -T "$secs" -c "$clients" -j "$clients" -l --log-prefix="$WORK/mixlog" \
        "${args[@]}" 2>&1)" || { printf '%s\n' "$out" >&2; die "pgbench failed"; }
    # log lines: client transaction latency_us script epoch epoch_us
    cat "$WORK"/mixlog.* | awk -v names="${names[*]}" 'BEGIN { split(names, nm, " ") } { print nm[$4 + 1], $3 }' | sort -k1,1 -k2,2n |
        awk '{ n[$1]++; sum[$1] += $2; v[$1, n[$1]] = $2 }
        function med(s,    m) { m = n[s]; return m % 2 ? v[s, (m + 1) / 2] : (v[s, m / 2] + v[s, m / 2 + 1]) / 2 }
        function mid(s,    m, lo, hi, i, t) { m = n[s]; lo = int(m / 4) + 1; hi = m - int(m / 4); for (i = lo; i <= hi; i++) t += v[s, i]; return t / (hi - lo + 1) }
        END { for (s in n) if (n[s] >= 3) printf "%s %.3f %.3f %d %.3f\n", s, med(s), sum[s] / n[s], n[s], mid(s) }'
}
MIX_REPORT=() FLOOR_MIX_REPORT=() MIX_REPORT48=()
for kind in $(part_kinds mix); do
    for clients in $BENCH_CLIENTS; do
        section "interleaved: ${LABEL[$kind]}, $clients client(s)"
        setup_tables
        declare -A mr=() mm=() mq=() nn=()
        for ((r = 1; r <= BENCH_MIX_ROUNDS; r++)); do
            declare -A med=() mean=() cnt=() mid=()
            while read -r tbl a b c d; do med[$tbl]="$a"; mean[$tbl]="$b"; cnt[$tbl]="$c"; mid[$tbl]="$d"; done \
                <<<"$(mix_round "$kind" "$clients" $((r - 1)))"
            for tbl in "${ORDER[@]}"; do
                [[ -n "${med[$tbl]:-}" ]] || die "too few transactions in an interleaved round ($kind, $clients clients, $tbl)"
            done
            line="round $r:"
            for tbl in "${ORDER[@]:1}"; do
                mr[$tbl]+=" $(calc "${med[w_plain]} / ${med[$tbl]}")"; mm[$tbl]+=" $(calc "${mean[w_plain]} / ${mean[$tbl]}")"
                mq[$tbl]+=" $(calc "${mid[w_plain]} / ${mid[$tbl]}")"
                line+=" $tbl median latency ratio $(calc "${med[w_plain]} / ${med[$tbl]}"), mean $(calc "${mean[w_plain]} / ${mean[$tbl]}"), middle half $(calc "${mid[w_plain]} / ${mid[$tbl]}");"
            done
            for tbl in "${ORDER[@]}"; do nn[$tbl]=$((${nn[$tbl]:-0} + ${cnt[$tbl]})); done
            info "$line transactions$(for tbl in "${ORDER[@]}"; do printf ' %s %s' "$tbl" "${cnt[$tbl]}"; done)"
            unset med mean cnt mid
        done
        for tbl in "${ORDER[@]:1}"; do
            # shellcheck disable=SC2086 # the lists split on purpose
            mapfile -t sorted < <(printf '%s\n' ${mr[$tbl]} | sort -g)
            # shellcheck disable=SC2086
            mapfile -t msorted < <(printf '%s\n' ${mm[$tbl]} | sort -g)
            # shellcheck disable=SC2086
            fig="$(median ${mr[$tbl]})"
            # shellcheck disable=SC2086
            mfig="$(median ${mm[$tbl]})"
            # shellcheck disable=SC2086
            mapfile -t qsorted < <(printf '%s\n' ${mq[$tbl]} | sort -g)
            # shellcheck disable=SC2086
            qfig="$(median ${mq[$tbl]})"
            # shellcheck disable=SC2086
            cells="**$(fmt_x "$fig")** | $(fmt_x "${sorted[0]}")–$(fmt_x "${sorted[-1]}") | $(printf '%.3f ' ${mr[$tbl]})| $(fmt_x "$mfig") ($(fmt_x "${msorted[0]}")–$(fmt_x "${msorted[-1]}")) | $(printf '%.3f' "$qfig") ($(printf '%.3f' "${qsorted[0]}")–$(printf '%.3f' "${qsorted[-1]}")) |"
            if [[ "$tbl" == w_trk ]]; then
                MIX_REPORT+=("| ${LABEL[$kind]} | $clients | ${nn[w_plain]} / ${nn[w_trk]} | $cells")
                [[ -z "${BENCH_DATA:-}" ]] || echo "writepathmix $kind $clients $fig ${sorted[0]} ${sorted[-1]} $mfig" >>"$BENCH_DATA"
            elif [[ "$tbl" == w_trk48 ]]; then
                MIX_REPORT48+=("| ${LABEL[$kind]} | $clients | ${nn[w_plain]} / ${nn[w_trk48]} | $cells")
                [[ -z "${BENCH_DATA:-}" ]] || echo "writepathmix48 $kind $clients $fig ${sorted[0]} ${sorted[-1]} $mfig" >>"$BENCH_DATA"
            else
                FLOOR_MIX_REPORT+=("| ${LABEL[$kind]} | $clients | ${TWIN_TYPE[$tbl]} | ${nn[w_plain]} / ${nn[$tbl]} | $cells")
            fi
        done
        unset mr mm mq nn
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
    [[ -z "$TRK48_DDL" ]] || tr ';' '\n' <<<"$TRK48_DDL" | grep . >>"$CG/setup.sql"
    # the twins, one statement a line
    [[ -z "$CONST_DDL" ]] || tr ';' '\n' <<<"$CONST_DDL" | grep . >>"$CG/setup.sql"
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
        twcells=""
        for tw in "${TRK48[@]}" "${TWINS[@]}"; do
            c="$(cg_ir "$tw" "$kind")"
            [[ -n "$c" ]] || die "no callgrind count for $kind into $tw"
            info "$label: $tw (${TWIN_TYPE[$tw]:-tracked, cq.xid48}) $c instructions for $rows rows"
            twcells+=" $(printf '%.0f' "$(calc "$c / $rows")") ($(printf '%.3f' "$(calc "$c / $plain")")) |"
        done
        CG_REPORT+=("| $label | $(printf '%.0f' "$(calc "$plain / $rows")") | $(printf '%.0f' "$(calc "$trk / $rows")") ($(fmt_x "$(calc "$trk / $plain")")) | $(printf '%.0f' "$(calc "$expl / $rows")") ($(fmt_x "$(calc "$expl / $plain")")) |$twcells")
    done
fi

# ---- D: bytes (part "bytes"): WAL per row and heap per row, exact ----
BYTES_REPORT=()
if part bytes; then
    section "bytes: WAL and heap per row"
    setup_tables
    LSN="pg_catalog.pg_current_wal_insert_lsn()"
    # wal_of TABLE SQL_FILE ROWS: WAL bytes per row of the file's statements
    wal_of() {
        local out
        out="$({ echo "SELECT $LSN AS l0 \\gset"; cat "$2"; echo "SELECT pg_catalog.pg_wal_lsn_diff($LSN, :'l0');"; } | "${PSQL[@]}" -At)" \
            || die "WAL measure failed for $1"
        calc "$(tail -n 1 <<<"$out") / $3"
    }
    for tbl in "${ORDER[@]}"; do
        echo "INSERT INTO $tbl (ts, device_id, category, amount) $ROW_SELECT FROM generate_series(1, 20000);" >"$WORK/bytes_multi.sql"
        echo "COPY $tbl (ts, device_id, category, amount) FROM '$WORK/rows.csv' (FORMAT csv);" >"$WORK/bytes_copy.sql"
        for ((i = 0; i < 2000; i++)); do
            echo "INSERT INTO $tbl (ts, device_id, category, amount) VALUES (now(), $((i % 1000)), 'cat_$((i % 50))', $((i * 7919 % 100000)) / 100.0);"
        done >"$WORK/bytes_single.sql"
        # heap: the size the table grows by for BENCH_BYTES_ROWS rows
        h0="$(psql_val "SELECT pg_catalog.pg_relation_size('$tbl'::pg_catalog.regclass, 'main')")"
        psql_run "INSERT INTO $tbl (ts, device_id, category, amount) $ROW_SELECT FROM generate_series(1, $BENCH_BYTES_ROWS);" >/dev/null
        hb="$(psql_val "SELECT (pg_catalog.pg_relation_size('$tbl'::pg_catalog.regclass, 'main') - $h0)::float8 / $BENCH_BYTES_ROWS")"
        psql_run "CHECKPOINT;" >/dev/null
        wm="$(wal_of "$tbl" "$WORK/bytes_multi.sql" 20000)"
        wc="$(wal_of "$tbl" "$WORK/bytes_copy.sql" 10000)"
        ws="$(wal_of "$tbl" "$WORK/bytes_single.sql" 2000)"
        col=none; [[ "$tbl" != w_trk ]] || col="xid8 (pg_cq)"; [[ "$tbl" != w_trk48 ]] || col="cq.xid48 (pg_cq)"
        [[ -z "${TWIN_TYPE[$tbl]:-}" ]] || col="${TWIN_TYPE[$tbl]}"
        info "$tbl ($col): heap $hb bytes/row, WAL $wm (1000-row) $wc (COPY) $ws (single-row) bytes/row"
        BYTES_REPORT+=("| $tbl | $col | $(printf '%.1f' "$hb") | $(printf '%.1f' "$wm") | $(printf '%.1f' "$wc") | $(printf '%.1f' "$ws") |")
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
    report_table "Interleaved within one run (the goal's figure): pgbench with both tables' scripts at equal weights, each transaction picking its table at random, ${BENCH_MIX_SECS} s per round (${BENCH_MIX_SECS_LONG} s for 1000-row INSERTs and COPYs), ${BENCH_MIX_ROUNDS} rounds; per round, ratio = median transaction latency untracked / tracked (< 1: tracked slower), from pgbench's per-transaction log; the figure is the median of the rounds' ratios, spread their min–max; the ratio of mean latencies (the throughput ratio within the mix, preempted transactions included) beside it, and the ratio of the means of the middle half of the latencies (25th to 75th percentile; continuous where the median of whole microseconds moves in steps of ~2 % for single-row INSERTs):" \
        "| write | clients | transactions untracked / tracked | ratio | spread | per-round ratios | mean-latency ratio (spread) | middle-half ratio (spread) |" \
        "|---|---|---|---|---|---|---|---|" "${MIX_REPORT[@]}"
    report_table "The cq.xid48 stamp (BENCH_STAMP_TYPE): the same runs' third table, tracked as w_trk but created under cq.stamp_type = 'xid48' (cq_xid cq.xid48, 6 bytes): its tps (CPU ms per transaction); ratios = medians of the per-round ratios, to untracked (tps, spread; CPU) and to the xid8-tracked table (tps; CPU, > 1: cheaper):" \
        "| write | clients | tracked xid48 tps (ms/xact) | its tps ratio to untracked (spread) | its CPU ratio | xid48 / xid8 tracked tps | xid48 / xid8 tracked CPU |" \
        "|---|---|---|---|---|---|---|" "${REPORT48[@]}"
    report_table "The cq.xid48 stamp, interleaved (BENCH_STAMP_TYPE): w_trk48's script in the same rounds as above, at the same weight; ratio = median latency untracked / tracked xid48:" \
        "| write | clients | transactions untracked / tracked xid48 | ratio | spread | per-round ratios | mean-latency ratio (spread) | middle-half ratio (spread) |" \
        "|---|---|---|---|---|---|---|---|" "${MIX_REPORT48[@]}"
    report_table "The floor (BENCH_FLOOR): the same runs' twins, plain PostgreSQL with a nullable column of the type shown (xid8: cq_xid's) and a constant default, no index or trigger: its tps (CPU ms per transaction); ratios = medians of the per-round ratios, to untracked (tps, spread; CPU) and of tracked to it (tps; CPU):" \
        "| write | clients | twin's column | const-default twin tps (ms/xact) | its tps ratio to untracked (spread) | its CPU ratio | tracked / twin tps | tracked / twin CPU | kernel (stime) ms/xact: untracked / tracked / twin |" \
        "|---|---|---|---|---|---|---|---|---|" "${FLOOR_REPORT[@]}"
    report_table "The floor, interleaved (BENCH_FLOOR): the twins' scripts in the same rounds as above, at the same weight; ratio = median latency untracked / twin:" \
        "| write | clients | twin's column | transactions untracked / twin | ratio | spread | per-round ratios | mean-latency ratio (spread) | middle-half ratio (spread) |" \
        "|---|---|---|---|---|---|---|---|---|" "${FLOOR_MIX_REPORT[@]}"
    report_table "Bytes (part bytes): WAL bytes per row, pg_current_wal_insert_lsn before and after, in one session on the bench's server (1000-row: one 20,000-row INSERT ... SELECT; COPY: 10,000 rows; single-row: 2,000 autocommit INSERTs, per statement, commit records included), and, before them, heap bytes per row of ${BENCH_BYTES_ROWS} rows inserted into the fresh table by one INSERT ... SELECT (growth of pg_relation_size, line pointers and free space included):" \
        "| table | column | heap bytes/row | WAL bytes/row, 1000-row INSERT | WAL, COPY | WAL per single-row INSERT |" \
        "|---|---|---|---|---|---|" "${BYTES_REPORT[@]}"
    if ((${#CG_REPORT[@]} > 0)); then
        echo "Instructions per row (per statement for single-row INSERTs), counted by valgrind's callgrind in a single-user backend:"
        echo "the executor's work only (ExecutorStart with its hooks, ExecutorRun, ExecutorFinish; ProcessUtility for COPY), not parsing, planning or commit; deterministic."
        echo
        echo "| write | untracked | tracked (ratio) | tracked, explicit cq_xid values (ratio) |$(for tw in "${TRK48[@]}"; do printf ' tracked, cq.xid48 (ratio) |'; done)$(for tw in "${TWINS[@]}"; do printf ' %s twin (ratio) |' "${TWIN_TYPE[$tw]}"; done)"
        echo "|---|---|---|---|$(for tw in "${TRK48[@]}" "${TWINS[@]}"; do printf -- '---|'; done)"
        for line in "${CG_REPORT[@]}"; do echo "$line"; done
    fi
} | tee "$BENCH_OUT"
