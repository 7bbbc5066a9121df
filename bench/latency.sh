#!/usr/bin/env bash
# bench/latency.sh -- commit-to-target latency of a trigger '0' query.
#
# A writer (pgbench, one single-row INSERT per transaction, Poisson arrivals
# with --rate) feeds a source at about 1, 100 and 1,000 rows/s; a stateless
# append query copies every row to its target in the background.  With
# track_commit_timestamp = on, the latency of a row is exact:
#     commit time of the target row (the batch's transaction)
#   - commit time of the source row (the writer's transaction)
# i.e. from the moment a row is visible in the source until it is visible in
# the target.  p50 and p99 per rate.
#
# Rates above 2,500 rows/s use one pgbench client per 2,500 rows/s (one cannot
# commit that fast here); the report gives the rate reached.
#
# Then, with LAT_QUERIES (e.g. "1 10 100", issue 12 goal 5): for each N, N
# trigger '0' update queries with different groupings over one source
# (mq_src_N), a writer at LAT_Q_RATE single-row commits/s for LAT_Q_SECS
# seconds; per (sampled row, query) the latency is the commit time of the
# first batch of that query whose end snapshot sees the row minus the row's
# commit time.  Every batch's offset row (the catalog keeps only the last
# 100 batches) is read back after the run from the WAL through a logical
# decoding slot (test_decoding; the cluster then runs wal_level = logical),
# so the measurement adds nothing to a batch.  LAT_Q_PROBE=trigger uses the
# earlier probe instead: a row trigger on cq.offsets copying each offset
# row into mq_batches in the batch's transaction.  A user trigger on
# cq.offsets makes every batch record its offset with a statement instead
# of directly, plus a PL/pgSQL call: about a fifth of the workers' CPU at
# 100 queries.
# "pg_cq CPU" = utime + stime of the pg_cq worker and scheduler processes
# over the run (/proc/PID/stat; a process that exits during the run is
# not counted: the report says so if that happened).
# Its profile (a "profile N:" line per N after the table): the share of the
# cores pg_cq took (its CPU over the run's wall time) and the cycle of a
# query's batches, the time between two commits of the same query's
# batches while the writer ran (median and p99 over every query): a row
# waits for its query's next batch, so once pg_cq is at the cores' limit
# the latency is this cycle (one batch of every query), not a wake-up.
#
# Env: PGBIN (server binaries), CQ_BENCH_PORT (default 55462), CQ_TMPBASE,
#      LAT_RATES (default "1 100 1000"), LAT_SECONDS (default "60 20 20"),
#      LAT_CLIENTS (pgbench clients; default 1 below 5,000 rows/s, else 2),
#      LAT_QUERIES (default empty: no many-queries part), LAT_Q_RATE (1000),
#      LAT_Q_SECS (20), LAT_Q_SAMPLE (rows sampled per N, default 2000),
#      LAT_Q_PROBE (decode, the default, or trigger: see above),
#      LAT_DATA (machine-readable results, appended: "rate RATE ROWS BATCHES
#      P50 P99 MAX ACHIEVED_RATE CPU_S" and "queries N RATE ROWS P50 P99 MAX
#      CPU_S LOST_PIDS"), LAT_SAMPLES (directory: per-row latencies,
#      samples-RATE.txt, one ms value a line),
#      LAT_CONF: more postgresql.conf lines, ';'-separated (e.g.
#      "cq.coalesce_max_delay = 0"),
#      LAT_DURABLE=1: fsync = on, synchronous_commit = on (default: the test
#      clusters' fsync = off, synchronous_commit = off),
#      LAT_REPORT (report file; default bench/results/latency-<time>.txt),
#      LAT_WORK (directory for pgbench scripts and logs; default bench/results).
# "pg_cq CPU" is measured for the rates too (their profile: the share of a
# core the workers took, CPU per batch); LAT_DATA's rate lines end with it.
# Needs pg_cq installed for $PGBIN (make install, or scripts/test.sh's build).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

PORT="${CQ_BENCH_PORT:-55462}"
read -r -a RATES <<<"${LAT_RATES:-1 100 1000}"
read -r -a SECS <<<"${LAT_SECONDS:-60 20 20}"
OUT="${LAT_WORK:-$REPO_ROOT/bench/results}"
mkdir -p "$OUT"
trap 'stop_cluster latency' EXIT

