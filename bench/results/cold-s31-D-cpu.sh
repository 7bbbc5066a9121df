# exp3.sh QUERY ROUNDS: phase A by CPU: a new query over ev (never analyzed), VACUUM, then per round
# 10k rows + CALL from a fresh session handed to a worker: caller CPU + worker CPU; then REFRESH CPU x3
source /tmp/hD/env.sh
set +e
q=$1; rounds=${2:-5}
psql_run "SET client_min_messages = warning;" "CREATE TABLE $q WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS $(agg_select ev);" "VACUUM ev;" "CHECKPOINT;" >/dev/null
wcpu() { local s=0 p; for p in $(psql_val "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_cq worker'"); do s=$((s + $(cut -d' ' -f1 /proc/$p/schedstat))); done; echo $s; }
for ((r = 1; r <= rounds; r++)); do
    n=$(psql_val "UPDATE exp_rnd SET n = n + 1 RETURNING n")
    psql_run "$(gen_rows ev 10000 "$(psql_val "SELECT timestamptz '2024-01-04' + ($n - 1) * interval '10 minutes'")" '10 minutes')" >/dev/null
    w0=$(wcpu)
    read -r c w < <(PGOPTIONS="-c cq.run_in_worker=on" cpu_sql "CALL cq.run('$q');")
    w1=$(wcpu)
    echo "$q A round $r: caller CPU $c ms + worker CPU $(awk -v a=$w0 -v b=$w1 'BEGIN{printf "%.1f", (b-a)/1e6}') ms, wall $w ms (rows $(psql_val "SELECT num_input_rows FROM cq.progress WHERE name = '$q' ORDER BY batch_id DESC LIMIT 1"))"
done
