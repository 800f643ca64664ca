#!/usr/bin/env python3
"""outbound-summary.py: the table of bench/outbound-compare.sh from its
results directory (mailhost.json and postfix.json, one JSON object per
repetition, written by mailhost-load -json): the median of each figure,
then every repetition in order.

Usage: outbound-summary.py DIR
"""
import json
import os
import statistics
import sys


def load(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def figures(run):
    s = run["submission"]
    k = s["sink"]
    srv = s["server"]
    cpu = srv.get("tree_cpu_seconds") or srv["cpu_seconds"]
    return {
        "msg/s into the queue": s["msgs_per_s"],
        "end of DATA → 250 p50, ms": s["end_of_data_to_reply"]["p50_ms"],
        "end of DATA → 250 p99, ms": s["end_of_data_to_reply"]["p99_ms"],
        "msg/s arriving at the sink while filling": k["drain_while_filling_msgs_per_s"],
        "still queued at the last 250": k["backlog_at_last_submit"],
        "last arrival after the last 250, s": k["lag_after_last_submit_seconds"],
        "msg/s end to end (first MAIL → last arrival)": k["end_to_end_msgs_per_s"],
        "server CPU per message, ms (whole process trees)": 1000 * cpu / s["messages"],
        "server CPU, cores used (CPU s / phase s)": cpu / srv["seconds"],
        "load tool CPU per message, ms": 1000 * srv["load_tool_cpu_seconds"] / s["messages"],
        "SMTP sessions to the sink": k["sink_sessions"],
        # mailhost-load writes no results when a message never arrives
        # ("sink: K of N timed messages arrived"): a record means none lost.
        "duplicates / lost": f'{k["duplicates"]} / 0',
    }


def fmt(v):
    if isinstance(v, str):
        return v
    if v >= 100 or float(v).is_integer():
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def main():
    d = sys.argv[1]
    sides = {name: [figures(r) for r in load(os.path.join(d, f"{name}.json"))] for name in ("mailhost", "postfix")}
    keys = next((list(v[0]) for v in sides.values() if v), [])
    n = {k: len(v) for k, v in sides.items()}
    print(f"| figure | mailhost, median ({n['mailhost']} runs) | each run | Postfix + OpenDKIM, median ({n['postfix']} runs) | each run |")
    print("|---|---|---|---|---|")
    for key in keys:
        row = [key]
        for name in ("mailhost", "postfix"):
            vals = [f[key] for f in sides[name]]
            if not vals:
                row += ["", ""]
            elif isinstance(vals[0], str):
                row += [vals[0] if len(set(vals)) == 1 else "; ".join(vals), ""]
            else:
                row += [f"**{fmt(statistics.median(vals))}**", " / ".join(fmt(v) for v in vals)]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
