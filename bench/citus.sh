#!/usr/bin/env bash
# bench/citus.sh -- cost of a batch over a Citus distributed source (issue 14,
# docs/scale-out.md) against the same query over a local table of the same
# size, in the same run on the same machine; and ingest with a live query.
#
# Starts three throwaway nodes (a coordinator and two workers, Citus first in
# shared_preload_libraries) on ports BENCH_PORT .. BENCH_PORT+2 under
# $CQ_TMPBASE/pg_cq_bench_citus, loads BENCH_ROWS rows into a hash-distributed
# table (BENCH_SHARDS shards, stamped per node) and into a local table on the
# coordinator, then:
#   1. batch cost: for each table, inserts BENCH_BATCH rows through the
#      coordinator and times CALL cq.run (a batch of an update-mode GROUP BY
#      query), BENCH_REPS times, each from a fresh session; for the
#      distributed table also with the nodes' snapshots taken the old way
#      (cq.citus_snapshot_probes = off: run_command_on_all_nodes, new
#      connections) and without the shards' side (cq.citus_shard_scans =
#      off); also the snapshot round trip of run_command_on_all_nodes;
#   2. the same batches from one warm session (as a scheduler's worker runs
#      them; inserts by INSERT ... VALUES), probes on and off, and with
#      citus.max_adaptive_executor_pool_size = 1: wall time per batch and the CPU of the
#      whole cluster per insert + batch (the postmasters' reaped children:
#      the session, its Citus connections and any connection opened and
#      closed meanwhile);
#   3. ingest: a trigger '0' query over the distributed table, pgbench
#      running BENCH_INGEST_ROWS-row INSERT ... VALUES statements for
#      BENCH_INGEST_SECS seconds through the coordinator, then through both
#      workers; rows/s, and the time the live query takes to catch up after
#      each run (writes on workers do not wake it: polled, cq.naptime = 1s
#      here).  (An INSERT ... SELECT from generate_series, the shape used
#      before, is run by Citus as a COPY over one new connection per shard,
#      opened and closed in every transaction: BENCH_INGEST_SELECT=1 also
#      measures that shape, through the coordinator.)
# Prints markdown (also to BENCH_OUT if set) and checks both targets against
# the plain query.  Needs Citus built for $PG_CONFIG (docs/scale-out.md).  As
# root the nodes run as user postgres.
#
#   PGBIN=... PG_CONFIG=... bench/citus.sh
#   BENCH_ROWS=1000000 BENCH_BATCH=1000 BENCH_REPS=7 BENCH_SHARDS=32 BENCH_PORT=55490
#   BENCH_INGEST_SECS=20 BENCH_INGEST_ROWS=100 BENCH_INGEST_SELECT=0
set -euo pipefail

PGBIN="${PGBIN:-$(${PG_CONFIG:-pg_config} --bindir)}"
PG_CONFIG="${PG_CONFIG:-$PGBIN/pg_config}"
ROWS="${BENCH_ROWS:-1000000}"
BATCH="${BENCH_BATCH:-1000}"
REPS="${BENCH_REPS:-7}"
SHARDS="${BENCH_SHARDS:-32}"
PORT="${BENCH_PORT:-55490}"
BASE="${CQ_TMPBASE:-/tmp}/pg_cq_bench_citus"
OUT="${BENCH_OUT:-}"
ISECS="${BENCH_INGEST_SECS:-20}"
IROWS="${BENCH_INGEST_ROWS:-100}"
ISELECT="${BENCH_INGEST_SELECT:-0}"

