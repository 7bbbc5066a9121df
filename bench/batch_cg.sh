#!/usr/bin/env bash
# bench/batch_cg.sh -- instructions per small batch (valgrind callgrind),
# deterministic, for the many-queries and latency scenarios (issue 12
# goals 5 and 6): what a batch costs when it has a few new rows and the
# source's last, unsummarized BRIN range already holds many older ones.
#
# A single-user backend on a throwaway data directory: a source with
# BCG_HISTORY rows (default 2000, inserted one per transaction), BCG_QUERIES
# queries over it (default 10) of kind BCG_KIND:
#   update: the many-queries bench's update queries (different groupings,
#           count and sum), BCG_NEW rows per round (default 1);
#   append: the latency bench's stateless append query, BCG_NEW rows per
#           round (default 5);
#   history: goal 4's batch (bench/run.sh scenario 2): its source and
#           update query (~216k groups over 3 days of history, BCG_HISTORY
#           rows, default 1M: the batch's cost does not grow with the
#           rows, bench/history.sh), BCG_NEW rows per round (default
#           10000, 10 minutes of new groups, as scenario 2 inserts them),
#           one query (BCG_QUERIES defaults to 1);
# each query's batch 0 runs in the set-up.  Then, for R rounds: BCG_NEW
# single-row INSERTs, then CALL cq.run for every query.  The instructions
# of the CALLs (callgrind --toggle-collect=cq_run) are counted for R = 6
# and R = 9; their difference / (3 * queries) is the cost of one warm batch
# (the first round pays the new backend's cold start and, for queries in
# the shared-memory store, the store's rebuild; and the plan cache plans a
# statement with parameters anew for each of its first five executions in
# a backend and builds its generic plan at the sixth: counted from R = 3,
# rounds 4-6 paid a plan of d per batch, 0.23M of 1.03M instructions at 10
# update queries, which a long-lived worker does not pay -- perf of the
# workers under bench/latency.sh shows no planning).
#
# BCG_WARM=N (update and append) runs N rounds more in the set-up, uncounted:
# with N >= 100 the counted batches are those of a query in its steady state,
# whose cq.offsets and cq.progress hold their last 100 rows (each batch then
# deletes the row that falls out of the window, and its primary key ranges
# are full), as in the latency bench's runs of thousands of batches a query.
#
# BCG_ROUNDS=R counts R and R + 3 rounds (default 6): with R > 100, the
# counted batches delete rows their own backend inserted 100 batches before
# (progress.c keeps where), as a long-lived worker's do.
#
# BCG_PINNED=1 runs the rounds with search_path = pg_catalog, pg_temp (the
# queries named schema-qualified), as a background worker runs its batches
# (security.c pins it for the worker's life): the batches' security sections
# then find it pinned already.
#
# BCG_CONF: more postgresql.conf lines, ';'-separated (e.g. "cq.target_update_in_c = off"
# for the same build's other path).
#
# Env: PGBIN, CQ_TMPBASE, BCG_KIND, BCG_QUERIES, BCG_HISTORY, BCG_NEW, BCG_WARM, BCG_ROUNDS, BCG_PINNED,
#      BCG_CONF,
#      BCG_OUT (directory for the callgrind files; default $CQ_TMPBASE/pg_cq_batch_cg).
# Prints "instructions per batch: N".
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"

KIND="${BCG_KIND:-update}"
case "$KIND" in
    append) NQ="${BCG_QUERIES:-10}" HIST="${BCG_HISTORY:-2000}" NEW="${BCG_NEW:-5}" ;;
    history) NQ="${BCG_QUERIES:-1}" HIST="${BCG_HISTORY:-1000000}" NEW="${BCG_NEW:-10000}" ;;
    *) NQ="${BCG_QUERIES:-10}" HIST="${BCG_HISTORY:-2000}" NEW="${BCG_NEW:-1}" ;;
esac
CG="${BCG_OUT:-$CQ_TMPBASE/pg_cq_batch_cg}"
cg_prepare new
# no store image by time (cq.state_image_interval): under valgrind a run outlasts its 5 minutes,
# and the image of a large state, written in whichever round that happens, is no batch's cost
IFS=';' read -r -a conf <<<"${BCG_CONF:-}"
cg_initdb "$CG/data" "" "shared_buffers = 256MB" "cq.state_image_interval = 0" ${conf[@]+"${conf[@]}"}

