#!/usr/bin/env bash
# bench/aggregates.sh -- cost of the generic aggregate path (issue 10 part 1).
#
# On one throwaway cluster and one 5M-row source (1,000 groups, 100k users):
#   1. fold of the whole backlog (CREATE TABLE ... WITH NO DATA, then one
#      CALL cq.run) vs the plain GROUP BY of the same query, for
#        hll      SELECT k, hll_add_agg(hll_hash_text(user_id)) ... GROUP BY k
#        fast     SELECT k, sum(v), avg(v) ... GROUP BY k   (the table's fast path)
#        generic  SELECT k, bench_sum(v), bench_avg(v) ... GROUP BY k
#        distinct SELECT k, count(DISTINCT user_id) ... GROUP BY k  (part 3:
#                 the (group, value) pairs table)
#      where bench_sum and bench_avg are user-defined copies of sum(int4) and
#      avg(int4) (same transition, combine and final functions, parallel
#      safe as they are), so they
#      take the generic path: the only difference with "fast" is the path;
#   2. an incremental batch (BENCH_AGG_NEW new rows over every group) of each
#      query, medians of BENCH_AGG_REPS rounds.
# Each target is checked against its plain query (hll: cardinalities).
#
# Env: PGBIN, CQ_TMPBASE (scripts/common.sh), BENCH_PORT (default 55466),
#      BENCH_SCALE (default 1), BENCH_AGG_ROWS (default 5000000),
#      BENCH_AGG_NEW (default 10000), BENCH_AGG_REPS (default 3),
#      BENCH_AGG_REPORT (default bench/results/aggregates-<time>.md).
# Needs pg_cq, hll installed for $PGBIN (make install, or scripts/test.sh's build).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
BENCH_SCALE="${BENCH_SCALE:-1}"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"

PORT="${BENCH_PORT:-55466}"
ROWS="$(scaled "${BENCH_AGG_ROWS:-5000000}" 10000)"
NEW="$(scaled "${BENCH_AGG_NEW:-10000}" 1000)"
REPS="${BENCH_AGG_REPS:-3}"
OUT="$REPO_ROOT/bench/results"
mkdir -p "$OUT"
REPORT="${BENCH_AGG_REPORT:-$OUT/aggregates-$(date -u +%Y%m%dT%H%M%SZ).md}"
trap 'stop_cluster bench_agg' EXIT

start_cluster bench_agg "$PORT" "shared_buffers = 1GB" "work_mem = 64MB" "max_wal_size = 4GB" \
    "checkpoint_timeout = 30min"

declare -A QUERY=(
    [hll]="SELECT k, hll_add_agg(hll_hash_text(user_id)) AS h FROM agg_src GROUP BY k"
    [fast]="SELECT k, sum(v) AS s, avg(v) AS a FROM agg_src GROUP BY k"
    [generic]="SELECT k, bench_sum(v) AS s, bench_avg(v) AS a FROM agg_src GROUP BY k"
    [distinct]="SELECT k, count(DISTINCT user_id) AS d FROM agg_src GROUP BY k"
)
# what a target is compared with (hll values compared by cardinality)
declare -A CHECK=(
    [hll]="SELECT k, hll_cardinality(h) FROM %s"
    [fast]="SELECT k, s, a FROM %s"
    [generic]="SELECT k, s, a FROM %s"
    [distinct]="SELECT k, d FROM %s"
)
declare -A ORACLE=(
    [hll]="SELECT k, hll_cardinality(hll_add_agg(hll_hash_text(user_id))) FROM agg_src GROUP BY k"
    [fast]="${QUERY[fast]}"
    [generic]="${QUERY[fast]}"
    [distinct]="${QUERY[distinct]}"
)
NAMES=(hll fast generic distinct)

section "load $(human "$ROWS") rows"
psql_run "SET client_min_messages = warning;" \
    "CREATE EXTENSION pg_cq;" "CREATE EXTENSION hll;" \
    "CREATE AGGREGATE bench_sum(int4) (SFUNC = int4_sum, STYPE = int8, COMBINEFUNC = int8pl, PARALLEL = SAFE);" \
    "CREATE AGGREGATE bench_avg(int4) (SFUNC = int4_avg_accum, STYPE = int8[], FINALFUNC = int8_avg,
       COMBINEFUNC = int4_avg_combine, INITCOND = '{0,0}', PARALLEL = SAFE);" \
    "CREATE TABLE agg_src (k int, user_id text, v int) WITH (autovacuum_enabled = off);" >/dev/null
