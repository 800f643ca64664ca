#!/usr/bin/env python3
"""summarize.py: the table of bench/README.md from a bench/compare.sh run.

Usage: summarize.py OUTDIR

Reads OUTDIR/r*/SERVER-SCENARIO.{json,meta,rss.json} (mailhost-load's -json,
compare.sh's wall time and load averages, rss.py's peaks) and prints, in
Markdown, the median of each figure over the repetitions with every
repetition's value beside it.
"""
import glob
import json
import os
import statistics
import sys


def load(path):
    try:
        with open(path) as f:
            return json.loads(f.readline())
    except (OSError, ValueError):
        return None


def get(d, *keys):
    for k in keys:
        if d is None:
            return None
        d = d.get(k) if isinstance(d, dict) else None
    return d


def figures(base, server, scenario):
    """The figures of one run of one scenario against one server."""
    tool = load(base + ".json")
    meta = load(base + ".meta") or {}
    rss = load(base + ".rss.json") or {}
    f = {"pss": rss.get("peak_pss_mb"), "load": meta.get("load_before")}
    wall = meta.get("wall_seconds")
    n = get(tool, "deliver", "messages")
    if scenario.startswith("tool-") or scenario in ("fetch-fill", "fill"):
        if server == "mailhost":
            f["rate"] = get(tool, "deliver", "msgs_per_s")
        elif n and wall:
            f["rate"] = n / wall  # end to end: until Postfix's queue drained
        f["accept_rate"] = get(tool, "deliver", "msgs_per_s")
        f["p50"] = get(tool, "deliver", "end_of_data_to_reply", "p50_ms")
        f["p99"] = get(tool, "deliver", "end_of_data_to_reply", "p99_ms")
        f["hwm"] = get(tool, "deliver", "server", "peak_rss_mb")
        f["anon"] = get(tool, "deliver", "server", "peak_rss_anon_mb")
        f["file"] = get(tool, "deliver", "server", "peak_rss_file_mb")
        f["cpu_per_msg_ms"] = None
        cpu = get(tool, "deliver", "server", "cpu_seconds")
        if cpu is not None and n:
            f["cpu_per_msg_ms"] = 1000 * cpu / n
    if scenario.startswith("src-") and wall:
        f["wall"] = wall
    if scenario == "fetch":
        f["fetch_rate"] = get(tool, "fetch", "msgs_per_s")
        f["fetch_mbps"] = get(tool, "fetch", "mb_per_s")
        f["fetch_messages"] = get(tool, "fetch", "messages")
        if server == "mailhost":
            f["rate"] = get(tool, "deliver", "msgs_per_s")
            f["hwm"] = get(tool, "fetch", "server", "peak_rss_mb")
            f["client_cpu_per_msg_us"] = None
            c = get(tool, "fetch", "server", "load_tool_cpu_seconds")
            s_ = get(tool, "fetch", "server", "cpu_seconds")
            m = get(tool, "fetch", "messages")
            if c is not None and m:
                f["client_cpu_per_msg_us"] = 1e6 * c / m
                f["server_cpu_per_msg_us"] = 1e6 * s_ / m
    if scenario == "logins":
        f["login_rate"] = get(tool, "logins", "logins_per_s")
        f["first_login_rate"] = get(tool, "logins", "first_login_per_mailbox_per_s")
        f["hwm"] = get(tool, "logins", "server", "peak_rss_mb")
        f["anon"] = get(tool, "logins", "server", "peak_rss_anon_mb")
    return f


