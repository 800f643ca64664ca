"""The raw IMAP session of imapprobe.py and extras.py."""
import socket, ssl
from lib import IMAP


class Raw:
    def __init__(self, user, pw):
        s = socket.create_connection(IMAP, timeout=60)
        self.f = s.makefile("rb")
        self.f.readline()
        s.sendall(b"s STARTTLS\r\n"); self.f.readline()
        ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
        self.s = ctx.wrap_socket(s); self.f = self.s.makefile("rb")
        self.cmd('l LOGIN "%s" "%s"' % (user, pw))

    def send(self, b):
        self.s.sendall(b if isinstance(b, bytes) else b.encode())

    def until(self, tag):
        out = []
        while True:
            l = self.f.readline().decode(errors="replace").rstrip("\r\n")
            out.append(l)
            if l.startswith(tag + " ") or l == "":
                return out

    def cmd(self, c):
        tag = c.split(" ", 1)[0]
        self.send(c + "\r\n")
        return self.until(tag)

