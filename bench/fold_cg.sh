#!/usr/bin/env bash
# bench/fold_cg.sh -- the fold of a backlog against the plain GROUP BY in
# instructions (valgrind callgrind), deterministic: issue 12 goal 2 and
# issue 15's fold goal on a machine too loaded for CPU times.
#
# A single-user backend on a throwaway data directory, two backlogs:
#   store: bench/store.sh's fold (SELECT k, count(*), sum(v), max(v) FROM
#          fsrc GROUP BY k), FCG_ROWS rows over FCG_GROUPS keys inserted
#          after the queries exist (stamped rows), one query on the store
#          (fo_mem) and one on the state table (fo_tab);
#   fold:  bench/fold.sh's query (lib.sh's agg_select: 1-minute buckets x
#          ~50 categories, count, sum, avg, max of a numeric) over FCG_ROWS
#          history rows (inserted before the query, cq_xid NULL), over
#          FCG_SPANS minutes (default "80 N": ~4k groups, and ~FCG_ROWS / 5
#          groups as fold.sh's 5M rows into 1M), the query's default
#          state storage, or FCG_STORAGE (unlogged: the state table).
# Each measured statement runs alone in a valgrind run on a copy of the
# set-up (--toggle-collect=PortalRun: the statement, not the start-up):
# the plain GROUP BY with its outputs consumed (bench/store.sh's form for
# store, lib.sh's groupby_sql for fold), and CALL cq.run of each query
# (batch 0 over the whole backlog).  Serial, jit off, work_mem = cq.work_mem
# = FCG_WORK_MEM, no state image by time (cq.state_image_interval = 0: under
# valgrind a batch can outlast the default 300 s, and the image it then
# writes is not the fold).  Prints instructions and the ratio fold / GROUP BY, and
# keeps the callgrind files (callgrind_annotate --inclusive=yes FILE shows
# where they go).
#
# Env: PGBIN, CQ_TMPBASE, FCG_ROWS (1000000), FCG_GROUPS (20000),
#      FCG_SPANS ("80 4000"), FCG_WORK_MEM (4MB), FCG_WHICH ("store fold"),
#      FCG_STORAGE (state_storage of the fold query; default: its default),
#      FCG_OUT (directory; default $CQ_TMPBASE/pg_cq_fold_cg),
#      FCG_STORE_RUNS ("gb mem tab": which statements of the store backlog
#      to count; a count left out prints as 0).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"

ROWS="${FCG_ROWS:-1000000}"
GROUPS_="${FCG_GROUPS:-20000}"
SPANS="${FCG_SPANS:-80 4000}"
WM="${FCG_WORK_MEM:-4MB}"
WHICH="${FCG_WHICH:-store fold}"
STORAGE_OPT="${FCG_STORAGE:+, cq.state_storage = '$FCG_STORAGE'}"
STORE_RUNS="${FCG_STORE_RUNS:-gb mem tab}"
CG="${FCG_OUT:-$CQ_TMPBASE/pg_cq_fold_cg}"
cg_prepare keep

# setup NAME: a data directory $CG/NAME made by the single-user script on stdin
setup() {
    rm -rf "${CG:?}/$1"
    cg_initdb "$CG/$1" "-E UTF8 --locale=C.UTF-8" "shared_buffers = 512MB" "cq.state_memory = 1GB" \
        "max_parallel_workers_per_gather = 0" "max_parallel_maintenance_workers = 0" "jit = off" "work_mem = '$WM'" "cq.work_mem = '$WM'" \
        "maintenance_work_mem = 256MB" "cq.state_image_interval = 0"
    cat >"$CG/$1.setup.sql"
    cg_single "$CG/$1" "$1.setup"
}

# count DATA LABEL SQL: instructions of SQL run alone on a copy of DATA
count() {
    printf '%s\n' "$3" >"$CG/$2.sql"
    cg_count "$CG/$1" PortalRun "$2" "$2"
}

report() {   # report LABEL GB FOLD
    printf '%-28s GROUP BY %14s  fold %14s  ratio %s\n' "$1" "$2" "$3" "$(calc "$3 / $2")"
}

if [[ " $WHICH " == *" store "* ]]; then
    FQ='SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m FROM fsrc GROUP BY k'
    setup store <<EOF
CREATE EXTENSION pg_cq
CREATE TABLE fsrc (k int NOT NULL, v int NOT NULL) WITH (autovacuum_enabled = off)
SELECT cq.create_query('fo_mem', '$FQ', output_mode => 'update', "trigger" => 'available_now', state_storage => 'memory')
SELECT cq.create_query('fo_tab', '$FQ', output_mode => 'update', "trigger" => 'available_now', state_storage => 'unlogged')
INSERT INTO fsrc SELECT g % $GROUPS_, (g * 7) % 1000 FROM generate_series(1, $ROWS) g
VACUUM ANALYZE fsrc
CHECKPOINT
EOF
    gb=0 mem=0 tab=0
    [[ " $STORE_RUNS " != *" gb "* ]] || gb=$(count store store_gb "SELECT count(*), sum(n), sum(s), max(m) FROM ($FQ) x")
    [[ " $STORE_RUNS " != *" mem "* ]] || mem=$(count store store_mem "CALL cq.run('fo_mem')")
    [[ " $STORE_RUNS " != *" tab "* ]] || tab=$(count store store_tab "CALL cq.run('fo_tab')")
    report "store $(human "$ROWS")->$(human "$GROUPS_") memory" "$gb" "$mem"
    report "store $(human "$ROWS")->$(human "$GROUPS_") table" "$gb" "$tab"
fi

if [[ " $WHICH " == *" fold "* ]]; then
    for span in $SPANS; do
        setup "fold$span" <<EOF
CREATE EXTENSION pg_cq
CREATE TABLE fold_ev (ts timestamptz, device_id int, category text, amount numeric(10,2)) WITH (autovacuum_enabled = off)
SELECT setseed(0.5)
$(gen_rows fold_ev "$ROWS" '2024-01-01' "$span minutes")
VACUUM ANALYZE fold_ev
CREATE TABLE fold_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now'$STORAGE_OPT) AS $(agg_select fold_ev) WITH NO DATA
CHECKPOINT
EOF
        gb=$(count "fold$span" "fold${span}_gb" "$(groupby_sql fold_ev)")
        cq=$(count "fold$span" "fold${span}_cq" "CALL cq.run('fold_agg')")
        report "fold $(human "$ROWS") over $span min" "$gb" "$cq"
    done
fi
