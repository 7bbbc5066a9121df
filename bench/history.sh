#!/usr/bin/env bash
# bench/history.sh -- does a fresh session's batch cost more as the source's
# history grows?  (issue 12 goal 4; bench/run.sh scenario 2 at lower cost)
#
# One cluster (bench/run.sh's settings: shared_buffers 1GB, work_mem 64MB),
# one source per history size (BENCH_HIST_SIZES, default 1M and 10M rows,
# loaded as bench/run.sh does: ts evenly over 3 days, an index on id), the
# benchmark's update query on each (trigger available_now), VACUUM and a
# CHECKPOINT.  Setup takes a few minutes at 10M; with BENCH_HIST_REUSE=1 the
# cluster of an earlier run (left running by CQ_KEEP_CLUSTER=1) is reused.
#
# Then BENCH_HIST_ROUNDS rounds; each round, for every size (the order
# rotates round by round), inserts BENCH_HIST_NEW rows (another session) and
# times one CALL cq.run as the first statement of a fresh session, then a
# CALL with nothing new in a fresh session, then folds the same rows with
# bench/run.sh's hand-written upsert (hw_SIZE by id, a fresh session: the
# control, which does nothing proportional to history).  Per CALL: psql
# \timing, the backend's CPU time (/proc/self/schedstat) and minor page
# faults; per hand-written step its backend CPU and wall time.  Also,
# with BENCH_HIST_ANALYZE=1, ANALYZE each source first (bench/run.sh's
# phase B).  With BENCH_HIST_REFRESH=1 each timed CALL follows a REFRESH
# MATERIALIZED VIEW of the same query and the plain GROUP BY over that
# source (as in bench/run.sh's phase A rounds).  Report: medians per size.
#
# Env: BENCH_PORT (55455), BENCH_HIST_SIZES ("1000000 10000000"),
# BENCH_HIST_NEW (10000), BENCH_HIST_ROUNDS (7), BENCH_HIST_ANALYZE (0),
# BENCH_HIST_REUSE (0), BENCH_HIST_REFRESH (0), BENCH_OUT (bench/results/history.md), plus
# scripts/common.sh's PGBIN, CQ_TMPBASE, CQ_SKIP_APT, CQ_SKIP_BUILD,
# CQ_KEEP_CLUSTER.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
cd "$REPO_ROOT"

BENCH_PORT="${BENCH_PORT:-55455}"
BENCH_HIST_SIZES="${BENCH_HIST_SIZES:-1000000 10000000}"
BENCH_HIST_NEW="${BENCH_HIST_NEW:-10000}"
BENCH_HIST_ROUNDS="${BENCH_HIST_ROUNDS:-7}"
BENCH_HIST_ANALYZE="${BENCH_HIST_ANALYZE:-0}"
BENCH_HIST_REUSE="${BENCH_HIST_REUSE:-0}"
BENCH_HIST_REFRESH="${BENCH_HIST_REFRESH:-0}"
BENCH_OUT="${BENCH_OUT:-$REPO_ROOT/bench/results/history.md}"

trap 'stop_cluster bench_hist' EXIT
dir="$(cluster_dir bench_hist)"
if [[ "$BENCH_HIST_REUSE" == 1 ]] && "$PGBIN/pg_isready" -q -h "$dir" -p "$BENCH_PORT"; then
    export PGHOST="$dir" PGPORT="$BENCH_PORT" PGUSER=postgres PGDATABASE=postgres
    info "reusing cluster bench_hist on port $BENCH_PORT"
    [[ "${CQ_SKIP_BUILD:-0}" == 1 ]] || build_install
