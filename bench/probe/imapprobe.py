#!/usr/bin/env python3
"""Items 6, 9 and 13 of the probe: keywords, CREATE with "..", literal
framing. Args: USER PASSWORD (a mailbox with at least one message)."""
import socket, ssl, sys, time
from lib import IMAP
from imapprobe_raw import Raw

USER, PW = sys.argv[1:3]

def short(lines, n=200):
    return [l[:n] for l in lines if not l.startswith("* FLAGS") or True][-3:]

r = Raw(USER, PW)
print("== item 9")
print(" ", r.cmd('c1 CREATE "a/../b"')[-1])
print(" ", r.cmd('c2 CREATE "../x"')[-1])
print(" ", r.cmd('c3 CREATE "a/./b"')[-1])
print("  LIST:", [l for l in r.cmd('c4 LIST "" "*"') if l.startswith("*")])

print("== item 13")
r.send("a20 E) {1+}\r\n")
r.send("x\r\n")
print("  a20:", r.until("a20"))
print("  next:", r.cmd("a21 NOOP"))
r.send("a22 LOGIN {1+}\r\n"); r.send("x\r\n")
print("  a22:", r.until("a22"))
print("  next:", r.cmd("a23 NOOP"))

print("== item 6")
r.cmd("k0 CREATE kw")
r.cmd("k0b COPY 1 kw") if False else None
print("  SELECT INBOX", r.cmd("k1 SELECT INBOX")[-1])
kws = ["kw%04d" % i for i in range(3000)]
t = time.time(); res = r.cmd("k2 STORE 1 +FLAGS (%s)" % " ".join(kws)); dt = time.time() - t
print("  STORE 3000 new keywords at once: %.3fs" % dt, res[-1][:200])
t = time.time()
for i in range(0, 1000, 100):
    res = r.cmd("k3 STORE 1 +FLAGS.SILENT (%s)" % " ".join(kws[i:i + 100]))
    assert res[-1].startswith("k3 OK"), res[-1]
print("  STORE 1000 keywords in 10 steps of 100: %.3fs" % (time.time() - t))
t = time.time(); res = r.cmd("k4 STORE 1 +FLAGS (kw2999)"); print("  STORE 1001st keyword: %.3fs" % (time.time() - t), res[-1][:200])
t = time.time(); res = r.cmd("k4b STORE 1 +FLAGS (kw0000)"); print("  STORE existing keyword at 1000: %.3fs" % (time.time() - t), res[-1][:200])
t = time.time(); res = r.cmd("k5 SELECT INBOX"); dt = time.time() - t
fl = [l for l in res if l.startswith("* FLAGS")]
print("  SELECT at 1000 keywords: %.3fs, FLAGS line %d bytes, %s" % (dt, len(fl[0]) if fl else 0, res[-1]))
t = time.time()
for i in range(20):
    r.cmd("k6 STORE 1 -FLAGS.SILENT (kw0001)"); r.cmd("k7 STORE 1 +FLAGS.SILENT (kw0001)")
print("  40 STOREs at 1000 keywords: %.3fs" % (time.time() - t))
t = time.time(); res = r.cmd("k8 FETCH 1 (FLAGS)"); print("  FETCH FLAGS: %.3fs %d bytes" % (time.time() - t, len(res[0])))
res = r.cmd("k9 STORE 1 -FLAGS.SILENT (%s)" % " ".join(kws[:1000])); print("  remove them all:", res[-1])
print("  SELECT after removing (FLAGS still lists?)", [len(l) for l in r.cmd("k10 SELECT INBOX") if l.startswith("* FLAGS")])
print(r.cmd("z LOGOUT")[-1])
