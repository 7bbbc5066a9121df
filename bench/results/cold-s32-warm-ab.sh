source /tmp/hA/exp/lib.sh
LIB=/opt/pgA/usr/lib/postgresql/15/lib/pg_cq.so
K=${K0:-2000}
for pair in $(seq 1 ${PAIRS:-3}); do
  if (( pair % 2 )); then order="main new"; else order="new main"; fi
  for v in $order; do
    cp /tmp/hA/${v}_pg_cq.so $LIB
    su postgres -c "$PGBIN/pg_ctl -D /tmp/hA/pg_cq_exp/data -l /tmp/hA/pg_cq_exp/postgres.log -w restart -m fast" >/dev/null 2>&1
    for i in 1 2 3; do newrows >/dev/null; call "" "-c cq.run_in_worker=on" >/dev/null; sleep 1; done
    K=$((K+10)); out=$(K0=$K SLEEP=3 bash /tmp/hA/exp/first.sh); K=$((K+10))
    echo "$out" | sed "s/^/pair$pair $v /"
  done
done
cp /tmp/hA/new_pg_cq.so $LIB
