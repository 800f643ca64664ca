"""procstat.py: the process table from /proc/PID/stat, for rss.py and
cpu-by-command.py (multi-process servers measured as trees)."""
import os


def read_all():
    """{pid: (command, ppid, own CPU ticks, reaped children's CPU ticks)}."""
    procs = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        # The fields after the parenthesised command name, from field 3
        # (state): ppid is field 4, utime/stime 14/15, cutime/cstime 16/17.
        comm = s[s.index("(") + 1 : s.rindex(")")]
        f = s[s.rindex(")") + 2 :].split()
        procs[int(d)] = (comm, int(f[1]), int(f[11]) + int(f[12]), int(f[13]) + int(f[14]))
    return procs


def tree(procs, roots):
    """The pids of roots and of all their descendants in procs."""
    kids = {}
    for pid, p in procs.items():
        kids.setdefault(p[1], []).append(pid)
    seen, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid in procs and pid not in seen:
            seen.add(pid)
            todo += kids.get(pid, [])
    return seen