[[ -f "$("$PG_CONFIG" --pkglibdir)/citus.so" ]] || { echo "citus.sh: Citus is not installed for $PG_CONFIG" >&2; exit 1; }
as_pg() { if [[ "$(id -u)" -eq 0 ]]; then (cd "$BASE" && runuser -u postgres -- "$@"); else "$@"; fi; }
psql_at() { local p=$1; shift; as_pg "$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$p" -U postgres -d postgres "$@"; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

stop_all() { for i in 0 1 2; do as_pg "$PGBIN/pg_ctl" -D "$BASE/n$i" stop -m immediate >/dev/null 2>&1 || true; done; }
trap stop_all EXIT

rm -rf "$BASE" && mkdir -p "$BASE"
[[ "$(id -u)" -ne 0 ]] || chown postgres:postgres "$BASE"
for i in 0 1 2; do
    p=$((PORT + i))
    as_pg "$PGBIN/initdb" -D "$BASE/n$i" -U postgres >/dev/null
    cat >>"$BASE/n$i/postgresql.conf" <<EOF
port = $p
listen_addresses = '127.0.0.1'
unix_socket_directories = '$BASE'
shared_preload_libraries = 'citus,pg_cq'
max_worker_processes = 20
max_connections = 60
max_prepared_transactions = 60
wal_level = logical
fsync = off
citus.node_conninfo = 'sslmode=disable'
cq.naptime = '1s'
EOF
    as_pg "$PGBIN/pg_ctl" -D "$BASE/n$i" -l "$BASE/n$i.log" -w start >/dev/null
    psql_at "$p" -c 'CREATE EXTENSION citus'
done
C=$PORT
psql_at $C -c "SELECT citus_set_coordinator_host('127.0.0.1', $C)" >/dev/null
psql_at $C -c "SELECT citus_add_node('127.0.0.1', $((PORT + 1)))" >/dev/null
psql_at $C -c "SELECT citus_add_node('127.0.0.1', $((PORT + 2)))" >/dev/null
psql_at $C -c 'SET client_min_messages = warning' -c 'CREATE EXTENSION pg_cq'

# the same table twice: distributed and local; each with an update-mode query
psql_at $C -c 'SET client_min_messages = warning' -c "
  CREATE TABLE d_ev (id bigint, k int, v int);
  SELECT create_distributed_table('d_ev', 'id', shard_count := $SHARDS);
  CREATE TABLE l_ev (id bigint, k int, v int);
  CREATE TABLE d_agg WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n, sum(v) AS s FROM d_ev GROUP BY k;
  CREATE TABLE l_agg WITH (cq.trigger = 'available_now', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n, sum(v) AS s FROM l_ev GROUP BY k;" >/dev/null
# ANALYZE, no VACUUM: summarizing the BRIN indexes is left to the batches
# (as on a fresh load before autovacuum came by)
for t in d_ev l_ev; do
    psql_at $C -c "INSERT INTO $t (id, k, v) SELECT i, i % 1000, i FROM generate_series(1, $ROWS) i"
    psql_at $C -c "ANALYZE $t" 2>/dev/null || true
done
psql_at $C -c "CALL cq.run('d_agg')" -c "CALL cq.run('l_agg')" 2>/dev/null

# time_batch TABLE QUERY REP [SET...]: insert BATCH rows (one INSERT ... SELECT),
# then time the batch (ms) in a fresh session, after the settings given
time_batch() {
    local t=$1 q=$2 rep=$3 base
    shift 3
    base=$((ROWS + rep * BATCH))
    psql_at $C -c "INSERT INTO $t (id, k, v) SELECT i, i % 1000, i FROM generate_series($base + 1, $base + $BATCH) i"
    psql_at $C "${@/#/-c}" -c '\timing on' -c "CALL cq.run('$q')" 2>/dev/null | awk '/^Time: /{print $2}'
}
# cluster_cpu: CPU (ms) of the three nodes' exited backends so far
cluster_cpu() {
    local i pm s=0 t
    t=$(getconf CLK_TCK)
    for i in 0 1 2; do
        pm=$(head -n 1 "$BASE/n$i/postmaster.pid")
        s=$((s + $(awk '{print $16 + $17}' "/proc/$pm/stat")))
    done
    echo $((s * 1000 / t))
}
# warm TABLE QUERY REP0 [SET]: REPS batches in one session (insert BATCH rows,
# CALL cq.run), after a first one not counted; prints "median_ms cpu_ms",
# cpu: the cluster's per insert + batch, read after the session ended
warm() {
    local t=$1 q=$2 r0=$3 set=${4:-} f="$BASE/warm.sql" c0 c1 base r
    {
        [[ -z "$set" ]] || echo "$set;"
        echo "CALL cq.run('$q');"
        echo '\timing on'
        for ((r = r0; r < r0 + REPS; r++)); do
            base=$((ROWS + r * BATCH))
            # INSERT ... VALUES: Citus routes it over the session's connections
            # (an INSERT ... SELECT would open one per shard: not the batch's cost)
            awk -v b="$base" -v n="$BATCH" -v t="$t" 'BEGIN {
                printf "INSERT INTO %s (id, k, v) VALUES ", t
                for (i = 1; i <= n; i++) printf "(%d, %d, %d)%s", b + i, (b + i) % 1000, b + i, (i < n ? ", " : ";\n")
            }'
            echo "CALL cq.run('$q');"
        done
    } >"$f"
    [[ "$(id -u)" -ne 0 ]] || chown postgres "$f"
    c0=$(cluster_cpu)
    mapfile -t wt < <(psql_at $C -f "$f" 2>/dev/null | awk '/^Time: /{print $2}' | awk 'NR % 2 == 0')
    sleep 2
    c1=$(cluster_cpu)
    echo "$(median "${wt[@]}") $(((c1 - c0) / REPS))"
}
# rows the scans of the shards of d_ev read (pg_stat_user_tables.seq_tup_read +
# idx_tup_fetch on the workers: rows the batches' scans read, not writes; a
# backend reports them when idle, within a second: read until stable)
shard_rows() {
    local p sum a b
    for _ in 1 2 3 4 5; do
        a=0
        for p in $((PORT + 1)) $((PORT + 2)); do
            sum=$(psql_at "$p" -c "SET citus.override_table_visibility = off" -c "
              SELECT coalesce(sum(seq_tup_read + coalesce(idx_tup_fetch, 0)), 0) FROM pg_stat_user_tables
               WHERE relname ~ '^d_ev_[0-9]+\$'")
            a=$((a + sum))
        done
        [[ "${b:-}" == "$a" ]] && break
        b=$a
        sleep 2
    done
    echo "$a"
}
local_rows() {
    psql_at $C -c "SELECT seq_tup_read + coalesce(idx_tup_fetch, 0) FROM pg_stat_user_tables WHERE relname = 'l_ev'"
}
declare -a dt lt dn
# first without the shards' side (src/shard.c; off on every node: the
# coordinator's planner adds the ranges to its subplans too)
for p in $C $((PORT + 1)) $((PORT + 2)); do
    psql_at "$p" -c "ALTER SYSTEM SET cq.citus_shard_scans = off" -c "SELECT pg_reload_conf()" >/dev/null
done
sleep 1
sp0=$(shard_rows)
for ((r = REPS; r < 2 * REPS; r++)); do
    dn+=("$(time_batch d_ev d_agg "$r")")
done
sp1=$(shard_rows)
for p in $C $((PORT + 1)) $((PORT + 2)); do
    psql_at "$p" -c "ALTER SYSTEM RESET cq.citus_shard_scans" -c "SELECT pg_reload_conf()" >/dev/null
done
sleep 1
# then with it; its first batch summarizes the shards' BRIN indexes over the
# load (reads every page once, as autovacuum would): not counted
time_batch d_ev d_agg $((3 * REPS)) >/dev/null
sp2=$(shard_rows)
for ((r = 0; r < REPS; r++)); do
    dt+=("$(time_batch d_ev d_agg "$r")")
done
sp3=$(shard_rows)
declare -a dp
for ((r = 4 * REPS; r < 5 * REPS; r++)); do
    dp+=("$(time_batch d_ev d_agg "$r" 'SET cq.citus_snapshot_probes = off')")
done
lp0=$(local_rows)
for ((r = 0; r < REPS; r++)); do
    lt+=("$(time_batch l_ev l_agg "$r")")
done
lp1=$(local_rows)
# warm sessions: probes on, off, and the local table
read -r w_on c_on < <(warm d_ev d_agg $((5 * REPS)))
read -r w_off c_off < <(warm d_ev d_agg $((6 * REPS)) 'SET cq.citus_snapshot_probes = off')
read -r w_p1 c_p1 < <(warm d_ev d_agg $((7 * REPS)) 'SET citus.max_adaptive_executor_pool_size = 1')
read -r w_l c_l < <(warm l_ev l_agg $((5 * REPS)))
pages_d=$(psql_at $C -c "SELECT sum(result::bigint) FROM run_command_on_shards('d_ev', \$\$SELECT pg_relation_size('%s') / 8192\$\$)")
pages_l=$(psql_at $C -c "SELECT pg_relation_size('l_ev') / 8192")
# the snapshot round trip of every batch over a source stamped per node (offsets.c)
declare -a st
for ((r = 0; r < REPS; r++)); do
    st+=("$(psql_at $C -c '\timing on' -c "SELECT count(*) FROM pg_catalog.run_command_on_all_nodes(
        'SELECT pg_catalog.concat(s.system_identifier, ''='', pg_catalog.pg_current_snapshot()) FROM pg_catalog.pg_control_system() s')" | awk '/^Time: /{print $2}')")
done
oracle() {  # rows of target $1 that differ from the plain query over d_ev
    psql_at $C -c "SELECT (SELECT count(*) FROM ((TABLE $1 EXCEPT ALL SELECT k, count(*), sum(v) FROM d_ev GROUP BY k)
                       UNION ALL (SELECT k, count(*), sum(v) FROM d_ev GROUP BY k EXCEPT ALL TABLE $1)) x)"
}
check=$(oracle d_agg)
dm=$(median "${dt[@]}")
lm=$(median "${lt[@]}")

