#!/usr/bin/env python3
"""Item 7 of the probe: 20 MX sessions pass RCPT for a 1 MB mailbox, then
all send ~1 MB at once. Args: KEY DOMAIN (a domain of KEY's partner)."""
import json, sys, threading
from lib import *

KEY, DOM = sys.argv[1:3]
box = "quota@" + DOM
print("create", api(KEY, "POST", "/users/", {"domain_name": DOM, "email": box, "password": "a long password 123"})[0])
print("quota 1", api(KEY, "PUT", "/users/%s/quota" % box, {"quota_mb": 1}))
body = b"Subject: big\r\n\r\n" + (b"x" * 998 + b"\r\n") * 1000 + b".\r\n"   # ~1 MB
sessions = []
for i in range(20):
    s = SMTP(MX)
    s.cmd("MAIL FROM:<s%d@outside.test>" % i)
    r = s.cmd("RCPT TO:<%s>" % box)
    assert r.startswith("250"), r
    assert s.cmd("DATA").startswith("354")
    sessions.append(s)
replies = [None] * 20
go = threading.Barrier(20)
def send(i):
    go.wait()
    sessions[i].send(body)
    replies[i] = sessions[i].reply()
ts = [threading.Thread(target=send, args=(i,)) for i in range(20)]
[t.start() for t in ts]; [t.join() for t in ts]
for s in sessions:
    s.close()
counts = {}
for r in replies:
    counts[r] = counts.get(r, 0) + 1
print("replies after DATA:", json.dumps(counts, indent=1))
print("usage:", api(KEY, "GET", "/users/%s/usage" % box))
m = imap(box, "a long password 123")
print("IMAP SELECT INBOX:", m.select("INBOX"))
m.logout()
s = SMTP(MX); s.cmd("MAIL FROM:<late@outside.test>")
print("a later RCPT:", s.cmd("RCPT TO:<%s>" % box)); s.close()
