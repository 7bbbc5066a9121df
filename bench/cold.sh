#!/usr/bin/env bash
# bench/cold.sh -- the first batch of a query in a new backend vs a cached
# batch (issue 12 goal 4).
#
# One source (ts, device_id, category, amount) with BENCH_COLD_HISTORY rows
# of history and the aggregation of bench/lib.sh's agg_select as an update
# query (trigger available_now, so no worker competes).  Each round inserts
# BENCH_COLD_NEW rows and times one CALL cq.run in either
#   cold    a fresh psql session whose first statement is the CALL (how
#           pg_cq's docs tell pg_cron users to run a query), or
#   cached  a session that ran a CALL (and the INSERT) before: the query's
#           analysis, SQL and plans are cached, as in a background worker.
#           That session also inserted the new rows itself (its page table
#           maps their pages already); "cached, rows from another session"
#           has them inserted by another session between its two CALLs, as
#           a background worker sees them.
# The two alternate round by round (which one goes first alternates too),
# and also a CALL with nothing new ("empty") is timed both ways: its cold -
# cached difference is the per-backend start-up cost alone.  Times are
# psql \timing of the CALL (the client's view of the server round trip).
# Report: medians over BENCH_COLD_ROUNDS rounds and the cold/cached ratio
# (goal ≤ 1.3x).
#
# Since session 27 a CALL hands its batches to an idle pool worker
# (cq.run_in_worker, src/handoff.c): the batch's CPU is then the worker's,
# so the CPU reported is the caller's plus that of the database's pg_cq
# workers (/proc/PID/schedstat around the CALL), and every CALL is also
# timed with the hand-off off (PGOPTIONS -c cq.run_in_worker=off: the
# in-process path, "before"), interleaved with the default ("after").
#
# Env: BENCH_PORT (default 55453), BENCH_COLD_HISTORY (1000000),
# BENCH_COLD_NEW (10000), BENCH_COLD_ROUNDS (9),
# BENCH_OUT (bench/results/cold.md), BENCH_DATA (file: appends "cold RATIO
# COLD_MS CACHED_MS" for bench/run.sh), plus scripts/common.sh's PGBIN,
# CQ_TMPBASE, CQ_SKIP_APT, CQ_SKIP_BUILD, CQ_KEEP_CLUSTER.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
cd "$REPO_ROOT"

BENCH_PORT="${BENCH_PORT:-55453}"
BENCH_COLD_HISTORY="${BENCH_COLD_HISTORY:-1000000}"
BENCH_COLD_NEW="${BENCH_COLD_NEW:-10000}"
BENCH_COLD_ROUNDS="${BENCH_COLD_ROUNDS:-9}"
BENCH_OUT="${BENCH_OUT:-$REPO_ROOT/bench/results/cold.md}"

trap 'stop_cluster bench_cold' EXIT
section "build + cluster"
ensure_packages
build_install
CQ_PRELOAD="${CQ_PRELOAD-pg_cq}" start_cluster bench_cold "$BENCH_PORT" \
    "shared_buffers = 512MB" "max_wal_size = 4GB" "autovacuum = off"

section "setup: $(human "$BENCH_COLD_HISTORY") history rows"
psql_run "SET client_min_messages = warning;" "CREATE EXTENSION IF NOT EXISTS pg_cq;" \
    "CREATE TABLE cold_ev (id bigserial, ts timestamptz, device_id int, category text, amount numeric(10,2)) WITH (autovacuum_enabled = off);" \
    "$(gen_rows cold_ev "$BENCH_COLD_HISTORY" '2026-01-01' '3 days')" \
    "CREATE INDEX ON cold_ev (id);" \
    "CREATE TABLE cold_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $(agg_select cold_ev);" \
    "CREATE TABLE cold_hw (minute timestamptz, category text, n bigint, total numeric, avg_amount numeric, max_amount numeric);" \
    "CREATE UNIQUE INDEX ON cold_hw (minute, category);" \
    "INSERT INTO cold_hw $(agg_select cold_ev);" \
    "CREATE TABLE cold_hw_off AS SELECT max(id) AS last_id FROM cold_ev;" \
    "VACUUM cold_ev;" "CHECKPOINT;" >/dev/null
