#!/usr/bin/env python3
"""Item 8 of the probe: outbound mail to domains whose MX leads to private
addresses, with a listener on 127.0.0.1:25 that records any connection.
Args: ZONE.json USER PASSWORD (a mailbox of a verified domain)."""
import socket, sys, threading, time
from lib import *

ZONE, USER, PW = sys.argv[1:4]
hits = []
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", 25)); l.listen(8)
def acc():
    while True:
        c, a = l.accept(); hits.append(a)
        c.sendall(b"554 probe listener\r\n"); c.close()
threading.Thread(target=acc, daemon=True).start()

cases = {"loop.example": ("mx.loop.example", "127.0.0.1"), "ten.example": ("mx.ten.example", "10.1.2.3"),
         "mapped.example": ("mx.mapped.example", "0.0.0.0")}
for d, (mx, ip) in cases.items():
    zone_set(ZONE, d, "MX", [[10, mx + "."]]); zone_set(ZONE, mx, "A", [ip])
zone_set(ZONE, "amx.example", "A", ["127.0.0.1"])   # no MX: its A record is the implicit MX
s = SMTP(SUB, starttls=True, user=USER, password=PW)
s.cmd("MAIL FROM:<%s>" % USER)
for d in list(cases) + ["amx.example"]:
    print("RCPT user@%s:" % d, s.cmd("RCPT TO:<user@%s>" % d))
s.cmd("DATA"); s.send("From: %s\r\nSubject: to private\r\nMessage-ID: <priv@probe>\r\n\r\nhi\r\n.\r\n" % USER)
print("DATA:", s.reply()); s.close()
time.sleep(8)
m = imap(USER, PW); m.select("INBOX")
for n in m.search(None, 'SUBJECT "Undelivered"')[1][0].split() or m.search(None, 'FROM "MAILER-DAEMON"')[1][0].split():
    txt = m.fetch(n, "(BODY.PEEK[])")[1][0][1].decode(errors="replace")
    print("bounce:", [x for x in txt.split("\r\n") if "5.4.4" in x or x.startswith(("Final-Recipient", "Diagnostic-Code", "Subject"))])
m.logout()
print("connections to 127.0.0.1:25:", hits)
