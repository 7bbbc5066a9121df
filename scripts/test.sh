#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions below are called indirectly (run_suite, traps)
# scripts/test.sh -- `make test`: install deps, build+install pg_cq, run every suite.
#   0. checks     scripts/check_layers.pl (module layers: no upward include or
#                 call) and scripts/check_operators.pl (operators in fixed SQL
#                 run with elevated rights), over src/
#   1. regress    pg_regress   sql/*.sql     vs expected/*.out   (make installcheck)
#   2. isolation  pg_isolation_regress specs/*.spec vs expected/*.out (make installcheck)
#   3. pgtap      pg_prove     test/*.sql    in a fresh database pg_cq_tap (pgtap + pg_cq created)
#   4. perl-tap   prove        t/*.pl        PostgreSQL::Test::Cluster (own temporary nodes)
#   5. citus      prove        t/citus/*.pl  a Citus cluster (coordinator + 2 workers) of
#                 temporary nodes; runs only when Citus is installed for $PG_CONFIG
#                 (docs/scale-out.md says how to build it), else reported as not run
# Suites 1-3 run against one throwaway cluster: /tmp/pg_cq_test, port 55432 (CQ_TEST_PORT).
# Env overrides: see scripts/common.sh, plus CQ_TEST_PORT and CQ_SUITES
# (space-separated subset of "checks regress isolation pgtap perl-tap citus").
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$REPO_ROOT"

CQ_TEST_PORT="${CQ_TEST_PORT:-55432}"
CQ_SUITES="${CQ_SUITES:-checks regress isolation pgtap perl-tap citus}"
LOGDIR="$REPO_ROOT/results/logs"

SUMMARY=()            # one line per suite
TOTAL_PASS=0 TOTAL_FAIL=0 ANY_FAIL=0

want_suite() { [[ " $CQ_SUITES " == *" $1 "* ]]; }

record() {            # record SUITE STATUS PASSED FAILED
    SUMMARY+=("$(printf '%-10s %-4s  %s passed, %s failed' "$1" "$2" "$3" "$4")")
    TOTAL_PASS=$((TOTAL_PASS + $3)); TOTAL_FAIL=$((TOTAL_FAIL + $4))
    [[ "$2" == FAIL ]] && ANY_FAIL=1
    return 0
}

skip() { SUMMARY+=("$(printf '%-10s %-4s  (%s)' "$1" SKIP "$2")"); }

# count_* LOG -> "PASSED FAILED"
count_pg_regress() {
    local p f
    p=$(grep -cE '\.\.\. ok( |$)' "$1" || true)
    f=$(grep -cE '\.\.\. (FAILED|failed)' "$1" || true)
    echo "$p $f"
}
count_checks() {      # one "ok" line per check passed, one line per violation
    local p f
    p=$(grep -cE '^(layers|operators): ok' "$1" || true)
    f=$(grep -cE '^(layers|operators): .*:[0-9]+: ' "$1" || true)
    echo "$p $f"
}
count_tap() {
    local total f
    total=$(sed -nE 's/.*Files=[0-9]+, Tests=([0-9]+),.*/\1/p' "$1" | tail -n 1)
    f=$(sed -nE 's/.*Failed ([0-9]+)\/[0-9]+ subtests.*/\1/p' "$1" | awk '{s+=$1} END {print s+0}')
    total=${total:-0}
    echo "$((total >= f ? total - f : 0)) $f"
}

# run_suite NAME COUNTER CMD... : run CMD with output tee'd to a log, record result.
run_suite() {
    local name="$1" counter="$2"; shift 2
    local log="$LOGDIR/$name.log" rc=0 p f
    section "suite: $name"
    info "$*"
    "$@" 2>&1 | tee "$log" || rc=$?
    read -r p f < <("$counter" "$log")
    if ((rc != 0)); then
        ((f > 0)) || f=1          # failed without a countable failure (crash, bad plan, ...)
        record "$name" FAIL "$p" "$f"
        note_failures "$name" "$log"
        return 1
    fi
    record "$name" PASS "$p" "$f"
}

