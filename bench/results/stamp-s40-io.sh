#!/usr/bin/env bash
# bench/results/stamp-s40-io.sh: session 40: what a backend hands the kernel
# (/proc/self/io wchar: bytes given to write(), syscw: write calls) and the
# CPU it spends (/proc/self/stat utime, stime), per transaction, for the
# tables of bench/write_path.sh BENCH_FLOOR=1 BENCH_FLOOR_TYPE="xid8 tid int4
# bytea": untracked, tracked, and twins with a column of each type and a
# constant default.  ROUNDS rounds, tables in rotating order, each table in
# a session of its own per round: STMTS statements after 3 of warm-up.
# wchar counts the WAL this backend writes itself (at commit, or when the WAL
# buffers fill; the WAL writer may have written some first) and the zeroed
# pages it writes to extend the table.
# Usage: PGBIN=... CQ_TMPBASE=... stamp-s40-io.sh; PORT (55430), ROUNDS (5),
# STMTS (100), KINDS ("multi copy").
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
PORT="${PORT:-55430}" ROUNDS="${ROUNDS:-5}" STMTS="${STMTS:-100}" KINDS="${KINDS:-multi copy}"
trap 'stop_cluster stamp_io' EXIT
start_cluster stamp_io "$PORT" "shared_buffers = 256MB" "max_wal_size = 4GB" "autovacuum = off" >/dev/null
W="$(cluster_dir stamp_io)/files"
mkdir -p "$W" && { ! is_root || chown postgres:postgres "$W"; }
P=("$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -At)
COLS="ts timestamptz, device_id int, category text, amount numeric(10,2)"
ROWSEL="SELECT now(), 1 + (random() * 999)::int, 'cat_' || lpad(floor(random() * 50)::int::text, 2, '0'), round((random() * 1000)::numeric, 2)"
declare -A DEF=([xid8]="'0'::pg_catalog.xid8" [tid]="'(0,1)'::pg_catalog.tid" [int4]="0" [bytea]="'\\x0000000000'::pg_catalog.bytea")
TABLES=(w_plain w_trk)
{
    echo "CREATE EXTENSION pg_cq; CREATE TABLE w_plain ($COLS); CREATE TABLE w_trk ($COLS);"
    echo "CREATE TABLE q_trk WITH (cq.trigger = 'available_now') AS SELECT device_id FROM w_trk WITH NO DATA;"
    for ty in xid8 tid int4 bytea; do
        echo "CREATE TABLE w_const_$ty ($COLS); ALTER TABLE w_const_$ty ADD COLUMN cq_xid pg_catalog.$ty;"
        echo "ALTER TABLE w_const_$ty ALTER COLUMN cq_xid SET DEFAULT ${DEF[$ty]};"
    done
    echo "COPY ($ROWSEL FROM generate_series(1, 10000)) TO '$W/rows.csv' (FORMAT csv);"
} | "${P[@]}" 2>&1 | grep -v NOTICE || true
for ty in xid8 tid int4 bytea; do TABLES+=("w_const_$ty"); done
PROBE="SELECT (regexp_match(pg_read_file('/proc/self/io'), 'wchar: (\\d+)'))[1] || ' ' || (regexp_match(pg_read_file('/proc/self/io'), 'syscw: (\\d+)'))[1] || ' ' || split_part(regexp_replace(pg_read_file('/proc/self/stat'), '^.*\\) ', ''), ' ', 12) || ' ' || split_part(regexp_replace(pg_read_file('/proc/self/stat'), '^.*\\) ', ''), ' ', 13);"
n=${#TABLES[@]}
for kind in $KINDS; do
    stmts="$STMTS"; [[ "$kind" == multi ]] || stmts=$((STMTS / 5))
    for ((r = 0; r < ROUNDS; r++)); do
        for ((i = 0; i < n; i++)); do
            t="${TABLES[$(((i + r) % n))]}"
            if [[ "$kind" == multi ]]; then
                prep="PREPARE p AS INSERT INTO $t (ts, device_id, category, amount) $ROWSEL FROM generate_series(1, 1000);"; ex="EXECUTE p;"
            else
                prep=""; ex="COPY $t (ts, device_id, category, amount) FROM '$W/rows.csv' (FORMAT csv);"
            fi
            out="$({
                echo "$prep"
                for ((k = 0; k < 3; k++)); do echo "$ex"; done
                echo "$PROBE"
                for ((k = 0; k < stmts; k++)); do echo "$ex"; done
                echo "$PROBE"
            } | "${P[@]}" | grep -E '^[0-9]+ [0-9]+ [0-9]+ [0-9]+$')"
            read -r a0 b0 u0 s0 a1 b1 u1 s1 <<<"$(tr '\n' ' ' <<<"$out")"
            echo "$kind $t $r $(((a1 - a0) / stmts)) $(echo "scale=2; ($b1 - $b0) / $stmts" | bc) $(echo "scale=4; ($u1 - $u0) * 10 / $stmts" | bc) $(echo "scale=4; ($s1 - $s0) * 10 / $stmts" | bc)"
        done
    done
done | tee "$W/raw.txt" >&2
echo "| write | table | wchar bytes/xact | write calls/xact | user ms/xact | system ms/xact |"
echo "|---|---|---:|---:|---:|---:|"
for kind in $KINDS; do
    for t in "${TABLES[@]}"; do
        awk -v k="$kind" -v t="$t" '$1 == k && $2 == t { n++; w[n] = $4; c[n] = $5; u[n] = $6; s[n] = $7 }
            function med(a,    i, j, x, m) { for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
                m = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2; return m }
            END { printf "| %s | %s | %.0f | %.2f | %.3f | %.3f |\n", k, t, med(w), med(c), med(u), med(s) }' "$W/raw.txt"
    done
done
