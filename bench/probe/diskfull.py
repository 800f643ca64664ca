#!/usr/bin/env python3
"""Item 10 of the probe: with the data directory on a small tmpfs
(mount -t tmpfs -o size=20m tmpfs /mnt/x), fill the disk with mail and a
filler file, then delete over IMAP. Args: KEY DATA_DIR."""
import os, sys, time
from lib import *

KEY, DATA = sys.argv[1:3]
print("domain", api(KEY, "POST", "/domains/", {"name": "full.example"})[0])
print("mailbox", api(KEY, "POST", "/users/", {"domain_name": "full.example", "email": "u@full.example", "password": "a long password 123"})[0])
body = "Subject: fill\r\n\r\n" + ("y" * 998 + "\r\n") * 200 + ".\r\n"   # ~200 KB
n = 0
for i in range(30):
    s = SMTP(MX); s.cmd("MAIL FROM:<f@outside.test>"); s.cmd("RCPT TO:<u@full.example>"); s.cmd("DATA")
    s.send(body); r = s.reply(); s.close()
    if not r.startswith("250"):
        print("delivery %d:" % i, r); break
    n += 1
print("delivered", n)
st = os.statvfs(DATA); free = st.f_bavail * st.f_frsize
filler = os.path.join(os.path.dirname(DATA.rstrip("/")), "filler")
f = open(filler, "wb")
try:
    while True:
        f.write(b"\0" * 65536); f.flush()
except OSError as e:
    print("filler stopped:", e)
try:
    f.close()
except OSError:
    pass
st = os.statvfs(DATA); print("free bytes now:", st.f_bavail * st.f_frsize)
s = SMTP(MX); s.cmd("MAIL FROM:<f@outside.test>"); print("RCPT on full disk:", s.cmd("RCPT TO:<u@full.example>"))
print("DATA:", s.cmd("DATA")); s.send(body); print("end of DATA on full disk:", s.reply()); s.close()
m = imap("u@full.example", "a long password 123")
print("SELECT", m.select("INBOX"))
print("STORE \\Deleted 1:10", m.store("1:10", "+FLAGS.SILENT", "\\Deleted"))
print("EXPUNGE", m.expunge())
print("SELECT after", m.select("INBOX"))
m.logout()
print("usage", api(KEY, "GET", "/users/u@full.example/usage"))
print("delete mailbox via API", api(KEY, "DELETE", "/users/u@full.example"))
os.remove(filler)
print("filler removed; free:", os.statvfs(DATA).f_bavail * os.statvfs(DATA).f_frsize)
