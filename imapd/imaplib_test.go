package imapd

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// imaplibScript drives the server with Python's imaplib, a client library
// that knows QUOTA (getquotaroot, getquota, setquota) and nothing of
// go-imap: ID before STARTTLS, the capabilities after login, the quota
// figures, SETQUOTA, and an APPEND (a synchronizing literal) whose body
// holds command lines, fetched back, and the quota after it. It prints what it saw as JSON.
const imaplibScript = `
import imaplib, json, ssl, sys
host, port, user, password, body = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5].encode()
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
out = {}
m = imaplib.IMAP4(host, port, timeout=10)
out["id_typ"], _ = m.xatom("ID", '("name" "imaplib")')
out["id"] = [x.decode() for x in m.response("ID")[1] if x]
m.starttls(ctx)
m.login(user, password)
typ, caps = m.capability()
out["caps"] = caps[0].decode().split()
typ, data = m.getquotaroot("INBOX")
out["getquotaroot"] = [[x.decode() for x in d] for d in data]
typ, data = m.getquota('""')
out["getquota"] = [x.decode() for x in data]
typ, data = m.setquota('""', "(STORAGE 1)")
out["setquota"] = typ
typ, data = m.append("INBOX", None, None, body)
out["append"] = typ
m.select("INBOX")
typ, data = m.fetch("2", "(BODY.PEEK[])")
out["fetched"] = data[0][1].decode()
typ, data = m.getquotaroot("INBOX")
out["getquotaroot_after"] = [[x.decode() for x in d] for d in data]
m.logout()
print(json.dumps(out))
`

func TestQuotaWithPythonImaplib(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is not installed; under CI=true the imaplib test must run")
		}
		t.Skip("python3 is not installed (its imaplib is the client of this test): skipping")
	}
	e := newEnv(t, envOptions{})
	e.deliver(msgPlain, t1)
	used, limit := e.wantStorage()
	body := crlf("From: x@example.org\nSubject: from imaplib\n\na1 GETQUOTA \"\"\na2 ID NIL\nx APPEND INBOX {3}\n") +
		strings.Repeat("a line to make the usage grow\r\n", 100)

	script := filepath.Join(t.TempDir(), "client.py")
	if err := os.WriteFile(script, []byte(imaplibScript), 0o600); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(e.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, script, host, port, alice, password, body)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("imaplib: %v\n%s", err, stderr.String())
	}
	var got struct {
		IDTyp             string     `json:"id_typ"`
		ID                []string   `json:"id"`
		Caps              []string   `json:"caps"`
		GetQuotaRoot      [][]string `json:"getquotaroot"`
		GetQuota          []string   `json:"getquota"`
		SetQuota          string     `json:"setquota"`
		Append            string     `json:"append"`
		Fetched           string     `json:"fetched"`
		GetQuotaRootAfter [][]string `json:"getquotaroot_after"`
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("imaplib output %q: %v", stdout, err)
	}

	if got.IDTyp != "OK" || len(got.ID) != 1 || !strings.HasPrefix(got.ID[0], `("name" "mailhost" "version" `) {
		t.Errorf("ID before login = %s %q, want OK and the server's name and version", got.IDTyp, got.ID)
	}
	caps := strings.Join(got.Caps, " ")
	for _, want := range []string{"QUOTA", "QUOTA=RES-STORAGE", "ID", "IMAP4rev1"} {
		if !strings.Contains(" "+caps+" ", " "+want+" ") {
			t.Errorf("capabilities %q, want %s", caps, want)
		}
	}
	quota := `"" (STORAGE ` + strconv.FormatInt(used, 10) + " " + strconv.FormatInt(limit, 10) + ")"
	if len(got.GetQuotaRoot) != 2 || len(got.GetQuotaRoot[0]) != 1 || got.GetQuotaRoot[0][0] != `INBOX ""` || got.GetQuotaRoot[1][0] != quota {
		t.Errorf("getquotaroot = %q, want [[INBOX \"\"] [%s]]", got.GetQuotaRoot, quota)
	}
	if len(got.GetQuota) != 1 || got.GetQuota[0] != quota {
		t.Errorf("getquota = %q, want [%s]", got.GetQuota, quota)
	}
	if got.SetQuota != "NO" {
		t.Errorf("setquota = %s, want NO", got.SetQuota)
	}
	if got.Append != "OK" || got.Fetched != body {
		t.Errorf("append = %s, fetched back %q, want OK and %q", got.Append, got.Fetched, body)
	}
	usedAfter, _ := e.wantStorage()
	if usedAfter <= used {
		t.Errorf("used %d KiB after APPEND, want more than %d", usedAfter, used)
	}
	quotaAfter := `"" (STORAGE ` + strconv.FormatInt(usedAfter, 10) + " " + strconv.FormatInt(limit, 10) + ")"
	if len(got.GetQuotaRootAfter) != 2 || got.GetQuotaRootAfter[1][0] != quotaAfter {
		t.Errorf("getquotaroot after APPEND = %q, want %s", got.GetQuotaRootAfter, quotaAfter)
	}
}