durable=()
[[ "${LAT_DURABLE:-}" == 1 ]] && durable=("fsync = on" "synchronous_commit = on")
PROBE="${LAT_Q_PROBE:-decode}"
[[ "$PROBE" == decode || "$PROBE" == trigger ]] || { echo "LAT_Q_PROBE: decode or trigger" >&2; exit 2; }
[[ -n "${LAT_QUERIES:-}" && "$PROBE" == decode ]] && durable+=("wal_level = logical" "max_replication_slots = 4")
IFS=';' read -r -a extra <<<"${LAT_CONF:-}"
start_cluster latency "$PORT" "track_commit_timestamp = on" "cq.max_workers = 2" "${durable[@]}" "${extra[@]}"
PSQL=("$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -At)
PGBENCH="$PGBIN/pgbench"

"${PSQL[@]}" <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION pg_cq;
CREATE TABLE lat_src (id bigserial, payload text);
CREATE TABLE lat_out WITH (cq.output_mode = 'append', cq.trigger = '0')
  AS SELECT id, payload FROM lat_src WITH NO DATA;
SQL
printf "INSERT INTO lat_src (payload) VALUES ('x');\n" >"$OUT/latency_insert.sql"
chmod 644 "$OUT/latency_insert.sql"

# cq_cpu: "pid ticks" of every pg_cq worker and scheduler process
cq_cpu() {
    local pid
    for pid in $("${PSQL[@]}" -c "SELECT pid FROM pg_stat_activity WHERE backend_type IN ('pg_cq worker', 'pg_cq scheduler')"); do
        awk -v p="$pid" '{ sub(/^.*\) /, ""); print p, $12 + $13 }' "/proc/$pid/stat" 2>/dev/null || true
    done
}
TCK="$(getconf CLK_TCK)"
# cpu_delta: CPU_S = seconds of CPU of the pg_cq processes from the C0
# snapshot to C1; LOST = processes of C0 gone since (their CPU is missing)
cpu_delta() {
    local pid ticks=0
    LOST=0
    for pid in "${!C1[@]}"; do ticks=$((ticks + C1[$pid] - ${C0[$pid]:-0})); done
    for pid in "${!C0[@]}"; do [[ -n "${C1[$pid]:-}" ]] || LOST=$((LOST + 1)); done
    CPU_S=$(awk -v t="$ticks" -v h="$TCK" 'BEGIN { printf "%.2f", t / h }')
}

machine="$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
report="${LAT_REPORT:-$OUT/latency-$(date -u +%Y%m%dT%H%M%SZ).txt}"
{
    echo "pg_cq commit-to-target latency, trigger '0', append query; $machine"
    echo "server: $("${PSQL[@]}" -c "SELECT string_agg(name || '=' || setting, ', ') FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'track_commit_timestamp')")"
    printf '%-10s %8s %8s %10s %10s %10s %12s %10s %12s %10s\n' "rate/s" "rows" "batches" "p50 ms" "p99 ms" "max ms" "pg_cq CPU s" "% of core" "CPU us/batch" "rows/batch"
} | tee "$report"

for i in "${!RATES[@]}"; do
    rate="${RATES[$i]}" secs="${SECS[$i]:-20}"
    "${PSQL[@]}" -o /dev/null -c "SET cq.allow_source_truncate = on" -c "TRUNCATE lat_src" -c "SELECT cq.reset('lat_out')"
    # batch 0 of the new run (empty history) first
    for _ in $(seq 1 500); do
        [[ "$("${PSQL[@]}" -c "SELECT count(*) FROM cq.offsets WHERE name = 'lat_out'")" != 0 ]] && break
        sleep 0.02
    done
    b0=$("${PSQL[@]}" -c "SELECT coalesce(max(batch_id), 0) FROM cq.offsets WHERE name = 'lat_out'")
    clients="${LAT_CLIENTS:-$(( (rate + 2499) / 2500 ))}"
    declare -A C0=() C1=()
    while read -r pid t; do C0[$pid]=$t; done < <(cq_cpu)
    "$PGBENCH" -n -c "$clients" -j "$clients" -R "$rate" -T "$secs" -f "$OUT/latency_insert.sql" >"$OUT/pgbench-$rate.log" 2>&1
    # wait (bounded) until every row reached the target
    for _ in $(seq 1 1500); do
        done_=$("${PSQL[@]}" -c "SELECT (SELECT count(*) FROM lat_out) = (SELECT count(*) FROM lat_src)")
        [[ "$done_" == t ]] && break
        sleep 0.02
    done
    while read -r pid t; do C1[$pid]=$t; done < <(cq_cpu)
    cpu_delta; cpu=$CPU_S
    unset C0 C1
    "${PSQL[@]}" -F ' ' <<SQL | while read -r n p50 p99 mx; do
