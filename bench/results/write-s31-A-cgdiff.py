#!/usr/bin/env python3
"""bench/results/write-s31-A-cgdiff.py: per-row instruction table from write-s31-A-cg.sh's files.

Usage: write-s31-A-cgdiff.py DIR BASE OTHER [N1 N2 [ROWS_PER_STMT [--inclusive]]]
Per function: (cost(N2) - cost(N1)) / ((N2 - N1) * ROWS) for table BASE and OTHER, and
OTHER - BASE, sorted by |difference|; self cost unless --inclusive.
"""
import re
import subprocess
import sys

d, base, other = sys.argv[1:4]
n1, n2 = (int(sys.argv[4]), int(sys.argv[5])) if len(sys.argv) > 5 else (10, 30)
rows = int(sys.argv[6]) if len(sys.argv) > 6 else 1000
inclusive = '--inclusive' in sys.argv
LINE = re.compile(r'^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.+?)\s*$')


def costs(path):
    out = subprocess.run(['callgrind_annotate', '--threshold=100',
                          '--inclusive=' + ('yes' if inclusive else 'no'), path],
                         capture_output=True, text=True, check=True).stdout
    res = {}
    started = False
    for line in out.splitlines():
        if 'file:function' in line:
            started = True
            continue
        if not started:
            continue
        if not line.strip():
            if res:
                break
            continue
        m = LINE.match(line)
        if not m:
            continue
        fn = re.sub(r'\s*\[[^\]]*\]$', '', m.group(2))
        fn = fn.split(':', 1)[-1]
        res[fn] = res.get(fn, 0) + int(m.group(1).replace(',', ''))
    return res


def total(path):
    with open(path) as f:
        for line in f:
            if line.startswith('totals:') or line.startswith('summary:'):
                return int(line.split()[1])
    return 0


def per_row(t):
    a, b = costs(f'{d}/cg.{t}.{n1}'), costs(f'{d}/cg.{t}.{n2}')
    tot = (total(f'{d}/cg.{t}.{n2}') - total(f'{d}/cg.{t}.{n1}')) / ((n2 - n1) * rows)
    return {k: (b.get(k, 0) - a.get(k, 0)) / ((n2 - n1) * rows) for k in set(a) | set(b)}, tot


pb, tb = per_row(base)
po, to = per_row(other)
print(f'total per row: {base} {tb:.1f}, {other} {to:.1f}, difference {to - tb:+.1f} ({to / tb:.4f}x; {base}/{other} {tb / to:.4f})')
rowsout = sorted(((po.get(k, 0) - pb.get(k, 0), k) for k in set(pb) | set(po)), key=lambda x: -abs(x[0]))
print(f'| function | {base} | {other} | difference |')
print('|---|---:|---:|---:|')
for diff, k in rowsout:
    if abs(diff) < 1.0:
        break
    print(f'| `{k}` | {pb.get(k, 0):.1f} | {po.get(k, 0):.1f} | {diff:+.1f} |')
