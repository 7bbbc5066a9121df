#!/bin/bash
# bench/results/write-s42-cpu.sh: session 42, on-CPU time per statement (the backend's /proc/self/schedstat, ns) of
# KIND (copy: COPY of 10,000 rows from /tmp/hA/s/rows.csv; multi: 1000-row INSERT ... SELECT), N rounds
# interleaved (tracked, twin, untracked, then reversed) in one session, into fresh tables; needs a running
# scratch cluster (socket /tmp/hA/s, port 55411, pg_cq preloaded) and rows.csv there.
# ab.sh KIND N: on-CPU ns per statement (schedstat), tables w_trk w_const w_plain fresh, interleaved
KIND=$1; N=$2
PGB=/opt/pgA/usr/lib/postgresql/15/bin; P="$PGB/psql -X -q -At -h /tmp/hA/s -p 55411 -U postgres postgres"
COLS="ts timestamptz, device_id int, category text, amount numeric(10,2)"
ROWSEL="SELECT now(), 1 + (random() * 999)::int, 'cat_' || lpad(floor(random() * 50)::int::text, 2, '0'), round((random() * 1000)::numeric, 2)"
$P -c "DROP TABLE IF EXISTS q_trk; DROP TABLE IF EXISTS w_trk, w_const, w_plain" -c "CREATE TABLE w_plain ($COLS)" -c "CREATE TABLE w_trk ($COLS)" -c "CREATE TABLE w_const ($COLS)" -c "CREATE TABLE q_trk WITH (cq.trigger = 'available_now') AS SELECT device_id FROM w_trk WITH NO DATA" -c "ALTER TABLE w_const ADD COLUMN cq_xid pg_catalog.xid8 DEFAULT '0'::xid8" -c "CHECKPOINT" >/dev/null 2>&1
{ echo "DROP TABLE IF EXISTS cpu; CREATE TABLE cpu (t text, ns bigint);"; echo "CREATE FUNCTION pg_temp.st() RETURNS bigint LANGUAGE sql AS \$\$ SELECT split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint \$\$;"
  for i in $(seq 1 $N); do if ((i % 2)); then L="w_trk w_const w_plain"; else L="w_plain w_const w_trk"; fi; for t in $L; do echo "SELECT pg_temp.st() AS s0 \\gset"
    if [ $KIND = copy ]; then echo "COPY $t (ts, device_id, category, amount) FROM '/tmp/hA/s/rows.csv' (FORMAT csv);"; else echo "INSERT INTO $t (ts, device_id, category, amount) $ROWSEL FROM generate_series(1, 1000);"; fi
    echo "INSERT INTO cpu SELECT '$t', pg_temp.st() - :s0;"; done; done
  echo "SELECT t, (percentile_cont(0.5) WITHIN GROUP (ORDER BY ns)/1e6)::numeric(8,3) AS median_ms, (avg(ns)/1e6)::numeric(8,3) AS mean_ms FROM cpu GROUP BY t ORDER BY t;"; } > /tmp/hA/s/ab_$KIND.sql
$P -f /tmp/hA/s/ab_$KIND.sql 2>&1 | grep -v NOTICE
