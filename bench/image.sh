#!/usr/bin/env bash
# bench/image.sh -- the state table image of a store query (issue 15 item 3).
#
# An update query `SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m FROM
# src GROUP BY k` with state_storage = 'memory' (logged image with
# BENCH_IMAGE_STORAGE=logged), folded over G groups (each of
# BENCH_IMAGE_GROUPS).  Then R rounds (BENCH_IMAGE_ROUNDS): 100 new rows
# over existing keys, and one batch in a session of its own in each of
# three modes, in an order rotating round by round:
#   none    cq.state_image_batches = 0: no image (the batch alone)
#   insert  cq.state_image_batches = 1, cq.bulk_load = off: the image by
#           TRUNCATE + INSERT ... SELECT from the store (before issue 15 item 3)
#   load    cq.state_image_batches = 1, cq.bulk_load = on: TRUNCATE, heap
#           inserts, indexes built after (reindex_relation)
# Reported: medians of the backend's CPU time (/proc/self/schedstat around
# the CALL) and of the image write's own CPU time (its DEBUG1 line), and
# the wall time.  Sanity: the state table equals the store after the last
# image of each mode.
#
# Env: BENCH_PORT (55765), BENCH_IMAGE_GROUPS ("200000 1000000"),
# BENCH_IMAGE_ROUNDS (7), BENCH_IMAGE_STORAGE (memory), BENCH_OUT
# (bench/results/image.md), plus scripts/common.sh's PGBIN, CQ_TMPBASE,
# CQ_SKIP_APT, CQ_SKIP_BUILD, CQ_KEEP_CLUSTER.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
cd "$REPO_ROOT"

BENCH_PORT="${BENCH_PORT:-55765}"
GROUPS_LIST="${BENCH_IMAGE_GROUPS:-200000 1000000}"
R="${BENCH_IMAGE_ROUNDS:-7}"
STORAGE="${BENCH_IMAGE_STORAGE:-memory}"
OUT="${BENCH_OUT:-bench/results/image.md}"

trap 'stop_cluster bench_image' EXIT
ensure_packages
build_install
CQ_PRELOAD="${CQ_PRELOAD-pg_cq}" start_cluster bench_image "$BENCH_PORT" \
    "shared_buffers = 512MB" "max_wal_size = 4GB" "autovacuum = off" "cq.state_memory = 2GB" \
    "cq.state_image_interval = 0" "cq.state_image_batches = 0"

SCHED="pg_catalog.split_part(pg_catalog.pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint"
# one_batch MODE: "CPU_MS IMAGE_MS WALL_MS" of one batch of img in a new session
one_batch() {
    local set out
    case "$1" in
        none) set="SET cq.state_image_batches = 0;" ;;
        insert) set="SET cq.state_image_batches = 1; SET cq.bulk_load = off;" ;;
        load) set="SET cq.state_image_batches = 1; SET cq.bulk_load = on;" ;;
    esac
    out="$(printf '%s\n' "$set" "SET client_min_messages = debug1;" \
        "SELECT $SCHED AS c0, pg_catalog.clock_timestamp() AS t0 \\gset" \
        "CALL cq.run('img');" \
        "SELECT 'cpu ' || (($SCHED - :c0) / 1e6)::numeric(14,3) || ' ' || (extract(epoch FROM pg_catalog.clock_timestamp() - :'t0') * 1000)::numeric(14,3);" \
        | "${PSQL[@]}" -At 2>&1)" || { printf '%s\n' "$out" >&2; die "batch failed"; }
    local cpu wall img
    read -r cpu wall < <(grep -oE '^cpu [0-9.]+ [0-9.]+' <<<"$out" | cut -d' ' -f2-)
    img=$(grep -oE 'state image: [0-9]+ rows [a-z ,]+ in [0-9.]+ ms' <<<"$out" | grep -oE '[0-9.]+ ms' | grep -oE '[0-9.]+' || echo 0)
    echo "$cpu $img $wall"
}

{
echo "# State image write (bench/image.sh), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "state_storage = '$STORAGE'; $R rounds, modes interleaved; medians. CPU = backend CPU of the whole batch (100 rows over existing keys); image = the image write's CPU (DEBUG1); load: \`uptime\` at start: $(uptime | sed 's/.*load average/load average/')."
echo
echo "| groups | mode | batch CPU | image CPU | wall |"
echo "|---|---|---|---|---|"
} >"$OUT"

for G in $GROUPS_LIST; do
    psql_run "SET client_min_messages = warning;" \
        "DROP EXTENSION IF EXISTS pg_cq CASCADE;" "DROP TABLE IF EXISTS src, img;" \
        "CREATE EXTENSION pg_cq;" \
        "CREATE TABLE src (k int NOT NULL, v int NOT NULL) WITH (autovacuum_enabled = off);" \
        "SELECT cq.create_query('img', 'SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m FROM src GROUP BY k', output_mode => 'update', \"trigger\" => 'available_now', state_storage => '$STORAGE');" \
        "INSERT INTO src SELECT g % $G, (g * 7) % 1000 FROM generate_series(1, $G) g;" \
        "CALL cq.run('img');" >/dev/null
    declare -A cpu=() img=() wall=()
    modes=(none insert load)
    for ((r = 0; r < R; r++)); do
        for ((i = 0; i < 3; i++)); do
            m=${modes[$(((i + r) % 3))]}
            psql_run "INSERT INTO src SELECT (g * 7919) % $G, g FROM generate_series(1, 100) g;" >/dev/null
            read -r c im w < <(one_batch "$m")
            cpu[$m]+="$c "; img[$m]+="$im "; wall[$m]+="$w "
            if [[ "$m" != none && $r == $((R - 1)) ]]; then
                # the image equals the store's rows (the target mirrors the store)
                st=$(psql_val "SELECT state_table::regclass::text FROM cq.queries WHERE name = 'img'")
                d=$(psql_val "SELECT count(*) FROM ((SELECT g1, n, p1, p2 FROM $st EXCEPT SELECT k, n, s, m FROM img) UNION ALL (SELECT k, n, s, m FROM img EXCEPT SELECT g1, n, p1, p2 FROM $st)) x;")
                [[ "$d" == 0 ]] || die "image differs from the target ($m, $G groups): $d rows"
            fi
        done
    done
    for m in "${modes[@]}"; do
        # shellcheck disable=SC2086
        echo "| $(human "$G") | $m | $(fmt_ms "$(median ${cpu[$m]})") | $(fmt_ms "$(median ${img[$m]})") | $(fmt_ms "$(median ${wall[$m]})") |" >>"$OUT"
    done
    unset cpu img wall
done
cat "$OUT"
