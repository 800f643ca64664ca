package service

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFirstKeyFile: the first start writes the default partner's key to
// DATA/initial-api-key, mode 0600, and without ShowKey (stdout is the
// journal) prints where it is, never the key; the key in the file works.
func TestFirstKeyFile(t *testing.T) {
	dir := t.TempDir()
	cfg, err := testConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &bytes.Buffer{}
	ready := make(chan Addrs, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Options{Stdout: out, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: func(a Addrs) { ready <- a }})
	}()
	var addrs Addrs
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("Run = %v before ready", err)
	case <-time.After(10 * time.Second):
		t.Fatal("server not ready after 10s")
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()

	path := filepath.Join(dir, KeyFileName)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("key file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode = %v, want 0600", fi.Mode().Perm())
	}
	raw, _ := os.ReadFile(path)
	key := strings.TrimSpace(string(raw))
	if !keyRE.MatchString(key) {
		t.Fatalf("key file holds %q, want a key", raw)
	}
	if keyRE.MatchString(out.String()) {
		t.Errorf("stdout shows the key without ShowKey: %q", out.String())
	}
	if !strings.Contains(out.String(), path) {
		t.Errorf("stdout = %q, want it to name %s", out.String(), path)
	}
	if code, body := call(t, "GET", "http://"+addrs.HTTP+"/domains/", key, ""); code != 200 {
		t.Errorf("GET /domains/ with the file's key = %d %s", code, body)
	}
}

// TestKeyFileDeletedAfterUse: DATA/initial-api-key stays while its key
// is unused, across a restart, and after requests that fail to
// authenticate with it (a wrong secret) or use another key; the first
// request its key authenticates deletes it, and says so in the log.
func TestKeyFileDeletedAfterUse(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, KeyFileName)
	exists := func() bool {
		_, err := os.Stat(path)
		return err == nil
	}
	_, out, stop := startServer(t, dir)
	key := keyRE.FindString(out.String())
	if !strings.Contains(out.String(), "it is deleted after the key's first successful use") {
		t.Errorf("first start notice does not say the file goes: %q", out.String())
	}
	stop()
	if !exists() {
		t.Fatal("no key file after the first start")
	}

	cfg, err := testConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	addrs, _ := runService(t, cfg, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	api := "http://" + addrs.HTTP
	wrong := key[:len(key)-1] + map[bool]string{true: "A", false: "B"}[key[len(key)-1] != 'A']
	if code, _ := call(t, "GET", api+"/domains/", wrong, ""); code != 401 {
		t.Fatalf("GET /domains/ with a wrong secret = %d, want 401", code)
	}
	var other NewKey
	err = WithOperator(context.Background(), cfg, func(op Operator) error {
		other, err = op.CreateKey(context.Background(), "default")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := call(t, "GET", api+"/domains/", other.APIKey, ""); code != 200 {
		t.Fatalf("GET /domains/ with another key = %d %s", code, body)
	}
	if !exists() {
		t.Fatal("key file deleted before its key was used")
	}
	if code, body := call(t, "GET", api+"/domains/", key, ""); code != 200 {
		t.Fatalf("GET /domains/ with the first key = %d %s", code, body)
	}
	if exists() {
		t.Errorf("key file still there after its key's first use")
	}
	if !strings.Contains(string(logs.Bytes()), "deleted the first start's API key file") {
		t.Errorf("no log line for the deletion:\n%s", logs.Bytes())
	}
}