# ---- ingest with a live query ----
psql_at $C -c 'SET client_min_messages = warning' -c "
  CREATE TABLE d_live WITH (cq.trigger = '0', cq.output_mode = 'update')
    AS SELECT k, count(*) AS n, sum(v) AS s FROM d_ev GROUP BY k" >/dev/null
wait_caught_up() {  # seconds until d_live equals the plain query (deadline 600 s)
    local t0 now
    t0=$(date +%s.%N)
    while [[ "$(oracle d_live)" != 0 ]]; do
        now=$(date +%s.%N)
        if awk -v a="$t0" -v b="$now" 'BEGIN { exit !(b - a > 600) }'; then echo "timeout"; return; fi
        sleep 0.2
    done
    awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'
}
wait_caught_up >/dev/null
# 100-row INSERT ... VALUES (Citus routes the rows of each shard over the
# connections it keeps; an INSERT ... SELECT would be a COPY over a new
# connection per shard in every transaction: ingest_select.sql)
{
    echo '\set base random(1000000000, 2000000000)'
    printf 'INSERT INTO d_ev (id, k, v) VALUES '
    for ((i = 1; i <= IROWS; i++)); do
        printf '(:base::bigint * 1000 + %d, %d, %d)' "$i" $((i % 1000)) "$i"
        ((i == IROWS)) || printf ', '
    done
    echo ';'
} >"$BASE/ingest.sql"
printf '%s\n' '\set base random(1000000000, 2000000000)' \
    "INSERT INTO d_ev (id, k, v) SELECT :base::bigint * 1000 + i, i % 1000, i FROM generate_series(1, $IROWS) i;" \
    >"$BASE/ingest_select.sql"
