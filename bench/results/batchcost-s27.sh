#!/usr/bin/env bash
# Session 27 (C): the scripts behind bench/results/batchcost-s27.md, as run (not part of make bench).
# The cluster: bench/history.sh with CQ_KEEP_CLUSTER=1 BENCH_HIST_ROUNDS=1 BENCH_PORT=55740 (1M and 10M sources, the benchmark's update query on the store).

# ===== warm.sh =====
# #!/usr/bin/env bash
# # warm.sh TABLE NEW ROUNDS [PERF_OUT]: long-lived session runs CALL cq.run(agg_TABLE) after
# # another session inserts NEW rows; prints per-round backend CPU ms of the CALL
# set -euo pipefail
# source /work/wt-s27-batchcost/bench/lib.sh
# H=/tmp/hC/pg_cq_bench_hist; P=${BENCH_PORT:-55740}
# T=$1; NEW=$2; R=$3; PERF=${4:-}
# PS="$PGBIN/psql -h $H -p $P -U postgres -X -At postgres"
# coproc SESS { stdbuf -oL $PS 2>&1; }
# send() { printf '%s\n\\echo __END__\n' "$1" >&"${SESS[1]}"; local l; while read -r l <&"${SESS[0]}"; do [[ "$l" == __END__ ]] && break; echo "$l"; done; }
# pid=$(send "SELECT pg_backend_pid();")
# # warm up: two calls
# for i in 1 2; do
#   k=$($PS -c "SELECT count(*) FROM cq.progress WHERE name = 'agg_$T'")
#   $PS -c "$(gen_rows "ev_$T" "$NEW" "$(date -u -d "2024-01-04 00:00 UTC + $((10 * k)) minutes" '+%Y-%m-%d %H:%M:%S+00')" '10 minutes')" >/dev/null
#   send "CALL cq.run('agg_$T');" >/dev/null
# done
# out=""
# for ((r=0; r<R; r++)); do
#   k=$($PS -c "SELECT count(*) FROM cq.progress WHERE name = 'agg_$T'")
#   $PS -c "$(gen_rows "ev_$T" "$NEW" "$(date -u -d "2024-01-04 00:00 UTC + $((10 * k)) minutes" '+%Y-%m-%d %H:%M:%S+00')" '10 minutes')" >/dev/null
#   if [[ -n "$PERF" && $r == 0 ]]; then perf record -e cpu-clock -F 10000 --call-graph dwarf -p $pid -o $PERF >/dev/null 2>&1 & ppid=$!; sleep 1; fi
#   c0=$(cut -d' ' -f1 /proc/$pid/schedstat)
#   send "CALL cq.run('agg_$T');" >/dev/null
#   c1=$(cut -d' ' -f1 /proc/$pid/schedstat)
#   out+="$(awk -v a=$c0 -v b=$c1 'BEGIN{printf "%.2f", (b-a)/1e6}') "
# done
# if [[ -n "$PERF" ]]; then kill -INT $ppid; wait $ppid || true; fi
# echo "pid=$pid $T new=$NEW cpu_ms: $out median $(median $out)"
# send '\q' >/dev/null 2>&1 || true

# ===== cgrun.sh =====
# #!/usr/bin/env bash
# # cgrun.sh LIB TAG: restart bench cluster under callgrind with LIB, run warm rounds, print Ir per CALL
# set -uo pipefail
# export PGBIN=/opt/pgC/usr/lib/postgresql/15/bin
# LIB=$1; TAG=$2; D=/tmp/hC/pg_cq_bench_hist/data; OUT=/tmp/hC/cg/$TAG
# su postgres -c "$PGBIN/pg_ctl -D $D -m fast stop" >/dev/null 2>&1
# cp $LIB /opt/pgC/usr/lib/postgresql/15/lib/pg_cq.so.tmp && mv /opt/pgC/usr/lib/postgresql/15/lib/pg_cq.so.tmp /opt/pgC/usr/lib/postgresql/15/lib/pg_cq.so
# rm -rf $OUT; mkdir -p $OUT; chmod 777 $OUT
# su postgres -c "cd $OUT && nohup valgrind --tool=callgrind --trace-children=yes --toggle-collect=cq_run --dump-after=cq_run --callgrind-out-file=$OUT/cg.%p $PGBIN/postgres -D $D > $OUT/pm.log 2>&1 &"
# for i in $(seq 1 60); do $PGBIN/pg_isready -q -h /tmp/hC/pg_cq_bench_hist -p 55740 && break; sleep 2; done
# for spec in "10m 10000" "10m 1000" "10m 1" "1m 10000" "1m 1"; do
#   line=$(bash /tmp/hC/warm.sh $spec 3 | tail -1); pid=${line#pid=}; pid=${pid%% *}
#   irs=$(for n in 3 4 5; do grep -h '^summary:' $OUT/cg.$pid.$n | awk '{printf "%.2f ", $2/1e6}'; done)
#   echo "$TAG $spec Ir(M): $irs"
# done
# su postgres -c "$PGBIN/pg_ctl -D $D -m fast stop" >/dev/null 2>&1

