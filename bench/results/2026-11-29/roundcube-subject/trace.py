#!/usr/bin/env python3
"""trace.py LOG PATTERN: for each IMAP connection in Roundcube's debug log
whose commands match PATTERN, list each command with its time (from the C:
line to its tagged reply, by the log's microsecond stamps) and the bytes of
the server lines logged for it; then the median per command over all
matching connections."""
import re, sys, statistics
from datetime import datetime
line_re = re.compile(r'^\[(\S+ \S+) \S+\]: <\w+> \[(\w+)\] (C|S): (.*)$')
conns = {}; order = []
for l in open(sys.argv[1], errors='replace'):
    m = line_re.match(l.rstrip('\n'))
    if not m:
        # continuation of a multi-line server reply (literals)
        if order and conns[order[-1]]['cur']: conns[order[-1]]['cur'][2] += len(l)
        continue
    ts = datetime.strptime(m.group(1), '%d-%b-%Y %H:%M:%S.%f').timestamp()
    cid, who, text = m.group(2), m.group(3), m.group(4)
    if cid not in conns or conns[cid].get('done'):
        if cid in conns: cid_key = cid + '#' + str(len(order))
        conns.setdefault(cid, None)
    c = conns.get(cid)
    if c is None or c.get('done'):
        c = {'cmds': [], 'cur': None, 'start': ts}; conns[cid] = c; order.append(cid); allc = conns
        conns_list = globals().setdefault('LIST', []); conns_list.append(c)
    if who == 'C':
        tag = text.split(' ', 1)[0]
        c['cur'] = [tag, text[:90], 0, ts]
    else:
        cur = c['cur']
        if cur is None: continue
        cur[2] += len(text) + 2
        if text.startswith(cur[0] + ' '):
            c['cmds'].append((cur[1], ts - cur[3], cur[2]))
            if 'LOGOUT' in cur[1]: c['done'] = True; c['end'] = ts
            c['cur'] = None
pat = re.compile(sys.argv[2])
sel = [c for c in LIST if any(pat.search(x[0]) for x in c['cmds'])]
agg = {}
for i, c in enumerate(sel):
    if len(sys.argv) > 3 and i < int(sys.argv[3]):
        print('--- connection', i)
        for name, d, b in c['cmds']:
            print(f'  {d*1000:8.2f} ms {b:8d} B  {name}')
    for k, (name, d, b) in enumerate(c['cmds']):
        key = re.sub(r'^A\d+ ', '', name)
        key = re.sub(r'\d+([:,\d]*)', 'N', key)[:70]
        agg.setdefault((k, key), []).append((d, b))
spans = [(c.get('end', c['start']) - c['start'])*1000 for c in sel]
srv = [sum(d for _, d, _ in c['cmds'])*1000 for c in sel]
if sel:
    print(f'connection, connect to LOGOUT reply: median {statistics.median(spans):.1f} ms ({min(spans):.1f}-{max(spans):.1f}); of it waiting on replies: median {statistics.median(srv):.1f} ms ({min(srv):.1f}-{max(srv):.1f})')
print(f'{len(sel)} connections matching {sys.argv[2]!r}; per command: median ms (min-max), median bytes')
tot = []
for (k, key), v in sorted(agg.items()):
    ds = [d*1000 for d, _ in v]; bs = [b for _, b in v]
    print(f'  {k:2d} n={len(v):2d} {statistics.median(ds):7.2f} ({min(ds):.2f}-{max(ds):.2f}) ms {int(statistics.median(bs)):7d} B  {key}')