SELECT count(*),
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::numeric, 2),
       round((percentile_cont(0.99) WITHIN GROUP (ORDER BY ms))::numeric, 2),
       round(max(ms)::numeric, 2)
  FROM (SELECT extract(epoch FROM pg_xact_commit_timestamp(o.xmin) - pg_xact_commit_timestamp(s.xmin)) * 1000 AS ms
          FROM lat_src s JOIN lat_out o USING (id)) l;
SQL
        batches=$("${PSQL[@]}" -c "SELECT max(batch_id) - $b0 FROM cq.offsets WHERE name = 'lat_out'")
        achieved=$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')
        printf '%-10s %8s %8s %10s %10s %10s %12s %10s %12s %10s%s\n' "$rate" "$n" "$batches" "$p50" "$p99" "$mx" "$cpu" \
            "$(awk -v c="$cpu" -v s="$secs" 'BEGIN { printf "%.0f", 100 * c / s }')" \
            "$(awk -v c="$cpu" -v b="$batches" 'BEGIN { printf "%.0f", b ? c * 1e6 / b : 0 }')" \
            "$(awk -v n="$n" -v b="$batches" 'BEGIN { printf "%.1f", b ? n / b : 0 }')" \
            "$( ((achieved < rate * 9 / 10)) && echo "   (reached ~$achieved/s)")$( ((LOST)) && echo "   ($LOST pg_cq processes exited: CPU undercounted)")" | tee -a "$report"
        [[ -z "${LAT_DATA:-}" ]] || echo "rate $rate $n $batches $p50 $p99 $mx $achieved $cpu" >>"$LAT_DATA"
    done
    if [[ -n "${LAT_SAMPLES:-}" ]]; then
        mkdir -p "$LAT_SAMPLES"
        "${PSQL[@]}" -c "SELECT round((extract(epoch FROM pg_xact_commit_timestamp(o.xmin) - pg_xact_commit_timestamp(s.xmin)) * 1000)::numeric, 3)
                           FROM lat_src s JOIN lat_out o USING (id)" >"$LAT_SAMPLES/samples-$rate.txt"
    fi
done