load_ms=$(time_sql "INSERT INTO agg_src SELECT i % 1000, 'user' || (i::int8 * 7919) % 100000, (i::int8 * 31) % 1000
                    FROM generate_series(1, $ROWS) i;")
psql_run "VACUUM ANALYZE agg_src;" "CHECKPOINT;" >/dev/null
info "loaded in $(fmt_ms "$load_ms")"

diff_count() {   # NAME TARGET -> rows differing from the oracle
    local c
    c="$(printf "${CHECK[$1]}" "$2")"
    psql_val "SELECT count(*) FROM ((($c) EXCEPT ALL (${ORACLE[$1]})) UNION ALL ((${ORACLE[$1]}) EXCEPT ALL ($c))) x"
}

declare -A FOLD GB INC OK
for name in "${NAMES[@]}"; do
    section "fold: $name"
    folds=() gbs=()
    for _ in $(seq 1 "$REPS"); do
        psql_run "SET client_min_messages = warning;" \
            "CREATE TABLE t_$name WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS ${QUERY[$name]} WITH NO DATA;" >/dev/null
        folds+=("$(time_sql "CALL cq.run('t_$name');" 2>/dev/null)")
        OK[$name]="$(diff_count "$name" "t_$name")"
        psql_run "SELECT cq.drop_query('t_$name', drop_target => true);" "CHECKPOINT;" >/dev/null
        gbs+=("$(time_sql "SELECT count(*) FROM (${QUERY[$name]}) s WHERE s IS NOT NULL;")")
    done
    FOLD[$name]="$(median "${folds[@]}")"; GB[$name]="$(median "${gbs[@]}")"
    info "$name: fold $(fmt_ms "${FOLD[$name]}"), plain GROUP BY $(fmt_ms "${GB[$name]}"), ${OK[$name]} differing rows"
done

section "incremental batches of $(human "$NEW") rows"
for name in "${NAMES[@]}"; do
    psql_run "SET client_min_messages = warning;" \
        "CREATE TABLE t_$name WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS ${QUERY[$name]};" >/dev/null
done
declare -A incs
for r in $(seq 1 "$REPS"); do
    psql_run "INSERT INTO agg_src SELECT i % 1000, 'new$r-' || i % 5000, i % 1000 FROM generate_series(1, $NEW) i;" >/dev/null
    for name in "${NAMES[@]}"; do
        incs[$name]+=" $(time_sql "CALL cq.run('t_$name');" 2>/dev/null)"
    done
done
for name in "${NAMES[@]}"; do
    # shellcheck disable=SC2086
    INC[$name]="$(median ${incs[$name]})"
    OK[$name]="${OK[$name]}+$(diff_count "$name" "t_$name")"
    info "$name: incremental batch $(fmt_ms "${INC[$name]}")"
done

{
    echo "### Generic aggregates (bench/aggregates.sh)"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), git $(git -C "$REPO_ROOT" rev-parse --short HEAD), $(nproc) cores;"
    echo "$(human "$ROWS") rows, 1,000 groups, 100k users; incremental batches of $(human "$NEW") rows over every group;"
    echo "medians of $REPS; differing rows vs the plain query (fold+incremental): hll ${OK[hll]}, fast ${OK[fast]}, generic ${OK[generic]}, distinct ${OK[distinct]}."
    echo
    echo "| query | plain GROUP BY | fold (one batch) | fold / GROUP BY | incremental batch |"
    echo "|---|---|---|---|---|"
    for name in "${NAMES[@]}"; do
        echo "| $name: \`${QUERY[$name]}\` | $(fmt_ms "${GB[$name]}") | $(fmt_ms "${FOLD[$name]}") | $(fmt_x "$(calc "${FOLD[$name]} / ${GB[$name]}")") | $(fmt_ms "${INC[$name]}") |"
    done
    echo
    echo "generic path / fast path, same aggregates: fold $(fmt_x "$(calc "${FOLD[generic]} / ${FOLD[fast]}")"), incremental batch $(fmt_x "$(calc "${INC[generic]} / ${INC[fast]}")")"
} | tee "$REPORT"