# note_failures SUITE LOG: name the failed tests in the summary, so that the
# last lines of a run (all a CI page may show) say what failed.
FAILED_NAMES=()
note_failures() {
    local line
    while IFS= read -r line; do
        FAILED_NAMES+=("$1: $line")
    done < <(sed -nE -e 's/^(t\/[^ ]+|test\/[^ ]+) +\(Wstat: ([0-9]+).*Failed: ([0-9]+)\).*/\1 (wstat \2, \3 failed)/p' \
                 -e 's/^ +Failed tests?: +(.*)/    subtests \1/p' \
                 -e "s/^#   Failed test '(.*)'\$/    failed: \1/p" \
                 -e 's/^# tap_watch: (.*) timed out after .*/\1 TIMED OUT/p' \
                 -e 's/^# CqWatch: .* stopped by SIGTERM .*, (in .* line [0-9]+).*/    hung \1/p' \
                 -e 's/^(Bail ?out.*)/\1/p' \
                 -e 's/^(TIMED OUT after .*)/\1/p' \
                 -e 's/^(TIMED OUT in: .*)/    \1/p' \
                 -e 's/^(test |     )?([^ ]+) +\.\.\. (FAILED|failed).*/\2 FAILED/p' "$2" | head -n 40)
}

show_diffs() {         # show_diffs SUBDIR-OF-results
    local d
    while IFS= read -r d; do
        section "diffs: ${d#"$REPO_ROOT"/}"
        head -n 400 "$d"
        (($(wc -l <"$d") <= 400)) || echo "... (truncated; full file: $d)"
    done < <(find "$REPO_ROOT/results/$1" -name regression.diffs 2>/dev/null | sort)
}

# limited CMD...: CMD (an external command: make, pg_prove) with at most
# CQ_SUITE_TIMEOUT seconds (default 900; the three suites it bounds take
# 1-3 minutes), so that a hung statement cannot run CI into its 90 minutes:
# past it, CMD's process group is killed (SIGTERM, SIGKILL 30 s later), and
# the report says which test file was running (running_file), what the
# shared cluster's sessions were doing, and then ends those sessions
# (end_sessions), so that the suites after it do not wait on its locks.
CQ_SUITE_TIMEOUT="${CQ_SUITE_TIMEOUT:-900}"
limited() {
    local rc=0 since pid watch
    since=$(date +%s)
    rm -f "$LOGDIR/limited.ps"
    timeout -k 30 "$CQ_SUITE_TIMEOUT" "$@" &
    pid=$!
    # 2 s before the limit, the command lines of CMD's processes (timeout
    # leads their process group): pg_prove's psql names the file it runs,
    # and pg_prove's own output, buffered, is lost when it is killed
    # (its sleep ends with it; its output is not the suite's pipe, which
    # tee reads to the end)
    (trap 'kill "$s" 2>/dev/null; exit 0' TERM
     sleep "$((CQ_SUITE_TIMEOUT > 4 ? CQ_SUITE_TIMEOUT - 2 : 2))" & s=$!
     wait "$s" && ps -e -o pgid=,args= | awk -v g="$pid" '$1 == g' >"$LOGDIR/limited.ps") \
        </dev/null >/dev/null 2>&1 &
    watch=$!
    wait "$pid" || rc=$?
    kill "$watch" 2>/dev/null || true
    wait "$watch" 2>/dev/null || true
    if ((rc == 124 || rc == 137)); then
        echo "TIMED OUT after ${CQ_SUITE_TIMEOUT} s (CQ_SUITE_TIMEOUT): $*"
        running_file "$since" "$*"
        echo "sessions of the test cluster at that moment:"
        timeout 30 "$PGBIN/psql" -X -d postgres -c "SELECT pid, datname, state, wait_event_type, wait_event,
            now() - query_start AS running, left(query, 200) AS query
            FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND state IS DISTINCT FROM 'idle'" || true
        end_sessions
    fi
    return "$rc"
}

