#!/bin/bash
# bench/results/write-s42-cg.sh: session 42, callgrind of 3 statements of 10,000 rows (KIND=copy: COPY; KIND=multi:
# INSERT ... SELECT) per table in a single-user backend (ProcessUtility/Executor only), instructions / 30,000 = per row.
# run.sh OUTDIR TABLE...: callgrind of COPY 10,000 rows (executor/ProcessUtility only) into each table
set -euo pipefail
W="$1"; shift
PGBIN=${PGBIN:-/opt/pgA/usr/lib/postgresql/15/bin}
COLS="ts timestamptz, device_id int, category text, amount numeric(10,2)"
KIND=${KIND:-copy}
ROWSEL="SELECT now(), 1 + (random() * 999)::int, 'cat_' || lpad(floor(random() * 50)::int::text, 2, '0'), round((random() * 1000)::numeric, 2)"
mkdir -p $W; chown postgres $W
if [ ! -d $W/snap ]; then
  runuser -u postgres -- $PGBIN/initdb -D $W/snap -A trust -U postgres --no-sync >/dev/null
  printf '%s\n' "shared_preload_libraries = 'pg_cq'" "fsync = off" "synchronous_commit = off" "full_page_writes = off" "shared_buffers = 256MB" "autovacuum = off" >> $W/snap/postgresql.conf
  { echo "CREATE EXTENSION pg_cq"
    for t in w_plain w_trk w_const; do echo "CREATE TABLE $t ($COLS)"; done
    echo "CREATE TABLE q_trk WITH (cq.trigger = 'available_now') AS SELECT device_id FROM w_trk WITH NO DATA"
    echo "ALTER TABLE w_const ADD COLUMN cq_xid pg_catalog.xid8"
    echo "ALTER TABLE w_const ALTER COLUMN cq_xid SET DEFAULT '0'::pg_catalog.xid8"
    echo "COPY ($ROWSEL FROM generate_series(1, 10000)) TO '$W/rows.csv' (FORMAT csv)"
  } | runuser -u postgres -- $PGBIN/postgres --single -D $W/snap postgres > $W/setup.log 2>&1
fi
for t in "$@"; do
  rm -rf $W/data; cp -a $W/snap $W/data
  case $KIND in
   copy) { for i in 1 2 3; do echo "COPY $t (ts, device_id, category, amount) FROM '$W/rows.csv' (FORMAT csv)"; done; } > $W/in.$t.sql ;;
   multi) { for i in 1 2 3; do echo "INSERT INTO $t (ts, device_id, category, amount) $ROWSEL FROM generate_series(1, 10000)"; done; } > $W/in.$t.sql ;;
  esac
  (cd $W; runuser -u postgres -- valgrind --tool=callgrind --callgrind-out-file=$W/cg.$KIND.$t --toggle-collect=ProcessUtility --toggle-collect=standard_ExecutorRun --toggle-collect=standard_ExecutorFinish --toggle-collect=ExecutorStart $PGBIN/postgres --single -D $W/data postgres < $W/in.$t.sql 2>&1 | sed -nE "s/.*Collected : ([0-9]+).*/$t \1/p")
done