# new_sql K: the K-th batch of new rows, 10 minutes each, after the history
new_sql() {
    gen_rows cold_ev "$BENCH_COLD_NEW" "$(date -u -d "2026-01-04 00:00 UTC + $((10 * $1)) minutes" '+%Y-%m-%d %H:%M:%S+00')" '10 minutes'
}

# HW_STEP: the same incremental step written by hand (as bench/run.sh's
# hw_step): new rows by id, upsert into cold_hw, move the offset
HW_STEP="BEGIN;
SELECT last_id AS lo, (SELECT max(id) FROM cold_ev) AS hi FROM cold_hw_off \\gset
INSERT INTO cold_hw AS s (minute, category, n, total, avg_amount, max_amount)
SELECT date_bin('1 minute', ts, '2000-01-01'), category, count(*), sum(amount), avg(amount), max(amount)
FROM cold_ev WHERE id > :lo AND id <= :hi GROUP BY 1, 2
ON CONFLICT (minute, category) DO UPDATE SET n = s.n + excluded.n, total = s.total + excluded.total,
    avg_amount = (s.total + excluded.total) / (s.n + excluded.n),
    max_amount = greatest(s.max_amount, excluded.max_amount);
UPDATE cold_hw_off SET last_id = :hi;
COMMIT;"

# hw_ms SCRIPT_BEFORE: fresh session, SCRIPT_BEFORE untimed, then the
# hand-written step timed (sum of its statements).  Its cached run warms up
# with the same step rolled back (psql prepares nothing: what a session
# keeps is PostgreSQL's relation and catalog caches).
hw_ms() {
    local out
    out="$(printf '%s\n\\timing on\n%s\n' "$1" "$HW_STEP" | "${PSQL[@]}" -At 2>&1)" \
        || { printf '%s\n' "$out" >&2; die "hand-written step failed"; }
    printf '%s\n' "$out" | awk '/^Time: /{s += $2; n++} END {if (n == 0) exit 1; printf "%.3f\n", s}'
}

# call_ms SCRIPT_BEFORE: fresh session, run SCRIPT_BEFORE untimed, then time
# one CALL cq.run('cold_agg').  Prints "WALL_MS CPU_MS MINFLT": psql's
# \timing of the CALL, the backend's CPU time around it
# (/proc/self/schedstat, ns on the CPU) and its minor page faults
# (/proc/self/stat field 10).  The two reads are one small statement each
# (in the cold case the one before the CALL is the session's first
# statement: it warms up little more than the executor of a SELECT).
# With a second argument "off", the session runs with cq.run_in_worker off
# (in-process).  The CPU printed is the caller's plus the pg_cq workers'.
STATQ="SELECT pg_catalog.split_part(pg_catalog.pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint AS c, pg_catalog.split_part(pg_catalog.pg_read_file('/proc/self/stat'), ' ', 10)::bigint AS f, (SELECT coalesce(sum(pg_catalog.split_part(pg_catalog.pg_read_file('/proc/' || pid || '/schedstat'), ' ', 1)::bigint), 0) FROM pg_catalog.pg_stat_activity WHERE backend_type = 'pg_cq worker') AS w"
call_ms() {
    local out opts=""
    [[ "${2:-}" == off ]] && opts="-c cq.run_in_worker=off"
    out="$(printf '%s\n%s \\gset s_\n\\timing on\nCALL cq.run(%s);\n\\timing off\n%s \\gset e_\n\\echo CPU :e_c :s_c :e_f :s_f :e_w :s_w\n' \
        "$1" "$STATQ" "'cold_agg'" "$STATQ" | PGOPTIONS="$opts" "${PSQL[@]}" -At 2>&1)" \
        || { printf '%s\n' "$out" >&2; die "CALL failed"; }
    printf '%s\n' "$out" | awk '/^Time: /{v = $2} /^CPU /{c = ($2 - $3 + $6 - $7) / 1e6; f = $4 - $5}
        END {if (v == "" || c == "") exit 1; printf "%s %.3f %d\n", v, c, f}'
}

