# shellcheck shell=bash
# bench/results/write-s31-A-lib.sh: session 31 (helper A), sourced by write-s31-A-perf.sh and
# write-s31-A-io.sh: twins_cluster OUTDIR PORT starts a throwaway cluster set up as
# bench/write_path.sh sets up its own (stopped at exit), with w_plain (untracked), w_trk (the
# source of a paused query), w_const (the same nullable xid8 column, constant default '0') and
# w_func (the column, default pg_current_xact_id()); sets P (psql command) and ROWSEL.
COLS="ts timestamptz, device_id int, category text, amount numeric(10,2)"
ROWSEL="SELECT now(), 1 + (random() * 999)::int, 'cat_' || lpad(floor(random() * 50)::int::text, 2, '0'), round((random() * 1000)::numeric, 2)"
twins_cluster() {
    local w="$1" port="$2" t
    rm -rf "$w" && mkdir -p "$w" && chown postgres "$w"
    su postgres -c "$PGBIN/initdb -D $w/data -A trust -U postgres --no-sync" >/dev/null
    printf '%s\n' "port = $port" "listen_addresses = ''" "unix_socket_directories = '$w'" "shared_preload_libraries = 'pg_cq'" \
        "fsync = off" "synchronous_commit = off" "full_page_writes = off" "shared_buffers = 256MB" "max_wal_size = 4GB" \
        "autovacuum = off" >>"$w/data/postgresql.conf"
    su postgres -c "$PGBIN/pg_ctl -D $w/data -l $w/log -w start" >/dev/null
    # shellcheck disable=SC2064
    trap "su postgres -c '$PGBIN/pg_ctl -D $w/data -m immediate stop' >/dev/null 2>&1 || true" EXIT
    P=("$PGBIN/psql" -X -q -h "$w" -p "$port" -U postgres -v ON_ERROR_STOP=1 postgres)
    {
        echo "CREATE EXTENSION pg_cq;"
        for t in w_plain w_trk w_const w_func; do echo "CREATE TABLE $t ($COLS);"; done
        echo "CREATE TABLE q_trk WITH (cq.trigger = 'available_now') AS SELECT device_id FROM w_trk WITH NO DATA;"
        for t in w_const w_func; do echo "ALTER TABLE $t ADD COLUMN cq_xid pg_catalog.xid8;"; done
        echo "ALTER TABLE w_const ALTER COLUMN cq_xid SET DEFAULT '0'::pg_catalog.xid8;"
        echo "ALTER TABLE w_func ALTER COLUMN cq_xid SET DEFAULT pg_catalog.pg_current_xact_id();"
        echo "CHECKPOINT;"
    } | "${P[@]}" >/dev/null
}
