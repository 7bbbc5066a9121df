#!/usr/bin/env bash
# bench/ingest_cg.sh -- instructions per folded row of the live-ingest
# scenario's batch (issue 12 goal 3), deterministic (valgrind callgrind).
#
# A single-user backend on a throwaway data directory: bench/run.sh's
# ingest source (ing_tracked) and its trigger '0' update query ing_agg
# (lib.sh's agg_select: 1-minute buckets x ~50 categories, count, sum, avg,
# max of a numeric; here trigger available_now, the batch the same), ICG_HISTORY
# rows already folded.  Then rounds of ICG_TX 1000-row INSERTs (bench/run.sh's
# multi script, one transaction each) and CALL cq.run('ing_agg'): count 1 runs
# six warm-up rounds of one INSERT each; count 2 the warm-up and one round of
# ICG_TX INSERTs.  Only the CALLs are counted (--toggle-collect=cq_run); the
# difference is one warm batch of ICG_TX * 1000 new rows (the warm-up pays
# the new backend's cold start and the store's rebuild, and its six batches
# make d's saved plan generic, as a long-lived worker's is after five: the
# plan cache's rule).  The measured batch follows one of 1000 rows: with
# ICG_CONF="cq.custom_plan_rows = 1000" it takes a custom plan of d, with the
# default (5000) or -1 the generic one.
#
# The rows' ts is a constant (ICG_TS): with now(), as bench/run.sh inserts,
# the count depended on how long the run took (the 100 INSERTs of a slow
# run under valgrind spanned more 1-minute groups: 3,634 against 3,655
# instructions a row for the same build, session 33).
#
# Env: PGBIN, CQ_TMPBASE, ICG_TX (100), ICG_HISTORY (1000000),
#      ICG_TS (SQL of the rows' ts; "timestamptz '2026-12-03 12:00:30+00'",
#      "now()" as before session 33),
#      ICG_CONF (more postgresql.conf lines, ';'-separated),
#      ICG_OUT (directory; default $CQ_TMPBASE/pg_cq_ingest_cg).
# Prints the instructions per folded row, and keeps the callgrind files:
#   bench/results/write-s31-A-cgdiff.py-style per-function differences come
#   from callgrind_annotate of callgrind.1 and callgrind.2.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"

TX="${ICG_TX:-100}"
HIST="${ICG_HISTORY:-1000000}"
CG="${ICG_OUT:-$CQ_TMPBASE/pg_cq_ingest_cg}"
IFS=';' read -r -a _extra <<<"${ICG_CONF:-}"
cg_prepare new
cg_initdb "$CG/data" "-E UTF8 --locale=C.UTF-8" "shared_buffers = 512MB" "work_mem = 64MB" \
    "max_parallel_workers_per_gather = 0" "jit = off" "cq.run_in_worker = off" \
    "cq.state_image_interval = 0" "${_extra[@]}"

TS="${ICG_TS:-timestamptz '2026-12-03 12:00:30+00'}"
INS="INSERT INTO ing_tracked (ts, device_id, category, amount) SELECT $TS, 1 + (random() * 999)::int, 'cat_' || lpad(floor(random() * 50)::int::text, 2, '0'), round((random() * 1000)::numeric, 2) FROM generate_series(1, 1000)"
# single-user mode: one statement per line
{
    echo "CREATE EXTENSION pg_cq"
    echo "CREATE TABLE ing_tracked (ts timestamptz, device_id int, category text, amount numeric(10,2)) WITH (autovacuum_enabled = off)"
    echo "CREATE TABLE ing_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $(agg_select ing_tracked)"
    echo "SELECT setseed(0.5)"
    for ((k = 0; k < HIST / 10000; k++)); do echo "${INS/generate_series(1, 1000)/generate_series(1, 10000)}"; done
    echo "CALL cq.run('ing_agg')"
    echo "CHECKPOINT"
} >"$CG/setup.sql"
cg_single "$CG/data" setup

# count N: N = 1 the warm-up round, N = 2 the warm-up and the measured round
count() {
    local n="$1" k c
    {
        echo "SELECT setseed(0.25)"
        for ((k = 0; k < 6; k++)); do echo "$INS"; echo "CALL cq.run('ing_agg')"; done
        if ((n == 2)); then
            for ((k = 0; k < TX; k++)); do echo "$INS"; done
            echo "CALL cq.run('ing_agg')"
        fi
        echo "SELECT 'check', (SELECT sum(n) FROM ing_agg) = (SELECT count(*) FROM ing_tracked)"
    } >"$CG/rounds-$n.sql"
    c="$(cg_count "$CG/data" cq_run "rounds-$n" "$n")"
    grep -A2 "check" "$CG/rounds-$n.log" | grep -q '= "t"' || { tail -20 "$CG/rounds-$n.log" >&2; die "ing_agg does not cover the source"; }
    echo "$c"
}
c1="$(count 1)"
c2="$(count 2)"
info "$HIST rows of history, $TX x 1000 new rows: $c1 (warm-up), $c2 (warm-up + batch)"
echo "instructions per folded row: $(( (c2 - c1) / (TX * 1000) ))"
