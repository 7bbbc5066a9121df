#!/usr/bin/env python3
"""bench/results/write-s31-A-perfdiff.py: samples per transaction by symbol from write-s31-A-perf.sh.

Usage: write-s31-A-perfdiff.py DIR BASE OTHER [OTHER2...]
cpu-clock samples (2000 Hz: 0.5 ms each) per 1000 transactions, summed over the rounds, by
[kernel] / user symbol; the top differences OTHER - BASE.
"""
import glob
import re
import subprocess
import sys

d, base, *others = sys.argv[1:]
LINE = re.compile(r'^\s*([\d.]+)%\s+(\d+)\s+(\S+)\s+\[([.k])\]\s+(.+?)\s*$')


def load(t):
    res, xacts = {}, 0
    for f in sorted(glob.glob(f'{d}/perf.{t}.*')):
        r = f.rsplit('.', 1)[1]
        xacts += int(open(f'{d}/xacts.{t}.{r}').read().strip() or 0)
        out = subprocess.run(['perf', 'report', '-i', f, '--stdio', '-n', '--sort', 'dso,sym'],
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            m = LINE.match(line)
            if m:
                key = ('[k] ' if m.group(4) == 'k' else '') + m.group(5) + ' (' + m.group(3) + ')'
                res[key] = res.get(key, 0) + int(m.group(2))
    return {k: v * 1000.0 / xacts for k, v in res.items()}, xacts


def kernel_share(p):
    return sum(v for k, v in p.items() if k.startswith('[k]'))


pb, xb = load(base)
tb = sum(pb.values())
print(f'{base}: {xb} transactions, {tb:.0f} samples per 1000 (kernel {kernel_share(pb):.0f})')
for o in others:
    po, xo = load(o)
    to = sum(po.values())
    print(f'\n{o}: {xo} transactions, {to:.0f} samples per 1000 (kernel {kernel_share(po):.0f}); '
          f'{base}/{o} = {tb / to:.3f}')
    print(f'| symbol | {base} | {o} | difference |')
    print('|---|---:|---:|---:|')
    for diff, k in sorted(((po.get(k, 0) - pb.get(k, 0), k) for k in set(pb) | set(po)),
                          key=lambda x: -abs(x[0]))[:30]:
        print(f'| `{k}` | {pb.get(k, 0):.1f} | {po.get(k, 0):.1f} | {diff:+.1f} |')
