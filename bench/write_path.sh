#!/usr/bin/env bash
# bench/write_path.sh -- what tracking costs a writer (issue 9 item 10).
#
# Three twin tables (ts timestamptz, device_id int, category text,
# amount numeric(10,2)) on a throwaway cluster:
#   plain   untracked
#   v01     tracked as pg_cq 0.1 did it: column cq_xid DEFAULT
#           pg_current_xact_id(), BRIN index, statement trigger cq_wakeup
#           (the row trigger zz_cq_stamp dropped)
#   v02     tracked as now: the same plus the row trigger zz_cq_stamp
# The queries over v01 and v02 are available-now, so no background worker
# competes with the writers: the figures are the write path alone.
# pgbench -M prepared, 1 client, for each kind of write:
#   single  single-row INSERT
#   multi   1000-row INSERT ... SELECT
#   copy    COPY of a 10,000-row CSV file (server side)
#   nodef   1000-row INSERT into v02 with the default dropped, so the
#           trigger rewrites every row (the worst case: explicit values)
# Runs of BENCH_PGBENCH_SECS alternate the tables' order round by round;
# each ratio is the median over BENCH_ROUNDS rounds of tps(tracked) /
# tps(plain) measured back to back.  Then the same kinds of write once more,
# a fixed amount of work each, timed by the CPU time the writing backend
# used (robust to the other load of a shared machine).
#
# Last, when valgrind is installed: the
# instructions the executor runs per row, counted by callgrind in a
# single-user backend on a second throwaway data directory: deterministic.
#
# Env: BENCH_PORT (default 55452), BENCH_ROUNDS (5), BENCH_PGBENCH_SECS (3),
# BENCH_PARTS ("tps cpu callgrind"), BENCH_OUT (bench/results/write_path.md), plus
# scripts/common.sh's PGBIN, CQ_TMPBASE, CQ_SKIP_APT, CQ_SKIP_BUILD.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
cd "$REPO_ROOT"

BENCH_PORT="${BENCH_PORT:-55452}"
BENCH_ROUNDS="${BENCH_ROUNDS:-5}"
BENCH_PGBENCH_SECS="${BENCH_PGBENCH_SECS:-3}"
BENCH_OUT="${BENCH_OUT:-$REPO_ROOT/bench/results/write_path.md}"
BENCH_PARTS="${BENCH_PARTS:-tps cpu callgrind}"
part() { [[ " $BENCH_PARTS " == *" $1 "* ]]; }
WORK="$(cluster_dir bench_write)_files"

trap 'stop_cluster bench_write' EXIT
section "build + cluster"
ensure_packages
build_install
start_cluster bench_write "$BENCH_PORT" "shared_buffers = 256MB" "max_wal_size = 4GB" "autovacuum = off"
rm -rf "$WORK" && mkdir -p "$WORK"
is_root && chown postgres:postgres "$WORK"

COLS="ts timestamptz, device_id int, category text, amount numeric(10,2)"
ROW_SELECT="SELECT now(), 1 + (random() * 999)::int, 'cat_' || lpad(floor(random() * 50)::int::text, 2, '0'), round((random() * 1000)::numeric, 2)"

# setup_tables: fresh plain, v01, v02 (and v02 without default for nodef)
setup_tables() {
    local nodef="$1"
    psql_run "SET client_min_messages = warning;" \
        "DROP TABLE IF EXISTS q_v01, q_v02, w_plain, w_v01, w_v02;" \
        "CREATE EXTENSION IF NOT EXISTS pg_cq;" \
        "CREATE TABLE w_plain ($COLS);" "CREATE TABLE w_v01 ($COLS);" "CREATE TABLE w_v02 ($COLS);" \
        "CREATE TABLE q_v01 WITH (cq.trigger = 'available_now') AS SELECT device_id FROM w_v01 WITH NO DATA;" \
        "CREATE TABLE q_v02 WITH (cq.trigger = 'available_now') AS SELECT device_id FROM w_v02 WITH NO DATA;" \
        "DROP TRIGGER zz_cq_stamp ON w_v01;" \
        "CHECKPOINT;" >/dev/null
    if [[ "$nodef" == 1 ]]; then
        psql_run "ALTER TABLE w_v02 ALTER COLUMN cq_xid DROP DEFAULT;" >/dev/null
    fi
}

