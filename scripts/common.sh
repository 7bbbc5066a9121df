# shellcheck shell=bash
# scripts/common.sh -- shared helpers for scripts/test.sh and scripts/demo.sh.
# Source it; do not execute it.
#
# Environment overrides (all optional):
#   PGBIN            PostgreSQL 15 server binaries   (default /usr/lib/postgresql/15/bin)
#   PG_CONFIG        pg_config to build against      (default $PGBIN/pg_config, else /usr/bin/pg_config)
#   CQ_PRELOAD       shared_preload_libraries of the throwaway clusters
#                    (default 'pg_cq,pg_cron'; set CQ_PRELOAD= to preload nothing)
#   CQ_TMPBASE       where throwaway clusters live   (default /tmp -> /tmp/pg_cq_NAME)
#   CQ_START_TIMEOUT seconds to wait for a cluster to accept connections (default 60)
#   CQ_SKIP_APT=1    skip ensure_packages (no apt-get at all)
#   CQ_SKIP_BUILD=1  skip build_install (use whatever pg_cq is installed already)
#   CQ_KEEP_CLUSTER=1  leave the cluster running when the script exits (debugging)

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
CQ_TMPBASE="${CQ_TMPBASE:-/tmp}"
CQ_PRELOAD="${CQ_PRELOAD-pg_cq,pg_cron}"
CQ_START_TIMEOUT="${CQ_START_TIMEOUT:-60}"
export PGXS_DIR="/usr/lib/postgresql/15/lib/pgxs"
export PGBIN REPO_ROOT

CQ_PACKAGES=(postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap pgtap
             postgresql-15-cron postgresql-15-hll postgresql-15-tdigest
             libipc-run-perl perl make gcc
             libkrb5-dev)   # the server's libpq/libpq-be.h includes <gssapi/gssapi.h>

section() { printf '\n==== %s ====\n' "$*"; }
info()    { printf -- '--- %s\n' "$*"; }
die()     { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

is_root() { [[ "$(id -u)" -eq 0 ]]; }

# Run a command as the postgres OS user (initdb/pg_ctl refuse to run as root).
# The subshell cds to a directory postgres can read, so a repo under /root
# does not make initdb/pg_ctl complain about the current directory.
as_postgres() {
    if is_root; then
        (cd "$CQ_TMPBASE" && runuser -u postgres -- "$@")
    else
        (cd "$CQ_TMPBASE" && "$@")
    fi
}

pkg_installed() {
    [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == *"ok installed"* ]]
}

# Retry a command a few times (apt mirrors are occasionally flaky).
retry() {
    local n
    for n in 1 2 3; do
        "$@" && return 0
        info "attempt $n failed: $*"
        sleep $((n * 5))
    done
    return 1
}

ensure_packages() {
    if [[ "${CQ_SKIP_APT:-}" == 1 ]]; then info "CQ_SKIP_APT=1: not checking packages"; return 0; fi
    local missing=() p
    for p in "${CQ_PACKAGES[@]}"; do
        pkg_installed "$p" || missing+=("$p")
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        info "all packages present: ${CQ_PACKAGES[*]}"
        return 0
    fi
    is_root || die "missing packages (${missing[*]}) and not root; install them first"
    info "missing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    retry apt-get update -q
    retry apt-get install -y -q --no-install-recommends "${CQ_PACKAGES[@]}"
    for p in "${CQ_PACKAGES[@]}"; do
        pkg_installed "$p" || die "package $p still not installed"
    done
}

# Resolve pg_config (call after ensure_packages: it may not exist before).
resolve_pg_config() {
    if [[ -z "${PG_CONFIG:-}" ]]; then
        if [[ -x "$PGBIN/pg_config" ]]; then PG_CONFIG="$PGBIN/pg_config"
        else PG_CONFIG=/usr/bin/pg_config; fi
    fi
    [[ -x "$PG_CONFIG" ]] || command -v "$PG_CONFIG" >/dev/null || die "pg_config not found ($PG_CONFIG)"
    export PG_CONFIG
}

build_install() {
    resolve_pg_config
    if [[ "${CQ_SKIP_BUILD:-}" == 1 ]]; then info "CQ_SKIP_BUILD=1: not building"; return 0; fi
    info "make PG_CONFIG=$PG_CONFIG WERROR=1"
    make -C "$REPO_ROOT" -j"$(nproc)" PG_CONFIG="$PG_CONFIG" WERROR=1
    is_root || die "make install needs root (or run with CQ_SKIP_BUILD=1)"
    info "make install"
    make -C "$REPO_ROOT" PG_CONFIG="$PG_CONFIG" install
}

