#!/usr/bin/env bash
# bench/merge.sh -- MERGE against today's update-mode sink (issue 12 goal 7).
#
# An update query `SELECT k, count(*) AS n, sum(v) AS s FROM src GROUP BY k`
# whose key k is NOT NULL, over a target of G groups (BENCH_MERGE_GROUPS),
# fed batches that change C groups (BENCH_MERGE_CHANGED, capped at G; 90% of
# them existing groups, 10% new ones).  Each round inserts one batch of new
# rows and then times, on exactly the same data (every arm but the last runs
# in a transaction that is rolled back), in an order that alternates round
# by round:
#
#   full batch statement (pg_cq's incremental statement, from cq.explain,
#   PREPAREd and EXECUTEd with the batch's offsets, as a batch runs it: same
#   work_mem, enable_seqscan/enable_sort/jit off; one untimed warm-up
#   execution first, so catalog caches are warm as in a worker):
#     upsert      the statement as pg_cq runs it: state CTEs, then INSERT for
#                 new groups, UPDATE where the row changed (binary image
#                 `*<>`), INSERT where a row went missing, through the hash
#                 index on hash_record(ROW(k));
#     merge2      MERGE path, two statements: the same state CTEs write the
#                 changed groups' final values into a temp table (INSERT in
#                 a CTE), then MERGE INTO a twin target with a plain UNIQUE
#                 btree on k USING the temp table ON t.k = f.k WHEN MATCHED
#                 AND row differs (`*<>`) THEN UPDATE WHEN NOT MATCHED THEN
#                 INSERT, then TRUNCATE of the temp table (all timed);
#     merge1      MERGE path, one statement: PostgreSQL 15 accepts
#                 data-modifying CTEs in a MERGE's own WITH clause (MERGE
#                 cannot be a CTE, but it can be the top statement), so the
#                 state CTEs feed MERGE directly; MERGE has no RETURNING in
#                 15, so the batch's statistics go to a temp table through
#                 one more CTE and are read (and the temp table truncated)
#                 afterwards (timed);
#     merge1h     as merge1, into pg_cq's own target, joined through its hash
#                 index (hash_record(ROW(t.k)) = f.h AND t.k = f.k);
#     merge1n     merge1 with enable_hashjoin and enable_mergejoin off (for
#                 large batches the planner otherwise joins the whole target);
#   target part alone (the changed groups' final values precomputed in a
#   table, so only the target write is timed):
#     t-upsert    pg_cq's o1/ou/oi CTEs (text from cq.explain) over them;
#     t-merge2    INSERT into a temp table + MERGE + TRUNCATE;
#     t-merge1    WITH f AS (...) MERGE ...;
#     t-merge1n   the same with hash and merge joins off;
#   and finally the real thing, committed:
#     CALL        psql \timing of CALL cq.run(query) (catalog reads, SQL
#                 generation and bookkeeping included).
#
# The targets and the source are ANALYZEd after setup, as autovacuum would
# (the cluster runs with autovacuum off).  Without statistics on the
# target's hash index the planner expects ~35 rows per probe, and at 100k
# changed groups pg_cq's own statement (CTE oi's `_sid = ANY (SELECT _sid
# FROM ou)`) is planned as an unhashed subplan: quadratic, minutes.
#
# Times are psql \timing sums of the timed statements (server round trips),
# medians over BENCH_MERGE_ROUNDS rounds.  Sanity: the target of the CALLs,
# the MERGE twin (kept in step after every round) and one rolled-back
# merge1 result equal the plain query.
#
# Env: BENCH_PORT (default 55454), BENCH_MERGE_GROUPS ("4000 1000000"),
# BENCH_MERGE_CHANGED ("1000 10000 100000"), BENCH_MERGE_ROUNDS (7),
# BENCH_OUT (bench/results/merge.md), plus scripts/common.sh's PGBIN,
# CQ_TMPBASE, CQ_SKIP_APT, CQ_SKIP_BUILD, CQ_KEEP_CLUSTER.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
cd "$REPO_ROOT"

BENCH_PORT="${BENCH_PORT:-55454}"
BENCH_MERGE_GROUPS="${BENCH_MERGE_GROUPS:-4000 1000000}"
BENCH_MERGE_CHANGED="${BENCH_MERGE_CHANGED:-1000 10000 100000}"
BENCH_MERGE_ROUNDS="${BENCH_MERGE_ROUNDS:-7}"
BENCH_OUT="${BENCH_OUT:-$REPO_ROOT/bench/results/merge.md}"
# the statement-level arms above (upsert .. CALL, ~15 min) only with
# BENCH_MERGE_STATEMENTS=1; the implementation (below) always
BENCH_MERGE_STATEMENTS="${BENCH_MERGE_STATEMENTS:-0}"
BENCH_MERGE_IMPL_GROUPS="${BENCH_MERGE_IMPL_GROUPS:-$BENCH_MERGE_GROUPS}"
BENCH_MERGE_IMPL_CHANGED="${BENCH_MERGE_IMPL_CHANGED:-1000 10000 30000 100000}"
BENCH_MERGE_IMPL_ROUNDS="${BENCH_MERGE_IMPL_ROUNDS:-5}"