[[ "$(id -u)" -ne 0 ]] || chown postgres "$BASE/ingest.sql" "$BASE/ingest_select.sql"
# ingest SCRIPT PORT... : pgbench, one client per port, all at once; prints rows/s (sum)
ingest() {
    local script=$1 p pids=() f sum=0 tps
    shift
    for p in "$@"; do
        as_pg "$PGBIN/pgbench" -n -h 127.0.0.1 -p "$p" -U postgres -c 1 -T "$ISECS" -f "$BASE/$script" postgres \
            >"$BASE/pgbench.$p.out" 2>&1 &
        pids+=($!)
    done
    wait "${pids[@]}"
    for p in "$@"; do
        f="$BASE/pgbench.$p.out"
        tps=$(sed -nE 's/^tps = ([0-9.]+).*/\1/p' "$f" | head -n 1)
        sum=$(awk -v a="$sum" -v b="${tps:-0}" -v r="$IROWS" 'BEGIN { printf "%.0f", a + b * r }')
    done
    echo "$sum"
}
ic=$(ingest ingest.sql "$C")
cc=$(wait_caught_up)
iw=$(ingest ingest.sql $((PORT + 1)) $((PORT + 2)))
cw=$(wait_caught_up)
is="not run"
cs="-"
if [[ "$ISELECT" == 1 ]]; then
    is=$(ingest ingest_select.sql "$C")
    cs="$(wait_caught_up) s"
