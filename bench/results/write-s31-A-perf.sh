#!/bin/bash
# bench/results/write-s31-A-perf.sh: session 31 (helper A), `perf record -e cpu-clock` of the
# backends serving pgbench runs of the 1000-row INSERT ... SELECT (goal 1), user and kernel, for
# w_plain / w_trk / w_const / w_func (see write-s31-A-cg.sh), on a cluster set up as
# bench/write_path.sh sets up its own.  perf attaches to the postmaster (inherited by the
# backends it forks).  Usage: write-s31-A-perf.sh OUTDIR; needs PGBIN, PORT; SECS (10),
# ROUNDS (2: the tables in turn, ROUNDS times, one perf file per table and round).
set -euo pipefail
W="$1"; PORT="${PORT:-56001}"; SECS="${SECS:-10}"; ROUNDS="${ROUNDS:-2}"
# shellcheck source=bench/results/write-s31-A-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/write-s31-A-lib.sh"
twins_cluster "$W" "$PORT"
PM="$(head -n 1 "$W/data/postmaster.pid")"
for t in w_plain w_trk w_const w_func; do
    echo "INSERT INTO $t (ts, device_id, category, amount) $ROWSEL FROM generate_series(1, 1000);" >"$W/multi_$t.sql"
done
for ((r = 1; r <= ROUNDS; r++)); do
    for t in w_plain w_trk w_const w_func; do
        perf record -q -e cpu-clock -F 2000 -p "$PM" -o "$W/perf.$t.$r" -- sleep $((SECS + 1)) 2>/dev/null &
        pp=$!
        sleep 0.3
        out="$("$PGBIN/pgbench" -h "$W" -p "$PORT" -U postgres -n -M prepared -T "$SECS" -c 1 -j 1 -f "$W/multi_$t.sql" postgres 2>&1)"
        wait "$pp" || true
        x="$(sed -nE 's/^number of transactions actually processed: ([0-9]+).*/\1/p' <<<"$out")"
        echo "$t $r xacts $x"
        echo "$x" >"$W/xacts.$t.$r"
    done
done
"${P[@]}" -At -c "SELECT relname, pg_relation_size(oid) / 8192 AS pages, reltuples FROM pg_class WHERE relname LIKE 'w\_%' ORDER BY 1"
# WAL bytes and heap growth per row: 20 statements of 1000 rows into each table
for t in w_plain w_trk w_const w_func; do
    printf '%s\n' "SELECT pg_current_wal_insert_lsn() AS l0, pg_relation_size('$t') AS s0 \\gset" \
        "INSERT INTO $t (ts, device_id, category, amount) $ROWSEL FROM generate_series(1, 20000);" \
        "SELECT '$t', 'WAL bytes/row', round(pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'l0') / 20000.0, 1), 'heap bytes/row', round((pg_relation_size('$t') - :s0) / 20000.0, 1), 'avg tuple len', (SELECT round(avg(pg_column_size(x.*)), 1) FROM (SELECT * FROM $t LIMIT 1000) x);" \
        | "${P[@]}" -At
done