trap 'stop_cluster bench_merge' EXIT
section "build + cluster"
ensure_packages
build_install
CQ_PRELOAD="${CQ_PRELOAD-pg_cq}" start_cluster bench_merge "$BENCH_PORT" \
    "shared_buffers = 512MB" "max_wal_size = 4GB" "autovacuum = off" "cq.state_memory = 2GB"
psql_run "SET client_min_messages = warning;" "CREATE EXTENSION IF NOT EXISTS pg_cq;" >/dev/null

# the session settings of an incremental batch (cq.explain's header)
BATCH_SETTINGS="SET client_min_messages = warning; SET work_mem = '4096kB'; SET enable_seqscan = off; SET enable_sort = off; SET jit = off;"

# merge1n / t-merge1n: merge1 / t-merge1 with hash and merge joins off, so
# that MERGE probes the target's index per group as the upsert does
NOJOIN="SET enable_hashjoin = off; SET enable_mergejoin = off;"

# session_ms SETUP BODY: fresh session; SETUP untimed, then BEGIN, BODY
# timed, ROLLBACK (BODY alone, outside a transaction block, when $3 = none);
# print the sum of BODY's times
session_ms() {
    local out
    if [[ "${3:-}" == none ]]; then
        out="$(printf '%s\n\\timing on\n%s\n' "$1" "$2" | "${PSQL[@]}" -At 2>&1)" \
            || { printf '%s\n' "$out" >&2; die "timed script failed: $2"; }
    else
        out="$(printf '%s\nBEGIN;\n\\timing on\n%s\n\\timing off\nROLLBACK;\n' "$1" "$2" | "${PSQL[@]}" -At 2>&1)" \
            || { printf '%s\n' "$out" >&2; die "timed script failed: $2"; }
    fi
    printf '%s\n' "$out" | awk '/^Time: /{s += $2; n++} END {if (n == 0) exit 1; printf "%.3f\n", s}' \
        || die "no timing in output of: $2"
}

# sql_file NAME: the generated statements live in files (they are long)
W="$CQ_TMPBASE/bench_merge_sql"
mkdir -p "$W"

declare -A MED
declare -a CONFIGS=()
ARMS=(upsert merge2 merge1 merge1h merge1n t-upsert t-merge2 t-merge1 t-merge1n CALL)

