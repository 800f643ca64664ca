#!/usr/bin/env python3
"""Items 2-5 of the probe: unverified domains, claims, reserved names,
postmaster. Args: KEY_A KEY_B ZONE.json POSTMASTER_PASSWORD [WEBHOOK_PORT]"""
import json, sys, time, threading, http.server, hmac, hashlib
from lib import *

A, B, ZONE, PMPW = sys.argv[1:5]
WHPORT = int(sys.argv[5]) if len(sys.argv) > 5 else 18999
PW = "a long password 123"
hooks = []

class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        hooks.append((dict(self.headers), body))
        self.send_response(200); self.end_headers()
    def log_message(self, *a): pass

srv = http.server.HTTPServer(("127.0.0.1", WHPORT), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()

def show(label, r):
    print("%-55s %s" % (label, r))

def verify_txt(key, d):
    name, val = txt_token(key, d)
    zone_set(ZONE, name, "TXT", [val])
    return api(key, "POST", "/domains/%s/verify" % d)

st, wh = api(B, "POST", "/webhooks/", {"url": "http://127.0.0.1:%d/hook" % WHPORT,
    "events": ["domain.claim_ended", "domain.verified"]})
show("B webhook create", (st, wh))
secret = json.loads(wh).get("secret", "")

for key, d, mb in ((A, "alpha.example", "a1"), (B, "beta.example", "b1"), (B, "bigbank.example", "ceo")):
    show("create %s" % d, api(key, "POST", "/domains/", {"name": d})[0])
    show("mailbox %s@%s" % (mb, d), api(key, "POST", "/users/", {"domain_name": d, "email": "%s@%s" % (mb, d), "password": PW})[0])
show("A verify alpha by TXT", verify_txt(A, "alpha.example")[0])
show("B verify beta by TXT", verify_txt(B, "beta.example")[0])
# beta.example's records as its customer would publish them, so that the
# checks of mail between partners find its SPF and DKIM keys
st, body = api(B, "GET", "/domains/beta.example/dns")
txt = {}
for r in json.loads(body)["records"]:
    if r["type"] == "TXT":
        txt.setdefault(r["name"], []).append(r["value"])
    if r["type"] == "MX":
        zone_set(ZONE, r["name"], "MX", [[r.get("priority", 10), r["value"] + "."]])
for n, v in txt.items():
    zone_set(ZONE, n, "TXT", v)
zone_set(ZONE, "mx.example.net", "A", ["127.0.0.1"])
show("B second mailbox b2@beta", api(B, "POST", "/users/", {"domain_name": "beta.example", "email": "b2@beta.example", "password": PW})[0])

print("\n== item 2: B submits as unverified bigbank.example")
s = SMTP(SUB, starttls=True, user="ceo@bigbank.example", password=PW)
show("MAIL FROM", s.cmd("MAIL FROM:<ceo@bigbank.example>"))
show("RCPT A's mailbox", s.cmd("RCPT TO:<a1@alpha.example>"))
show("RCPT remote", s.cmd("RCPT TO:<someone@gmail.com>"))
show("RCPT own partner's mailbox", s.cmd("RCPT TO:<b1@beta.example>"))
show("DATA", s.cmd("DATA"))
s.send("From: ceo@bigbank.example\r\nTo: b1@beta.example\r\nSubject: own\r\n\r\nhi\r\n.\r\n")
show("end of DATA", s.reply()); s.close()

print("\n== item 2: verified B -> verified A")
s = SMTP(SUB, starttls=True, user="b1@beta.example", password=PW)
show("MAIL FROM", s.cmd("MAIL FROM:<b1@beta.example>"))
show("RCPT a1@alpha", s.cmd("RCPT TO:<a1@alpha.example>"))
show("DATA", s.cmd("DATA"))
s.send("From: b1@beta.example\r\nTo: a1@alpha.example\r\nSubject: cross\r\nMessage-ID: <cross@beta.example>\r\n\r\nhi A\r\n.\r\n")
show("end of DATA", s.reply()); s.close()
time.sleep(1)
m = imap("a1@alpha.example", PW); m.select("INBOX")
typ, data = m.search(None, 'HEADER Message-ID "<cross@beta.example>"')
for n in data[0].split():
    hdr = m.fetch(n, "(BODY.PEEK[HEADER])")[1][0][1].decode()
    show("A's copy Authentication-Results", [l for l in hdr.replace("\r\n\t", " ").replace("\r\n ", " ").split("\r\n") if l.lower().startswith("authentication-results")])
m.logout()

print("\n== item 3: claims of victimcorp.example")
show("B create victimcorp (first)", api(B, "POST", "/domains/", {"name": "victimcorp.example"}))
show("B mailbox info@victimcorp", api(B, "POST", "/users/", {"domain_name": "victimcorp.example", "email": "info@victimcorp.example", "password": PW})[0])
show("A create victimcorp", api(A, "POST", "/domains/", {"name": "victimcorp.example"}))
show("A create victimcorp again", api(A, "POST", "/domains/", {"name": "victimcorp.example"}))
show("A mailbox info@victimcorp", api(A, "POST", "/users/", {"domain_name": "victimcorp.example", "email": "info@victimcorp.example", "password": PW})[0])
zone_set(ZONE, "victimcorp.example", "MX", [[10, "mx.example.net."]])
show("B verify victimcorp by MX", api(B, "POST", "/domains/victimcorp.example/verify"))
s = SMTP(MX)
s.cmd("MAIL FROM:<x@outside.test>"); s.cmd("RCPT TO:<info@victimcorp.example>"); s.cmd("DATA")
s.send("Subject: before\r\nMessage-ID: <before@outside.test>\r\n\r\nbefore A verified\r\n.\r\n")
show("MX mail to info@victimcorp before A verifies", s.reply()); s.close()
show("A verify victimcorp by TXT", verify_txt(A, "victimcorp.example"))
show("B GET victimcorp", api(B, "GET", "/domains/victimcorp.example"))
st, audit = api(B, "GET", "/audit/?limit=5")
show("B audit (claim entries)", [e for e in json.loads(audit) if "claim" in json.dumps(e)] if st == 200 else (st, audit))
show("B verify victimcorp after (TXT or MX)", verify_txt(B, "victimcorp.example"))
s = SMTP(MX)
s.cmd("MAIL FROM:<x@outside.test>"); show("RCPT info@victimcorp after", s.cmd("RCPT TO:<info@victimcorp.example>")); s.cmd("DATA")
s.send("Subject: after\r\nMessage-ID: <after@outside.test>\r\n\r\nafter A verified\r\n.\r\n")
show("MX mail after A verified", s.reply()); s.close()
time.sleep(1)
for who in ("A", "B"):
    try:
        m = imap("info@victimcorp.example", PW)
        m.select("INBOX")
        show("IMAP login info@victimcorp now reads", m.search(None, "ALL"))
        for n in m.search(None, "ALL")[1][0].split():
            show("  msg", m.fetch(n, "(BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])")[1][0][1].strip())
        m.logout()
    except Exception as e:
        show("IMAP login info@victimcorp", e)
    break
st, body = api(A, "GET", "/users/info@victimcorp.example/usage")
show("A usage info@victimcorp", (st, body))
st, body = api(B, "GET", "/users/info@victimcorp.example/usage")
show("B usage info@victimcorp", (st, body))
time.sleep(3)
for h, body in hooks:
    ts = h.get("X-Mailhost-Timestamp"); sig = h.get("X-Mailhost-Signature-256", "")
    f = dict(p.split("=", 1) for p in sig.split(",") if "=" in p)
    mac = hmac.new(secret.encode(), (f.get("t", "") + ".").encode() + body, hashlib.sha256).hexdigest()
    old = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    show("webhook %s" % h.get("X-Mailhost-Event"), body.decode())
    show("  Timestamp / Sig-256 verifies / t==Timestamp / age s / old sig",
         (ts, hmac.compare_digest(f.get("v1", ""), mac), f.get("t") == ts, int(time.time()) - int(ts or 0),
          h.get("X-Mailhost-Signature") == "sha256=" + old))

print("\n== item 4: reserved host name")
for n in ("mx.example.net", "sub.mx.example.net", "MX.Example.NET", "example.net"):
    show("B create %s" % n, api(B, "POST", "/domains/", {"name": n}))

print("\n== item 5: postmaster and abuse")
s = SMTP(MX)
s.cmd("MAIL FROM:<reporter@outside.test>")
for r in ("postmaster", "Postmaster", "postmaster@alpha.example", "abuse@alpha.example", "abuse@beta.example", "postmaster@mx.example.net", "nobody@alpha.example"):
    show("RCPT TO:<%s>" % r, s.cmd("RCPT TO:<%s>" % r))
s.cmd("DATA"); s.send("Subject: role mail\r\nMessage-ID: <role@outside.test>\r\n\r\nabuse report\r\n.\r\n")
show("end of DATA", s.reply()); s.close()
time.sleep(1)
m = imap("postmaster@mx.example.net", PMPW); m.select("INBOX")
ids = m.search(None, 'HEADER Message-ID "<role@outside.test>"')[1][0].split()
show("operator INBOX copies of role mail", len(ids))
if ids:
    show("  its Delivered-To/To", m.fetch(ids[0], "(BODY.PEEK[HEADER.FIELDS (DELIVERED-TO X-ORIGINAL-TO SUBJECT)])")[1][0][1])
m.logout()