# ===== cgparts.sh =====
# #!/usr/bin/env bash
# # cgparts.sh DIR: per dumped CALL (3..5) of each warm backend: total and parts (M Ir)
# for f in $(ls -tr $1/cg.*.[345] 2>/dev/null); do
#   callgrind_annotate --inclusive=yes $f 2>/dev/null > /tmp/hC/cga.txt
#   g() { grep -m1 -E "$1" /tmp/hC/cga.txt | awk '{gsub(",","",$1); printf "%.2f", $1/1e6}'; }
#   printf '%s total %s d %s target %s summarize %s bitmap %s heapvis %s\n' "$(basename $f)" "$(g 'PROGRAM TOTALS')" "$(g 'fold_delta_ext')" "$(g ':SPI_execute_plan \[')" "$(g 'cq_source_summarize')" "$(g 'horizon_getbitmap')" "$(g 'HeapTupleSatisfiesVisibility')"
# done

# ===== cpuab.sh =====
# #!/usr/bin/env bash
# # cpuab.sh ROUNDS: interleaved A/B of backend CPU per warm CALL, main vs v1 library (restart per switch)
# set -uo pipefail
# export PGBIN=/opt/pgC/usr/lib/postgresql/15/bin
# D=/tmp/hC/pg_cq_bench_hist/data
# for ((r=1; r<=$1; r++)); do
#   for lib in main v1; do
#     [[ $((r % 2)) == 0 ]] && { [[ $lib == main ]] && lib=v1 || lib=main; }
#     su postgres -c "$PGBIN/pg_ctl -D $D -m fast stop" >/dev/null 2>&1
#     cp /tmp/hC/pg_cq_$lib.so /opt/pgC/usr/lib/postgresql/15/lib/pg_cq.so.tmp && mv /opt/pgC/usr/lib/postgresql/15/lib/pg_cq.so.tmp /opt/pgC/usr/lib/postgresql/15/lib/pg_cq.so
#     su postgres -c "$PGBIN/pg_ctl -D $D -l /tmp/hC/pg_cq_bench_hist/postgres.log -W start" >/dev/null
#     for i in $(seq 1 30); do $PGBIN/pg_isready -q -h /tmp/hC/pg_cq_bench_hist -p 55740 && break; sleep 1; done
#     for spec in "10m 10000" "1m 10000" "10m 1000" "10m 1" "1m 1"; do
#       echo "round $r lib $lib load $(cut -d' ' -f1 /proc/loadavg) $(bash /tmp/hC/warm.sh $spec 5 | tail -1)"
#     done
#   done
# done

# ===== refresh.sh =====
# #!/usr/bin/env bash
# # refresh.sh ROUNDS: REFRESH MATERIALIZED VIEW of the bench query at 10M (backend CPU and wall), alternating with a warm 10k batch
# set -uo pipefail
# export PGBIN=/opt/pgC/usr/lib/postgresql/15/bin
# source /work/wt-s27-batchcost/bench/lib.sh
# export PGHOST=/tmp/hC/pg_cq_bench_hist PGPORT=55740 PGUSER=postgres PGDATABASE=postgres
# psql_run "SET client_min_messages = warning;" "CREATE MATERIALIZED VIEW IF NOT EXISTS mv_10m AS $(agg_select ev_10m) WITH NO DATA;" >/dev/null
# for ((r=1; r<=$1; r++)); do
#   echo "round $r REFRESH cpu/wall ms: $(cpu_sql 'REFRESH MATERIALIZED VIEW mv_10m;') load $(cut -d' ' -f1 /proc/loadavg)"
#   echo "round $r $(bash /tmp/hC/warm.sh 10m 10000 5 | tail -1)"
# done