else
    section "build + cluster"
    ensure_packages
    build_install
    CQ_PRELOAD="${CQ_PRELOAD-pg_cq}" start_cluster bench_hist "$BENCH_PORT" \
        "shared_buffers = 1GB" "work_mem = 64MB" "maintenance_work_mem = 256MB" \
        "max_wal_size = 4GB" "checkpoint_timeout = 30min" "autovacuum = off"
    psql_run "SET client_min_messages = warning;" "CREATE EXTENSION IF NOT EXISTS pg_cq;" >/dev/null
    for n in $BENCH_HIST_SIZES; do
        h="$(human "$n")"; h="${h,,}"
        section "setup: $h history rows"
        psql_run "SET client_min_messages = warning;" \
            "CREATE TABLE ev_$h (id bigserial, ts timestamptz, device_id int, category text, amount numeric(10,2)) WITH (autovacuum_enabled = off);" \
            "$(gen_rows "ev_$h" "$n" '2024-01-01' '3 days')" \
            "CREATE INDEX ON ev_$h (id);" \
            "CREATE TABLE agg_$h WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $(agg_select "ev_$h");" \
            "CREATE TABLE hw_$h (minute timestamptz, category text, n bigint, total numeric, avg_amount numeric, max_amount numeric);" \
            "CREATE UNIQUE INDEX ON hw_$h (minute, category);" \
            "INSERT INTO hw_$h $(agg_select "ev_$h");" \
            "CREATE TABLE hw_off_$h AS SELECT max(id) AS last_id FROM ev_$h;" \
            "VACUUM ev_$h;" "CHECKPOINT;" >/dev/null
        info "ev_$h: $(psql_val "SELECT pg_size_pretty(pg_total_relation_size('ev_$h'))"), $(psql_val "SELECT count(*) FROM agg_$h") groups"
    done
fi

if [[ "$BENCH_HIST_ANALYZE" == 1 ]]; then
    for n in $BENCH_HIST_SIZES; do h="$(human "$n")"; psql_run "ANALYZE ev_${h,,};" >/dev/null; done
    psql_run "CHECKPOINT;" >/dev/null
fi

STATQ="SELECT pg_catalog.split_part(pg_catalog.pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint AS c, pg_catalog.split_part(pg_catalog.pg_read_file('/proc/self/stat'), ' ', 10)::bigint AS f"
# call_ms Q: fresh session, one CALL cq.run(Q): "WALL_MS CPU_MS MINFLT"
call_ms() {
    local out
    out="$(printf '%s \\gset s_\n\\timing on\nCALL cq.run(%s);\n\\timing off\n%s \\gset e_\n\\echo CPU :e_c :s_c :e_f :s_f\n' \
        "$STATQ" "'$1'" "$STATQ" | "${PSQL[@]}" -At 2>&1)" \
        || { printf '%s\n' "$out" >&2; die "CALL failed"; }
    printf '%s\n' "$out" | awk '/^Time: /{v = $2} /^CPU /{c = ($2 - $3) / 1e6; f = $4 - $5}
        END {if (v == "" || c == "") exit 1; printf "%s %.3f %d\n", v, c, f}'
}

# hw_sql SIZE: bench/run.sh's hand-written incremental step
hw_sql() {
    cat <<EOF
BEGIN;
SELECT last_id AS lo, (SELECT max(id) FROM ev_$1) AS hi FROM hw_off_$1 \gset
INSERT INTO hw_$1 AS s (minute, category, n, total, avg_amount, max_amount)
SELECT date_bin('1 minute', ts, '2000-01-01'), category, count(*), sum(amount), avg(amount), max(amount)
FROM ev_$1 WHERE id > :lo AND id <= :hi GROUP BY 1, 2
ON CONFLICT (minute, category) DO UPDATE SET n = s.n + excluded.n, total = s.total + excluded.total,
    avg_amount = (s.total + excluded.total) / (s.n + excluded.n),
    max_amount = greatest(s.max_amount, excluded.max_amount);
UPDATE hw_off_$1 SET last_id = :hi;
COMMIT;
EOF
}

