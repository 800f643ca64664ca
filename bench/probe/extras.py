#!/usr/bin/env python3
"""Variants beyond the issue's list: sending as another partner's or an
unverified domain from a verified mailbox, claims after verification,
postmaster spellings, IMAP literal and name edge cases.
Args: KEY_A KEY_B PASSWORD (the partners.py set-up)."""
import sys, time
from imapprobe_raw import Raw
from lib import *

A, B, PW = sys.argv[1:4]

def sub_try(label, user, env_from, hdr_from, rcpt):
    s = SMTP(SUB, starttls=True, user=user, password=PW)
    r1 = s.cmd("MAIL FROM:<%s>" % env_from); r2 = s.cmd("RCPT TO:<%s>" % rcpt)
    r3 = ""
    if r2.startswith("250"):
        s.cmd("DATA"); s.send("From: %s\r\nSubject: spoof\r\n\r\nx\r\n.\r\n" % hdr_from); r3 = s.reply()
    print("%-50s MAIL %s | RCPT %s | DATA %s" % (label, r1[:60], r2[:140], r3[:160])); s.close()

print("== senders")
sub_try("b1 header From: ceo@bigbank -> A", "b1@beta.example", "b1@beta.example", "ceo@bigbank.example", "a1@alpha.example")
sub_try("b1 envelope ceo@bigbank -> A", "b1@beta.example", "ceo@bigbank.example", "b1@beta.example", "a1@alpha.example")
sub_try("b1 header From: a1@alpha (other partner) -> A", "b1@beta.example", "b1@beta.example", "a1@alpha.example", "a1@alpha.example")
sub_try("b1 envelope a1@alpha -> A", "b1@beta.example", "a1@alpha.example", "b1@beta.example", "a1@alpha.example")
sub_try("b1 header From: postmaster@mx.example.net", "b1@beta.example", "b1@beta.example", "postmaster@mx.example.net", "a1@alpha.example")
sub_try("b1 envelope <> (a fake bounce) -> A", "b1@beta.example", "", "MAILER-DAEMON@mx.example.net", "a1@alpha.example")

print("== claims after verification")
print("B create victimcorp again", api(B, "POST", "/domains/", {"name": "victimcorp.example"}))
print("B create sub.victimcorp", api(B, "POST", "/domains/", {"name": "sub.victimcorp.example"}))
print("B create sub.alpha", api(B, "POST", "/domains/", {"name": "sub.alpha.example"}))
print("B alias @victimcorp (catch-all on ended claim)", api(B, "POST", "/aliases/", {"domain_name": "victimcorp.example", "source": "@victimcorp.example", "destination": "b1@beta.example"}))
s = SMTP(MX); s.cmd("MAIL FROM:<x@outside.test>")
print("RCPT nobody@victimcorp (B's catch-all must not take it)", s.cmd("RCPT TO:<nobody@victimcorp.example>")); s.close()

print("== postmaster spellings")
s = SMTP(MX); s.cmd("MAIL FROM:<x@outside.test>")
for r in ("<POSTMASTER>", "<postmaster@MX.EXAMPLE.NET>", "<PostMaster@Alpha.Example>", "<ABUSE@alpha.example>",
          "<postmaster@bigbank.example>", "<postmaster@victimcorp.example>", "<\"postmaster\">", "<postmaster@unhosted.example>"):
    print("RCPT TO:%-32s %s" % (r, s.cmd("RCPT TO:" + r)))
s.close()

print("== IMAP literals and names")
r = Raw("b2@beta.example", PW)
r.send("a30 E) {1}\r\n")
print("  sync literal to unknown command:", r.f.readline())
r.send("x\r\n"); print("  then x:", r.f.readline())
print("  next:", r.cmd("a31 NOOP"))
r.send("a32 NOOP {99999999999+}\r\n"); print("  huge non-sync literal:", r.f.readline())
print("  next:", r.cmd("a33 NOOP"))
r = Raw("b2@beta.example", PW)
for n in ('"a/"', '"a//b"', '"INBOX/../Sent"', '"/abs"', '"."', '".."', '"a/.."'):
    print("  CREATE %-18s %s" % (n, r.cmd("c CREATE " + n)[-1]))
print("  RENAME Archive x/../y:", r.cmd('r RENAME "Archive" "x/../y"')[-1])
print("  LIST:", [l for l in r.cmd('l LIST "" "*"') if l.startswith("*")])
