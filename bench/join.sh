#!/usr/bin/env bash
# bench/join.sh -- a join of two streams at 10k rows/s each (issue 11):
# batch cost and buffered state over time, with the time-range condition
# bounding the state.
#
#   imp (id, ad, ts), clk (id, ad, ts); 100k ads, so an impression matches
#   about one click;
#   j: SELECT i.id, c.id FROM imp i JOIN clk c ON c.ad = i.ad
#        AND c.ts BETWEEN i.ts AND i.ts + interval '10 seconds'
#      cq.watermark = '5 seconds' (both), append, trigger 'available_now'.
#
# Event time is simulated: round r (1 .. BENCH_JOIN_SECONDS) inserts one
# second of event time into each stream, BENCH_JOIN_RATE rows (10k) in one
# INSERT each (clicks 0-2 s after their impression second, so a little out
# of order), then runs one batch (CALL cq.run) and takes its
# cq.progress.duration_ms and num_state_rows_per_source.  A stream at
# RATE rows/s is sustained on one core when the batch of one second of both
# streams takes well under a second.  Every BENCH_JOIN_SAMPLE rounds the
# buffers are sampled (the "over time" table); the buffers should level off
# at about (10 s + 5 s) x RATE impressions and 5 s x RATE clicks.
# Sanity: at the end the target equals the plain join of everything.
#
# Env: BENCH_PORT (default 55460), BENCH_JOIN_RATE (10000),
# BENCH_JOIN_SECONDS (60), BENCH_JOIN_SAMPLE (5), BENCH_OUT
# (bench/results/join.md), BENCH_SCALE (scales the rate), plus
# scripts/common.sh's PGBIN, CQ_TMPBASE, CQ_SKIP_APT, CQ_SKIP_BUILD,
# CQ_KEEP_CLUSTER.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
cd "$REPO_ROOT"

BENCH_SCALE="${BENCH_SCALE:-1}"
BENCH_PORT="${BENCH_PORT:-55460}"
RATE=$(scaled "${BENCH_JOIN_RATE:-10000}" 100)
SECS="${BENCH_JOIN_SECONDS:-60}"
SAMPLE="${BENCH_JOIN_SAMPLE:-5}"
BENCH_OUT="${BENCH_OUT:-$REPO_ROOT/bench/results/join.md}"

trap 'stop_cluster bench_join' EXIT
section "build + cluster"
ensure_packages
build_install
# autovacuum on (the default): the buffers are deleted from every batch and
# need vacuuming as in production; the sources are not vacuumed (append-only)
CQ_PRELOAD="${CQ_PRELOAD-pg_cq}" start_cluster bench_join "$BENCH_PORT" \
    "shared_buffers = 512MB" "max_wal_size = 4GB" "jit = off" "${BENCH_JOIN_AUTOVACUUM:-autovacuum = on}"

section "setup: $(human "$RATE") rows/s per stream, $SECS s"
psql_run "SET client_min_messages = error;" \
    "CREATE EXTENSION IF NOT EXISTS pg_cq;" \
    "CREATE TABLE imp (id bigint, ad int, ts timestamptz) WITH (autovacuum_enabled = off);" \
    "CREATE TABLE clk (id bigint, ad int, ts timestamptz) WITH (autovacuum_enabled = off);" \
    "CREATE TABLE j WITH (cq.source = 'imp, clk', cq.event_time = 'imp.ts, clk.ts', cq.watermark = '5 seconds', cq.trigger = 'available_now')
       AS SELECT i.id AS imp, c.id AS clk FROM imp i JOIN clk c ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '10 seconds';" >/dev/null

# round R: second R of event time in both streams
round_sql() {
    local r="$1"
    printf '%s\n' \
        "INSERT INTO imp SELECT ($r - 1) * $RATE + g, (random() * 100000)::int, timestamptz '2026-01-01' + ($r - 1 + (g - 1)::float8 / $RATE) * interval '1 second' FROM generate_series(1, $RATE) g;" \
        "INSERT INTO clk SELECT ($r - 1) * $RATE + g, (random() * 100000)::int, timestamptz '2026-01-01' + ($r - 1 + (g - 1)::float8 / $RATE + random() * 2) * interval '1 second' FROM generate_series(1, $RATE) g;"
}

