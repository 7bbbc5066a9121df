# bench/results/write-cgx-s23.sh: whole-transaction callgrind of N prepared single-row INSERTs (session 23)
#!/bin/bash
# cgx.sh TAG TABLE N : whole-process callgrind of N prepared single-row INSERTs (each its own transaction)
B=/opt/pgD/usr/lib/postgresql/15/bin; W=/tmp/hD/wp; TAG=$1; T=$2; N=$3
rm -rf $W/data; cp -a $W/snap $W/data
f=$W/$TAG.sql
{ echo "PREPARE p(int, int, int) AS INSERT INTO $T (ts, device_id, category, amount) VALUES (now(), \$1, 'cat_' || \$2, \$3 / 100.0)";
  for ((i = 0; i < 200; i++)); do echo "EXECUTE p($((i % 1000)), $((i % 50)), $((i * 7919 % 100000)))"; done
  for ((i = 0; i < N; i++)); do echo "EXECUTE p($((i % 1000)), $((i % 50)), $((i * 7919 % 100000)))"; done; } > $f
su postgres -c "cd $W && valgrind --tool=callgrind --callgrind-out-file=$W/cgx.$TAG $B/postgres --single -D $W/data postgres" < $f 2>&1 | sed -nE 's/.*Collected : ([0-9]+).*/\1/p'