# ---- many queries over one source (issue 12 goal 5) ----
read -r -a NQS <<<"${LAT_QUERIES:-}"
((${#NQS[@]} == 0)) && { echo "report: ${report#"$REPO_ROOT"/}"; exit 0; }
QPROF=()
QRATE="${LAT_Q_RATE:-1000}" QSECS="${LAT_Q_SECS:-20}" QSAMPLE="${LAT_Q_SAMPLE:-2000}"
"${PSQL[@]}" <<'SQL'
SET client_min_messages = warning;
SELECT cq.drop_query('lat_out', drop_target => true);
-- xid: the batch's transaction (its commit time is when the rows arrived)
CREATE TABLE mq_batches (name text, snap_xmax xid8, end_offset pg_snapshot, xid xid, batch_id bigint);
CREATE INDEX ON mq_batches (name, snap_xmax);
SQL
if [[ "$PROBE" == trigger ]]; then
    "${PSQL[@]}" <<'SQL'
CREATE FUNCTION public.mq_copy() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.mq_batches
      VALUES (NEW.name, pg_catalog.pg_snapshot_xmax(NEW.end_offset), NEW.end_offset,
              pg_catalog.pg_current_xact_id()::text::xid, NEW.batch_id);
    RETURN NULL;
END $$;
CREATE TRIGGER mq_copy AFTER INSERT ON cq.offsets FOR EACH ROW EXECUTE FUNCTION public.mq_copy();
SQL
fi
{
    echo
    echo "many trigger '0' update queries over one source, $QRATE single-row commits/s for $QSECS s; latency per (row, query), $QSAMPLE rows sampled"
    printf '%-8s %8s %10s %10s %10s %12s %14s %8s %14s\n' "queries" "rows" "p50 ms" "p99 ms" "max ms" "pg_cq CPU s" "CPU ms/1k rows" "batches" "CPU us/batch"
} | tee -a "$report"
for nq in "${NQS[@]}"; do
    src="mq_src_$nq"
    {
        echo "SET client_min_messages = warning;"
        echo "CREATE TABLE $src (id bigserial, a int, b int, c int, v int);"
        for ((i = 0; i < nq; i++)); do
            # different groupings: one of three columns modulo 2..35
            col=$(echo "a b c" | cut -d' ' -f$((i % 3 + 1)))
            echo "CREATE TABLE mq_${nq}_$i WITH (cq.output_mode = 'update', cq.trigger = '0') AS SELECT $col % $((i / 3 + 2)) AS g, count(*) AS n, sum(v) AS s FROM $src GROUP BY 1;"
        done
    } | "${PSQL[@]}" >/dev/null
    printf '%s\n' '\set a random(1, 1000000)' '\set b random(1, 1000000)' '\set c random(1, 1000000)' '\set v random(1, 1000)' \
        "INSERT INTO $src (a, b, c, v) VALUES (:a, :b, :c, :v);" >"$OUT/mq_insert.sql"
    # every query's batch 0 done
    for _ in $(seq 1 1500); do
        [[ "$("${PSQL[@]}" -c "SELECT count(DISTINCT name) FROM cq.offsets WHERE name LIKE 'mq\_${nq}\_%'")" == "$nq" ]] && break
        sleep 0.02
    done
    [[ "$PROBE" == trigger ]] ||
        "${PSQL[@]}" -o /dev/null -c "SELECT pg_create_logical_replication_slot('mq_probe', 'test_decoding')"
    declare -A C0=() C1=()
    nbatches="SELECT coalesce(sum(m), 0) FROM (SELECT max(batch_id) AS m FROM cq.offsets WHERE name LIKE 'mq\\_${nq}\\_%' GROUP BY name) o"
    b0=$("${PSQL[@]}" -c "$nbatches")
    while read -r pid t; do C0[$pid]=$t; done < <(cq_cpu)
    t0=$(date +%s.%N)
    "$PGBENCH" -n -c 1 -j 1 -R "$QRATE" -T "$QSECS" -f "$OUT/mq_insert.sql" >"$OUT/pgbench-mq-$nq.log" 2>&1
    # until every query's last batch sees the last row (bounded: 120 s)
    last=$("${PSQL[@]}" -c "SELECT max(cq_xid) FROM $src")
    for _ in $(seq 1 6000); do
        behind=$("${PSQL[@]}" -c "SELECT $nq - count(*) FROM (SELECT DISTINCT ON (name) end_offset FROM cq.offsets WHERE name LIKE 'mq\_${nq}\_%' ORDER BY name, batch_id DESC) o WHERE pg_visible_in_snapshot('$last'::xid8, end_offset)")
        [[ "$behind" == 0 ]] && break
        sleep 0.02
    done
    while read -r pid t; do C1[$pid]=$t; done < <(cq_cpu)
    t1=$(date +%s.%N)
    nb=$(($("${PSQL[@]}" -c "$nbatches") - b0))
    if [[ "$PROBE" == decode ]]; then
        # every batch's offset row, with its transaction, from the WAL
        "${PSQL[@]}" -o /dev/null <<'SQL'
INSERT INTO mq_batches
SELECT name, pg_snapshot_xmax(end_offset), end_offset, xid, batch_id
  FROM (SELECT xid, substring(data FROM ' batch_id\[bigint\]:([0-9]+)')::bigint AS batch_id, substring(data FROM ' name\[text\]:''([^'']*)''') AS name,
               substring(data FROM ' end_offset\[pg_snapshot\]:''([^'']*)''')::pg_snapshot AS end_offset
          FROM pg_logical_slot_get_changes('mq_probe', NULL, NULL)
         WHERE data LIKE 'table cq.offsets: INSERT:%') c;
SELECT pg_drop_replication_slot('mq_probe');
SQL
    fi
    cpu_delta; cpu=$CPU_S lost=$LOST
    "${PSQL[@]}" -F ' ' <<SQL | while read -r n p50 p99 mx; do
SELECT count(*),
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::numeric, 2),
       round((percentile_cont(0.99) WITHIN GROUP (ORDER BY ms))::numeric, 2),
       round(max(ms)::numeric, 2)
  FROM (SELECT extract(epoch FROM pg_xact_commit_timestamp(b.xid) - pg_xact_commit_timestamp(s.xmin)) * 1000 AS ms
          FROM (SELECT xmin, cq_xid FROM $src WHERE id % greatest(1, (SELECT count(*) FROM $src) / $QSAMPLE) = 0) s
          CROSS JOIN generate_series(0, $nq - 1) q(i)
          CROSS JOIN LATERAL (SELECT b.xid FROM mq_batches b
                               WHERE b.name = 'mq_${nq}_' || q.i AND b.snap_xmax > s.cq_xid
                                 AND pg_visible_in_snapshot(s.cq_xid, b.end_offset)
                               ORDER BY b.snap_xmax LIMIT 1) b) l;
SQL
        rows=$("${PSQL[@]}" -c "SELECT count(*) FROM $src")
        printf '%-8s %8s %10s %10s %10s %12s %14s %8s %14s%s\n' "$nq" "$rows" "$p50" "$p99" "$mx" "$cpu" \
            "$(awk -v c="$cpu" -v r="$rows" 'BEGIN { printf "%.1f", r ? c * 1e6 / r : 0 }')" "$nb" \
            "$(awk -v c="$cpu" -v b="$nb" 'BEGIN { printf "%.0f", b ? c * 1e6 / b : 0 }')" \
            "$( ((behind != 0)) && echo "   ($behind queries not caught up after 120 s)")$( ((lost)) && echo "   ($lost pg_cq processes exited during the run: CPU undercounted)")" | tee -a "$report"
        [[ -z "${LAT_DATA:-}" ]] || echo "queries $nq $QRATE $rows $p50 $p99 $mx $cpu $lost" >>"$LAT_DATA"
    done
    # the profile of the figure: a row waits for its query's next batch, so
    # the latency follows the cycle of each query's batches (commit to
    # commit, while the writer ran), and how much of the machine pg_cq took
    rows=$("${PSQL[@]}" -c "SELECT count(*) FROM $src")
    read -r g50 g99 ng < <("${PSQL[@]}" -F ' ' <<SQL
WITH w AS (SELECT min(pg_xact_commit_timestamp(xmin)) + interval '1 s' AS lo, max(pg_xact_commit_timestamp(xmin)) AS hi FROM $src),
     b AS (SELECT name, pg_xact_commit_timestamp(xid) AS ct FROM mq_batches WHERE name LIKE 'mq\_${nq}\_%'),
     g AS (SELECT ct, extract(epoch FROM ct - lag(ct) OVER (PARTITION BY name ORDER BY ct)) * 1000 AS gap FROM b)
SELECT coalesce(round((percentile_cont(0.5) WITHIN GROUP (ORDER BY gap))::numeric, 1), 0),
       coalesce(round((percentile_cont(0.99) WITHIN GROUP (ORDER BY gap))::numeric, 1), 0), count(*)
  FROM g, w WHERE g.gap IS NOT NULL AND g.ct > w.lo AND g.ct <= w.hi;
SQL
)
    QPROF+=("$(awk -v n="$nq" -v c="$cpu" -v t0="$t0" -v t1="$t1" -v cores="$(nproc)" -v g50="$g50" -v g99="$g99" -v ng="$ng" -v r="$rows" -v b="$nb" \
        'BEGIN { printf "profile %s: pg_cq took %.2f of %d cores (%.2f s of CPU in %.1f s); a query'"'"'s batch committed every %s ms (median; p99 %s ms; %d gaps), %.1f rows per batch", n, (t1 > t0 ? c / (t1 - t0) : 0), cores, c, t1 - t0, g50, g99, ng, b ? r * n / b : 0 }')")
    {
        echo "SET client_min_messages = warning;"
        for ((i = 0; i < nq; i++)); do echo "SELECT cq.drop_query('mq_${nq}_$i', drop_target => true);"; done
        echo "DROP TABLE $src;"
    } | "${PSQL[@]}" >/dev/null
    unset C0 C1
done
if ((${#QPROF[@]})); then
    {
        printf '%s\n' "${QPROF[@]}"
        echo "(a row waits for its query's next batch: p50 is about half that cycle and p99 its tail; with pg_cq at the cores' limit the cycle is the CPU of one batch of every query over the cores it gets)"
    } | tee -a "$report"
fi
echo "report: ${report#"$REPO_ROOT"/}"
