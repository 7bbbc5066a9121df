# shellcheck shell=bash
# bench/lib.sh -- helpers for bench/run.sh.  Source it after scripts/common.sh.
#
# Every timing helper opens a fresh psql session and reports milliseconds as
# measured by psql's \timing (server round trip of the statement, without
# connection start-up).  Helpers die on any SQL error.

# Since session 27 a top-level CALL cq.run hands its batches to an idle pool
# worker (cq.run_in_worker, src/handoff.c).  The scripts time a CALL by its
# session's CPU (/proc/self/schedstat), read its DEBUG1 phases or the
# session's own state, so they measure the batch in the caller's process:
# every psql and pgbench session of a bench runs with the hand-off off
# unless BENCH_RUN_IN_WORKER=on.  bench/cold.sh measures both ways itself.
export PGOPTIONS="${PGOPTIONS:-} -c cq.run_in_worker=${BENCH_RUN_IN_WORKER:-off}"

PSQL=("$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -P pager=off)

# psql_run SQL...   run statements (stdin-style script), print query output
psql_run() {
    printf '%s\n' "$@" | "${PSQL[@]}" -At || die "psql failed: $*"
}

# psql_val SQL      one value
psql_val() {
    "${PSQL[@]}" -At -c "$1" || die "psql failed: $1"
}

# time_sql SCRIPT   run a psql script (may contain \gset etc.) in a fresh
#                   session with \timing on; print the sum of its Time: lines (ms)
time_sql() {
    local out
    out="$(printf '\\timing on\n%s\n' "$1" | "${PSQL[@]}" -At 2>&1)" \
        || { printf '%s\n' "$out" >&2; die "timed script failed: $1"; }
    printf '%s\n' "$out" | awk '/^Time: /{s += $2; n++} END {if (n == 0) exit 1; printf "%.3f\n", s}' \
        || die "no timing in output of: $1"
}

# cpu_sql SCRIPT    run a psql script in a fresh session; print "CPU_MS WALL_MS":
#                   the backend's CPU time (/proc/self/schedstat: robust to a
#                   loaded machine) and the wall time around SCRIPT.  With
#                   CPU_SQL_LOG=FILE the session's whole output (its notices
#                   and DEBUG messages too) goes to FILE.
cpu_sql() {
    local out sched="pg_catalog.split_part(pg_catalog.pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint"
    out="$(printf '%s\n' "SELECT $sched AS c0, pg_catalog.clock_timestamp() AS t0 \\gset" "$1" \
        "SELECT 'cpu_sql ' || (($sched - :c0) / 1e6)::numeric(14,3) || ' ' || (extract(epoch FROM pg_catalog.clock_timestamp() - :'t0') * 1000)::numeric(14,3);" \
        | "${PSQL[@]}" -At 2>&1)" || { printf '%s\n' "$out" >&2; die "timed script failed: $1"; }
    [[ -z "${CPU_SQL_LOG:-}" ]] || printf '%s\n' "$out" >"$CPU_SQL_LOG"
    grep -oE '^cpu_sql [0-9.]+ [0-9.]+' <<<"$out" | tail -1 | cut -d' ' -f2- | grep . || die "no CPU time in output of: $1"
}

# CPU time of processes, from /proc/PID/stat (fields utime stime cutime
# cstime), in ms; 0 for a process that is gone
CLK_TCK="$(getconf CLK_TCK)"
# proc_cpu_ms PID: utime + stime of PID
proc_cpu_ms() {
    awk -v t="$CLK_TCK" '{ sub(/^.*\) /, ""); print ($12 + $13) * 1000 / t }' "/proc/$1/stat" 2>/dev/null || echo 0
}
# children_cpu_ms PID: cutime + cstime of PID, i.e. of its exited children
# that it reaped (for a postmaster: the backends of finished sessions)
children_cpu_ms() {
    awk -v t="$CLK_TCK" '{ sub(/^.*\) /, ""); print ($14 + $15) * 1000 / t }' "/proc/$1/stat" 2>/dev/null || echo 0
}
# wait_reaped PM_PID "PIDS BEFORE": until every child of PM_PID not in the
# list (but pg_cq's background processes) has exited and been reaped, so
# that its CPU is in children_cpu_ms (at most 10 s)
wait_reaped() {
    local pm="$1" before=" $2 " deadline=$((SECONDS + 10)) p busy
    while ((SECONDS < deadline)); do
        busy=0
        for p in $(pgrep -P "$pm" || true); do
            [[ "$before" == *" $p "* ]] && continue
            grep -qa 'pg_cq' "/proc/$p/cmdline" 2>/dev/null && continue
            busy=1; break
        done
        ((busy)) || return 0
        sleep 0.01
    done
}
# cq_procs: "PID" lines of the pg_cq worker and scheduler processes
cq_procs() {
    psql_val "SELECT pid FROM pg_catalog.pg_stat_activity WHERE backend_type IN ('pg_cq worker', 'pg_cq scheduler')"
}

# median V...       median of numbers (mean of the middle two for an even count)
median() {
    printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {
        if (NR == 0) { print "nan"; exit }
        if (NR % 2) printf "%.3f\n", a[(NR + 1) / 2];
        else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# calc EXPR         floating point arithmetic (awk)
calc() { awk "BEGIN { printf \"%.6g\n\", $1 }"; }

# fmt_ms MS         "12.3 ms" / "4.56 s"
fmt_ms() {
    awk -v v="$1" 'BEGIN {
        if (v == "" || v == "nan") { print "n/a"; exit }
        if (v >= 10000) printf "%.1f s\n", v / 1000;
        else if (v >= 1000) printf "%.2f s\n", v / 1000;
        else if (v >= 100) printf "%.0f ms\n", v;
        else printf "%.1f ms\n", v }'
}

# fmt_x RATIO       "1.23x" / "456x"
fmt_x() {
    awk -v v="$1" 'BEGIN {
        if (v == "" || v == "nan") { print "n/a"; exit }
        if (v >= 100) printf "%.0fx\n", v; else if (v >= 10) printf "%.1fx\n", v; else printf "%.2fx\n", v }'
}

# met RATIO OP GOAL -> "yes" / "**no**"
met() {
    awk -v r="$1" -v op="$2" -v g="$3" 'BEGIN {
        if (r == "" || r == "nan") { print "n/a"; exit }
        ok = (op == "<=") ? (r <= g) : (r >= g); print ok ? "yes" : "**no**" }'
}