def main():
    out = sys.argv[1]
    runs = {}  # (server, scenario) -> [figures per rep]
    for path in sorted(glob.glob(os.path.join(out, "r*", "*.meta"))):
        base = path[: -len(".meta")]
        meta = load(path)
        key = (meta["server"], meta["scenario"])
        runs.setdefault(key, []).append(figures(base, *key))
    # smtp-source rates need the message count, kept in machine.txt.
    settings = {}
    for line in open(os.path.join(out, "machine.txt")):
        if line.startswith("settings:"):
            settings = dict(kv.split("=") for kv in line.split(":", 1)[1].split())
    for (server, scenario), fs in runs.items():
        if scenario.startswith("src-"):
            n = int(settings["NSRC4K" if scenario == "src-4k" else "NSRC100K"])
            for f in fs:
                f["rate"] = n / f["wall"] if f.get("wall") else None

    def cell(server, scenario, metric, fmt="{:.0f}"):
        vals = [f.get(metric) for f in runs.get((server, scenario), [])]
        vals = [v for v in vals if v is not None]
        if not vals:
            return "–"
        med = statistics.median(vals)
        each = " / ".join(fmt.format(v) for v in vals)
        return f"**{fmt.format(med)}** ({each})" if len(vals) > 1 else fmt.format(med)

    rows = [
        ("SMTP 4 KB, mailhost-load, 20 conns, 100 mailboxes: msg/s stored", "tool-4k", "rate", "{:.0f}", "≥ 1000"),
        ("  end of DATA → reply, p50 ms", "tool-4k", "p50", "{:.1f}", ""),
        ("  end of DATA → reply, p99 ms", "tool-4k", "p99", "{:.1f}", ""),
        ("  Postfix: msg/s accepted into its queue (250)", "tool-4k", "accept_rate", "{:.0f}", ""),
        ("  server memory, peak Pss MB (sampled)", "tool-4k", "pss", "{:.0f}", "< 256"),
        ("  mailhost peak RSS MB (VmHWM)", "tool-4k", "hwm", "{:.0f}", "< 256"),
        ("  of which anonymous (heap, stacks), peak MB", "tool-4k", "anon", "{:.0f}", ""),
        ("  of which file-backed (bbolt's map of its file), peak MB", "tool-4k", "file", "{:.0f}", ""),
        ("  mailhost CPU ms per message", "tool-4k", "cpu_per_msg_ms", "{:.2f}", ""),
        ("SMTP 100 KB, mailhost-load: msg/s stored", "tool-100k", "rate", "{:.0f}", "≥ 400"),
        ("  end of DATA → reply, p50 ms", "tool-100k", "p50", "{:.1f}", ""),
        ("  end of DATA → reply, p99 ms", "tool-100k", "p99", "{:.1f}", ""),
        ("  Postfix: msg/s accepted into its queue (250)", "tool-100k", "accept_rate", "{:.0f}", ""),
        ("  server memory, peak Pss MB (sampled)", "tool-100k", "pss", "{:.0f}", "< 256"),
        ("  mailhost peak RSS MB (VmHWM)", "tool-100k", "hwm", "{:.0f}", "< 256"),
        ("  of which anonymous, peak MB", "tool-100k", "anon", "{:.0f}", ""),
        ("  of which file-backed, peak MB", "tool-100k", "file", "{:.0f}", ""),
        ("  mailhost CPU ms per message", "tool-100k", "cpu_per_msg_ms", "{:.2f}", ""),
        ("SMTP 100 KB with BDAT instead of DATA, mailhost-load: msg/s stored", "tool-100k-bdat", "rate", "{:.0f}", "≥ 400"),
        ("  end of data → reply, p50 ms", "tool-100k-bdat", "p50", "{:.1f}", ""),
        ("  end of data → reply, p99 ms", "tool-100k-bdat", "p99", "{:.1f}", ""),
        ("  mailhost CPU ms per message", "tool-100k-bdat", "cpu_per_msg_ms", "{:.2f}", ""),
        ("SMTP 4 KB, mailhost-load, inbound SPF/DKIM/DMARC checks off: msg/s", "tool-4k-nochecks", "rate", "{:.0f}", "≥ 1000"),
        ("  end of DATA → reply, p50 ms", "tool-4k-nochecks", "p50", "{:.1f}", ""),
        ("  end of DATA → reply, p99 ms", "tool-4k-nochecks", "p99", "{:.1f}", ""),
        ("  mailhost CPU ms per message", "tool-4k-nochecks", "cpu_per_msg_ms", "{:.2f}", ""),
        ("SMTP 100 KB, mailhost-load, checks off: msg/s", "tool-100k-nochecks", "rate", "{:.0f}", "≥ 400"),
        ("SMTP 4 KB, smtp-source -d -s 20, one mailbox: msg/s stored", "src-4k", "rate", "{:.0f}", ""),
        ("SMTP 100 KB, smtp-source -d -s 20, one mailbox: msg/s stored", "src-100k", "rate", "{:.0f}", ""),
        ("4 KB into one mailbox, mailhost-load, 20 conns: msg/s stored", "fetch", "rate", "{:.0f}", ""),
        ("FETCH 1:* BODY.PEEK[] of 10,000 × 4 KB, one session: msg/s", "fetch", "fetch_rate", "{:.0f}", "≥ 25000"),
        ("  same, MB/s", "fetch", "fetch_mbps", "{:.0f}", ""),
        ("  mailhost CPU µs per message fetched", "fetch", "server_cpu_per_msg_us", "{:.0f}", ""),
        ("  load tool (go-imap client) CPU µs per message", "fetch", "client_cpu_per_msg_us", "{:.0f}", ""),
        ("IMAP logins/s (STARTTLS, LOGIN, LOGOUT), 4 clients, warm", "logins", "login_rate", "{:.0f}", "≥ 300"),
        ("  first login per mailbox (cold: one argon2id each)/s", "logins", "first_login_rate", "{:.0f}", ""),
        ("  mailhost peak RSS MB during logins (VmHWM)", "logins", "hwm", "{:.0f}", ""),
        ("  of which anonymous, peak MB", "logins", "anon", "{:.0f}", ""),
        ("  server memory during logins, peak Pss MB", "logins", "pss", "{:.0f}", ""),
    ]
    print("| figure | mailhost | Postfix + Dovecot | target |")
    print("|---|---|---|---|")
    for label, scenario, metric, fmt, target in rows:
        pf_scenario = "fetch-fill" if (scenario, metric) == ("fetch", "rate") else scenario
        print(f"| {label} | {cell('mailhost', scenario, metric, fmt)} | {cell('postfix', pf_scenario, metric, fmt)} | {target} |")
    rl = os.path.join(out, "rep-load.txt")
    if os.path.exists(rl):
        print("\nLoad average (1, 5, 15 min) when each repetition started: " +
              "; ".join(l.strip() for l in open(rl)) + ".")

    fill = load(os.path.join(out, "fill", "mailhost-fill.json"))
    if fill:
        print("\nOne mailhost mailbox filled to 100,000 messages of 4 KB (20 connections):\n")
        print("| messages | msg/s | p50 ms | p99 ms |")
        print("|---|---|---|---|")
        for s in fill["deliver"].get("slices", []):
            lat = s["end_of_data_to_reply"]
            print(f"| {s['first']:,}–{s['last']:,} | {s['msgs_per_s']:.0f} | {lat['p50_ms']:.1f} | {lat['p99_ms']:.1f} |")
        srv = fill["deliver"].get("server") or {}
        print(f"\nPeak RSS during the fill: {srv.get('peak_rss_mb', 0):.0f} MB; "
              f"server CPU {1000 * srv.get('cpu_seconds', 0) / fill['deliver']['messages']:.2f} ms per message.")


if __name__ == "__main__":
    main()