: >"$BENCH_OUT.part"
if [[ "$BENCH_MERGE_STATEMENTS" == 1 ]]; then
for G in $BENCH_MERGE_GROUPS; do
    q="mg_up_$G"; src="mg_src_$G"; twin="mg_m_$G"
    section "setup: target of $(human "$G") groups"
    psql_run "SET client_min_messages = warning;" \
        "CREATE TABLE $src (id bigserial, k int NOT NULL, v int NOT NULL) WITH (autovacuum_enabled = off);" \
        "INSERT INTO $src (k, v) SELECT g % $G, (g * 7) % 1000 FROM generate_series(1, 2 * $G) g;" \
        "CREATE INDEX ON $src (id);" \
        "CREATE TABLE $q WITH (cq.output_mode = 'update', cq.trigger = 'available_now') AS SELECT k, count(*) AS n, sum(v) AS s FROM $src GROUP BY k;" \
        "CREATE TABLE $twin (k int NOT NULL PRIMARY KEY, n bigint, s bigint) WITH (autovacuum_enabled = off);" \
        "INSERT INTO $twin SELECT * FROM $q;" \
        "ANALYZE $src, $q, $twin;" >/dev/null
    qid=$(psql_val "SELECT id FROM cq.queries WHERE name = '$q';")
    state="cq_state.s_$qid"
    psql_val "SELECT cq.explain('$q');" | sed '/^-- the MERGE path/,$d' | grep -v '^--' | tr '\n' ' ' | sed 's/; *$//' >"$W/up_$G.sql"
    # cut pg_cq's statement into its state part (up to CTE f), its target
    # part (CTEs o1 .. o) and its final SELECT
    perl -e '
        local $/; my $s = <STDIN>; my ($G, $twin, $q, $W) = @ARGV;
        my $i = index($s, ", o1 AS ("); my $j = index($s, " SELECT (SELECT count(*) FROM m)");
        die "unexpected batch statement shape\n" if $i < 0 || $j < $i;
        my $head = substr($s, 0, $i); my $opart = substr($s, $i + 2, $j - $i - 2); my $fin = substr($s, $j + 1);
        my $w = "((SELECT count(*) FROM o) + (SELECT count(*) FROM o1))";
        die "unexpected final select\n" if index($fin, $w) < 0;
        my $merge = "MERGE INTO public.$twin t USING %s f ON t.k OPERATOR(pg_catalog.=) f.g1"
            . " WHEN MATCHED AND ROW(t.n, t.s)::pg_catalog.record OPERATOR(pg_catalog.*<>) ROW(f.a1, f.a2)::pg_catalog.record"
            . " THEN UPDATE SET n = f.a1, s = f.a2 WHEN NOT MATCHED THEN INSERT (k, n, s) VALUES (f.g1, f.a1, f.a2)";
        my $mergeh = "MERGE INTO public.$q t USING f ON pg_catalog.hash_record(ROW(t.k)) OPERATOR(pg_catalog.=) f.h"
            . " AND t.k OPERATOR(pg_catalog.=) f.g1"
            . " WHEN MATCHED AND ROW(t.n, t.s)::pg_catalog.record OPERATOR(pg_catalog.*<>) ROW(f.a1, f.a2)::pg_catalog.record"
            . " THEN UPDATE SET n = f.a1, s = f.a2 WHEN NOT MATCHED THEN INSERT (k, n, s) VALUES (f.g1, f.a1, f.a2)";
        sub out { my ($n, $t) = @_; open(my $fh, ">", "$W/$n") or die; print $fh $t; close $fh }
        (my $fin2 = $fin) =~ s/\Q$w\E/(SELECT count(*) FROM w)/;
        (my $fin1 = $fin) =~ s/\Q$w\E/0::int8/;
        out("merge2_$G.sql", "$head, w AS (INSERT INTO pg_temp.cq_f SELECT g1, a1, a2 FROM f RETURNING 1) $fin2");
        out("merge2b_$G.sql", sprintf($merge, "pg_temp.cq_f"));
        out("merge1_$G.sql", "$head, st AS (INSERT INTO pg_temp.cq_st $fin1 RETURNING 1) " . sprintf($merge, "f"));
        out("merge1h_$G.sql", "$head, st AS (INSERT INTO pg_temp.cq_st $fin1 RETURNING 1) $mergeh");
        out("tup_$G.sql", "WITH f AS (SELECT * FROM public.mg_fx), $opart SELECT (SELECT count(*) FROM o) + (SELECT count(*) FROM o1)");
        out("tmerge2_$G.sql", sprintf($merge, "pg_temp.cq_f"));
        out("tmerge1_$G.sql", "WITH f AS (SELECT * FROM public.mg_fx) " . sprintf($merge, "f"));
    ' "$G" "$twin" "$q" "$W" <"$W/up_$G.sql" || die "could not derive the MERGE statements"
    TEMPS="CREATE TEMP TABLE cq_f (g1 int, a1 bigint, a2 bigint); CREATE TEMP TABLE cq_st (a int8, b int8, c int8, d int8, e int8, f int8, g timestamptz, h timestamptz, i timestamptz);"
    PARAMS="xid8, xid8, pg_snapshot, pg_snapshot"
    # offsets of the pending batch: start = last end offset, end = now
    OFFS="SELECT end_offset AS s_prev FROM cq.offsets WHERE name = '$q' ORDER BY batch_id DESC LIMIT 1 \\gset
