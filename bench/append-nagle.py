#!/usr/bin/env python3
"""append-nagle.py: APPEND with Python's imaplib as it is (Nagle's algorithm
on), against several IMAP servers alternately in one run.

Usage: append-nagle.py N SIZE NAME=HOST:PORT:USER:PASSWORD [NAME=...]
Prints, per server and client mode (nagle: imaplib as is; nodelay: the
client socket with TCP_NODELAY), the median and mean milliseconds per
APPEND of a SIZE-byte message, over N APPENDs after 5 warm-up ones.
"""
import imaplib, socket, ssl, statistics, sys, time

def message(size, i):
    head = (b"From: a@bench.test\r\nTo: b@bench.test\r\nSubject: append %d\r\n"
            b"Date: Sun, 29 Nov 2026 03:00:00 +0000\r\nMessage-ID: <a%d@bench.test>\r\n\r\n" % (i, i))
    line = b"x" * 74 + b"\r\n"
    body = line * ((size - len(head)) // len(line) + 1)
    return (head + body)[:size - 2] + b"\r\n"

def session(addr, nodelay):
    host, port, user, password = addr.split(":")
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    m = imaplib.IMAP4(host, int(port), timeout=30)
    m.starttls(ctx)
    if nodelay:
        m.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    m.login(user, password)
    return m

def run(addr, nodelay, n, size):
    m = session(addr, nodelay)
    times = []
    for i in range(n + 5):
        msg = message(size, i)
        t = time.perf_counter()
        typ, _ = m.append("INBOX", None, None, msg)
        dt = time.perf_counter() - t
        if typ != "OK":
            raise SystemExit("APPEND failed: %s" % typ)
        if i >= 5:
            times.append(dt * 1000)
    m.logout()
    return times

def main():
    n, size = int(sys.argv[1]), int(sys.argv[2])
    servers = [a.split("=", 1) for a in sys.argv[3:]]
    for mode in ("nagle", "nodelay"):
        for name, addr in servers:
            t = run(addr, mode == "nodelay", n, size)
            print("%-10s %-8s n=%d size=%d median %.2f ms mean %.2f ms per APPEND" % (
                name, mode, n, size, statistics.median(t), statistics.mean(t)), flush=True)

main()
