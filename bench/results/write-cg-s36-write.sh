#!/bin/bash
# bench/results/write-cg-s36-write.sh (session 36, helper "write") OUTDIR [CASES] [TABLES]: whole-process callgrind differences for the write path.
# cases: single (per transaction), multi (per row of 1000-row INSERT ... SELECT), copy (per row of 10,000-row COPY)
set -euo pipefail
W="$1"; CASES="${2:-single multi copy}"; TABLES="${3:-w_plain w_trk w_const}"
PGBIN="${PGBIN:?}"
PREFILL="${PREFILL:-100000}"
COLS="ts timestamptz, device_id int, category text, amount numeric(10,2)"
ROWSEL="SELECT timestamptz '2026-12-03 12:00:30+00', 1 + (random() * 999)::int, 'cat_' || lpad(floor(random() * 50)::int::text, 2, '0'), round((random() * 1000)::numeric, 2)"
S="${SNAP:-/tmp/hD/cgw/snap}"
mkdir -p "$W"
if [ ! -d "$S" ]; then
    $PGBIN/initdb -D $S -A trust -U postgres --no-sync >/dev/null
    printf '%s\n' "shared_preload_libraries = 'pg_cq'" "fsync = off" "synchronous_commit = off" "full_page_writes = off" \
        "shared_buffers = 256MB" "autovacuum = off" "max_wal_size = 4GB" >>"$S/postgresql.conf"
    {
        echo "CREATE EXTENSION pg_cq"
        for t in w_plain w_trk w_const; do echo "CREATE TABLE $t ($COLS)"; done
        echo "CREATE TABLE q_trk WITH (cq.trigger = 'available_now') AS SELECT device_id FROM w_trk WITH NO DATA"
        echo "ALTER TABLE w_const ADD COLUMN cq_xid pg_catalog.xid8"
        echo "ALTER TABLE w_const ALTER COLUMN cq_xid SET DEFAULT '0'::pg_catalog.xid8"
        echo "SELECT setseed(0.5)"
        for t in w_plain w_trk w_const; do
            echo "INSERT INTO $t (ts, device_id, category, amount) $ROWSEL FROM generate_series(1, $PREFILL)"
        done
        echo "COPY ($ROWSEL FROM generate_series(1, 10000)) TO '$S/../rows.csv' (FORMAT csv)"
        echo "CHECKPOINT"
    } | $PGBIN/postgres --single -D $S postgres >"$W/setup.log" 2>&1
    ! grep -q ERROR "$W/setup.log" || { cat "$W/setup.log" >&2; exit 1; }
fi
for c in $CASES; do
  case $c in single) N1=300 N2=900 R=1;; multi) N1=10 N2=30 R=1000;; copy) N1=2 N2=6 R=10000;; esac
  for t in $TABLES; do
    for n in $N1 $N2; do
        rm -rf "$W/data" && cp -a "$S" "$W/data"
        f="$W/in.$c.$t.$n.sql"
        {
            echo "SELECT setseed(0.5)"
            case $c in
            single) echo "PREPARE p(int) AS INSERT INTO $t (ts, device_id, category, amount) VALUES (now(), \$1, 'cat_1', 12.5)"
                    for ((i = 0; i < n + 10; i++)); do echo "EXECUTE p($i)"; done ;;
            multi) echo "PREPARE p AS INSERT INTO $t (ts, device_id, category, amount) $ROWSEL FROM generate_series(1, 1000)"
                    for ((i = 0; i < n + 6; i++)); do echo "EXECUTE p"; done ;;
            copy) for ((i = 0; i < n + 2; i++)); do echo "COPY $t (ts, device_id, category, amount) FROM '$S/../rows.csv' (FORMAT csv)"; done ;;
            esac
        } >"$f"
        (cd "$W" && valgrind --tool=callgrind --callgrind-out-file=$W/cg.$c.$t.$n $PGBIN/postgres --single -D $W/data postgres <"$f" >"$W/out.$c.$t.$n" 2>&1)
        grep -q ERROR "$W/out.$c.$t.$n" && { grep ERROR "$W/out.$c.$t.$n" | head -3; exit 1; }
    done
    a=$(sed -nE 's/^(summary|totals): ([0-9]+).*/\2/p' $W/cg.$c.$t.$N1 | head -1)
    b=$(sed -nE 's/^(summary|totals): ([0-9]+).*/\2/p' $W/cg.$c.$t.$N2 | head -1)
    echo "$c $t $(( (b - a) / ((N2 - N1) * R) )) per $( [ $c = single ] && echo xact || echo row)"
  done
done
