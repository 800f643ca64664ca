#!/usr/bin/env python3
"""capacity.py: the capacity model of docs/clustering.md, recomputed from
the benchmarks' output files.

    bench/capacity.py [--scale DIR] [--node-cost LOG] [--per-day 40] ...

Measured inputs (the files, not constants):
  - CPU per delivered message, node and PostgreSQL, and WAL bytes per
    message: node-cost.sh's log (one node, the median over its runs at
    each rate; 4 KB messages);
  - bytes on disk per message (metadata and body apart) and per mailbox:
    scale.sh's PostgreSQL size listing of the biggest store (LABEL.sizes.txt,
    LABEL.counts.txt);
  - node RSS after start-up and after the probes: scale.sh's summary.jsonl.
Assumed (flags, stated in the output): the mail volume, the size mix,
how long mail is kept, the peak factor, the IMAP sessions, the size of the
machines and how full they may run.
"""
import argparse
import glob
import json
import math
import os
import re
import statistics

ap = argparse.ArgumentParser()
here = os.path.dirname(os.path.abspath(__file__))
ap.add_argument("--scale", help="scale.sh output directory (default: the newest results/*/scale)")
ap.add_argument("--label", default="pgbig", help="the PostgreSQL store of scale.sh to take sizes from")
ap.add_argument("--node-cost", default=os.path.join(here, "results/2026-11-28/node-cost/after/log"))
ap.add_argument("--per-day", type=float, default=20, help="messages stored per mailbox per day (received and sent copies)")
ap.add_argument("--mix", default="4096:0.7,50000:0.25,500000:0.05", help="size:share,... of the messages")
ap.add_argument("--keep-days", type=float, default=180, help="how long a message stays, on average")
ap.add_argument("--peak", type=float, default=3, help="peak hour over the day's average rate")
ap.add_argument("--sessions", type=float, default=0.2, help="IMAP sessions open per mailbox at the peak")
ap.add_argument("--session-kb", type=float, default=60, help="a node's memory per open IMAP session, KB (assumed)")
ap.add_argument("--fetches", type=float, default=2, help="times a message is fetched whole")
ap.add_argument("--fetch-cpu-ms", type=float, default=0.3, help="node plus database CPU per fetch of a message, ms (assumed)")
ap.add_argument("--node-cores", type=int, default=8)
ap.add_argument("--util", type=float, default=0.6, help="how busy a CPU may be at the peak")
ap.add_argument("--db-max-cores", type=int, default=64, help="the biggest PostgreSQL primary one would run")
ap.add_argument("--db-max-wal-mbs", type=float, default=150, help="WAL a primary and its standbys sustain, MB/s")
ap.add_argument("--db-max-tb", type=float, default=8, help="data one primary should hold (backup, restore, vacuum times), TB")
a = ap.parse_args()

# --- measured ---------------------------------------------------------------
LINE = re.compile(r"nodes 1 rate (\d+): achieved ([\d.]+).*?node CPU ([\d.]+) ms, database CPU ([\d.]+) ms, WAL (\d+) bytes, ([\d.]+) transactions")
node_ms, db_ms, wal_b, xacts = [], [], [], []
for line in open(a.node_cost):
    m = LINE.search(line)
    if m:
        node_ms.append(float(m[3])); db_ms.append(float(m[4])); wal_b.append(int(m[5])); xacts.append(float(m[6]))
node_ms, db_ms, wal_b, xacts = (statistics.median(x) for x in (node_ms, db_ms, wal_b, xacts))
MEASURED_SIZE = 4096
wal_overhead = wal_b - MEASURED_SIZE  # WAL beyond the body itself

scale = a.scale or sorted(glob.glob(os.path.join(here, "results/*/scale")))[-1]
sizes = {}
for line in open(os.path.join(scale, f"{a.label}.sizes.txt")):
    name, heap, idx, toast, rows = line.split()
    sizes[name] = dict(heap=int(heap), idx=int(idx), toast=int(toast), rows=int(rows))