# running_file SINCE CMD: the test file CMD (started at SINCE, epoch
# seconds) was running when it was stopped, as a line "TIMED OUT in: FILE"
# (note_failures puts it in the summary) and the last lines of its output.
# pg_regress and pg_isolation_regress write a test's output to
# results/<suite>/results/NAME.out while it runs: the newest one written
# since SINCE is the test that hung, its last lines the statement it was
# in.  pg_prove's psql has the file on its command line (limited.ps).
running_file() {
    local since="$1" cmd="$2" f
    if [[ "$cmd" == *pg_prove* ]]; then
        f=$(grep -E 'psql' "$LOGDIR/limited.ps" 2>/dev/null | grep -oE 'test/[^ ]+\.sql' | tail -n 1 || true)
        echo "TIMED OUT in: ${f:-(no psql of pg_prove was running)}"
        return 0
    fi
    f=$(find "$REPO_ROOT/results/regress/results" "$REPO_ROOT/results/isolation/results" \
            -name '*.out' -newermt "@$since" -printf '%T@ %p\n' 2>/dev/null | sort -n | tail -n 1 | cut -d' ' -f2-)
    if [[ -z "$f" ]]; then
        echo "TIMED OUT in: (no test had started writing its output)"
        return 0
    fi
    echo "TIMED OUT in: $(basename "$(dirname "$(dirname "$f")")")/$(basename "$f" .out)"
    echo "its output so far ends with (${f#"$REPO_ROOT"/}):"
    tail -n 15 "$f" | sed 's/^/    /'
}

# end_sessions: terminate the client sessions left in the test cluster by a
# suite that was stopped (its clients are gone, but a backend notices that
# only when its statement ends), and wait up to 30 s for them to go.
end_sessions() {
    local n
    n=$(timeout 30 "$PGBIN/psql" -X -At -d postgres -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
            WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()" 2>/dev/null || echo "?")
    echo "ended $n client session(s) of the stopped suite"
    timeout 30 "$PGBIN/psql" -X -At -d postgres -c "DO \$\$BEGIN
            WHILE EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'client backend'
                             AND pid <> pg_backend_pid()) LOOP
              PERFORM pg_sleep(0.1);
              PERFORM pg_stat_clear_snapshot();
            END LOOP; END\$\$" >/dev/null 2>&1 || echo "(some are still there)"
}

cleanup() {
    stop_cluster test
}
trap cleanup EXIT
trap 'exit 130' INT TERM

section "packages"
ensure_packages

section "build + install"
build_install

section "cluster"
rm -rf "$REPO_ROOT/results"
mkdir -p "$REPO_ROOT/results/regress" "$REPO_ROOT/results/isolation" "$LOGDIR"
# prepared transactions: sql/212 prepares transactions that ran cq.run
start_cluster test "$CQ_TEST_PORT" "max_prepared_transactions = 4"

