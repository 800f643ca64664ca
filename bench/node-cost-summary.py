#!/usr/bin/env python3
"""node-cost-summary.py LOG...: node-cost.sh's lines as a table, per node
count and rate: the range over repetitions of each figure per message,
and the medians against one node's at the same rate. A run that fell
behind its rate (achieved under 97% of it: the machine was busy with
other work, and its late messages came in larger batches) is left out
and named."""
import re
import statistics
import sys

LINE = re.compile(r"rep (\d+) nodes (\d+) rate (\d+): achieved ([\d.]+) msg/s.*?node CPU ([\d.]+) ms, "
                  r"database CPU ([\d.]+) ms, WAL (\d+) bytes, ([\d.]+) transactions"
                  r"(?:, context switches ([\d.]+) nodes and ([\d.]+) database)?; idle: ([\d.]+) ms CPU per node")
runs = {}
for path in sys.argv[1:]:
    for line in open(path):
        m = LINE.search(line)
        if m:
            k, rate = int(m[2]), int(m[3])
            if float(m[4]) < 0.97 * rate:
                print("left out (behind its rate):", line.strip()[:90], file=sys.stderr)
                continue
            runs.setdefault((k, rate), []).append([float(m[i]) if m[i] else None for i in (5, 6, 7, 8, 9, 10, 11)])
names = ["node CPU ms", "db CPU ms", "WAL B", "xacts", "node ctx sw", "db ctx sw", "idle ms/s/node"]
# A log whose lines lack the context switches leaves their columns out.
shown = [i for i in range(len(names)) if any(r[i] is not None for rs in runs.values() for r in rs)]
names = [names[i] for i in shown]
runs = {key: [[r[i] for i in shown] for r in rs] for key, rs in runs.items()}
print("| nodes | rate | " + " | ".join(names) + " |")
print("|---|---|" + "---|" * len(names))
for (k, rate), rs in sorted(runs.items(), key=lambda x: (x[0][1], x[0][0])):
    base = runs.get((1, rate))
    cells = []
    for i in range(len(names)):
        vals = [r[i] for r in rs if r[i] is not None]
        if not vals:
            cells.append("")
            continue
        fmt = {"WAL B": "%.0f", "xacts": "%.2f", "idle ms/s/node": "%.2f", "node ctx sw": "%.1f", "db ctx sw": "%.1f"}.get(names[i], "%.3f")
        cell = (fmt % min(vals)) + ("-" + fmt % max(vals) if len(vals) > 1 else "")
        if base and k != 1:
            b = statistics.median(r[i] for r in base if r[i] is not None)
            if b:
                cell += " (x%.2f)" % (statistics.median(vals) / b)
        cells.append(cell)
    print("| %d | %d | %s |" % (k, rate, " | ".join(cells)))
