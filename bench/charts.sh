# shellcheck shell=bash
# bench/charts.sh -- gnuplot charts of a bench/run.sh run (issue 12 goal 8).
# Sourced by bench/run.sh after the measurements; reads its result arrays
# and raw files and writes PNG files into $BENCH_RESULTS:
#   latency_cdf.png     commit-to-target latency, distribution per rate
#                       (every row of bench/latency.sh's runs)
#   batch_cost.png      one incremental batch vs history size: pg_cq (fresh
#                       session before/after ANALYZE, warm session), the
#                       hand-written upsert, REFRESH MATERIALIZED VIEW
#   ingest_ratio.png    tracked / untracked ingest vs clients: write path
#                       alone (bench/write_path.sh, query paused) and with a
#                       live trigger '0' query (scenario 4)
#   queries_cost.png    1/10/100 queries over one source: p99 latency and
#                       pg_cq CPU (bench/latency.sh LAT_QUERIES)
# A chart whose data was not measured in the run is not drawn.  gnuplot
# (Debian's gnuplot-nox) is installed when missing, as root, unless
# CQ_SKIP_APT=1.  Charts of a run with BENCH_SCALE != 1 say so in their title.

# ensure_gnuplot: 0 when gnuplot can run
ensure_gnuplot() {
    command -v gnuplot >/dev/null 2>&1 && return 0
    if [[ "${CQ_SKIP_APT:-}" == 1 ]]; then info "gnuplot missing and CQ_SKIP_APT=1: no charts"; return 1; fi
    if ! is_root; then info "gnuplot missing and not root: no charts (apt-get install gnuplot-nox)"; return 1; fi
    info "installing gnuplot-nox"
    export DEBIAN_FRONTEND=noninteractive
    retry apt-get install -y -q --no-install-recommends gnuplot-nox >/dev/null \
        || { retry apt-get update -q >/dev/null && retry apt-get install -y -q --no-install-recommends gnuplot-nox >/dev/null; } \
        || { info "could not install gnuplot-nox: no charts"; return 1; }
    command -v gnuplot >/dev/null 2>&1
}

# plot NAME DATAFILES... < gnuplot script body: render $BENCH_RESULTS/NAME.png
plot() {
    local name="$1" png="$BENCH_RESULTS/$1.png" term
    shift
    term="pngcairo size 900,560 font 'sans,10'"
    gnuplot -e "set terminal pngcairo" >/dev/null 2>&1 || term="png size 900,560"
    if { echo "set terminal $term noenhanced"; echo "set output '$png'"; cat; } | gnuplot >"$RAW/chart_$name.log" 2>&1; then
        CHARTS+=("$name.png")
        info "chart: ${png#"$REPO_ROOT"/}"
    else
        info "chart $name failed: $(tail -n 3 "$RAW/chart_$name.log" | tr '\n' ' ')"
        rm -f "$png"
    fi
}

