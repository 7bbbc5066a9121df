# bench/results/write-cg-s23.sh: the session-23 harness behind bench/README.md's 'Round 2' instruction counts
# (executor-only callgrind of multi/copy/single writes; paths of that session's helper D)
#!/bin/bash
# cg.sh TAG KIND TABLE [explicit] : callgrind (executor only) of KIND into TABLE in a fresh copy of the snapshot
B=/opt/pgD/usr/lib/postgresql/15/bin; W=/tmp/hD/wp; TAG=$1; KIND=$2; T=$3; X=${4:-}
COLS="ts timestamptz, device_id int, category text, amount numeric(10,2)"
ROWSEL="SELECT now(), 1 + (random() * 999)::int, 'cat_' || lpad(floor(random() * 50)::int::text, 2, '0'), round((random() * 1000)::numeric, 2)"
if [ ! -d $W/snap ]; then
  su postgres -c "$B/initdb -D $W/snap -A trust -U postgres --no-sync" >/dev/null
  printf '%s\n' "shared_preload_libraries = 'pg_cq'" "fsync = off" "synchronous_commit = off" "full_page_writes = off" "shared_buffers = 256MB" "autovacuum = off" >>$W/snap/postgresql.conf
  printf '%s\n' "CREATE EXTENSION pg_cq" "CREATE TABLE w_plain ($COLS)" "CREATE TABLE w_trk ($COLS)" \
    "CREATE TABLE q_trk WITH (cq.trigger = 'available_now') AS SELECT device_id FROM w_trk WITH NO DATA" \
    "COPY ($ROWSEL FROM generate_series(1, 10000)) TO '$W/rows.csv' (FORMAT csv)" | su postgres -c "$B/postgres --single -D $W/snap postgres" > $W/setup.log 2>&1
  sed 's/$/,3/' $W/rows.csv > $W/rows3.csv; chmod 644 $W/*.csv
fi
rm -rf $W/data; cp -a $W/snap $W/data
c=""; v=""; [ -n "$X" ] && { c=", cq_xid"; v=", '3'::xid8"; }
f=$W/$TAG.sql
case $KIND in
 multi) echo "INSERT INTO $T (ts, device_id, category, amount$c) $ROWSEL$v FROM generate_series(1, 20000)" > $f ;;
 copy) if [ -z "$X" ]; then echo "COPY $T (ts, device_id, category, amount) FROM '$W/rows.csv' (FORMAT csv)" > $f; else echo "COPY $T (ts, device_id, category, amount, cq_xid) FROM '$W/rows3.csv' (FORMAT csv)" > $f; fi ;;
 single) for ((i = 0; i < 2000; i++)); do echo "INSERT INTO $T (ts, device_id, category, amount$c) VALUES (now(), $((i % 1000)), 'cat_$((i % 50))', $((i * 7919 % 100000)) / 100.0$v)"; done > $f ;;
esac
chown postgres $W
su postgres -c "cd $W && valgrind --tool=callgrind --callgrind-out-file=$W/cg.$TAG --toggle-collect=ExecutorStart --toggle-collect=standard_ExecutorRun --toggle-collect=standard_ExecutorFinish --toggle-collect=ProcessUtility $B/postgres --single -D $W/data postgres" < $f 2>&1 | sed -nE 's/.*Collected : ([0-9]+).*/\1/p'