SELECT pg_current_snapshot() AS s_cur \\gset"
    ARGS="(pg_snapshot_xmin(:'s_prev'), pg_snapshot_xmax(:'s_cur'), :'s_cur', :'s_prev')"
    newk=$G
    first_check=1
    for C in $BENCH_MERGE_CHANGED; do
        (( C > G )) && C=$G
        cfg="$G/$C"
        [[ " ${CONFIGS[*]} " == *" $cfg "* ]] && continue
        CONFIGS+=("$cfg")
        declare -A T=()
        for a in "${ARMS[@]}"; do T[$a]=""; done
        for ((r = 1; r <= BENCH_MERGE_ROUNDS; r++)); do
            nnew=$((C / 10)); nold=$((C - nnew))
            # the batch: one row for each of nold distinct existing groups and
            # nnew new groups
            psql_run "INSERT INTO $src (k, v) SELECT ($((r * 104729 + C)) + g::bigint * 7919) % $G, g % 1000 FROM generate_series(1, $nold) g;" \
                "INSERT INTO $src (k, v) SELECT $newk + g, g % 1000 FROM generate_series(1, $nnew) g;" >/dev/null
            newk=$((newk + nnew))
            # the changed groups' final values, as CTE f holds them
            psql_run "SET client_min_messages = warning;" "DROP TABLE IF EXISTS mg_fx;" \
                "CREATE UNLOGGED TABLE mg_fx AS SELECT q.k AS g1, q.n AS a1, q.s AS a2, s.g1 IS NULL AS _ins, pg_catalog.hash_record(ROW(q.k)) AS h, coalesce(s.ctid, '(0,0)') AS _sid FROM (SELECT k, count(*) AS n, sum(v) AS s FROM $src WHERE k IN (SELECT k FROM $src WHERE id > (SELECT max(id) FROM $src) - $C) GROUP BY k) q LEFT JOIN $state s ON s.g1 = q.k;" \
                "ANALYZE mg_fx;" "VACUUM $q, $twin, $state;" "CHECKPOINT;" >/dev/null
            order=("${ARMS[@]:0:9}")
            if ((r % 2 == 0)); then order=(t-merge1n t-merge1 t-merge2 t-upsert merge1n merge1h merge1 merge2 upsert); fi
            for a in "${order[@]}"; do
                case "$a" in
                upsert)
                    v=$(session_ms "$BATCH_SETTINGS $TEMPS
PREPARE b($PARAMS) AS $(cat "$W/up_$G.sql");
$OFFS
BEGIN; EXECUTE b$ARGS; ROLLBACK;" "EXECUTE b$ARGS;") ;;
                merge2)
                    v=$(session_ms "$BATCH_SETTINGS $TEMPS
PREPARE b($PARAMS) AS $(cat "$W/merge2_$G.sql");
PREPARE mg AS $(cat "$W/merge2b_$G.sql");
$OFFS
BEGIN; EXECUTE b$ARGS; EXECUTE mg; TRUNCATE pg_temp.cq_f; ROLLBACK;" "EXECUTE b$ARGS;
EXECUTE mg;
TRUNCATE pg_temp.cq_f;") ;;
                merge1|merge1h|merge1n)
                    v=$(session_ms "$BATCH_SETTINGS $TEMPS $( [[ $a == merge1n ]] && echo "$NOJOIN")
PREPARE b($PARAMS) AS $(cat "$W/${a%n}_$G.sql");
$OFFS
BEGIN; EXECUTE b$ARGS; TABLE pg_temp.cq_st; TRUNCATE pg_temp.cq_st; ROLLBACK;" "EXECUTE b$ARGS;
TABLE pg_temp.cq_st;
TRUNCATE pg_temp.cq_st;") ;;
                t-upsert)
                    v=$(session_ms "$BATCH_SETTINGS
PREPARE t AS $(cat "$W/tup_$G.sql");
BEGIN; EXECUTE t; ROLLBACK;" "EXECUTE t;") ;;
                t-merge2)
                    v=$(session_ms "$BATCH_SETTINGS $TEMPS
PREPARE t AS $(cat "$W/tmerge2_$G.sql");
BEGIN; INSERT INTO pg_temp.cq_f SELECT g1, a1, a2 FROM mg_fx; EXECUTE t; TRUNCATE pg_temp.cq_f; ROLLBACK;" "INSERT INTO pg_temp.cq_f SELECT g1, a1, a2 FROM mg_fx;
EXECUTE t;
TRUNCATE pg_temp.cq_f;") ;;
                t-merge1|t-merge1n)
                    v=$(session_ms "$BATCH_SETTINGS $( [[ $a == t-merge1n ]] && echo "$NOJOIN")
PREPARE t AS $(cat "$W/tmerge1_$G.sql");
BEGIN; EXECUTE t; ROLLBACK;" "EXECUTE t;") ;;
                esac
                T[$a]+="$v "
            done
            if ((first_check)); then
                # the one-statement MERGE path leaves the twin equal to the query
                bad=$(psql_run "SET client_min_messages = warning;" "$TEMPS" "PREPARE b($PARAMS) AS $(cat "$W/merge1_$G.sql");" "$OFFS" "BEGIN;" "EXECUTE b$ARGS;" \
                    "SELECT count(*) FROM ((TABLE $twin EXCEPT ALL SELECT k, count(*), sum(v) FROM $src GROUP BY k) UNION ALL (SELECT k, count(*), sum(v) FROM $src GROUP BY k EXCEPT ALL TABLE $twin)) x;" "ROLLBACK;")
                [[ "$bad" == 0 ]] || die "MERGE path: $twin differs from its query in $bad rows"
                first_check=0
            fi
            v=$(session_ms "SET client_min_messages = warning;" "CALL cq.run('$q');" none)
            T[CALL]+="$v "
            # keep the twin in step with the committed batch
            psql_run "INSERT INTO $twin SELECT t.* FROM $q t JOIN mg_fx f ON t.k = f.g1 ON CONFLICT (k) DO UPDATE SET n = excluded.n, s = excluded.s;" >/dev/null
            line="round $r, $(human "$G") groups, $(human "$C") changed:"
            for a in "${ARMS[@]}"; do line+=" $a $(fmt_ms "$(echo "${T[$a]}" | awk '{print $NF}')")"; done
            info "$line"
        done
        for a in "${ARMS[@]}"; do
            # shellcheck disable=SC2086
            MED[$cfg,$a]=$(median ${T[$a]})
            MED[$cfg,$a,all]="${T[$a]}"
        done
    done
    for t in "$q" "$twin"; do
        bad=$(psql_val "SELECT count(*) FROM ((TABLE $t EXCEPT ALL SELECT k, count(*), sum(v) FROM $src GROUP BY k) UNION ALL (SELECT k, count(*), sum(v) FROM $src GROUP BY k EXCEPT ALL TABLE $t)) x;")
        [[ "$bad" == 0 ]] || die "$t differs from its query in $bad rows"
    done
done

mkdir -p "$(dirname "$BENCH_OUT")"
{
    echo "### MERGE vs the update sink (bench/merge.sh)"
    echo
    echo "Update query \`SELECT k, count(*) AS n, sum(v) AS s FROM src GROUP BY k\`, k NOT NULL; each batch changes C groups (90% existing, 10% new)."
    printf '%s\n' "Medians of $BENCH_MERGE_ROUNDS interleaved rounds, psql \`\\timing\` of the timed statements, all arms on the same data (rolled back; CALL last, committed)."
    echo "Ratios: MERGE arm / upsert arm (< 1 = MERGE faster)."
    echo
    echo "| target groups | changed groups | upsert (pg_cq statement) | merge2 (CTEs → temp table, MERGE) | merge1 (MERGE with the CTEs in its WITH) | merge1h (same, hash index) | merge1n (merge1, no hash/merge join) | merge2 / upsert | merge1 / upsert | merge1h / upsert | merge1n / upsert | target part: upsert CTEs | temp table + MERGE | WITH f MERGE | same, no hash/merge join | CALL cq.run |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    for cfg in "${CONFIGS[@]}"; do
        G=${cfg%/*}; C=${cfg#*/}
        u=${MED[$cfg,upsert]}
        echo "| $(human "$G") | $(human "$C") | $(fmt_ms "$u") | $(fmt_ms "${MED[$cfg,merge2]}") | $(fmt_ms "${MED[$cfg,merge1]}") | $(fmt_ms "${MED[$cfg,merge1h]}") | $(fmt_ms "${MED[$cfg,merge1n]}") | $(fmt_x "$(calc "${MED[$cfg,merge2]} / $u")") | $(fmt_x "$(calc "${MED[$cfg,merge1]} / $u")") | $(fmt_x "$(calc "${MED[$cfg,merge1h]} / $u")") | $(fmt_x "$(calc "${MED[$cfg,merge1n]} / $u")") | $(fmt_ms "${MED[$cfg,t-upsert]}") | $(fmt_ms "${MED[$cfg,t-merge2]}") ($(fmt_x "$(calc "${MED[$cfg,t-merge2]} / ${MED[$cfg,t-upsert]}")")) | $(fmt_ms "${MED[$cfg,t-merge1]}") ($(fmt_x "$(calc "${MED[$cfg,t-merge1]} / ${MED[$cfg,t-upsert]}")")) | $(fmt_ms "${MED[$cfg,t-merge1n]}") ($(fmt_x "$(calc "${MED[$cfg,t-merge1n]} / ${MED[$cfg,t-upsert]}")")) | $(fmt_ms "${MED[$cfg,CALL]}") |"
    done
    echo
    echo "Per round (ms):"
    for cfg in "${CONFIGS[@]}"; do
        echo
        echo "- $(human "${cfg%/*}") groups, $(human "${cfg#*/}") changed:"
        for a in "${ARMS[@]}"; do echo "  $a ${MED[$cfg,$a,all]}"; done
    done
} >"$BENCH_OUT.part"
fi

# ---------------------------------------------------------------------------
# The implementation: pg_cq's three target writers, CALL cq.run.
# Seven queries over one source, the same text: four on the store (the
# default) and three on a state table (state_storage 'unlogged'):
#
#   sd  store, the settings' defaults: the code's choice (the C writer,
#       src/store_update.c, where the target qualifies, as here; its
#       changed groups sorted by key hash where they are many for a large
#       index, cq.target_update_order auto);
#   sa  store, the C writer with cq.target_update_order 'store': its
#       groups in the store's order, as before session 43;
#   sm  store, cq.target_update_in_c off, cq.merge_max_groups -1: MERGE;
#   su  store, cq.target_update_in_c off, cq.merge_max_groups 0: the upsert
#       statement;
#   sn  store, cq.target_update_in_c off, cq.merge_max_groups at its
#       default: the code's choice where the C writer does not qualify;
#   td  table, the default: the code's choice (the batch's new rows are
#       counted first, a cost its figures include);
#   tm  table, cq.merge_max_groups -1: MERGE;
#   tu  table, cq.merge_max_groups 0: the upsert statement.
#
# Each round inserts one batch (C groups changed: 90% existing, 10% new),
# then runs the seven CALLs, each in a fresh session, in an order that
# alternates round by round; each CALL's backend CPU time
# (/proc/self/schedstat: the machine is shared), wall time (\timing) and,
# on the store, the CPU time of its target write alone (DEBUG1: the
# statement or the C writer).  The path each took is cq.explain's "last
# batch in this session"; the seven targets equal the plain query at the
# end.
# ---------------------------------------------------------------------------
IARMS=(sd sa sm su sn td tm tu)
declare -A IGUC=([sd]=DEFAULT [sa]=DEFAULT [sm]=-1 [su]=0 [sn]=DEFAULT [td]=DEFAULT [tm]=-1 [tu]=0)
declare -A ICWR=([sd]=on [sa]=on [sm]=off [su]=off [sn]=off [td]=on [tm]=on [tu]=on)
declare -A IKEY=([sd]=auto [sa]=store [sm]=auto [su]=auto [sn]=auto [td]=auto [tm]=auto [tu]=auto)
declare -A IMED
declare -a ICONFIGS=()
# call_cpu Q MAX_GROUPS IN_C ORDER: "CPU_MS WALL_MS PATH TARGET_MS" of
# CALL cq.run(Q) in a fresh session
call_cpu() {
    local out
    out="$(printf '%s\n' "SET client_min_messages = warning;" "SET cq.merge_max_groups = $2;" \
        "SET cq.target_update_in_c = $3;" "SET cq.target_update_order = $4;" \
        "SELECT split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint AS c0 \\gset" \
        "SET client_min_messages = debug1;" "\\timing on" "CALL cq.run('$1');" "\\timing off" \
        "SET client_min_messages = warning;" \
        "SELECT ((split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint - :c0) / 1e6)::numeric(12,3);" \
        "SELECT coalesce((regexp_match(cq.explain('$1'), 'last batch in this session: (MERGE|the upsert statement|the C writer)'))[1], '-');" \
        | "${PSQL[@]}" -At 2>&1)" || { printf '%s\n' "$out" >&2; die "CALL cq.run('$1') failed"; }
    printf '%s\n' "$out" | awk '/^Time: / { w = $2; next }
        /target statement [0-9.]+ ms/ { t = $0; sub(/.*target statement /, "", t); sub(/ ms.*/, "", t); sink += t; next }
        /^(DEBUG|LOG|NOTICE|INFO):/ { next }
        NF { l[++n] = $0 }
        END { p = l[n]; sub(/^the /, "", p); sub(/ statement$/, "", p); sub(/ writer$/, "", p); print l[n - 1], w, p, (sink == "" ? "-" : sink) }'
}
for G in $BENCH_MERGE_IMPL_GROUPS; do
    src="mi_src_$G"
    section "implementation: target of $(human "$G") groups"
    psql_run "SET client_min_messages = warning;" \
        "CREATE TABLE $src (k int NOT NULL, v int NOT NULL) WITH (autovacuum_enabled = off);" \
        "INSERT INTO $src (k, v) SELECT g % $G, (g * 7) % 1000 FROM generate_series(1, 2 * $G) g;" >/dev/null
    for a in "${IARMS[@]}"; do
        psql_run "SET client_min_messages = warning;" \
            "SELECT cq.create_query('mi_${a}_$G', 'SELECT k, count(*) AS n, sum(v) AS s FROM $src GROUP BY k', output_mode => 'update', \"trigger\" => 'available_now', state_storage => '$([[ $a == s* ]] && echo memory || echo unlogged)') IS NOT NULL;" \
            "CALL cq.run('mi_${a}_$G');" "ANALYZE mi_${a}_$G;" >/dev/null
    done
    newk=$G
    for C in $BENCH_MERGE_IMPL_CHANGED; do
        (( C > G )) && C=$G
        cfg="$G/$C"
        [[ " ${ICONFIGS[*]} " == *" $cfg "* ]] && continue
        ICONFIGS+=("$cfg")
        declare -A IT=()
        for a in "${IARMS[@]}"; do IT[$a,cpu]=""; IT[$a,wall]=""; IT[$a,path]=""; IT[$a,sink]=""; done
        for ((r = 1; r <= BENCH_MERGE_IMPL_ROUNDS; r++)); do
            nnew=$((C / 10)); nold=$((C - nnew))
            psql_run "INSERT INTO $src (k, v) SELECT ($((r * 104729 + C)) + g::bigint * 7919) % $G, g % 1000 FROM generate_series(1, $nold) g;" \
                "INSERT INTO $src (k, v) SELECT $newk + g, g % 1000 FROM generate_series(1, $nnew) g;" "CHECKPOINT;" >/dev/null
            newk=$((newk + nnew))
            order=("${IARMS[@]}")
            ((r % 2 == 0)) && order=(tu tm td sn su sm sa sd)
            line="round $r, $(human "$G") groups, $(human "$C") changed (CPU ms, path):"
            for a in "${order[@]}"; do
                read -r cpu wall path sink < <(call_cpu "mi_${a}_$G" "${IGUC[$a]}" "${ICWR[$a]}" "${IKEY[$a]}")
                IT[$a,cpu]+="$cpu "; IT[$a,wall]+="$wall "; IT[$a,sink]+="$sink "
                # the paths the rounds took (one word each: C, MERGE, upsert)
                [[ " ${IT[$a,path]} " == *" $path "* ]] || IT[$a,path]+="$path "
                line+=" $a $cpu $path"
            done
            info "$line"
        done
        for a in "${IARMS[@]}"; do
            # shellcheck disable=SC2086
            IMED[$cfg,$a]=$(median ${IT[$a,cpu]})
            # shellcheck disable=SC2086
            IMED[$cfg,$a,wall]=$(median ${IT[$a,wall]})
            IMED[$cfg,$a,all]="${IT[$a,cpu]}"
            p="${IT[$a,path]% }"; IMED[$cfg,$a,path]="${p// //}"
            IMED[$cfg,$a,sinkall]="${IT[$a,sink]}"
            # shellcheck disable=SC2086
            [[ $a == s* ]] && IMED[$cfg,$a,sink]=$(median ${IT[$a,sink]})
        done
    done
    # the targets equal the plain query, computed once (at 1M groups the
    # GROUP BYs and sorted EXCEPT ALLs took minutes): k is its key, so
    # rows missing on either side or different, plus duplicate keys
    psql_run "SET client_min_messages = warning;" "DROP TABLE IF EXISTS mi_oracle;" \
        "CREATE UNLOGGED TABLE mi_oracle AS SELECT k, count(*) AS n, sum(v) AS s FROM $src GROUP BY k;" >/dev/null
    for a in "${IARMS[@]}"; do
        t="mi_${a}_$G"
        bad=$(psql_val "SET work_mem = '256MB'; SELECT (SELECT count(*) FROM $t t FULL JOIN mi_oracle o USING (k) WHERE t.k IS NULL OR o.k IS NULL OR (t.n, t.s) IS DISTINCT FROM (o.n, o.s)) + (SELECT count(*) - count(DISTINCT k) FROM $t);")
        [[ "$bad" == 0 ]] || die "$t differs from its query in $bad rows"
    done
    psql_run "DROP TABLE mi_oracle;" >/dev/null
done

# goal 7: in each row, does the path the code took (sd, sn, td) measure at
# least as fast (within 5%: the noise of a shared machine) as the others
# on the same state path?  On the store by the target write alone (the
# rest of the batch is the same code on every path, and its noise, ±10%
# between runs, hides the difference), on the table path by the whole
# batch (one statement).  Compared as the issue measures ratios: the
# median of the rounds' ratios (each round runs every arm once,
# interleaved), not the ratio of the arms' medians: a drift across the
# rounds (the machine's load, the tables growing) moves all arms of a
# round together and cancels in its ratios, but not between two arms'
# medians (session 39: table 1M/1k MERGE/upsert 1.18x by medians, 1.01x
# by rounds).  verdict PATH FIGURES...: "PATH=cpu,cpu,..." per arm (the
# rounds in order), the code's PATH first
verdict() {
    awk -v chose="$1" '
        function med(x, n,   i, j, t) {
            for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
            return (n % 2) ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2 }
        { for (i = 1; i <= NF; i++) { split($i, kv, "="); names[i] = kv[1]; lists[kv[1]] = kv[2] } }
        END {
            if (!(chose in lists)) { print "?"; exit }
            nc = split(lists[chose], c, ",")
            worst = 0
            for (k in lists) {
                if (k == chose) continue
                n = split(lists[k], o, ","); if (n != nc) { print "?"; exit }
                for (i = 1; i <= n; i++) r[i] = c[i] / o[i]
                m = med(r, n)
                if (m > worst) { worst = m; best = k }
            }
            print (worst <= 1.05 ? "yes" : "no (" best " faster)") }' <<<"$2"
}
# pratio A B: the median of the rounds' ratios A/B (space-separated lists)
pratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); split(b, y, " ")
        for (i = 1; i <= n; i++) r[i] = x[i] / y[i]
        for (i = 2; i <= n; i++) { t = r[i]; for (j = i - 1; j >= 1 && r[j] > t; j--) r[j + 1] = r[j]; r[j + 1] = t }
        printf "%.6g\n", (n % 2) ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2 }'
}
# an arm's rounds as verdict's comma list
rounds() { local l="${1% }"; echo "${l// /,}"; }
DEFAULT_MAX=$(psql_val "SELECT boot_val FROM pg_settings WHERE name = 'cq.merge_max_groups';")
{
    echo "### pg_cq's target writers (bench/merge.sh, implementation)"
    echo
    echo "\`SELECT k, count(*) AS n, sum(v) AS s FROM src GROUP BY k\` (k NOT NULL), update mode; \`CALL cq.run\` in a fresh session per batch; backend CPU time (/proc/self/schedstat), medians of $BENCH_MERGE_IMPL_ROUNDS interleaved rounds on the same batches (90% of the changed groups existing, 10% new). Each writer forced by the settings (C writer: the default, which takes it; MERGE: \`cq.target_update_in_c\` off, \`cq.merge_max_groups\` -1; upsert statement: off, 0; the C writer in the store's order, as before session 43: \`cq.target_update_order\` 'store'), and the code's own choice at the defaults (store with the C writer, store with \`cq.target_update_in_c\` off as when the target does not qualify for it, table), as cq.explain's \"last batch\" reports it. *Agrees*: the code's path within 5% of every other writer on its state path (the store by its target write alone, the table by the whole batch), by the median of the rounds' ratios (the columns of ms are the arms' medians; MERGE / upsert is the median of the rounds' ratios). cq.merge_max_groups defaults to $DEFAULT_MAX."
    echo
    echo "| target groups | changed groups | store target write: C writer | C writer in the store's order (before) | C / before | MERGE | upsert statement | store whole batch: C / MERGE / upsert | code's choice (store) | agrees | code's choice without the C writer | agrees | table: MERGE | upsert statement | MERGE / upsert | code's choice (table) | agrees |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    for cfg in "${ICONFIGS[@]}"; do
        G=${cfg%/*}; C=${cfg#*/}
        sdp=${IMED[$cfg,sd,path]}; snp=${IMED[$cfg,sn,path]}; tdp=${IMED[$cfg,td,path]}
        # the C writer's figure is sd's when sd took it
        # and the C writer in the store's order (sa) is one more writer
        cw=$([[ $sdp == C ]] && echo "C=$(rounds "${IMED[$cfg,sd,sinkall]}")")
        ra=$(pratio "${IMED[$cfg,sd,sinkall]}" "${IMED[$cfg,sa,sinkall]}")
        vs=$(verdict "$sdp" "$cw C-store-order=$(rounds "${IMED[$cfg,sa,sinkall]}") MERGE=$(rounds "${IMED[$cfg,sm,sinkall]}") upsert=$(rounds "${IMED[$cfg,su,sinkall]}")")
        vn=$(verdict "$snp" "MERGE=$(rounds "${IMED[$cfg,sm,sinkall]}") upsert=$(rounds "${IMED[$cfg,su,sinkall]}")")
        vt=$(verdict "$tdp" "MERGE=$(rounds "${IMED[$cfg,tm,all]}") upsert=$(rounds "${IMED[$cfg,tu,all]}")")
        rt=$(pratio "${IMED[$cfg,tm,all]}" "${IMED[$cfg,tu,all]}")
        echo "| $(human "$G") | $(human "$C") | $(fmt_ms "${IMED[$cfg,sd,sink]}") ($sdp) | $(fmt_ms "${IMED[$cfg,sa,sink]}") | $(fmt_x "$ra") | $(fmt_ms "${IMED[$cfg,sm,sink]}") | $(fmt_ms "${IMED[$cfg,su,sink]}") | $(fmt_ms "${IMED[$cfg,sd]}") / $(fmt_ms "${IMED[$cfg,sm]}") / $(fmt_ms "${IMED[$cfg,su]}") | $sdp | $vs | $snp | $vn | $(fmt_ms "${IMED[$cfg,tm]}") | $(fmt_ms "${IMED[$cfg,tu]}") | $(fmt_x "$rt") | $tdp ($(fmt_ms "${IMED[$cfg,td]}")) | $vt |"
        echo "impl $G $C $sdp ${vs%% *} $snp ${vn%% *} $tdp ${vt%% *} $(pratio "${IMED[$cfg,sd,sinkall]}" "${IMED[$cfg,sm,sinkall]}") $(pratio "${IMED[$cfg,sm,sinkall]}" "${IMED[$cfg,su,sinkall]}") $rt $ra" >>"$W/impl.txt"
    done
    echo
    echo "CPU ms per round (whole batch, then the store's target write alone):"
    for cfg in "${ICONFIGS[@]}"; do
        echo
        echo "- $(human "${cfg%/*}") groups, $(human "${cfg#*/}") changed:"
        for a in "${IARMS[@]}"; do echo "  $a (${IMED[$cfg,$a,path]}) ${IMED[$cfg,$a,all]}"; done
        for a in sd sa sm su sn; do echo "  $a target write ${IMED[$cfg,$a,sinkall]}"; done
    done
    echo
    cat "$BENCH_OUT.part"
} >"$BENCH_OUT"
rm -f "$BENCH_OUT.part"
# the goal's line: per row the code's path on the store, on the store
# without the C writer and on the table, whether each agrees, and the
# ratios C writer / MERGE and MERGE / upsert (store target write) and
# MERGE / upsert (table batch)
goal_line=$(awk -v max="$DEFAULT_MAX" '$1 == "impl" {
        fig = fig sep $2 "/" $3 ": store " $4 (($5 == "yes") ? "" : " (disagrees)") " (C/MERGE " sprintf("%.2f", $10) "x, C/C in the store order " sprintf("%.2f", $13) "x, MERGE/upsert " sprintf("%.2f", $11) "x), without C " $6 (($7 == "yes") ? "" : " (disagrees)") ", table " $8 (($9 == "yes") ? "" : " (disagrees)") " (MERGE/upsert " sprintf("%.2f", $12) "x)"; sep = "; "
        if ($5 != "yes" || $7 != "yes" || $9 != "yes") bad = 1 }
    END { print (bad ? "no" : "yes"), "code choice vs measured CPU (groups/changed)", fig, "- cq.merge_max_groups", max }' "$W/impl.txt")
rm -f "$W/impl.txt"
echo "goal 7 $goal_line"
[[ -z "${BENCH_DATA:-}" ]] || echo "goal 7 $goal_line" >>"$BENCH_DATA"
cat "$BENCH_OUT"