make_charts() {
    local scale_note="" f rate n files=() plots=() x label
    ensure_gnuplot || return 0
    [[ "$BENCH_SCALE" == 1 ]] || scale_note=" (BENCH_SCALE=$BENCH_SCALE: smoke-scale run, not a result)"
    rm -f "$BENCH_RESULTS"/{latency_cdf,batch_cost,ingest_ratio,queries_cost}.png

    # latency distribution: empirical CDF per rate
    for f in "$RAW"/samples/samples-*.txt; do
        [[ -s "$f" ]] || continue
        rate="${f##*/samples-}"; rate="${rate%.txt}"
        sort -g "$f" | awk '{ a[NR] = $1 } END { for (i = 1; i <= NR; i++) print a[i], i / NR }' >"$RAW/cdf_$rate.dat"
        files+=("$rate")
    done
    if ((${#files[@]})); then
        plots=()
        for rate in $(printf '%s\n' "${files[@]}" | sort -n); do
            plots+=("'$RAW/cdf_$rate.dat' using 1:2 with lines lw 2 title '$rate rows/s'")
        done
        plot latency_cdf <<EOF
set title "pg_cq commit-to-target latency, trigger '0' append query (bench/latency.sh)$scale_note"
set xlabel 'commit of the target row - commit of the source row (ms, log scale)'
set ylabel 'fraction of rows'
set logscale x
set grid
set key bottom right
set yrange [0:1]
set arrow from graph 0, first 0.99 to graph 1, first 0.99 nohead dt 2
set label 'p99' at graph 0.01, first 0.975
plot $(IFS=,; echo "${plots[*]}")
EOF
    fi

    # batch cost vs history size
    if ((${#INC_SIZES[@]})); then
        for n in "${INC_SIZES[@]}"; do
            echo "$n ${CQ_A[$n]:-NaN} ${CQ_B[$n]:-NaN} ${CQ_C[$n]:-NaN} ${HW_A[$n]:-NaN} ${REF[$n]:-NaN}"
        done >"$RAW/batch_cost.dat"
        plot batch_cost <<EOF
set title "One batch of $(human "$NEW") new rows vs history size (median)$scale_note"
set xlabel 'history rows (millions)'
set ylabel 'ms (log scale)'
set logscale y
set grid
set key top left
set xtics nomirror
set yrange [*:*]
plot '$RAW/batch_cost.dat' using (\$1/1e6):2 with linespoints lw 2 title 'pg_cq, fresh session', \
     '' using (\$1/1e6):3 with linespoints lw 2 title 'pg_cq, fresh session, after ANALYZE', \
     '' using (\$1/1e6):4 with linespoints lw 2 title 'pg_cq, warm session', \
     '' using (\$1/1e6):5 with linespoints lw 2 title 'hand-written upsert', \
     '' using (\$1/1e6):6 with linespoints lw 2 title 'REFRESH MATERIALIZED VIEW'
EOF
    fi

    # ingest ratio vs clients
    : >"$RAW/ingest_ratio.dat"
    plots=()
    local off=-0.06
    for kind in single multi copy; do
        awk -v k="$kind" '$1 == "writepath" && $2 == k { print $3, $4, $5, $6 }' "$DATA" 2>/dev/null | sort -n >"$RAW/ingest_wp_$kind.dat"
        [[ -s "$RAW/ingest_wp_$kind.dat" ]] || continue
        case $kind in single) label="single-row INSERT";; multi) label="1000-row INSERT";; copy) label="COPY 10k rows";; esac
        plots+=("'$RAW/ingest_wp_$kind.dat' using (\$1 + $off):2:3:4 with yerrorlines lw 2 title '$label, query paused (write path)'")
        off=$(calc "$off + 0.04")
    done
    for kind in single multi; do
        : >"$RAW/ingest_live_$kind.dat"
        for label in "${!ING_R[@]}"; do
            case "$label" in
                single-row*) [[ $kind == single ]] || continue ;;
                1000-row*) [[ $kind == multi ]] || continue ;;
            esac
            x="${label##*, }"; x="${x%% *}"
            echo "$x ${ING_R[$label]}" >>"$RAW/ingest_live_$kind.dat"
        done
        sort -n -o "$RAW/ingest_live_$kind.dat" "$RAW/ingest_live_$kind.dat"
        [[ -s "$RAW/ingest_live_$kind.dat" ]] || continue
        label=$([[ $kind == single ]] && echo "single-row INSERT" || echo "1000-row INSERT")
        plots+=("'$RAW/ingest_live_$kind.dat' using 1:2 with linespoints lw 2 dt 2 title '$label, live trigger-0 query'")
    done
    if ((${#plots[@]})); then
        plot ingest_ratio <<EOF
set title "Ingest with tracking / without (median of interleaved pairs; bars: min-max)$scale_note"
set xlabel 'pgbench clients'
set ylabel 'tracked / untracked throughput'
set xtics 1
set xrange [0.5:2.5]
set grid
set key below
set arrow from graph 0, first 0.97 to graph 1, first 0.97 nohead dt 3
set label 'goal 1: 0.97x' at graph 0.75, first 0.985
set arrow from graph 0, first 0.85 to graph 1, first 0.85 nohead dt 3
set label 'goal 3: 0.85x' at graph 0.75, first 0.865
plot $(IFS=,; echo "${plots[*]}")
EOF
    fi

    # cost vs number of queries
    if ((${#LATQ_LINE[@]})); then
        for n in "${!LATQ_LINE[@]}"; do echo "$n ${LATQ_LINE[$n]}"; done | sort -n >"$RAW/queries_cost.dat"
        plot queries_cost <<EOF
set title "Many trigger-0 queries over one source at $(awk '$1 == "queries" { print $3; exit }' "$DATA") rows/s$scale_note"
set xlabel 'queries over the source (log scale)'
set logscale x
set logscale y
set ylabel 'commit-to-target latency (ms, log scale)'
set y2label 'pg_cq CPU (s per run)'
set y2tics
set y2range [0:*]
set ytics nomirror
set grid
set key top left
plot '$RAW/queries_cost.dat' using 1:3 with linespoints lw 2 title 'p50 latency', \
     '' using 1:4 with linespoints lw 2 title 'p99 latency', \
     '' using 1:6 axes x1y2 with linespoints lw 2 dt 2 title 'pg_cq CPU (workers + scheduler)'
EOF
    fi
}
