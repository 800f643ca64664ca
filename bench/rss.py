#!/usr/bin/env python3
"""rss.py: peak memory of one or more process trees while a load runs.

Usage: rss.py OUTFILE ROOT_PID...

Every 250 ms it sums, over every process descended from (or equal to) a
root pid (the tree is re-read every second, so a process that lives less
than that may be missed), the proportional set size (Pss, from /proc/PID/smaps_rollup) and
the resident size (VmRSS). Postfix and Dovecot are many processes sharing
their libraries, so their RSS sum counts shared pages many times; Pss
shares them out and is the fair figure to set against mailhost's single
process (whose Pss is about its RSS). On SIGTERM or SIGINT it writes
{"peak_pss_mb": ..., "peak_rss_mb": ..., "max_processes": ..., "samples": ...}
to OUTFILE and exits. bench/compare.sh starts and stops it around each load.
"""
import json
import signal
import sys
import time

import procstat


def tree(roots):
    return list(procstat.tree(procstat.read_all(), roots))


def field_kb(path, key):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    out, roots = sys.argv[1], [int(p) for p in sys.argv[2:]]
    peak_pss = peak_rss = max_procs = samples = 0
    stop = False

    def on_signal(*_):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # The sampler shares the two cores with the servers it measures: with
    # Dovecot's hundred processes a 100 ms walk of /proc took a fifth of a
    # core, so it samples every 250 ms and walks the tree once a second.
    procs, walked = [], 0.0
    while not stop:
        now = time.monotonic()
        if now - walked >= 1:
            procs, walked = tree(roots), now
        pss = sum(field_kb(f"/proc/{p}/smaps_rollup", "Pss:") for p in procs)
        rss = sum(field_kb(f"/proc/{p}/status", "VmRSS:") for p in procs)
        peak_pss, peak_rss = max(peak_pss, pss), max(peak_rss, rss)
        max_procs = max(max_procs, len(procs))
        samples += 1
        time.sleep(0.25)
    with open(out, "w") as f:
        json.dump({"peak_pss_mb": round(peak_pss / 1024, 1), "peak_rss_mb": round(peak_rss / 1024, 1),
                   "max_processes": max_procs, "samples": samples}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