fi
live_check=$(oracle d_live)
total=$(psql_at $C -c "SELECT count(*) FROM d_ev")

report=$(cat <<EOF
## Citus: batch cost over a distributed source (bench/citus.sh)

$ROWS rows, then $REPS batches of $BATCH new rows (one multi-row INSERT through the coordinator
each), \`GROUP BY k\` over 1,000 groups in update mode; median of \`CALL cq.run\` (a fresh
session each, so it includes Citus opening its connections to the workers).

| source | batch (median) | rows its scans read (table's pages) | all batches (ms) |
|---|---|---|---|
| hash-distributed, $SHARDS shards on 2 workers, stamped per node | $(printf '%.1f' "$dm") ms | $(( (sp3 - sp2) / REPS )) ($pages_d) | ${dt[*]} |
| the same, nodes' snapshots through new connections (\`cq.citus_snapshot_probes = off\`, as before) | $(printf '%.1f' "$(median "${dp[@]}")") ms | | ${dp[*]} |
| the same before, \`cq.citus_shard_scans = off\` (no per-node ranges, summarization or settings on the workers) | $(printf '%.1f' "$(median "${dn[@]}")") ms | $(( (sp1 - sp0) / REPS )) ($pages_d) | ${dn[*]} |
| local table on the coordinator | $(printf '%.1f' "$lm") ms | $(( (lp1 - lp0) / REPS )) ($pages_l) | ${lt[*]} |

Ratio distributed / local: $(awk -v a="$dm" -v b="$lm" 'BEGIN { printf "%.1fx", a / b }').
Rows read: \`seq_tup_read + idx_tup_fetch\` of \`pg_stat_user_tables\` (rows the scans returned
from the heap before filtering), on the workers for the shards, on the coordinator for the
local table; per batch, averaged. The tables were analyzed, not vacuumed, after the load.
Of a distributed batch, every node's snapshot (one \`run_command_on_all_nodes\`) takes
$(printf '%.1f' "$(median "${st[@]}")") ms (median, also from fresh sessions).
Distributed target against the plain query after the run: $check rows differ (must be 0).

The same batches from one warm session ($REPS each, after an \`INSERT ... VALUES\` of $BATCH rows;
wall: median of \`CALL cq.run\`; CPU: the whole cluster's per insert + batch, from the
postmasters' exited children, so it counts the connections opened and closed meanwhile):

| source | batch (median) | cluster CPU per insert + batch |
|---|---|---|
| distributed, nodes' snapshots through the batch's Citus connections | $(printf '%.1f' "$w_on") ms | $c_on ms |
| distributed, through new connections (\`cq.citus_snapshot_probes = off\`) | $(printf '%.1f' "$w_off") ms | $c_off ms |
| distributed, probes, \`citus.max_adaptive_executor_pool_size = 1\` (no extra connection per worker for parallel shard tasks) | $(printf '%.1f' "$w_p1") ms | $c_p1 ms |
| local table | $(printf '%.1f' "$w_l") ms | $c_l ms |

Ingest with a live trigger-'0' query over the distributed table ($IROWS-row \`INSERT ... VALUES\`,
pgbench, $ISECS s, one client per node written to):

| written through | rows/s | live query caught up after the run |
|---|---|---|
| the coordinator (1 client) | $ic | $cc s (woken at commit) |
| both workers (1 client each) | $iw | $cw s (cq.naptime poll, 1 s here) |
| the coordinator, $IROWS-row \`INSERT ... SELECT\` from generate_series (a COPY over a new connection per shard) | $is | $cs |

Live target against the plain query at the end ($total rows): $live_check rows differ (must be 0).
EOF
)
printf '%s\n' "$report"
[[ -z "$OUT" ]] || printf '%s\n' "$report" >"$OUT"
[[ "$check" == 0 && "$live_check" == 0 ]]