shopt -s nullglob
sql_tests=(sql/*.sql); specs=(specs/*.spec); tap_tests=(test/*.sql); perl_tests=(t/*.pl)
citus_tests=(t/citus/*.pl)
shopt -u nullglob

# ---- 0: static checks of src/ ----
run_checks() {
    local rc=0
    perl scripts/check_layers.pl src || rc=1
    perl scripts/check_operators.pl src || rc=1
    return "$rc"
}
if ! want_suite checks; then skip checks "not in CQ_SUITES"
else
    run_suite checks count_checks run_checks || true
fi

# ---- 1/2: pg_regress + isolation via PGXS installcheck (uses PGHOST/PGPORT) ----
if ! want_suite regress; then skip regress "not in CQ_SUITES"
elif ((${#sql_tests[@]} == 0)); then skip regress "no sql/*.sql"
else
    run_suite regress count_pg_regress limited make --no-print-directory installcheck \
        PG_CONFIG="$PG_CONFIG" ISOLATION= || show_diffs regress
fi

if ! want_suite isolation; then skip isolation "not in CQ_SUITES"
elif ((${#specs[@]} == 0)); then skip isolation "no specs/*.spec"
else
    run_suite isolation count_pg_regress limited make --no-print-directory installcheck \
        PG_CONFIG="$PG_CONFIG" REGRESS= || show_diffs isolation
fi

# ---- 3: pgTAP ----
# (set -e is not in force inside functions run from run_suite: chain with &&)
run_pgtap() {
    PGOPTIONS="-c client_min_messages=warning" "$PGBIN/dropdb" --if-exists pg_cq_tap &&
    "$PGBIN/createdb" pg_cq_tap &&
    "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d pg_cq_tap \
        -c 'CREATE EXTENSION IF NOT EXISTS pgtap' -c 'CREATE EXTENSION IF NOT EXISTS pg_cq' &&
    limited pg_prove --psql-bin "$PGBIN/psql" -d pg_cq_tap --failures "${tap_tests[@]}"
}
if ! want_suite pgtap; then skip pgtap "not in CQ_SUITES"
elif ((${#tap_tests[@]} == 0)); then skip pgtap "no test/*.sql"
else
    run_suite pgtap count_tap run_pgtap || true
fi

# ---- 4: Perl TAP (PostgreSQL::Test::Cluster) ----
# initdb refuses to run as root, so as root the tests run as OS user postgres.
# The repo may not be readable by postgres (e.g. a clone under /root), so the
# tests run from a postgres-owned copy of the repo (no .git, no results/):
#   $CQ_PERLTAP_DIR/src   cwd of prove, also exported as PG_CQ_SRCDIR
#   $CQ_PERLTAP_DIR       TESTDIR: node data+logs in tmp_check/, tmp_check/log/
# CQ_PERLTAP_DIR defaults to $CQ_TMPBASE/pg_cq_perltap_<name of the repo directory>,
# so two checkouts (e.g. git worktrees) can run their suites side by side.
# PATH starts with $PGBIN, so the nodes use the same server binaries as the rest.
# Each file runs through scripts/tap_watch.pl (prove --exec), with t/CqWatch.pm
# loaded: a file gets CQ_TAP_FILE_TIMEOUT seconds (default 600), after which
# it is stopped with the Perl stack of where it hung, its process group
# killed and its nodes stopped; the whole suite gets CQ_TAP_BUDGET seconds
# (default 3600: CI allows 90 minutes for everything), after which the files
# left are not started (prove bails out with its summary).  A wait of
# PostgreSQL::Test::Cluster (poll_query_until, wait_for_log) gives up after
# PG_TEST_TIMEOUT_DEFAULT seconds (default 180) of wall-clock time.
# CQ_PERL_TESTS="t/001_workers.pl t/052_join_soak.pl" runs only those files.
CQ_PERLTAP_DIR="${CQ_PERLTAP_DIR:-$CQ_TMPBASE/pg_cq_perltap_$(basename "$REPO_ROOT")}"
export PG_TEST_TIMEOUT_DEFAULT="${PG_TEST_TIMEOUT_DEFAULT:-180}"
export CQ_TAP_FILE_TIMEOUT="${CQ_TAP_FILE_TIMEOUT:-600}"
CQ_TAP_BUDGET="${CQ_TAP_BUDGET:-3600}"
# run_perl_tap [SUBDIR]: the tests t/SUBDIR/*.pl (default: t/*.pl, or CQ_PERL_TESTS)
run_perl_tap() {
    local sub="${1:+$1/}" dir="$CQ_PERLTAP_DIR${1:+_$1}" rc=0 name f files
    files="${CQ_PERL_TESTS:-}"
    [[ -n "$files" && -z "$sub" ]] || files="t/$sub*.pl"
    rm -rf "$dir" && mkdir -p "$dir/src" || return 1
    tar -C "$REPO_ROOT" --exclude=./.git --exclude=./results -cf - . | tar -C "$dir/src" -xf - || return 1
    if is_root; then chown -R postgres:postgres "$dir" || return 1; fi
    (cd "$dir" && as_postgres env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE \
        HOME="$dir" PATH="$PGBIN:$PATH" TESTDIR="$dir" PG_CQ_SRCDIR="$dir/src" \
        PG_REGRESS="$PGXS_DIR/src/test/regress/pg_regress" PERL5LIB="$PGXS_DIR/src/test/perl" \
        CQ_TAP_DEADLINE="$(($(date +%s) + CQ_TAP_BUDGET))" \
        bash -c 'cd "$PG_CQ_SRCDIR" && exec prove --timer --exec "perl scripts/tap_watch.pl" $1' _ "$files") \
        2>&1 | tee "$dir/prove.out" || rc=$?
    # On failure show the tail of the failed tests' logs (test log + node logs).
    while IFS= read -r name; do
        for f in "$dir/tmp_check/log/regress_log_$name" "$dir/tmp_check/log/${name}"_*.log; do
            [[ -f "$f" ]] || continue
            section "log: $f (tail)"; tail -n 80 "$f"
        done
    done < <(sed -nE 's|^t/([^ ]+/)?([^ /]+)\.pl +\(Wstat.*|\2|p' "$dir/prove.out")
    return "$rc"
}
if ! want_suite perl-tap; then skip perl-tap "not in CQ_SUITES"
elif ((${#perl_tests[@]} == 0)); then skip perl-tap "no t/*.pl"
else
    run_suite perl-tap count_tap run_perl_tap || true
fi

# ---- 5: Citus (issue 14) ----
# Citus is not in Debian's archive: these tests run when it was built and
# installed for this PostgreSQL (docs/scale-out.md), and say so when not.
citus_installed() { [[ -f "$("$PG_CONFIG" --pkglibdir)/citus.so" ]]; }
if ! want_suite citus; then skip citus "not in CQ_SUITES"
elif ((${#citus_tests[@]} == 0)); then skip citus "no t/citus/*.pl"
elif ! citus_installed; then
    skip citus "not run: Citus is not installed for $PG_CONFIG; docs/scale-out.md says how to build it"
else
    # the Citus nodes of each test listen on CQ_CITUS_PORT.. (t/citus/CqCitus.pm)
    export CQ_CITUS_PORT="${CQ_CITUS_PORT:-$((CQ_TEST_PORT + 1))}"
    run_suite citus count_tap run_perl_tap citus || true
fi

section "summary"
stop_cluster test     # before the closing line, so that line is the last one printed
# A server process of the shared cluster killed by a signal (a segfault, an
# abort) fails the run even when every test passed: the crash-restart that
# follows lets the suites go on (t/CqCrash.pm does the same for t/).
crashes=$(grep -E 'was terminated by signal' "$(cluster_dir test)/postgres.log" 2>/dev/null || true)
if [[ -n "$crashes" ]]; then
    echo "$crashes"
    record server FAIL 0 "$(grep -c . <<<"$crashes")"
    FAILED_NAMES+=("server: a process crashed, see $(cluster_dir test)/postgres.log")
fi
for line in "${SUMMARY[@]}"; do echo "$line"; done
for line in "${FAILED_NAMES[@]}"; do echo "failed: $line"; done
echo "logs: ${LOGDIR#"$REPO_ROOT"/}/, server log: $(cluster_dir test)/postgres.log"
echo "pg_cq: $TOTAL_PASS passed, $TOTAL_FAIL failed"
exit $ANY_FAIL