declare -a COLD CACHED COLD0 CACHED0 HWC HWW COLDC CACHEDC COLD0C CACHED0C COLDF CACHEDF COLD0F CACHED0F CACHEDO CACHEDOC CACHEDOF
declare -a XCOLD XCOLDC XCOLDF XCACHED XCACHEDC XCACHEDF XCOLD0 XCOLD0C XCOLD0F XCACHED0 XCACHED0C XCACHED0F
# an idle pool worker for the hand-off: a CALL that finds none asks for one
PGOPTIONS="-c cq.run_in_worker=on" psql_run "SET client_min_messages = warning;" "CALL cq.run('cold_agg');" >/dev/null
for ((i = 0; i < 300; i++)); do
    [[ "$(psql_val "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_cq worker'")" -gt 0 ]] && break
    sleep 0.1
done
NEWFILE="$CQ_TMPBASE/cold_new_rows.sql"
# rec NAME "WALL CPU MINFLT": append to NAME, NAMEC and NAMEF
rec() {
    local w c f
    read -r w c f <<<"$2"
    eval "$1+=(\"\$w\"); ${1}C+=(\"\$c\"); ${1}F+=(\"\$f\")"
}
for ((r = 1; r <= BENCH_COLD_ROUNDS; r++)); do
    for which in $( ((r % 2)) && echo "cold cached" || echo "cached cold"); do
        if [[ "$which" == cold ]]; then
            # in-process ("X", before) and handed off (after), in alternating order
            for m in $( ((r % 2)) && echo "off on" || echo "on off"); do
                k=$((2 * r)); [[ "$m" == off ]] && k=$((2 * r + 1000))
                psql_run "$(new_sql "$k")" >/dev/null
                if [[ "$m" == off ]]; then rec XCOLD "$(call_ms "" off)"; else rec COLD "$(call_ms "")"; fi
            done
            HWC+=("$(hw_ms "")")
            rec COLD0 "$(call_ms "")"
            rec XCOLD0 "$(call_ms "" off)"
        else
            rec CACHED "$(call_ms "SET client_min_messages = warning; CALL cq.run('cold_agg'); $(new_sql "$((2 * r + 1))")")"
            rec XCACHED "$(call_ms "SET client_min_messages = warning; CALL cq.run('cold_agg'); $(new_sql "$((2 * r + 2001))")" off)"
            HWW+=("$(hw_ms "${HW_STEP/%COMMIT;/ROLLBACK;}")")
            rec CACHED0 "$(call_ms "SET client_min_messages = warning; CALL cq.run('cold_agg');")"
            rec XCACHED0 "$(call_ms "SET client_min_messages = warning; CALL cq.run('cold_agg');" off)"
            new_sql "$((2 * r + 500))" >"$NEWFILE"
            rec CACHEDO "$(call_ms "SET client_min_messages = warning; CALL cq.run('cold_agg');
\\! \"$PGBIN/psql\" -X -q -v ON_ERROR_STOP=1 -f \"$NEWFILE\"")"
            psql_run "$HW_STEP" >/dev/null # the hand-written target folds them too, untimed
        fi
    done
    info "round $r: in-process cold $(fmt_ms "${XCOLD[-1]}") / cached $(fmt_ms "${XCACHED[-1]}"), CPU ${XCOLDC[-1]} / ${XCACHEDC[-1]} ms"
    info "round $r: $(human "$BENCH_COLD_NEW") new rows cold $(fmt_ms "${COLD[-1]}"), cached $(fmt_ms "${CACHED[-1]}"); hand-written cold $(fmt_ms "${HWC[-1]}"), cached $(fmt_ms "${HWW[-1]}"); nothing new cold $(fmt_ms "${COLD0[-1]}"), cached $(fmt_ms "${CACHED0[-1]}"); backend CPU cold ${COLDC[-1]} / cached ${CACHEDC[-1]} ms, minor faults ${COLDF[-1]} / ${CACHEDF[-1]}"
done
# sanity: the target holds the plain query's result
bad=$(psql_val "SELECT count(*) FROM ((TABLE cold_agg EXCEPT ALL $(agg_select cold_ev)) UNION ALL ($(agg_select cold_ev) EXCEPT ALL TABLE cold_agg)) x;")
[[ "$bad" == 0 ]] || die "cold_agg differs from its query in $bad rows"
bad=$(psql_val "SELECT count(*) FROM ((TABLE cold_hw EXCEPT ALL $(agg_select cold_ev)) UNION ALL ($(agg_select cold_ev) EXCEPT ALL TABLE cold_hw)) x;")
[[ "$bad" == 0 ]] || die "cold_hw differs from the query in $bad rows"

mc=$(median "${COLD[@]}"); mw=$(median "${CACHED[@]}")
mhc=$(median "${HWC[@]}"); mhw=$(median "${HWW[@]}")
m0c=$(median "${COLD0[@]}"); m0w=$(median "${CACHED0[@]}")
x=$(calc "$mc / $mw")
mcc=$(median "${COLDC[@]}"); mwc=$(median "${CACHEDC[@]}")
m0cc=$(median "${COLD0C[@]}"); m0wc=$(median "${CACHED0C[@]}")
mwo=$(median "${CACHEDO[@]}"); mwoc=$(median "${CACHEDOC[@]}")
mwof=$(printf '%.0f' "$(median "${CACHEDOF[@]}")")
mcf=$(printf '%.0f' "$(median "${COLDF[@]}")"); mwf=$(printf '%.0f' "$(median "${CACHEDF[@]}")")
m0cf=$(printf '%.0f' "$(median "${COLD0F[@]}")"); m0wf=$(printf '%.0f' "$(median "${CACHED0F[@]}")")
xmc=$(median "${XCOLD[@]}"); xmw=$(median "${XCACHED[@]}")
xmcc=$(median "${XCOLDC[@]}"); xmwc=$(median "${XCACHEDC[@]}")
xm0c=$(median "${XCOLD0[@]}"); xm0w=$(median "${XCACHED0[@]}")
xm0cc=$(median "${XCOLD0C[@]}"); xm0wc=$(median "${XCACHED0C[@]}")
[[ -z "${BENCH_DATA:-}" ]] || echo "cold $x $mc $mw" >>"$BENCH_DATA"
mkdir -p "$(dirname "$BENCH_OUT")"
{
    echo "### Cold first batch (bench/cold.sh)"
    echo
    echo "$(human "$BENCH_COLD_HISTORY") history rows, $(human "$BENCH_COLD_NEW") new rows per batch, update query \`$(agg_select cold_ev)\`;"
    printf '%s\n' "medians of $BENCH_COLD_ROUNDS interleaved rounds of psql \`\\timing\` of \`CALL cq.run('cold_agg')\`."
    echo
    echo "| batch | cold (first statement of a new session) | cached (session ran a CALL before) | cold / cached | goal | met |"
    echo "|---|---|---|---|---|---|"
    echo "| $(human "$BENCH_COLD_NEW") new rows | $(fmt_ms "$mc") | $(fmt_ms "$mw") | $(fmt_x "$x") | ≤ 1.3x | $(met "$x" '<=' 1.3) |"
    echo "| same, cached batch with the rows inserted by another session (as a worker sees them) | $(fmt_ms "$mc") | $(fmt_ms "$mwo") | $(fmt_x "$(calc "$mc / $mwo")") | — | — |"
    echo "| same, hand-written upsert (baseline: PostgreSQL's own cold cost) | $(fmt_ms "$mhc") | $(fmt_ms "$mhw") | $(fmt_x "$(calc "$mhc / $mhw")") | — | — |"
    echo "| nothing new | $(fmt_ms "$m0c") | $(fmt_ms "$m0w") | $(fmt_x "$(calc "$m0c / $m0w")") | — | — |"
    echo
    echo "CPU time of the CALL (/proc/PID/schedstat: the caller and the pg_cq workers) and the caller's minor page faults (/proc/self/stat), medians:"
    echo
    echo "| batch | cold CPU | cached CPU | cold / cached | cold minor faults | cached minor faults |"
    echo "|---|---|---|---|---|---|"
    echo "| $(human "$BENCH_COLD_NEW") new rows | $(fmt_ms "$mcc") | $(fmt_ms "$mwc") | $(fmt_x "$(calc "$mcc / $mwc")") | $mcf | $mwf |"
    echo "| $(human "$BENCH_COLD_NEW") new rows, cached rows from another session | $(fmt_ms "$mcc") | $(fmt_ms "$mwoc") | $(fmt_x "$(calc "$mcc / $mwoc")") | $mcf | $mwof |"
    echo "| nothing new | $(fmt_ms "$m0cc") | $(fmt_ms "$m0wc") | $(fmt_x "$(calc "$m0cc / $m0wc")") | $m0cf | $m0wf |"
    echo
    echo "Hand-off off (\`cq.run_in_worker = off\`: the batches in the caller's process, before session 27) against on (the default: an idle pool worker runs them), interleaved in the same rounds; CPU = the caller's + the pg_cq workers':"
    echo
    echo "| batch | | cold wall | cached wall | cold / cached wall | cold CPU | cached CPU | cold / cached CPU |"
    echo "|---|---|---|---|---|---|---|---|"
    echo "| $(human "$BENCH_COLD_NEW") new rows | in-process (off) | $(fmt_ms "$xmc") | $(fmt_ms "$xmw") | $(fmt_x "$(calc "$xmc / $xmw")") | $(fmt_ms "$xmcc") | $(fmt_ms "$xmwc") | $(fmt_x "$(calc "$xmcc / $xmwc")") |"
    echo "| $(human "$BENCH_COLD_NEW") new rows | handed off (on) | $(fmt_ms "$mc") | $(fmt_ms "$mw") | $(fmt_x "$x") | $(fmt_ms "$mcc") | $(fmt_ms "$mwc") | $(fmt_x "$(calc "$mcc / $mwc")") |"
    echo "| nothing new | in-process (off) | $(fmt_ms "$xm0c") | $(fmt_ms "$xm0w") | $(fmt_x "$(calc "$xm0c / $xm0w")") | $(fmt_ms "$xm0cc") | $(fmt_ms "$xm0wc") | $(fmt_x "$(calc "$xm0cc / $xm0wc")") |"
    echo "| nothing new | handed off (on) | $(fmt_ms "$m0c") | $(fmt_ms "$m0w") | $(fmt_x "$(calc "$m0c / $m0w")") | $(fmt_ms "$m0cc") | $(fmt_ms "$m0wc") | $(fmt_x "$(calc "$m0cc / $m0wc")") |"
    echo
    echo "In-process per round (ms): cold ${XCOLD[*]}; cached ${XCACHED[*]}; CPU cold ${XCOLDC[*]}, cached ${XCACHEDC[*]}."
    echo
    echo "Per round (ms): cold ${COLD[*]}; cached ${CACHED[*]}; cached, rows from another session ${CACHEDO[*]}; hand-written cold ${HWC[*]}, cached ${HWW[*]}; nothing new cold ${COLD0[*]}, cached ${CACHED0[*]}; backend CPU cold ${COLDC[*]}, cached ${CACHEDC[*]}, cached with rows from another session ${CACHEDOC[*]}; minor faults cold ${COLDF[*]}, cached ${CACHEDF[*]}."
} >"$BENCH_OUT"
cat "$BENCH_OUT"
