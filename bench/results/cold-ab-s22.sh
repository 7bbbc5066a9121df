#!/bin/bash
# bench/results/cold-ab-s22.sh (session s22): copies of /opt/pgC with the old and new library in /tmp/hC/pg{old,new};
# ab.sh ROUNDS HISTORY NEW: two clusters (old / new library), same data; per round
# insert NEW rows in both, then a cold CALL in each (order alternates), then a
# cold CALL with nothing new in each; CPU (schedstat) and minflt of the backend.
set -e
ROUNDS=${1:-15}; HIST=${2:-1000000}; NEW=${3:-10000}
OUT=/tmp/hC/ab.txt; : > $OUT
for V in old new; do
  B=/tmp/hC/pg$V/usr/lib/postgresql/15/bin; D=/tmp/hC/ab_$V
  su postgres -c "$B/pg_ctl -D $D/data -m immediate stop" >/dev/null 2>&1 || true
  rm -rf $D; mkdir -p $D; chown postgres $D
  su postgres -c "$B/initdb -D $D/data -A trust -U postgres -E UTF8 --locale=C.UTF-8 --no-sync" >/dev/null
  cat >> $D/data/postgresql.conf <<CONF
port = 55740
listen_addresses = ''
unix_socket_directories = '$D'
shared_preload_libraries = 'pg_cq'
max_worker_processes = 16
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 512MB
max_wal_size = 4GB
autovacuum = off
CONF
  su postgres -c "$B/pg_ctl -D $D/data -l $D/log -w start" >/dev/null
done
P() { /tmp/hC/pg$1/usr/lib/postgresql/15/bin/psql -X -q -v ON_ERROR_STOP=1 -h /tmp/hC/ab_$1 -p 55740 -U postgres -At "${@:2}"; }
gen() { echo "INSERT INTO ev (ts, device_id, category, amount) SELECT '$1'::timestamptz + (i * interval '$3') / $2, i % 1000, 'c' || (i % 20), (i % 10000) / 100.0 FROM generate_series(1, $2) i;"; }
for V in old new; do
  P $V -c "SET client_min_messages = warning" -c "CREATE EXTENSION pg_cq" \
    -c "CREATE TABLE ev (id bigserial, ts timestamptz, device_id int, category text, amount numeric(10,2)) WITH (autovacuum_enabled = off)" \
    -c "$(gen 2026-01-01 $HIST '3 days')" -c "CREATE INDEX ON ev (id)" \
    -c "CREATE TABLE agg WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS SELECT date_bin('1 minute', ts, '2000-01-01') AS minute, category, count(*) AS n, sum(amount) AS total, avg(amount) AS avg_amount, max(amount) AS max_amount FROM ev GROUP BY 1, 2" \
    -c "VACUUM ev" -c "CHECKPOINT" >/dev/null
done
STATQ="SELECT pg_catalog.split_part(pg_catalog.pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint AS c, pg_catalog.split_part(pg_catalog.pg_read_file('/proc/self/stat'), ' ', 10)::bigint AS f"
cold() { printf '%s \\gset s_\nCALL cq.run($$agg$$);\n%s \\gset e_\n\\echo :e_c :s_c :e_f :s_f\n' "$STATQ" "$STATQ" | P $1 2>/dev/null | awk '{printf "%.3f %d\n", ($1-$2)/1e6, $3-$4}'; }
cached() { printf 'SET client_min_messages = warning;\nCALL cq.run($$agg$$);\n%s\n%s \\gset s_\nCALL cq.run($$agg$$);\n%s \\gset e_\n\\echo :e_c :s_c :e_f :s_f\n' "$2" "$STATQ" "$STATQ" | P $1 2>/dev/null | awk '{printf "%.3f %d\n", ($1-$2)/1e6, $3-$4}'; }
for ((r = 1; r <= ROUNDS; r++)); do
  ts=$(date -u -d "2026-01-04 00:00 UTC + $((10 * r)) minutes" '+%Y-%m-%d %H:%M:%S+00')
  ts2=$(date -u -d "2026-01-04 00:05 UTC + $((10 * r)) minutes" '+%Y-%m-%d %H:%M:%S+00')
  order=$( ((r % 2)) && echo "old new" || echo "new old")
  for V in $order; do P $V -c "$(gen "$ts" $NEW '5 minutes')" >/dev/null; done
  for V in $order; do echo "$V cold10k $(cold $V)" >> $OUT; done
  for V in $order; do echo "$V cold0 $(cold $V)" >> $OUT; done
  for V in $order; do echo "$V cached10k $(cached $V "$(gen "$ts2" $NEW '5 minutes')")" >> $OUT; done
done
for V in old new; do su postgres -c "/tmp/hC/pg$V/usr/lib/postgresql/15/bin/pg_ctl -D /tmp/hC/ab_$V/data -m fast stop" >/dev/null; done
python3 - <<'PY'
import collections, statistics
d=collections.defaultdict(list)
for l in open('/tmp/hC/ab.txt'):
    v,k,c,f=l.split(); d[(v,k)].append((float(c),int(f)))
for k in ('cold10k','cold0','cached10k'):
    for v in ('old','new'):
        xs=d[(v,k)]
        print(f"{k:10s} {v}: CPU median {statistics.median(x[0] for x in xs):7.2f} ms  minflt median {statistics.median(x[1] for x in xs):6.0f}  (n={len(xs)})")
    # paired differences
    pairs=list(zip(d[('old',k)],d[('new',k)]))
    diffs=[o[0]-n[0] for o,n in pairs]
    print(f"{k:10s} old-new CPU paired median {statistics.median(diffs):6.2f} ms; new faster in {sum(1 for x in diffs if x>0)}/{len(diffs)}")
PY
