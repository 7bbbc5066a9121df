#!/usr/bin/env bash
# scripts/demo.sh -- `make demo`: install deps, build+install pg_cq, start a
# throwaway cluster (/tmp/pg_cq_demo, port 55433 = CQ_DEMO_PORT), run
# scripts/demo.sql (CQ_DEMO_SQL) with psql, stop the cluster (also on failure).
# Env overrides: see scripts/common.sh, plus CQ_DEMO_PORT, CQ_DEMO_SQL.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$REPO_ROOT"

CQ_DEMO_PORT="${CQ_DEMO_PORT:-55433}"
CQ_DEMO_SQL="${CQ_DEMO_SQL:-$REPO_ROOT/scripts/demo.sql}"

trap 'stop_cluster demo' EXIT
trap 'exit 130' INT TERM

section "packages"
ensure_packages

section "build + install"
build_install

section "cluster"
start_cluster demo "$CQ_DEMO_PORT"

section "demo: ${CQ_DEMO_SQL#"$REPO_ROOT"/}"
rc=0
"$PGBIN/psql" -X -P pager=off -v ON_ERROR_STOP=1 --echo-queries -f "$CQ_DEMO_SQL" || rc=$?

section "done"
stop_cluster demo
if ((rc != 0)); then
    echo "demo FAILED (psql exit $rc); server log: $(cluster_dir demo)/postgres.log"
    tail -n 30 "$(cluster_dir demo)/postgres.log" || true
    echo "demo FAILED"
    exit "$rc"
fi
echo "demo OK"
