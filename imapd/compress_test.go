package imapd

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// compressScript is Python's imaplib with COMPRESS=DEFLATE added the way
// a client does it, over zlib (raw DEFLATE, a sync flush after each
// command, RFC 4978): an implementation of DEFLATE other than the
// server's. Over STARTTLS it logs in, reads the capabilities, enables
// COMPRESS, then SELECTs and FETCHes what a client opening a folder
// fetches, and bodies, asks for COMPRESS again, and logs out. It prints
// what it saw and the bytes it read off the socket, as JSON.
const compressScript = `
import imaplib, json, ssl, sys, zlib
host, port, user, password = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
imaplib.Commands["COMPRESS"] = ("AUTH", "SELECTED")

class Z(imaplib.IMAP4):
    zd = None
    wire = 0
    plain = 0
    def compress(self):
        typ, data = self._simple_command("COMPRESS", "DEFLATE")
        if typ == "OK":
            self.zd = zlib.decompressobj(-15)
            self.zc = zlib.compressobj(6, zlib.DEFLATED, -15)
            self.zbuf = b""
        return typ
    def fill(self):
        d = self.sock.recv(65536)
        if not d:
            raise self.abort("EOF")
        self.wire += len(d)
        out = self.zd.decompress(d)
        self.plain += len(out)
        self.zbuf += out
    def read(self, size):
        if self.zd is None:
            return super().read(size)
        while len(self.zbuf) < size:
            self.fill()
        r, self.zbuf = self.zbuf[:size], self.zbuf[size:]
        return r
    def readline(self):
        if self.zd is None:
            return super().readline()
        while b"\n" not in self.zbuf:
            self.fill()
        i = self.zbuf.index(b"\n") + 1
        r, self.zbuf = self.zbuf[:i], self.zbuf[i:]
        return r
    def send(self, data):
        if self.zd is not None:
            data = self.zc.compress(data) + self.zc.flush(zlib.Z_SYNC_FLUSH)
        self.sock.sendall(data)

ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
out = {}
m = Z(host, port, timeout=10)
out["caps_before_login"] = m.capabilities
m.starttls(ctx)
m.login(user, password)
typ, caps = m.capability()
out["caps"] = caps[0].decode().split()
out["compress"] = m.compress()
typ, data = m.select("INBOX")
out["select"] = [typ, data[0].decode()]
typ, data = m.fetch("1:*", "(FLAGS UID ENVELOPE RFC822.SIZE BODY.PEEK[])")
out["fetch"] = [x[0].decode() for x in data if isinstance(x, tuple)]
out["bodies"] = [x[1].decode() for x in data if isinstance(x, tuple)]
try:
    typ, data = m._simple_command("COMPRESS", "DEFLATE")
    out["again"] = typ
    out["again_text"] = data[0].decode() if data and data[0] else ""
except m.error as err:
    out["again"], out["again_text"] = "NO", str(err)
typ, data = m.noop()
out["noop"] = typ
m.logout()
out["wire"], out["plain"] = m.wire, m.plain
print(json.dumps(out))
`

func TestCompressWithPythonImaplib(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is not installed; under CI=true the COMPRESS test must run")
		}
		t.Skip("python3 is not installed (its imaplib and zlib are the client of this test): skipping")
	}
	e := newEnv(t, envOptions{})
	e.deliver(msgPlain, t1)
	e.deliver(msgMultipart, t2)
	e.deliver(msgLarge, t3)

	script := filepath.Join(t.TempDir(), "client.py")
	if err := os.WriteFile(script, []byte(compressScript), 0o600); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(e.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, script, host, port, alice, password)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("imaplib: %v\n%s", err, stderr.String())
	}
	var got struct {
		CapsBeforeLogin []string `json:"caps_before_login"`
		Caps            []string `json:"caps"`
		Compress        string   `json:"compress"`
		Select          []string `json:"select"`
		Fetch           []string `json:"fetch"`
		Bodies          []string `json:"bodies"`
		Again           string   `json:"again"`
		AgainText       string   `json:"again_text"`
		Noop            string   `json:"noop"`
		Wire, Plain     int
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("imaplib output %q: %v", stdout, err)
	}
	if strings.Contains(strings.Join(got.CapsBeforeLogin, " "), "COMPRESS") {
		t.Errorf("capabilities before login %q list COMPRESS; RFC 4978 offers it once logged in", got.CapsBeforeLogin)
	}
	if !strings.Contains(" "+strings.Join(got.Caps, " ")+" ", " COMPRESS=DEFLATE ") {
		t.Errorf("capabilities after login %q, want COMPRESS=DEFLATE", got.Caps)
	}
	if got.Compress != "OK" {
		t.Fatalf("COMPRESS DEFLATE = %s, want OK", got.Compress)
	}
	if len(got.Select) != 2 || got.Select[0] != "OK" || got.Select[1] != "3" {
		t.Errorf("SELECT INBOX under COMPRESS = %q, want OK and 3 messages", got.Select)
	}
	want := []string{msgPlain, msgMultipart, msgLarge}
	if len(got.Fetch) != 3 || len(got.Bodies) != 3 {
		t.Fatalf("FETCH 1:* under COMPRESS: %d responses, %d bodies; want 3", len(got.Fetch), len(got.Bodies))
	}
	for i, f := range got.Fetch {
		if !strings.Contains(f, "ENVELOPE (") || !strings.Contains(f, "FLAGS (") || !strings.Contains(f, "UID ") {
			t.Errorf("FETCH response %d = %q, want FLAGS, UID and ENVELOPE", i+1, f)
		}
		if got.Bodies[i] != want[i] {
			t.Errorf("body %d under COMPRESS = %q, want %q", i+1, got.Bodies[i], want[i])
		}
	}
	if got.Again != "NO" || !strings.Contains(got.AgainText, "[COMPRESSIONACTIVE]") {
		t.Errorf("second COMPRESS = %q %q, want NO [COMPRESSIONACTIVE]", got.Again, got.AgainText)
	}
	if got.Noop != "OK" {
		t.Errorf("NOOP after the refused second COMPRESS = %s, want OK", got.Noop)
	}
	if got.Wire <= 0 || got.Wire >= got.Plain {
		t.Errorf("read %d bytes off the socket for %d bytes of responses: not compressed", got.Wire, got.Plain)
	}
}

// TestCompressRefused: COMPRESS is for a logged-in session, with DEFLATE
// its only mechanism and one argument (RFC 4978 section 3); the session
// goes on uncompressed after each refusal.
func TestCompressRefused(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := dialRaw(t, e.addr)
	for _, c := range []struct{ cmd, want string }{
		{"COMPRESS DEFLATE", "BAD"},
		{"CAPABILITY", "OK"},
		{`LOGIN "alice@example.com" "alice's secret"`, "OK"},
		{"COMPRESS", "BAD"},
		{"COMPRESS GZIP", "BAD"},
		{"COMPRESS DEFLATE EXTRA", "BAD"},
		{"NOOP", "OK"},
	} {
		_, st := rc.cmd("%s", c.cmd)
		if !strings.HasPrefix(st, c.want+" ") {
			t.Errorf("%s = %q, want %s", c.cmd, st, c.want)
		}
	}
}
