"""Helpers of the hostile probe: the API with a key, raw SMTP (plain or
after STARTTLS) and IMAP against a running mailhost. Ports come from the
MAILHOST_* variables (bench/probe/env.sh)."""
import base64, json, os, socket, ssl, time, urllib.request, urllib.error

def hp(var, default):
    h, p = os.environ.get(var, default).rsplit(":", 1)
    return h, int(p)

API = "http://%s:%d" % hp("MAILHOST_HTTP", "127.0.0.1:8080")
MX = hp("MAILHOST_SMTP", "127.0.0.1:2525")
SUB = hp("MAILHOST_SUBMISSION", "127.0.0.1:2587")
IMAP = hp("MAILHOST_IMAP", "127.0.0.1:2143")

def api(key, method, path, body=None):
    req = urllib.request.Request(API + path, method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()

class SMTP:
    """A raw SMTP session: send() writes bytes as given, reply() reads one
    (possibly multi-line) reply."""
    def __init__(self, addr, starttls=False, user=None, password=None, ehlo="probe.test"):
        self.s = socket.create_connection(addr, timeout=30)
        self.buf = b""
        self.greeting = self.reply()
        self.cmd("EHLO " + ehlo)
        if starttls:
            self.cmd("STARTTLS")
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            self.s = ctx.wrap_socket(self.s)
            self.buf = b""
            self.cmd("EHLO " + ehlo)
        if user:
            tok = base64.b64encode(b"\0" + user.encode() + b"\0" + password.encode()).decode()
            r = self.cmd("AUTH PLAIN " + tok)
            assert r.startswith("235"), r

    def line(self):
        while b"\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("connection closed; buffer %r" % self.buf)
            self.buf += d
        l, self.buf = self.buf.split(b"\n", 1)
        return l.decode(errors="replace").rstrip("\r")

    def reply(self):
        lines = [self.line()]
        while len(lines[-1]) > 3 and lines[-1][3] == "-":
            lines.append(self.line())
        return "\n".join(lines)

    def send(self, data):
        self.s.sendall(data if isinstance(data, bytes) else data.encode())

    def cmd(self, c):
        self.send(c + "\r\n")
        return self.reply()

    def close(self):
        try:
            self.cmd("QUIT")
        except Exception:
            pass
        self.s.close()

def imap(user, password):
    import imaplib
    m = imaplib.IMAP4(*IMAP)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    m.starttls(ctx)
    m.login(user, password)
    return m

def load_zone(path):
    try:
        return json.load(open(path))
    except FileNotFoundError:
        return {}

def zone_set(path, name, rtype, values):
    z = load_zone(path)
    z.setdefault(name.lower().rstrip(".") + ".", {})[rtype] = values
    json.dump(z, open(path + ".tmp", "w"))
    os.replace(path + ".tmp", path)

def txt_token(key, domain):
    st, body = api(key, "GET", "/domains/%s/dns" % domain)
    for r in json.loads(body)["records"]:
        if r["type"] == "TXT" and r["name"].startswith("_mailhost."):
            return r["name"], r["value"]
    raise KeyError(body)
