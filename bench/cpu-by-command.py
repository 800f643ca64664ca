#!/usr/bin/env python3
"""cpu-by-command.py: CPU time of process trees split by command name,
between two readings, for multi-process servers (Postfix + OpenDKIM +
Dovecot) whose total mailhost-load's -cpu-tree reports.

Usage: cpu-by-command.py snap FILE ROOT_PID...   # first reading
       cpu-by-command.py diff FILE ROOT_PID...   # second: the table

A process's own time (utime + stime) counts under its command; the time
of its children that exited and were reaped (cutime + cstime) counts
under "<command>: exited children" (Postfix's master reaps smtpd, cleanup
and smtp processes when they reach max_use or max_idle).
"""
import json
import sys

import procstat


def tree(procs, roots):
    return {pid: procs[pid] for pid in procstat.tree(procs, roots)}


def main():
    mode, path, roots = sys.argv[1], sys.argv[2], [int(a) for a in sys.argv[3:]]
    now = tree(procstat.read_all(), roots)
    if mode == "snap":
        with open(path, "w") as f:
            json.dump(now, f)
        return
    with open(path) as f:
        before = {int(k): v for k, v in json.load(f).items()}
    by = {}
    for pid, (comm, _, own, kids) in now.items():
        b = before.get(pid)
        own0, kids0 = (b[2], b[3]) if b and b[0] == comm else (0, 0)
        by[comm] = by.get(comm, 0) + own - own0
        if kids - kids0:
            k = f"{comm}: exited children"
            by[k] = by.get(k, 0) + kids - kids0
    # A process alive at the first reading and reaped by now moved its
    # time into its parent's children figure: take its earlier time off.
    for pid, (comm, ppid, own, kids) in before.items():
        if pid not in now and ppid in now:
            k = f"{now[ppid][0]}: exited children"
            by[k] = by.get(k, 0) - own - kids
    total = sum(by.values())
    for comm, ticks in sorted(by.items(), key=lambda x: -x[1]):
        if ticks:
            print(f"{comm:32s} {ticks / 100:7.2f} s  {100 * ticks / max(total, 1):5.1f}%")
    print(f"{'total':32s} {total / 100:7.2f} s")


if __name__ == "__main__":
    main()
