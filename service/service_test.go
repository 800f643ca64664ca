package service

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/internal/dnstest"
)

// verifyDomain proves the domain name of key's partner through the API,
// as a partner does: an MX record at dns (the server's `dns` setting)
// names the server's host name, host. Its users then send to anyone
// (policy.MayReach), not only to their own partner's mailboxes.
func verifyDomain(t *testing.T, dns *dnstest.Server, api, key, name, host string) {
	t.Helper()
	dns.SetMX(name, host)
	if code, body := call(t, "POST", api+"/domains/"+name+"/verify", key, ""); code != 200 {
		t.Fatalf("POST /domains/%s/verify = %d %s, want 200", name, code, body)
	}
}

// startServer runs the whole service on random loopback ports in dir and
// returns its addresses, what it printed, and a stop function.
func startServer(t *testing.T, dir string, env ...string) (Addrs, *bytes.Buffer, func()) {
	t.Helper()
	cfg, err := testConfig(dir, env...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &bytes.Buffer{}
	ready := make(chan Addrs, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Options{
			Stdout: out, ShowKey: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Ready: func(a Addrs) { ready <- a },
		})
	}()
	var addrs Addrs
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("Run = %v before ready", err)
	case <-time.After(10 * time.Second):
		t.Fatal("server not ready after 10s")
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run = %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return addrs, out, stop
}

// testConfig is the tests' configuration: random loopback ports in dir,
// no submission, no network lookups; env overrides, as name, value pairs.
func testConfig(dir string, env ...string) (*config.Config, error) {
	return config.Register(flag.NewFlagSet("t", flag.ContinueOnError)).Load(func(k string) (string, bool) {
		m := map[string]string{
			"MAILHOST_DATA": dir, "MAILHOST_HTTP": "127.0.0.1:0", "MAILHOST_SMTP": "127.0.0.1:0",
			"MAILHOST_IMAP": "127.0.0.1:0", "MAILHOST_IMAPS": "127.0.0.1:0", "MAILHOST_MANAGESIEVE": "127.0.0.1:0",
			"MAILHOST_SUBMISSION": "", "MAILHOST_SUBMISSIONS": "", "MAILHOST_HOSTNAME": "mx.test",
			// Tests stay off the network: no SPF/DKIM/DMARC lookups.
			"MAILHOST_INBOUND_CHECKS": "false",
		}
		for i := 0; i+1 < len(env); i += 2 {
			m[env[i]] = env[i+1]
		}
		v, ok := m[k]
		return v, ok
	})
}

var keyRE = regexp.MustCompile(`mhk_[0-9a-f]{12}_[A-Za-z0-9_-]+`)

func call(t *testing.T, method, url, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestFirstStartAndRestart: a new data directory gets the default partner
// and a printed key that works; the CLI works while the server runs; after
// a restart everything is still there and no second key is printed.
func TestFirstStartAndRestart(t *testing.T) {
	dir := t.TempDir()
	addrs, out, stop := startServer(t, dir)
	key := keyRE.FindString(out.String())
	if key == "" {
		t.Fatalf("first start printed no API key: %q", out.String())
	}
	api := "http://" + addrs.HTTP
	if code, body := call(t, "GET", api+"/healthz", "", ""); code != 200 {
		t.Fatalf("GET /healthz = %d %s", code, body)
	}
	if code, body := call(t, "POST", api+"/domains/", key, `{"name":"example.com"}`); code != 201 {
		t.Fatalf("POST /domains/ = %d %s", code, body)
	}
	if code, body := call(t, "POST", api+"/users/", key, `{"domain_name":"example.com","email":"a@example.com","password":"password123"}`); code != 201 {
		t.Fatalf("POST /users/ = %d %s", code, body)
	}

	// The CLI's operator reaches the running server over the socket.
	var acme NewKey
	err := WithOperator(context.Background(), &config.Config{DataDir: dir}, func(op Operator) error {
		if _, ok := op.(*socketOps); !ok {
			t.Errorf("operator while serving = %T, want the control socket", op)
		}
		var err error
		acme, err = op.CreatePartner(context.Background(), "acme")
		return err
	})
	if err != nil {
		t.Fatalf("create partner over socket: %v", err)
	}
	if code, body := call(t, "GET", api+"/domains/", acme.APIKey, ""); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Errorf("acme GET /domains/ = %d %s, want 200 []", code, body)
	}
	stop()

	// Offline, the CLI opens the store itself.
	err = WithOperator(context.Background(), &config.Config{DataDir: dir}, func(op Operator) error {
		if _, ok := op.(*storeOps); !ok {
			t.Errorf("operator while stopped = %T, want the store", op)
		}
		keys, err := op.Keys(context.Background(), "acme")
		if err != nil {
			return err
		}
		if len(keys) != 1 || keys[0].Prefix != acme.KeyPrefix {
			t.Errorf("acme keys = %+v, want one with prefix %s", keys, acme.KeyPrefix)
		}
		_, err = op.RevokeKey(context.Background(), acme.KeyID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	addrs, out, _ = startServer(t, dir)
	if keyRE.MatchString(out.String()) {
		t.Errorf("restart printed a key again: %q", out.String())
	}
	api = "http://" + addrs.HTTP
	code, body := call(t, "GET", api+"/users/?domain_id=2", key, "")
	var users []map[string]any
	json.Unmarshal([]byte(body), &users)
	if code != 200 || len(users) != 1 || users[0]["email"] != "a@example.com" {
		t.Errorf("after restart GET /users/?domain_id=2 = %d %s", code, body)
	}
	if code, _ := call(t, "GET", api+"/domains/", acme.APIKey, ""); code != 401 {
		t.Errorf("revoked key: GET /domains/ = %d, want 401", code)
	}
}

func TestNextRun(t *testing.T) {
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	tests := []struct {
		now, hhmm, want string
	}{
		{"2026-11-22T01:00:00Z", "03:00", "2026-11-22T03:00:00Z"},
		{"2026-11-22T03:00:00Z", "03:00", "2026-11-23T03:00:00Z"},
		{"2026-11-22T23:59:00Z", "00:00", "2026-11-23T00:00:00Z"},
		{"2026-12-31T05:00:00Z", "04:30", "2027-01-01T04:30:00Z"},
	}
	for _, tt := range tests {
		if got := nextRun(at(tt.now), tt.hhmm); !got.Equal(at(tt.want)) {
			t.Errorf("nextRun(%s, %s) = %s, want %s", tt.now, tt.hhmm, got, tt.want)
		}
	}
}