# scripts per kind and table
for tbl in w_plain w_v01 w_v02; do
    printf '%s\n' '\set dev random(1, 1000)' '\set cat random(10, 59)' '\set amt random(0, 99999)' \
        "INSERT INTO $tbl (ts, device_id, category, amount) VALUES (now(), :dev, 'cat_' || :cat, :amt / 100.0);" \
        >"$WORK/single_$tbl.sql"
    printf '%s\n' "INSERT INTO $tbl (ts, device_id, category, amount) $ROW_SELECT FROM generate_series(1, 1000);" \
        >"$WORK/multi_$tbl.sql"
    cp "$WORK/multi_$tbl.sql" "$WORK/nodef_$tbl.sql"
    printf '%s\n' "COPY $tbl (ts, device_id, category, amount) FROM '$WORK/rows.csv' (FORMAT csv);" >"$WORK/copy_$tbl.sql"
done
psql_run "COPY ($ROW_SELECT FROM generate_series(1, 10000)) TO '$WORK/rows.csv' (FORMAT csv);" >/dev/null

# ---- A: throughput (pgbench tps, wall clock) ----
KINDS=("single|single-row INSERT" "multi|1000-row INSERT ... SELECT" "copy|COPY, 10,000 rows" "nodef|1000-row INSERT, default dropped (trigger rewrites every row)")
REPORT=()
part tps || KINDS=()
for kind_label in "${KINDS[@]}"; do
    IFS='|' read -r kind label <<<"$kind_label"
    section "tps: $label"
    setup_tables "$([[ $kind == nodef ]] && echo 1 || echo 0)"
    r01=() r02=() tp=() t1=() t2=()
    for ((r = 1; r <= BENCH_ROUNDS; r++)); do
        if ((r % 2)); then order=(w_plain w_v01 w_v02); else order=(w_v02 w_v01 w_plain); fi
        declare -A tps=()
        for tbl in "${order[@]}"; do
            out="$("$PGBIN/pgbench" -n -M prepared -T "$BENCH_PGBENCH_SECS" -c 1 -j 1 -f "$WORK/${kind}_$tbl.sql" 2>&1)" \
                || { printf '%s\n' "$out" >&2; die "pgbench failed"; }
            tps[$tbl]=$(printf '%s\n' "$out" | sed -nE 's/^tps = ([0-9.]+) .*without.*/\1/p')
            [[ -n "${tps[$tbl]}" ]] || die "no tps in pgbench output"
        done
        tp+=("${tps[w_plain]}"); t1+=("${tps[w_v01]}"); t2+=("${tps[w_v02]}")
        r01+=("$(calc "${tps[w_v01]} / ${tps[w_plain]}")"); r02+=("$(calc "${tps[w_v02]} / ${tps[w_plain]}")")
        info "round $r: plain ${tps[w_plain]%.*} tps, v01 ${tps[w_v01]%.*} tps, v02 ${tps[w_v02]%.*} tps"
        unset tps
    done
    REPORT+=("| $label | $(printf '%.0f' "$(median "${tp[@]}")") | $(printf '%.0f' "$(median "${t1[@]}")") ($(fmt_x "$(median "${r01[@]}")")) | $(printf '%.0f' "$(median "${t2[@]}")") ($(fmt_x "$(median "${r02[@]}")")) |")
done

# ---- B: CPU time of the writing backend (utime + stime from /proc/self/stat,
# read by the backend itself), for a fixed amount of work: robust to the
# other load on a shared machine, which skews wall-clock figures ----
CPU_FN="CREATE FUNCTION pg_temp.cpu_ms() RETURNS bigint LANGUAGE sql AS \$\$
  SELECT (split_part(s, ' ', 14)::bigint + split_part(s, ' ', 15)::bigint) * 1000 / $(getconf CLK_TCK)
    FROM pg_read_file('/proc/self/stat') s \$\$;"