cluster_dir() { printf '%s/pg_cq_%s' "$CQ_TMPBASE" "$1"; }

# Stop the cluster NAME if it is running.  Never fails (safe in traps).
stop_cluster() {
    local name="$1" mode="${2:-fast}" dir data
    dir="$(cluster_dir "$name")"; data="$dir/data"
    if [[ "${CQ_KEEP_CLUSTER:-}" == 1 && "$mode" == fast ]]; then
        info "CQ_KEEP_CLUSTER=1: leaving cluster '$name' running (PGHOST=$dir PGPORT=${PGPORT:-?})"
        return 0
    fi
    [[ -f "$data/postmaster.pid" ]] || return 0
    info "stopping cluster '$name' ($mode)"
    as_postgres "$PGBIN/pg_ctl" -D "$data" -m "$mode" -w -t 60 stop >/dev/null 2>&1 \
        || as_postgres "$PGBIN/pg_ctl" -D "$data" -m immediate -w -t 30 stop >/dev/null 2>&1 \
        || true
    return 0
}

# start_cluster NAME PORT [extra postgresql.conf lines...]
# Fresh throwaway cluster in $CQ_TMPBASE/pg_cq_NAME (data/, postgres.log, socket).
# Exports PGHOST PGPORT PGUSER PGDATABASE.
start_cluster() {
    local name="$1" port="$2"; shift 2
    local dir data log line deadline
    dir="$(cluster_dir "$name")"; data="$dir/data"; log="$dir/postgres.log"

    getent passwd postgres >/dev/null || die "OS user 'postgres' does not exist (is postgresql-15 installed?)"
    CQ_KEEP_CLUSTER=0 stop_cluster "$name" immediate
    rm -rf "$dir"
    mkdir -p "$dir"
    chmod 755 "$dir"
    is_root && chown postgres:postgres "$dir"

    info "initdb $data"
    if ! as_postgres "$PGBIN/initdb" -D "$data" -A trust -U postgres -E UTF8 \
            --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1; then
        cat "$dir/initdb.log" >&2
        die "initdb failed for cluster '$name'"
    fi

    {
        echo ""
        echo "# --- pg_cq throwaway cluster '$name' (scripts/common.sh) ---"
        echo "port = $port"
        echo "listen_addresses = ''"
        echo "unix_socket_directories = '$dir'"
        echo "shared_preload_libraries = '$CQ_PRELOAD'"
        echo "cron.database_name = 'postgres'"
        echo "max_worker_processes = 16"
        echo "fsync = off"
        echo "synchronous_commit = off"
        echo "full_page_writes = off"
        echo "log_min_messages = warning"
        echo "log_line_prefix = '%m [%p] %q%a '"
        for line in "$@"; do echo "$line"; done
    } >>"$data/postgresql.conf"

    info "starting cluster '$name' on port $port (socket $dir, log $log, preload '$CQ_PRELOAD')"
    if ! as_postgres "$PGBIN/pg_ctl" -D "$data" -l "$log" -W start >/dev/null; then
        tail -n 50 "$log" >&2 || true
        die "pg_ctl start failed for cluster '$name'"
    fi

    deadline=$((SECONDS + CQ_START_TIMEOUT))
    until "$PGBIN/pg_isready" -q -h "$dir" -p "$port" -U postgres -d postgres; do
        if ((SECONDS >= deadline)); then
            echo "---- $log (tail) ----" >&2; tail -n 50 "$log" >&2 || true
            stop_cluster "$name" immediate
            die "cluster '$name' not ready after ${CQ_START_TIMEOUT}s"
        fi
        # The postmaster exits early on fatal config errors (e.g. a preload
        # library that is not installed): notice that instead of waiting.
        if [[ -f "$log" ]] && grep -qE '^.*(FATAL|PANIC):' "$log" \
                && ! as_postgres "$PGBIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
            echo "---- $log (tail) ----" >&2; tail -n 50 "$log" >&2 || true
            die "cluster '$name' failed to start"
        fi
        sleep 0.2
    done

    export PGHOST="$dir" PGPORT="$port" PGUSER=postgres PGDATABASE=postgres
    info "cluster '$name' ready: PGHOST=$PGHOST PGPORT=$PGPORT ($("$PGBIN/psql" -X -At -c 'SELECT version()'))"
}
