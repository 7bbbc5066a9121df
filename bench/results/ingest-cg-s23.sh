# bench/results/ingest-cg-s23.sh: goal 3, callgrind of a warm 60k-row fold vs the plain GROUP BY (session 23)
#!/bin/bash
# g3.sh TAG : callgrind of one CALL cq.run over 60k new rows (60 x 1000-row INSERTs) vs plain GROUP BY of the same rows
B=/opt/pgD/usr/lib/postgresql/15/bin; W=/tmp/hD/wp; TAG=$1
AGG="SELECT date_bin('1 minute', ts, '2000-01-01') AS minute, category, count(*) AS n, sum(amount) AS total, avg(amount) AS avg_amount, max(amount) AS max_amount FROM %s GROUP BY 1, 2"
ROWSEL="SELECT now(), 1 + (random() * 999)::int, 'cat_' || lpad(floor(random() * 50)::int::text, 2, '0'), round((random() * 1000)::numeric, 2)"
rm -rf $W/g3data; cp -a $W/snap $W/g3data
{ echo "CREATE TABLE ev (ts timestamptz, device_id int, category text, amount numeric(10,2))"
  echo "CREATE TABLE ev_agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $(printf "$AGG" ev)"
  echo "CREATE TABLE evp (ts timestamptz, device_id int, category text, amount numeric(10,2))"
  for i in $(seq 1 20); do echo "INSERT INTO ev (ts, device_id, category, amount) $ROWSEL FROM generate_series(1, 1000)"; done
  echo "CALL cq.run('ev_agg')"
  for i in $(seq 1 60); do echo "INSERT INTO ev (ts, device_id, category, amount) $ROWSEL FROM generate_series(1, 1000)"; done
  echo "INSERT INTO evp SELECT ts, device_id, category, amount FROM ev WHERE cq_xid::text::bigint > (SELECT max(cq_xid)::text::bigint - 61 FROM ev)"
  echo "VACUUM ANALYZE evp"
} > $W/g3setup.sql
chown -R postgres $W
su postgres -c "$B/postgres --single -D $W/g3data postgres" < $W/g3setup.sql > $W/g3setup.log 2>&1
grep -i error $W/g3setup.log | head
{ echo "CALL cq.run('ev_agg')"; for i in $(seq 1 60); do echo "INSERT INTO ev (ts, device_id, category, amount) $ROWSEL FROM generate_series(1, 1000)"; done; echo "CALL cq.run('ev_agg')"; } > $W/g3run.sql
echo "SELECT count(*) FROM ($(printf "$AGG" evp)) s WHERE s IS NOT NULL" > $W/g3gb.sql
cp -a $W/g3data $W/g3data.snap 2>/dev/null
su postgres -c "cd $W && valgrind --tool=callgrind --callgrind-out-file=$W/g3.$TAG.run --collect-atstart=no --toggle-collect=cq_run --dump-after=cq_run $B/postgres --single -D $W/g3data postgres" < $W/g3run.sql >/dev/null 2>&1; for f in $W/g3.$TAG.run.*; do echo "$f $(grep -h "^summary\|^totals" $f | head -1)"; done
su postgres -c "cd $W && valgrind --tool=callgrind --callgrind-out-file=$W/g3.$TAG.gb --collect-atstart=no --toggle-collect=standard_ExecutorRun $B/postgres --single -D $W/g3data postgres" < $W/g3gb.sql 2>&1 | sed -nE 's/.*Collected : ([0-9]+).*/gb \1/p'