# human N           1000000 -> 1M, 5000 -> 5k
human() {
    awk -v n="$1" 'BEGIN {
        if (n >= 1000000 && n % 100000 == 0) printf "%gM\n", n / 1000000;
        else if (n >= 1000 && n % 100 == 0) printf "%gk\n", n / 1000;
        else print n }'
}

# scaled N          N * BENCH_SCALE, at least MIN (default 100), integer
scaled() {
    awk -v n="$1" -v s="$BENCH_SCALE" -v m="${2:-100}" 'BEGIN { v = int(n * s + 0.5); if (v < m) v = m; print v }'
}

# ---------------------------------------------------------------------------
# The benchmark query and its data
# ---------------------------------------------------------------------------

# agg_select TABLE   the aggregation every scenario maintains
agg_select() {
    printf "SELECT date_bin('1 minute', ts, '2000-01-01') AS minute, category, count(*) AS n, sum(amount) AS total, avg(amount) AS avg_amount, max(amount) AS max_amount FROM %s GROUP BY 1, 2" "$1"
}

# groupby_sql TABLE  the plain GROUP BY, evaluated fully but returning nothing.
# "WHERE s IS NOT NULL" references the whole row: without it the planner
# drops the unused aggregates of the subquery and times only the grouping.
groupby_sql() {
    printf 'SELECT count(*) FROM (%s) s WHERE s IS NOT NULL;' "$(agg_select "$1")"
}

# fold_cluster NAME PORT   bench/fold.sh's cluster (shared_buffers 1GB, serial:
#                          no parallel workers, nor parallel index builds; jit off)
fold_cluster() {
    CQ_PRELOAD="${CQ_PRELOAD-pg_cq}" start_cluster "$1" "$2" \
        "shared_buffers = 1GB" "max_wal_size = 4GB" "checkpoint_timeout = 30min" \
        "maintenance_work_mem = 256MB" "autovacuum = off" "max_parallel_workers_per_gather = 0" \
        "max_parallel_maintenance_workers = 0" "jit = off"
}

