#!/usr/bin/env python3
"""spread.py results.jsonl: warm median (min-max, interquartile) per action and server, and per-rep pairs."""
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
w = [r for r in rows if r.get('phase') == 'warm' and 'ms' in r and r.get('ms')]
acts = []
for r in w:
    if r['action'] not in acts: acts.append(r['action'])
print('| action | Dovecot warm ms, median (IQR; range) | mailhost warm ms, median (IQR; range) | visits mailhost faster |')
print('|---|---:|---:|---:|')
for a in acts:
    cells = []
    per = {}
    for s in ('dovecot', 'mailhost'):
        v = sorted(r['ms'] for r in w if r['action'] == a and r['server'] == s)
        per[s] = [r['ms'] for r in w if r['action'] == a and r['server'] == s]
        q = statistics.quantiles(v, n=4)
        cells.append(f'{statistics.median(v):.0f} ({q[0]:.0f}-{q[2]:.0f}; {v[0]:.0f}-{v[-1]:.0f})')
    faster = sum(1 for d, m in zip(per['dovecot'], per['mailhost']) if m < d)
    print(f'| {a} | {cells[0]} | {cells[1]} | {faster} of {len(per["mailhost"])} |')