# cpu_ms TABLE KIND: CPU ms of one session doing KIND's work into TABLE
cpu_ms() {
    local tbl="$1" kind="$2" body
    case "$kind" in
        single) body="$(for ((i = 0; i < 20000; i++)); do
                    echo "INSERT INTO $tbl (ts, device_id, category, amount) VALUES (now(), $((i % 1000)), 'cat_$((i % 50))', $((i % 100000)) / 100.0);"
                done)" ;;
        multi|nodef) body="$(for ((i = 0; i < 200; i++)); do
                    echo "INSERT INTO $tbl (ts, device_id, category, amount) $ROW_SELECT FROM generate_series(1, 1000);"
                done)" ;;
        copy) body="$(for ((i = 0; i < 20; i++)); do
                    echo "COPY $tbl (ts, device_id, category, amount) FROM '$WORK/rows.csv' (FORMAT csv);"
                done)" ;;
    esac
    psql_run "$CPU_FN" "SELECT pg_temp.cpu_ms() AS c0 \\gset" "$body" "SELECT pg_temp.cpu_ms() - :c0;" | tail -n 1
}
CPU_KINDS=("single|20,000 single-row INSERTs" "multi|200 1000-row INSERT ... SELECT" "copy|20 COPY of 10,000 rows" "nodef|200 1000-row INSERT, default dropped")
CPU_REPORT=()
part cpu || CPU_KINDS=()
for kind_label in "${CPU_KINDS[@]}"; do
    IFS='|' read -r kind label <<<"$kind_label"
    section "cpu: $label"
    setup_tables "$([[ $kind == nodef ]] && echo 1 || echo 0)"
    r01=() r02=() tp=() t1=() t2=()
    for ((r = 1; r <= BENCH_ROUNDS; r++)); do
        if ((r % 2)); then order=(w_plain w_v01 w_v02); else order=(w_v02 w_v01 w_plain); fi
        declare -A ms=()
        for tbl in "${order[@]}"; do
            ms[$tbl]="$(cpu_ms "$tbl" "$kind")"
        done
        tp+=("${ms[w_plain]}"); t1+=("${ms[w_v01]}"); t2+=("${ms[w_v02]}")
        r01+=("$(calc "${ms[w_v01]} / ${ms[w_plain]}")"); r02+=("$(calc "${ms[w_v02]} / ${ms[w_plain]}")")
        info "round $r: plain ${ms[w_plain]} ms, v01 ${ms[w_v01]} ms, v02 ${ms[w_v02]} ms"
        unset ms
    done
    CPU_REPORT+=("| $label | $(printf '%.0f' "$(median "${tp[@]}")") | $(printf '%.0f' "$(median "${t1[@]}")") ($(fmt_x "$(median "${r01[@]}")")) | $(printf '%.0f' "$(median "${t2[@]}")") ($(fmt_x "$(median "${r02[@]}")")) |")
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
CREATE TABLE w_v01 ($COLS)
CREATE TABLE w_v02 ($COLS)
CREATE TABLE w_nodef ($COLS)
CREATE TABLE q_v01 WITH (cq.trigger = 'available_now') AS SELECT device_id FROM w_v01 WITH NO DATA
CREATE TABLE q_v02 WITH (cq.trigger = 'available_now') AS SELECT device_id FROM w_v02 WITH NO DATA
CREATE TABLE q_nodef WITH (cq.trigger = 'available_now') AS SELECT device_id FROM w_nodef WITH NO DATA
DROP TRIGGER zz_cq_stamp ON w_v01
ALTER TABLE w_nodef ALTER COLUMN cq_xid DROP DEFAULT
SETUP
    single_user "$CG/setup.sql" >"$CG/setup.log" 2>&1
    ! grep -q ERROR "$CG/setup.log" || { cat "$CG/setup.log" >&2; die "callgrind setup failed"; }
    # cg_ir TABLE KIND: instructions of KIND's work into TABLE
    cg_ir() {
        local tbl="$1" kind="$2" f="$CG/${kind}_$1.sql" i
        case "$kind" in
            multi) echo "INSERT INTO $tbl (ts, device_id, category, amount) $ROW_SELECT FROM generate_series(1, 20000)" >"$f" ;;
            copy) echo "COPY $tbl (ts, device_id, category, amount) FROM '$WORK/rows.csv' (FORMAT csv)" >"$f" ;;
            single) for ((i = 0; i < 2000; i++)); do
                        echo "INSERT INTO $tbl (ts, device_id, category, amount) VALUES (now(), $((i % 1000)), 'cat_$((i % 50))', $((i * 7919 % 100000)) / 100.0)"
                    done >"$f" ;;
        esac
        as_postgres valgrind --tool=callgrind --callgrind-out-file=/dev/null \
            --toggle-collect=standard_ExecutorRun --toggle-collect=standard_ExecutorFinish --toggle-collect=CopyFrom \
            "$PGBIN/postgres" --single -D "$CG/data" postgres <"$f" 2>&1 | sed -nE 's/.*Collected : ([0-9]+).*/\1/p'
    }
    for kind_label in "multi|1000-row INSERT ... SELECT|20000" "copy|COPY|10000" "single|single-row INSERT|2000"; do
        IFS='|' read -r kind label rows <<<"$kind_label"
        declare -A ir=()
        for tbl in w_plain w_v01 w_v02 w_nodef; do
            ir[$tbl]="$(cg_ir "$tbl" "$kind")"
            [[ -n "${ir[$tbl]}" ]] || die "no callgrind count for $kind $tbl"
            info "$label, $tbl: ${ir[$tbl]} instructions for $rows rows"
        done
        per() { calc "${ir[$1]} / $rows"; }
        CG_REPORT+=("| $label | $(printf '%.0f' "$(per w_plain)") | $(printf '%.0f' "$(per w_v01)") ($(fmt_x "$(calc "${ir[w_v01]} / ${ir[w_plain]}")")) | $(printf '%.0f' "$(per w_v02)") ($(fmt_x "$(calc "${ir[w_v02]} / ${ir[w_plain]}")")) | $(printf '%.0f' "$(per w_nodef)") ($(fmt_x "$(calc "${ir[w_nodef]} / ${ir[w_plain]}")")) |")
        unset ir
    done