# A CALL runs the batch of the new rows and, when the watermark advanced, a
# no-data batch that evicts: a round's figures are the sums over its batches
# (state: the last one's).
durs=() samples=() ins=() last=-1
for ((r = 1; r <= SECS; r++)); do
    ins+=("$(time_sql "$(round_sql "$r")")")
    psql_run "SET client_min_messages = warning;" "CALL cq.run('j');" >/dev/null
    line="$(psql_val "SELECT sum(duration_ms) || ' ' || sum(num_input_rows) || ' ' || sum(num_output_rows) || ' ' || (array_agg(num_state_rows_per_source[1] ORDER BY batch_id DESC))[1] || ' ' || (array_agg(num_state_rows_per_source[2] ORDER BY batch_id DESC))[1] || ' ' || coalesce(sum(num_rows_dropped_by_watermark), 0) || ' ' || max(batch_id) || ' ' || count(*) FROM cq.progress WHERE name = 'j' AND batch_id > $last")"
    read -r d n o sl sr late last nb <<<"$line"
    ((r > 1)) && durs+=("$d")   # batch 1 finds empty buffers
    if ((r % SAMPLE == 0 || r == 1)); then
        samples+=("| $r | $nb | $n | $o | $sl | $sr | $(fmt_ms "$d") | $late |")
        info "second $r: $nb batches $(fmt_ms "$d"), $n rows in, $o out, buffered $sl + $sr, late $late"
    fi
done

section "sanity"
bad=$(psql_val "SELECT count(*) FROM ((SELECT i.id, c.id FROM imp i JOIN clk c ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '10 seconds' EXCEPT ALL TABLE j) UNION ALL (TABLE j EXCEPT ALL SELECT i.id, c.id FROM imp i JOIN clk c ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + interval '10 seconds')) x;")
dropped=$(psql_val "SELECT coalesce(sum(num_rows_dropped_by_watermark), 0) FROM cq.progress WHERE name = 'j'")
info "target vs plain join: $bad rows differ ($dropped rows dropped as late)"
bytes=$(psql_val "SELECT pg_total_relation_size(format('cq_state.jl_%s', id)) + pg_total_relation_size(format('cq_state.jr_%s', id)) FROM cq.queries WHERE name = 'j'")
sorted=$(printf '%s\n' "${durs[@]}" | sort -g)
p90=$(awk -v n="${#durs[@]}" '{a[NR] = $1} END { i = int(n * 0.9 + 0.999); if (i < 1) i = 1; print a[i] }' <<<"$sorted")
mx=$(tail -n 1 <<<"$sorted")

mkdir -p "$(dirname "$BENCH_OUT")"
{
    echo "# bench/join.sh: join of two streams, $(human "$RATE") rows/s each ($(date -u '+%Y-%m-%d %H:%M UTC'), git $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
    echo
    echo "\`imp JOIN clk ON c.ad = i.ad AND c.ts BETWEEN i.ts AND i.ts + 10 s\`, watermark 5 s, append; one batch per second of event time ($(human "$RATE") rows of each stream); $SECS batches."
    echo
    echo "Batch cost per second of data (cq.progress.duration_ms of the CALL's batches, rounds 2..$SECS): median $(fmt_ms "$(median "${durs[@]}")"), p90 $(fmt_ms "$p90"), max $(fmt_ms "$mx"); inserting the second's rows of both streams: median $(fmt_ms "$(median "${ins[@]}")")."
    echo "Buffers after the last batch: $(human "$sl") + $(human "$sr") rows, $((bytes / 1048576)) MB. Target vs plain join: $bad rows differ ($dropped dropped as late)."
    echo
    echo "| second | batches | rows in | rows out | buffered imp | buffered clk | batch time | late |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${samples[@]}"
} >"$BENCH_OUT"
cat "$BENCH_OUT"
[[ "$bad" == 0 ]] || die "the target differs from the plain join"