declare -A W C F W0 C0 F0 HC HW
read -r -a sizes <<<"$BENCH_HIST_SIZES"
for ((r = 1; r <= BENCH_HIST_ROUNDS; r++)); do
    for ((i = 0; i < ${#sizes[@]}; i++)); do
        n="${sizes[$(((i + r) % ${#sizes[@]}))]}"
        h="$(human "$n")"; h="${h,,}"
        k=$(psql_val "SELECT count(*) FROM cq.progress WHERE name = 'agg_$h'")
        if [[ "$BENCH_HIST_REFRESH" == 1 ]]; then
            psql_run "SET client_min_messages = warning;" "CREATE MATERIALIZED VIEW IF NOT EXISTS mv_$h AS $(agg_select "ev_$h") WITH NO DATA;" \
                "REFRESH MATERIALIZED VIEW mv_$h;" "$(groupby_sql "ev_$h")" >/dev/null
        fi
        psql_run "$(gen_rows "ev_$h" "$BENCH_HIST_NEW" "$(date -u -d "2024-01-04 00:00 UTC + $((10 * k)) minutes" '+%Y-%m-%d %H:%M:%S+00')" '10 minutes')" >/dev/null
        read -r w c f <<<"$(call_ms "agg_$h")"
        W[$h]+="$w "; C[$h]+="$c "; F[$h]+="$f "
        read -r w c f <<<"$(call_ms "agg_$h")"
        W0[$h]+="$w "; C0[$h]+="$c "; F0[$h]+="$f "
        read -r c w <<<"$(cpu_sql "$(hw_sql "$h")")"
        HC[$h]+="$c "; HW[$h]+="$w "
        info "round $r $h: new rows wall $(awk '{print $NF}' <<<"${W[$h]}") ms, CPU $(awk '{print $NF}' <<<"${C[$h]}") ms, faults $(awk '{print $NF}' <<<"${F[$h]}"); nothing new CPU $(awk '{print $NF}' <<<"${C0[$h]}") ms; hand-written CPU $(awk '{print $NF}' <<<"${HC[$h]}") ms"
    done
done
for n in $BENCH_HIST_SIZES; do
    h="$(human "$n")"; h="${h,,}"
    bad=$(psql_val "SELECT count(*) FROM ((TABLE agg_$h EXCEPT ALL $(agg_select "ev_$h")) UNION ALL ($(agg_select "ev_$h") EXCEPT ALL TABLE agg_$h)) x;")
    [[ "$bad" == 0 ]] || die "agg_$h differs from its query in $bad rows"
    bad=$(psql_val "SELECT count(*) FROM ((TABLE hw_$h EXCEPT ALL TABLE agg_$h) UNION ALL (TABLE agg_$h EXCEPT ALL TABLE hw_$h)) x;")
    [[ "$bad" == 0 ]] || die "hw_$h differs from agg_$h in $bad rows"
done

mkdir -p "$(dirname "$BENCH_OUT")"
{
    echo "### Fresh-session batch vs history size (bench/history.sh)"
    echo
    echo "$(human "$BENCH_HIST_NEW") new rows per batch; each CALL the first statement of a new session; medians of $BENCH_HIST_ROUNDS rounds (sizes interleaved); ANALYZE of the sources: $BENCH_HIST_ANALYZE; REFRESH + GROUP BY before each CALL: $BENCH_HIST_REFRESH; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo
    echo "| history | wall 10k | CPU 10k | minor faults 10k | wall nothing new | CPU nothing new | faults nothing new | hand-written CPU (control) | hand-written wall |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for n in $BENCH_HIST_SIZES; do
        h="$(human "$n")"; h="${h,,}"
        # shellcheck disable=SC2086
        echo "| $(human "$n") | $(fmt_ms "$(median ${W[$h]})") | $(fmt_ms "$(median ${C[$h]})") | $(printf '%.0f' "$(median ${F[$h]})") | $(fmt_ms "$(median ${W0[$h]})") | $(fmt_ms "$(median ${C0[$h]})") | $(printf '%.0f' "$(median ${F0[$h]})") | $(fmt_ms "$(median ${HC[$h]})") | $(fmt_ms "$(median ${HW[$h]})") |"
    done
    echo
    for n in $BENCH_HIST_SIZES; do
        h="$(human "$n")"; h="${h,,}"
        echo "- $(human "$n") per round: wall ${W[$h]}; CPU ${C[$h]}; faults ${F[$h]}; nothing new CPU ${C0[$h]}; hand-written CPU ${HC[$h]}, wall ${HW[$h]}"
    done
} >"$BENCH_OUT"
cat "$BENCH_OUT"
