#!/usr/bin/env bash
# bench/results/ingest-s41-cpu.sh: the backend's CPU time (/proc/PID/schedstat)
# of CALL cq.run for a batch of 50,000 new rows of bench/run.sh's ingest source
# and query (bench/ingest_cg.sh's rows: one ts, ~50 categories), warm (after
# six batches of 1000 rows in the same session), two builds' pg_cq.so
# alternated on fresh copies of one data directory (200,000 rows folded).
# Env: PGBIN, CQ_TMPBASE, BASE_SO, NEW_SO (the two builds' pg_cq.so), LIB (the
# server's $libdir: each is copied there as pg_cq.so in turn, NEW_SO left),
# PORT (55411), ROUNDS (3), REPS (5 batches a round).
set -euo pipefail
W="$CQ_TMPBASE/pg_cq_ingest_cpu"; LIB="${LIB:-$("$PGBIN/pg_config" --pkglibdir)}"
ROUNDS=${ROUNDS:-3}; REPS=${REPS:-5}; PORT=${PORT:-55411}
TS="timestamptz '2026-12-03 12:00:30+00'"
INS="INSERT INTO ing_tracked (ts, device_id, category, amount) SELECT $TS, 1 + (random() * 999)::int, 'cat_' || lpad(floor(random() * 50)::int::text, 2, '0'), round((random() * 1000)::numeric, 2) FROM generate_series(1, 1000)"
AGG="SELECT date_bin('1 minute', ts, '2000-01-01') AS minute, category, count(*) AS n, sum(amount) AS total, avg(amount) AS avg_amount, max(amount) AS max_amount FROM ing_tracked GROUP BY 1, 2"
rm -rf $W; mkdir -p $W; chown postgres $W
run() { runuser -u postgres -- "$@"; }
psqlc() { run $PGBIN/psql -X -q -h $W -p $PORT -d postgres "$@"; }
cp $NEW_SO $LIB/.pg_cq.so.tmp && mv $LIB/.pg_cq.so.tmp $LIB/pg_cq.so
run $PGBIN/initdb -D $W/data -A trust -U postgres -E UTF8 --locale=C.UTF-8 --no-sync >/dev/null
printf '%s\n' "port = $PORT" "listen_addresses = ''" "unix_socket_directories = '$W'" "shared_preload_libraries = 'pg_cq'" \
  "fsync = off" "synchronous_commit = off" "full_page_writes = off" "autovacuum = off" "shared_buffers = 512MB" \
  "work_mem = 64MB" "max_parallel_workers_per_gather = 0" "jit = off" "cq.run_in_worker = off" "cq.state_image_interval = 0" \
  "max_wal_size = 4GB" >> $W/data/postgresql.conf
run $PGBIN/pg_ctl -D $W/data -l $W/log -w start >/dev/null
{
  echo "CREATE EXTENSION pg_cq;"
  echo "CREATE TABLE ing_tracked (ts timestamptz, device_id int, category text, amount numeric(10,2)) WITH (autovacuum_enabled = off);"
  echo "CREATE TABLE ing_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $AGG;"
  echo "SELECT setseed(0.5);"
  for ((k = 0; k < 20; k++)); do echo "${INS/generate_series(1, 1000)/generate_series(1, 10000)};"; done
  echo "CALL cq.run('ing_agg');"
  echo "CHECKPOINT;"
} | psqlc >/dev/null
run $PGBIN/pg_ctl -D $W/data -w stop >/dev/null
{
  echo "SELECT setseed(0.25);"
  for ((k = 0; k < 6; k++)); do echo "$INS;"; echo "CALL cq.run('ing_agg');"; done
  echo "SELECT pg_backend_pid() AS pid \\gset"
  for ((r = 0; r < REPS; r++)); do
    for ((k = 0; k < 50; k++)); do echo "$INS;"; done
    echo "SELECT 'before', split_part(pg_read_file('/proc/' || pg_backend_pid() || '/schedstat'), ' ', 1);"
    echo "CALL cq.run('ing_agg');"
    echo "SELECT 'after', split_part(pg_read_file('/proc/' || pg_backend_pid() || '/schedstat'), ' ', 1);"
  done
  echo "SELECT 'check', (SELECT sum(n) FROM ing_agg) = (SELECT count(*) FROM ing_tracked);"
} > $W/rounds.sql
for ((r = 1; r <= ROUNDS; r++)); do
  for side in base new; do
    so=$NEW_SO; [[ $side == base ]] && so=$BASE_SO
    cp $so $LIB/.pg_cq.so.tmp && mv $LIB/.pg_cq.so.tmp $LIB/pg_cq.so
    rm -rf $W/run; cp -a $W/data $W/run
    run $PGBIN/pg_ctl -D $W/run -l $W/log-run -w start >/dev/null
    out="$(psqlc -At -f $W/rounds.sql 2>&1)"
    run $PGBIN/pg_ctl -D $W/run -w stop >/dev/null
    grep -q '^check|t' <<<"$out" || { echo "$out" | tail; exit 1; }
    ticks="$(awk -F'|' '/^before/{b=$2} /^after/{printf "%.1f ", ($2-b)/1e6}' <<<"$out")"
    echo "round $r $side: backend CPU ms per 50k-row batch: $ticks"
  done
done
cp $NEW_SO $LIB/.pg_cq.so.tmp && mv $LIB/.pg_cq.so.tmp $LIB/pg_cq.so
