#!/bin/bash
# bench/results/write-s31-A-cg.sh: session 31 (helper A), whole-process callgrind of prepared
# 1000-row INSERT ... SELECT (goal 1): N1 and N2 EXECUTEs, each its own transaction, in a
# single-user backend, into tables that already hold PREFILL rows; per row = (N2 - N1) / 1000 /
# (N2 - N1 statements).  Tables: w_plain (untracked), w_trk (tracked: the source of a paused
# query), w_const (plain PostgreSQL: the same nullable xid8 column with the constant default
# '0'), w_func (plain PostgreSQL: the same column with pg_current_xact_id() as its default, no
# index or trigger).  Usage: write-s31-A-cg.sh OUTDIR [TABLES...]; needs PGBIN.
# Writes OUTDIR/cg.TABLE.N (callgrind files) and prints "TABLE N instructions".
set -euo pipefail
W="$1"; shift
TABLES=("${@:-w_plain w_trk w_const w_func}")
read -r -a TABLES <<<"${TABLES[*]}"
N1="${N1:-10}" N2="${N2:-30}" PREFILL="${PREFILL:-100000}" MULTI="${MULTI:-generate}"
COLS="ts timestamptz, device_id int, category text, amount numeric(10,2)"
ROWSEL="SELECT now(), 1 + (random() * 999)::int, 'cat_' || lpad(floor(random() * 50)::int::text, 2, '0'), round((random() * 1000)::numeric, 2)"
mkdir -p "$W" && chown postgres "$W"
if [ ! -d "$W/snap" ]; then
    su postgres -c "$PGBIN/initdb -D $W/snap -A trust -U postgres --no-sync" >/dev/null
    printf '%s\n' "shared_preload_libraries = 'pg_cq'" "fsync = off" "synchronous_commit = off" "full_page_writes = off" \
        "shared_buffers = 256MB" "autovacuum = off" "max_wal_size = 4GB" >>"$W/snap/postgresql.conf"
    {
        echo "CREATE EXTENSION pg_cq"
        for t in w_plain w_trk w_const w_func; do echo "CREATE TABLE $t ($COLS)"; done
        echo "CREATE TABLE q_trk WITH (cq.trigger = 'available_now') AS SELECT device_id FROM w_trk WITH NO DATA"
        echo "ALTER TABLE w_const ADD COLUMN cq_xid pg_catalog.xid8"
        echo "ALTER TABLE w_const ALTER COLUMN cq_xid SET DEFAULT '0'::pg_catalog.xid8"
        echo "ALTER TABLE w_func ADD COLUMN cq_xid pg_catalog.xid8"
        echo "ALTER TABLE w_func ALTER COLUMN cq_xid SET DEFAULT pg_catalog.pg_current_xact_id()"
        for t in w_plain w_trk w_const w_func; do
            echo "INSERT INTO $t (ts, device_id, category, amount) $ROWSEL FROM generate_series(1, $PREFILL)"
        done
        echo "CHECKPOINT"
    } | su postgres -c "$PGBIN/postgres --single -D $W/snap postgres" >"$W/setup.log" 2>&1
    ! grep -q ERROR "$W/setup.log" || { cat "$W/setup.log" >&2; exit 1; }
fi
for t in "${TABLES[@]}"; do
    for n in $N1 $N2; do
        rm -rf "$W/data" && cp -a "$W/snap" "$W/data"
        f="$W/in.$t.$n.sql"
        {
            if [ "$MULTI" = values ]; then
                # a 1000-row multi-VALUES statement (parse and analyze of 1000 rows each time: not prepared)
                for ((i = 0; i < n + 5; i++)); do
                    printf 'INSERT INTO %s (ts, device_id, category, amount) VALUES ' "$t"
                    for ((j = 0; j < 1000; j++)); do
                        ((j == 0)) || printf ', '
                        printf "(now(), %d, 'cat_%02d', %d.%02d)" $(((i * 1000 + j) % 1000 + 1)) $((j % 50)) $((j * 7 % 1000)) $((j % 100))
                    done
                    echo
                done
            else
                echo "PREPARE p AS INSERT INTO $t (ts, device_id, category, amount) $ROWSEL FROM generate_series(1, 1000)"
                # the first 5 and the generic plan's first run: warm-up, the same in both counts
                for ((i = 0; i < n + 6; i++)); do echo "EXECUTE p"; done
            fi
        } >"$f"
        (cd "$W" && su postgres -c "valgrind --tool=callgrind --callgrind-out-file=$W/cg.$t.$n $PGBIN/postgres --single -D $W/data postgres" <"$f" 2>&1) |
            sed -nE "s/.*Collected : ([0-9]+).*/$t $n \\1/p"
    done
done