msgs, mailboxes, blobs, dbsize, walsize = (int(x) for x in open(os.path.join(scale, f"{a.label}.counts.txt")).read().split("|"))
def tot(t): return sizes[t]["heap"] + sizes[t]["idx"] + sizes[t]["toast"] if t in sizes else 0
body_b = tot("blobs") / max(blobs, 1)
meta_tables = ["messages", "changes"]
meta_b = sum(tot(t) for t in meta_tables) / max(msgs, 1)
mbox_tables = ["mailboxes", "addresses", "folders", "subscriptions", "domain_usage"]
mbox_b = sum(tot(t) for t in mbox_tables) / max(mailboxes, 1)
summary = [json.loads(l) for l in open(os.path.join(scale, "summary.jsonl"))]
rss = {s["label"]: (s["mailboxes"], s["rss_start_kb"], s["rss_after_kb"]) for s in summary}

print(f"measured: per message node CPU {node_ms:.2f} ms, database CPU {db_ms:.2f} ms, WAL {wal_b} B "
      f"({wal_overhead} B beyond a {MEASURED_SIZE} B body), {xacts:.2f} transactions ({os.path.relpath(a.node_cost, here)})")
print(f"measured: on disk per message {meta_b:.0f} B of metadata (messages, changes, their indexes) + the body "
      f"({body_b:.0f} B stored per body of the populated mix); per mailbox {mbox_b:.0f} B "
      f"({a.label}: {msgs} messages, {mailboxes} mailboxes, database {dbsize/2**30:.1f} GiB)")
for k, (n, r0, r1) in sorted(rss.items(), key=lambda x: x[1][0]):
    print(f"measured: node RSS {k} ({n} mailboxes): {r0/1024:.0f} MB after start-up, {r1/1024:.0f} MB after the probes")

# --- assumed ------------------------------------------------------------------
mix = [(float(s), float(p)) for s, p in (x.split(":") for x in a.mix.split(","))]
mean = sum(s * p for s, p in mix) / sum(p for _, p in mix)
print(f"assumed: {a.per_day:g} messages per mailbox per day, mean size {mean/1024:.0f} KB ({a.mix}), kept {a.keep_days:g} days, "
      f"peak x{a.peak:g}, {a.sessions:g} IMAP sessions per mailbox at the peak ({a.session_kb:g} KB each), "
      f"each message fetched {a.fetches:g} times at {a.fetch_cpu_ms:g} ms; {a.node_cores}-core nodes and CPUs at most {a.util:.0%} busy")
print()
print("| mailboxes | msg/s peak | node cores | nodes (N+1) | node sessions | db cores | WAL MB/s | WAL MB/s, bodies elsewhere | WAL fsyncs/s | metadata TB | bodies TB | one primary? |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for n in (100_000, 1_000_000, 10_000_000):
    rate = n * a.per_day / 86400 * a.peak
    # Message CPU scales with size only through the copy and the hash of
    # the body; at these sizes the fixed part dominates (taken as fixed).
    ncpu = rate * (node_ms + a.fetches * a.fetch_cpu_ms / 2) / 1000
    dcpu = rate * (db_ms + a.fetches * a.fetch_cpu_ms / 2) / 1000
    ncores = ncpu / a.util
    nodes = max(2, math.ceil(ncores / a.node_cores) + 1)
    sessions = n * a.sessions
    dcores = dcpu / a.util
    wal = rate * (mean + wal_overhead) / 1e6
    wal_meta = rate * wal_overhead / 1e6
    fsyncs = rate * xacts  # upper bound: one flush per transaction (group commit makes it fewer)
    stored = n * a.per_day * a.keep_days
    meta_tb = (stored * meta_b + n * mbox_b) / 1e12
    body_tb = stored * mean / 1e12
    limits = []
    if dcores > a.db_max_cores: limits.append("CPU")
    if wal > a.db_max_wal_mbs: limits.append("WAL with bodies")
    if wal_meta > a.db_max_wal_mbs: limits.append("WAL of metadata")
    if meta_tb + body_tb > a.db_max_tb: limits.append("size with bodies")
    if meta_tb > a.db_max_tb: limits.append("size of metadata")
    verdict = "yes" if not limits else "no: " + ", ".join(limits)
    print(f"| {n:,} | {rate:,.0f} | {ncores:,.1f} | {nodes} | {sessions/nodes:,.0f} per node, {sessions/nodes*a.session_kb/1024:,.0f} MB | "
          f"{dcores:,.1f} | {wal:,.1f} | {wal_meta:,.1f} | {fsyncs:,.0f} | {meta_tb:,.2f} | {body_tb:,.1f} | {verdict} |")
