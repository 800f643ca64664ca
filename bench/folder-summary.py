#!/usr/bin/env python3
"""folder-summary.py RESULTS.jsonl: the table of bench/folder.sh's run.

One row per command, folder size and phase (first, cold, warm); for each
server the median time in ms (warm: median of the repetitions, with the
range), and mailhost's ratio to Dovecot (below 1: mailhost is faster).
"""
import json
import statistics
import sys
from collections import defaultdict

rows = defaultdict(lambda: defaultdict(list))
order = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    name, phase, n = r["label"].split()
    key = (r["cmd"], n, phase)
    if key not in rows:
        order.append(key)
    rows[key][name].append(r["ms"])

servers = ["mailhost", "dovecot"]
for extra in ("mailhost-pg", "mailhost-base"):
    if any(extra in rows[k] for k in order):
        servers.append(extra)


def fmt(v):
    if not v:
        return "-"
    m = statistics.median(v)
    if len(v) == 1:
        return f"{m:,.1f}"
    return f"**{m:,.1f}** ({min(v):,.1f}-{max(v):,.1f})"


print("| command | messages | phase | " + " | ".join(f"{s} ms" for s in servers) + " | mailhost / dovecot |")
print("|---|---|---|" + "---|" * len(servers) + "---|")
for key in order:
    cmd, n, phase = key
    r = rows[key]
    ratio = "-"
    if r.get("mailhost") and r.get("dovecot"):
        ratio = f"{statistics.median(r['mailhost']) / statistics.median(r['dovecot']):.2f}"
    print(f"| `{cmd}` | {n.removeprefix('n=')} | {phase} | " + " | ".join(fmt(r.get(s)) for s in servers) + f" | {ratio} |")