# gen_rows TABLE N START_TS SPAN   INSERT N rows with ts evenly spread over
# [START_TS, START_TS + SPAN) in insertion order, ~50 categories, 1000
# devices, amount numeric(10,2) in [0, 1000).  One statement.
gen_rows() {
    printf "INSERT INTO %s (ts, device_id, category, amount) SELECT timestamptz '%s' + (g - 1) * (interval '%s' / %s), 1 + (random() * 999)::int, 'cat_' || lpad(floor(random() * 50)::int::text, 2, '0'), round((random() * 1000)::numeric, 2) FROM generate_series(1, %s) g;" \
        "$1" "$3" "$4" "$2" "$2"
}

# profile_summary FILE [SEGMENT]: one line from the auto_explain output of a
# CALL cq.run (SEGMENT 2 = the part after a '==WARM==' notice).
#   pre-scan = a separate SELECT count(*) over the new rows before the batch
#              statement (older builds);
#   d        = scan + partial aggregation of the new rows (CTE d, or the
#              aggregate under CTE m when d is inlined, or on the store
#              with cq.delta_agg_in_c the scan statement "SELECT i.g1, ..."
#              whose rows deltagg.c aggregates: its whole time);
#   m        = state upsert, without the time of its input (d);
#   o        = target upsert, without the time of its input (m);
#   other    = the other statements auto_explain logged (e.g. the target
#              statement of a query on the shared-memory store), each named
#              by its first two words;
#   rest     = CALL time outside those statements (catalog reads, SQL
#              generation, parse/plan, bookkeeping, the store's fold in C);
#   DEBUG1   = pg_cq's own CPU split of a store or table fold, when the
#              session ran at client_min_messages = debug1.
# Node times are auto_explain's "actual time" end values (log_timing on).
profile_summary() {
    awk -v seg="${2:-1}" '
    function endtime(line,   s, a) {
        match(line, /actual time=[0-9.]+\.\.[0-9.]+/); s = substr(line, RSTART + 12, RLENGTH - 12)
        split(s, a, /\.\./); return a[2] + 0 }
    /NOTICE: +==WARM==/ { cur++; next }
    (cur + 1) != seg { next }
    /duration: [0-9.]+ ms +plan:/ { match($0, /duration: [0-9.]+/); dur = substr($0, RSTART + 10, RLENGTH - 10) + 0; want_text = 1; next }
    want_text && /^Query Text:/ {
        want_text = 0; inbatch = 0
        if ($0 ~ /^Query Text: SELECT count\(\*\)/) count += dur
        else if ($0 ~ /^Query Text: WITH d AS/) { batch += dur; inbatch = 1; sect = "" }
        else if ($0 ~ /^Query Text: SELECT i\.g[0-9]+[ ,]/) { batch += dur; dc += dur; inbatch = 1; sect = "" }
        else { q = $0; sub(/^Query Text: +/, "", q); n = split(q, w, / +/); q = w[1] (n > 1 ? " " w[2] : ""); sub(/[(,].*/, "", q)
               other += dur; others = others sprintf("%s%s %.1f", (others == "" ? "" : ", "), q, dur) }
        next }
    /pg_cq: (store|table) fold/ { x = $0; sub(/^.*pg_cq: /, "", x); sub(/ \(CPU time\)/, "", x); folds = folds (folds == "" ? "" : "; ") x; next }
    /^Time: / { call = $2; next }
    !inbatch { next }
    /^  CTE [a-z0-9_]+$/ { sect = $2; want_cte = 1; order[++nc] = sect; next }
    /^  InitPlan/ { sect = "init" }
    want_cte && /actual time=/ { T[sect] = endtime($0); want_cte = 0 }
    /CTE Scan on [a-z0-9_]+ / && !(sect in child) { child[sect] = endtime($0) }
    scan == "" && /(Seq Scan|Bitmap Heap Scan|Index Scan|Index Only Scan) on / {
        scan = $0; sub(/^ *(-> *)?/, "", scan); sub(/ +\(.*/, "", scan); scan_t = endtime($0) }
    scan != "" && hb == "" && /Heap Blocks:/ { hb = $0; sub(/^ +/, "", hb) }
    look > 0 { look--; if (/Batches:/) { x = $0; sub(/^ +/, "", x); agg = agg " (" x ")"; look = 0 } }
    agg == "" && /(HashAggregate|GroupAggregate|MixedAggregate)/ {
        agg = $0; sub(/^ *(-> *)?/, "", agg); sub(/ +\(.*/, "", agg); agg_t = endtime($0); agg_sect = sect; look = 3 }
    END {
        if (call == "") { print "n/a"; exit }
        d = ("d" in T) ? T["d"] : agg_t
        if (!("d" in T) && agg == "" && dc > 0) { d = dc; agg = "partial aggregation in C (deltagg.c)" }
        parts = sprintf("d: scan %.1f, scan + partial agg %.1f", scan_t, d)
        for (i = 1; i <= nc; i++) {
            c = order[i]; if (c == "d") continue
            v = T[c] - ((c in child) ? child[c] : (agg_sect == c ? agg_t : 0))
            name = (c == "m") ? "m: state upsert" : (c ~ /^o/) ? c ": target write" : (c == "f") ? "f: final values" : c
            parts = parts sprintf("; %s %.1f", name, v) }
        printf "CALL %.1f ms = %sbatch statement %.1f [%s] + %srest %.1f; plan: %s → %s%s\n",
            call, (count > 0 ? sprintf("separate count(*) pre-scan %.1f + ", count) : ""), batch, parts,
            (other > 0 ? sprintf("other statements %.1f [%s] + ", other, others) : ""), call - count - batch - other,
            scan (hb != "" ? " (" hb ")" : ""), agg, (folds != "" ? "; DEBUG1: " folds : "") }' "$1"
}

# ---- instruction counts (valgrind callgrind): bench/*_cg.sh ----
# A script keeps its files in directory $CG: a data directory made by a
# single-user script, then each count on a fresh copy of it ($CG/run).

# cg_prepare new|keep: valgrind is there; $CG made (emptied first if new),
# owned by the server's OS user
cg_prepare() {
    command -v valgrind >/dev/null || die "valgrind is needed (apt-get install valgrind)"
    [[ "$1" == keep ]] || rm -rf "${CG:?}"
    mkdir -p "$CG"
    chmod 755 "$CG"
    is_root && chown postgres:postgres "$CG"
    return 0
}

# cg_initdb DATA LOCALE CONF...: a new data directory DATA (initdb with the
# words of LOCALE, "-E UTF8 --locale=C.UTF-8" or ""), pg_cq preloaded, no
# fsync and no autovacuum, and the postgresql.conf lines CONF
cg_initdb() {
    local data="$1" locale="$2"; shift 2
    # shellcheck disable=SC2086  # LOCALE is initdb's words
    as_postgres "$PGBIN/initdb" -D "$data" -A trust -U postgres $locale --no-sync >/dev/null
    printf '%s\n' "shared_preload_libraries = 'pg_cq'" "fsync = off" "synchronous_commit = off" \
        "full_page_writes = off" "autovacuum = off" "$@" >>"$data/postgresql.conf"
}

# cg_single DATA NAME: the single-user script $CG/NAME.sql (one statement a
# line) on DATA, output in $CG/NAME.log; dies on an ERROR
cg_single() {
    as_postgres "$PGBIN/postgres" --single -D "$1" postgres <"$CG/$2.sql" >"$CG/$2.log" 2>&1
    ! grep -q ERROR "$CG/$2.log" || { grep ERROR "$CG/$2.log" >&2; die "$2 failed"; }
}

# cg_count DATA TOGGLE NAME LABEL: the script $CG/NAME.sql on a fresh copy
# of DATA under callgrind, counting the instructions under function TOGGLE
# (--toggle-collect: the statements, not the start-up), into
# $CG/callgrind.LABEL; output in $CG/NAME.log; dies on an ERROR; prints
# the count
cg_count() {
    local data="$1" toggle="$2" name="$3" label="$4"
    rm -rf "${CG:?}/run" && cp -a "$data" "$CG/run"
    as_postgres valgrind --tool=callgrind --callgrind-out-file="$CG/callgrind.$label" --toggle-collect="$toggle" \
        "$PGBIN/postgres" --single -D "$CG/run" postgres <"$CG/$name.sql" >"$CG/$name.log" 2>&1
    ! grep -q ERROR "$CG/$name.log" || { grep ERROR "$CG/$name.log" >&2; die "$name failed"; }
    sed -nE 's/.*Collected : ([0-9]+).*/\1/p' "$CG/$name.log"
}
