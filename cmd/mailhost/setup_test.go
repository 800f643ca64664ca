package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/service"
)

// TestSetupServes: `mailhost setup --yes` with its answers as flags writes
// a configuration and a unit, and the server starts with that
// configuration, as the unit's `serve -config` loads it, only its
// listeners moved to free loopback ports (the standard ones need
// privileges) and its ACME CA to an address that answers nothing, and
// answers GET /healthz.
func TestSetupServes(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "etc", "mailhost.toml")
	data := filepath.Join(dir, "data")
	unit := filepath.Join(dir, "mailhost.service")
	code, out, errs := mh(t, "setup", "--yes", "-hostname", "mx.example.net", "-domain", "example.com",
		"-acme-email", "ops@example.com", "-config", conf, "-data", data, "-unit", unit)
	if code != 0 {
		t.Fatalf("setup = %d, stderr %s", code, errs)
	}
	if !strings.Contains(out, "example.com. IN MX 10 mx.example.net.") {
		t.Errorf("setup output lacks the MX record:\n%s", out)
	}
	b, err := os.ReadFile(unit)
	if err != nil || !strings.Contains(string(b), "serve -config "+conf+"\n") {
		t.Fatalf("unit = %q, %v", b, err)
	}

	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	flags := config.Register(fs)
	err = fs.Parse([]string{"-config", conf,
		"-http", "127.0.0.1:0", "-smtp", "127.0.0.1:0", "-submission", "127.0.0.1:0", "-submissions", "127.0.0.1:0",
		"-imap", "127.0.0.1:0", "-imaps", "127.0.0.1:0", "-managesieve", "127.0.0.1:0", "-acme-http", "127.0.0.1:0", "-autoconfig-https", "127.0.0.1:0",
		"-acme-directory", "https://127.0.0.1:1/directory", "-inbound-checks=false"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := flags.Load(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("load the written configuration: %v", err)
	}
	if cfg.DataDir != data || cfg.Hostname != "mx.example.net" || !cfg.ACME || cfg.ACMEEmail != "ops@example.com" {
		t.Fatalf("loaded data %q, hostname %q, acme %v %q", cfg.DataDir, cfg.Hostname, cfg.ACME, cfg.ACMEEmail)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan service.Addrs, 1)
	done := make(chan error, 1)
	go func() {
		done <- service.Run(ctx, cfg, service.Options{
			Stdout: io.Discard, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Ready: func(a service.Addrs) { ready <- a },
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	var addrs service.Addrs
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("Run = %v before ready", err)
	case <-time.After(10 * time.Second):
		t.Fatal("server not ready after 10s")
	}
	for name, a := range map[string]string{"smtp": addrs.SMTP, "submissions": addrs.Submissions, "imaps": addrs.IMAPS, "acme_http": addrs.ACMEHTTP, "autoconfig_https": addrs.AutoconfigHTTPS} {
		if a == "" {
			t.Errorf("%s listener is off", name)
		}
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addrs.HTTP + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz = %d, want 200", resp.StatusCode)
	}
	if _, err := os.Stat(filepath.Join(data, service.KeyFileName)); err != nil {
		t.Errorf("the first start's key file is not in the data directory: %v", err)
	}
}

// TestSetupInteractive: without --yes, `mailhost setup` asks on stdin what
// its flags leave out, and asks again for a host name that is not fully
// qualified; an existing file makes it fail, naming the file.
func TestSetupInteractive(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "mailhost.toml")
	unit := filepath.Join(dir, "mailhost.service")
	args := []string{"setup", "-config", conf, "-data", filepath.Join(dir, "data"), "-unit", unit, "-binary", "/opt/mailhost/bin/mailhost"}
	code, out, errs := mhIn(t, "vm\nmx.example.net\nexample.com\n\n\n", args...)
	if code != 0 {
		t.Fatalf("setup = %d, stderr %s\n%s", code, errs, out)
	}
	if !strings.Contains(out, "is not a fully qualified domain name") || strings.Count(out, "Host name of this server") != 2 {
		t.Errorf("the bad host name was not explained and asked again:\n%s", out)
	}
	if b, _ := os.ReadFile(unit); !strings.Contains(string(b), "ExecStart=/opt/mailhost/bin/mailhost serve") {
		t.Errorf("unit = %s", b)
	}
	code, _, errs = mhIn(t, "", append(args, "--yes", "-hostname", "mx.example.net", "-domain", "example.com")...)
	if code != 1 || !strings.Contains(errs, conf+" exists") || !strings.Contains(errs, "--force") {
		t.Errorf("setup over existing files = %d, stderr %q; want 1 naming %s and --force", code, errs, conf)
	}
	if code, _, errs = mh(t, "setup", "stray"); code != 2 {
		t.Errorf("setup with an argument = %d (%s), want 2", code, errs)
	}
}
