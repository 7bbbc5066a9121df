#!/bin/bash
# bench/results/write-s31-A-io.sh: session 31 (helper A): what a backend writes to the kernel and
# the CPU it spends, per 1000-row INSERT ... SELECT (prepared), for w_plain / w_trk / w_const
# (see write-s31-A-cg.sh), on a cluster set up as bench/write_path.sh sets up its own.  Each
# round runs STMTS statements into each table in turn (rotating order), in one session per table
# and round, and reads the backend's /proc/self/io (wchar: bytes handed to write(); syscw: write
# calls), /proc/self/stat (utime, stime) and /proc/self/schedstat (CPU ns) around them.
# Usage: write-s31-A-io.sh OUTDIR; needs PGBIN; PORT (56002), ROUNDS (6), STMTS (150).
set -euo pipefail
W="$1"; PORT="${PORT:-56002}"; ROUNDS="${ROUNDS:-6}"; STMTS="${STMTS:-150}"
# shellcheck source=bench/results/write-s31-A-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/write-s31-A-lib.sh"
twins_cluster "$W" "$PORT"
# probe: wchar syscw utime_ticks stime_ticks cpu_ns
PROBE="SELECT (regexp_match(pg_read_file('/proc/self/io'), 'wchar: (\\d+)'))[1] || ' ' || (regexp_match(pg_read_file('/proc/self/io'), 'syscw: (\\d+)'))[1] || ' ' || split_part(regexp_replace(pg_read_file('/proc/self/stat'), '^.*\\) ', ''), ' ', 12) || ' ' || split_part(regexp_replace(pg_read_file('/proc/self/stat'), '^.*\\) ', ''), ' ', 13) || ' ' || split_part(pg_read_file('/proc/self/schedstat'), ' ', 1);"
order=(w_plain w_trk w_const)
for ((r = 1; r <= ROUNDS; r++)); do
    ((r % 2)) && o=("${order[@]}") || o=(w_const w_trk w_plain)
    for t in "${o[@]}"; do
        out="$({
            echo "PREPARE p AS INSERT INTO $t (ts, device_id, category, amount) $ROWSEL FROM generate_series(1, 1000);"
            for ((i = 0; i < 6; i++)); do echo "EXECUTE p;"; done
            echo "$PROBE"
            for ((i = 0; i < STMTS; i++)); do echo "EXECUTE p;"; done
            echo "$PROBE"
        } | "${P[@]}" -At)"
        read -r a0 b0 u0 s0 c0 a1 b1 u1 s1 c1 <<<"$(tr '\n' ' ' <<<"$out")"
        echo "$t $r wchar/xact $(((a1 - a0) / STMTS)) syscw/xact $(echo "scale=2; ($b1 - $b0) / $STMTS" | bc) utime_ms/xact $(echo "scale=3; ($u1 - $u0) * 10 / $STMTS" | bc) stime_ms/xact $(echo "scale=3; ($s1 - $s0) * 10 / $STMTS" | bc) cpu_ms/xact $(echo "scale=3; ($c1 - $c0) / 1000000 / $STMTS" | bc)"
    done
done
"${P[@]}" -At -c "SELECT relname, pg_relation_size(oid) / 8192 FROM pg_class WHERE relname IN ('w_plain', 'w_trk', 'w_const') ORDER BY 1"