fi

{
    echo "### Write path (issue 9 item 10)"
    echo
    echo "\`bench/write_path.sh\` on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), one writer, no background worker;"
    echo "v01 = tracked as in 0.1 (cq_xid DEFAULT pg_current_xact_id(), BRIN index, cq_wakeup); v02 = the same + the row trigger zz_cq_stamp."
    echo "Rounds alternate the tables' order; figures are medians of ${BENCH_ROUNDS} rounds, ratios medians of the per-round ratios to untracked."
    echo
    if ((${#REPORT[@]} > 0)); then
        echo "Throughput (pgbench -M prepared, 1 client, ${BENCH_PGBENCH_SECS} s per table and round; wall clock, so it moves with the machine's other load):"
        echo
        echo "| write | untracked tps | tracked 0.1 tps (ratio) | tracked 0.2 tps (ratio) |"
        echo "|---|---|---|---|"
        for line in "${REPORT[@]}"; do echo "$line"; done
        echo
    fi
    if ((${#CPU_REPORT[@]} > 0)); then
        echo "CPU time of the writing backend for a fixed amount of work (ms; lower is better, ratio = tracked / untracked):"
        echo
        echo "| work | untracked ms | tracked 0.1 ms (ratio) | tracked 0.2 ms (ratio) |"
        echo "|---|---|---|---|"
        for line in "${CPU_REPORT[@]}"; do echo "$line"; done
        echo
    fi
    if ((${#CG_REPORT[@]} > 0)); then
        echo "Instructions per row (per statement for single-row INSERTs), counted by valgrind's callgrind in a single-user backend:"
        echo "the executor's work only (ExecutorRun/ExecutorFinish, CopyFrom), not parsing, planning or commit; deterministic, unlike the two tables above."
        echo
        echo "| write | untracked | tracked 0.1 (ratio) | tracked 0.2 (ratio) | 0.2, default dropped (ratio) |"
        echo "|---|---|---|---|---|"
        for line in "${CG_REPORT[@]}"; do echo "$line"; done
    fi
} | tee "$BENCH_OUT"