row() {
    if [[ "$KIND" == append ]]; then echo "INSERT INTO cg_src (payload) VALUES ('x')"
    else echo "INSERT INTO cg_src (a, b, c, v) VALUES ($1 * 7919 % 1000000, $1 * 104729 % 1000000, $1 * 31 % 1000000, $1 % 1000)"; fi
}
# single-user mode: one statement per line
{
    echo "CREATE EXTENSION pg_cq"
    if [[ "$KIND" == append ]]; then echo "CREATE TABLE cg_src (id bigserial, payload text)"
    elif [[ "$KIND" == history ]]; then
        echo "CREATE TABLE cg_src (id bigserial, ts timestamptz, device_id int, category text, amount numeric(10,2)) WITH (autovacuum_enabled = off)"
        echo "SELECT setseed(0.5)"
        gen_rows cg_src "$HIST" '2024-01-01' '3 days'; echo
        echo "CREATE INDEX ON cg_src (id)"
    else echo "CREATE TABLE cg_src (id bigserial, a int, b int, c int, v int)"; fi
    for ((i = 0; i < NQ; i++)); do
        if [[ "$KIND" == history ]]; then
            echo "CREATE TABLE cg_q$i WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $(agg_select cg_src)"
        elif [[ "$KIND" == append ]]; then
            echo "CREATE TABLE cg_q$i WITH (cq.output_mode = 'append', cq.trigger = 'available_now') AS SELECT id, payload FROM cg_src WITH NO DATA"
        else
            col=$(echo "a b c" | cut -d' ' -f$((i % 3 + 1)))
            echo "CREATE TABLE cg_q$i WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS SELECT $col % $((i / 3 + 2)) AS g, count(*) AS n, sum(v) AS s FROM cg_src GROUP BY 1"
        fi
    done
    if [[ "$KIND" == history ]]; then echo "VACUUM cg_src"; else
        for ((k = 0; k < HIST; k++)); do row "$k"; done
        for ((i = 0; i < NQ; i++)); do echo "CALL cq.run('cg_q$i')"; done
        for ((w = 0; w < ${BCG_WARM:-0}; w++)); do
            for ((k = 0; k < NEW; k++)); do row "$((10000 + w * NEW + k))"; done
            for ((i = 0; i < NQ; i++)); do echo "CALL cq.run('cg_q$i')"; done
        done
    fi
} >"$CG/setup.sql"
cg_single "$CG/data" setup

# count R: instructions of R rounds, on a copy of the set-up
count() {
    local r="$1" i k x q=cg_q pin=() unpin=()
    if [[ "${BCG_PINNED:-0}" == 1 ]]; then q=public.cg_q pin=("SET search_path = pg_catalog, pg_temp") unpin=("RESET search_path"); fi
    {
        for ((k = 0; k < r; k++)); do
            if [[ "$KIND" == history ]]; then
                echo "SELECT setseed(0.$((k + 1)))"   # the same rows in every count
                gen_rows cg_src "$NEW" "$(date -u -d "2024-01-04 00:00 UTC + $((10 * k)) minutes" '+%Y-%m-%d %H:%M:%S+00')" '10 minutes'; echo
            else
                for ((i = 0; i < NEW; i++)); do row "$((HIST + k * NEW + i))"; done
            fi
            for x in "${pin[@]}"; do echo "$x"; done
            for ((i = 0; i < NQ; i++)); do echo "CALL cq.run('$q$i')"; done
            for x in "${unpin[@]}"; do echo "$x"; done
        done
    } >"$CG/rounds-$r.sql"
    cg_count "$CG/data" cq_run "rounds-$r" "$r"
}
R0="${BCG_ROUNDS:-6}"
c6="$(count "$R0")"
c9="$(count $((R0 + 3)))"
info "kind $KIND${BCG_PINNED:+ (pinned $BCG_PINNED)}${BCG_WARM:+ (warm $BCG_WARM)}, $NQ queries, $HIST rows of history, $NEW new rows per batch: $c6 ($R0 rounds), $c9 ($((R0 + 3)) rounds)"
echo "instructions per batch: $(( (c9 - c6) / (3 * NQ) ))"
