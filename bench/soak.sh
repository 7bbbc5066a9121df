#!/usr/bin/env bash
# bench/soak.sh -- the long soak: t/006_soak.pl for SOAK_SECONDS (default 600).
#
# Two writers insert random batches (10% rolled back, 1% late rows), a third
# keeps transactions open while others commit, a worker is terminated every
# 10 s, and nine queries in every output mode run with triggers '0' and
# '1 second'.  At the end every target is compared with its plain SELECT
# oracle.  Prints the TAP result and the soak's summary line (rows, batches,
# duration, mismatches); exits non-zero on any mismatch.
#
# Env: SOAK_SECONDS (default 600), plus scripts/common.sh's PGBIN,
# PG_CONFIG, CQ_SKIP_APT, CQ_SKIP_BUILD, CQ_TMPBASE.  The test node lives in
# $CQ_TMPBASE/pg_cq_soak/ (its logs in tmp_check/log/ there).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$REPO_ROOT"

export SOAK_SECONDS="${SOAK_SECONDS:-600}"
dir="$CQ_TMPBASE/pg_cq_soak"

section "packages"
ensure_packages
section "build + install"
build_install

section "soak: ${SOAK_SECONDS}s"
rm -rf "$dir" && mkdir -p "$dir/src"
tar -C "$REPO_ROOT" --exclude=./.git --exclude=./results -cf - . | tar -C "$dir/src" -xf -
is_root && chown -R postgres:postgres "$dir"
rc=0
(cd "$dir" && as_postgres env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE \
    HOME="$dir" PATH="$PGBIN:$PATH" TESTDIR="$dir" SOAK_SECONDS="$SOAK_SECONDS" \
    PG_REGRESS="$PGXS_DIR/src/test/regress/pg_regress" \
    bash -c 'cd "$1/src" && exec prove -I "$2" t/006_soak.pl' _ "$dir" "$PGXS_DIR/src/test/perl") \
    2>&1 | tee "$dir/prove.out" || rc=$?

section "summary"
grep -h '# soak:' "$dir/tmp_check/log/regress_log_006_soak" | sed 's/^.*# soak:/soak:/' || true
grep -h '^not ok' "$dir/tmp_check/log/regress_log_006_soak" || true
exit "$rc"
