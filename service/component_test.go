package service

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeComponent records its starts and stops in a shared log.
type fakeComponent struct {
	name     string
	startErr error
	events   *[]string
}

func (f fakeComponent) Name() string { return f.name }

func (f fakeComponent) Start(context.Context) error {
	if f.startErr != nil {
		*f.events = append(*f.events, "fail "+f.name)
		return f.startErr
	}
	*f.events = append(*f.events, "start "+f.name)
	return nil
}

func (f fakeComponent) Stop(context.Context) error {
	*f.events = append(*f.events, "stop "+f.name)
	return nil
}

// TestStartAllStopAll: components start in order and stop in reverse.
func TestStartAllStopAll(t *testing.T) {
	var events []string
	cs := []component{
		fakeComponent{name: "a", events: &events},
		fakeComponent{name: "b", events: &events},
		fakeComponent{name: "c", events: &events},
	}
	log := slog.New(slog.DiscardHandler)
	if err := startAll(context.Background(), cs, log); err != nil {
		t.Fatalf("startAll() = %v", err)
	}
	stopAll(context.Background(), cs, log)
	want := []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}
	if !slices.Equal(events, want) {
		t.Errorf("events = %q, want %q", events, want)
	}
}

// TestStartAllFailure: a component that fails to start stops those
// started before it, in reverse, and no other; the error names it.
func TestStartAllFailure(t *testing.T) {
	var events []string
	boom := errors.New("boom")
	cs := []component{
		fakeComponent{name: "a", events: &events},
		fakeComponent{name: "b", events: &events},
		fakeComponent{name: "c", startErr: boom, events: &events},
		fakeComponent{name: "d", events: &events},
	}
	err := startAll(context.Background(), cs, slog.New(slog.DiscardHandler))
	if !errors.Is(err, boom) || err.Error() != "start c: boom" {
		t.Errorf("startAll() = %v, want start c: boom", err)
	}
	want := []string{"start a", "start b", "fail c", "stop b", "stop a"}
	if !slices.Equal(events, want) {
		t.Errorf("events = %q, want %q", events, want)
	}
}

// everyListener turns on every component the tests' configuration
// leaves out.
var everyListener = []string{
	"MAILHOST_AUTOCONFIG_HTTP", "127.0.0.1:0", "MAILHOST_HTTPS", "127.0.0.1:0",
	"MAILHOST_SUBMISSIONS", "127.0.0.1:0", "MAILHOST_RSPAMD_CONTROLLER_URL", "http://127.0.0.1:11334",
	"MAILHOST_ACME", "true", "MAILHOST_ACME_HTTP", "127.0.0.1:0", "MAILHOST_HOSTNAME", "mx.example.com",
}

// componentNames are the names of the components cfg's Run starts, in
// order.
func componentNames(t *testing.T, env ...string) []string {
	t.Helper()
	cfg, err := testConfig(t.TempDir(), env...)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range components(newParts(cfg, Options{Logger: slog.New(slog.DiscardHandler), Now: time.Now})) {
		names = append(names, c.Name())
	}
	return names
}

// TestComponentsOrder: the wiring's order, with the listeners the
// configuration turns on.
func TestComponentsOrder(t *testing.T) {
	base := []string{"store", "cluster", "accounts", "tls", "policy", "webhooks", "delivery", "queue", "retention", "domain recheck", "control socket"}
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{"tests' configuration", nil, append(slices.Clone(base), "api", "smtp", "imap", "managesieve")},
		{"every listener", everyListener, append(slices.Clone(base), "autoconfig", "api", "acme_http", "smtp", "submission", "spam learner", "imap", "managesieve", "acme")},
		// The spam learner learns IMAP's moves: none without IMAP.
		{"MX alone", []string{
			"MAILHOST_HTTP", "", "MAILHOST_IMAP", "", "MAILHOST_IMAPS", "", "MAILHOST_MANAGESIEVE", "",
			"MAILHOST_RSPAMD_CONTROLLER_URL", "http://127.0.0.1:11334",
		}, append(slices.Clone(base), "smtp")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := componentNames(t, tt.env...); !slices.Equal(got, tt.want) {
				t.Errorf("components() = %q,\nwant %q", got, tt.want)
			}
		})
	}
}

// TestArchitectureDocWiring keeps docs/architecture.md's list of the
// components true: every component, in Run's order.
func TestArchitectureDocWiring(t *testing.T) {
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## The wiring (service.Run)\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no section "The wiring (service.Run)"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^[0-9]+\\. `([^`]+)`").FindAllStringSubmatch(section, -1) {
		listed = append(listed, m[1])
	}
	if want := componentNames(t, everyListener...); !slices.Equal(listed, want) {
		t.Errorf("docs/architecture.md lists the components %q,\nRun starts %q", listed, want)
	}
}

// syncBuffer is a log destination Run's goroutines may write to while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunAddressTaken: an address already taken makes Run answer an
// error naming the component and the address, after releasing what it
// had started: the listeners bound before are free again, the control
// socket is gone, and the store opens again. IMAP starts after the API
// and the MX, which are bound by then; with imaps taken, IMAP's plain
// listener, bound first, is closed and was never served.
func TestRunAddressTaken(t *testing.T) {
	for _, setting := range []string{"MAILHOST_IMAP", "MAILHOST_IMAPS"} {
		t.Run(setting, func(t *testing.T) {
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer taken.Close()
			dir := t.TempDir()
			cfg, err := testConfig(dir, setting, taken.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			logs := &syncBuffer{}
			done := make(chan error, 1)
			go func() {
				done <- Run(context.Background(), cfg, Options{
					Stdout: &bytes.Buffer{}, Logger: slog.New(slog.NewTextHandler(logs, nil)),
					Ready: func(Addrs) { t.Error("Ready called with an address taken") },
				})
			}()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Run still running 30s after its start, want an error")
			}
			if err == nil || !strings.Contains(err.Error(), "start imap: listen "+taken.Addr().String()) {
				t.Fatalf("Run() = %v, want start imap: listen %s: ...", err, taken.Addr())
			}

			bound := regexp.MustCompile(`msg=listening service=("[^"]*"|\S+) addr=(\S+)`).FindAllStringSubmatch(logs.String(), -1)
			var names []string
			for _, m := range bound {
				name := strings.Trim(m[1], `"`)
				names = append(names, name)
				if name == "control socket" {
					continue
				}
				ln, err := net.Listen("tcp", m[2])
				if err != nil {
					t.Errorf("%s's address %s after Run: %v, want it free", name, m[2], err)
					continue
				}
				ln.Close()
			}
			if want := []string{"control socket", "http", "smtp"}; !slices.Equal(names, want) {
				t.Errorf("listeners served before the failure = %q, want %q", names, want)
			}
			if _, err := os.Stat(filepath.Join(dir, SocketName)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("control socket after Run: %v, want it removed", err)
			}
			st, err := openBolt(context.Background(), dir, time.Second, 0)
			if err != nil {
				t.Fatalf("open the store after Run: %v, want it released", err)
			}
			st.Close()
		})
	}
}
