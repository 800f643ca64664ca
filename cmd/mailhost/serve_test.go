//go:build unix

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailhost/mailhost/credential"
)

// serveEnv makes the test binary run `mailhost` with its arguments
// (TestMain), so that a test can start `mailhost serve` as a process of
// its own, its stdout what the test gives it.
const serveEnv = "MAILHOST_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) != "" {
		os.Exit(run(strings.Fields(os.Getenv(serveEnv)), os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestServeShowsFirstKey: the first start of `mailhost serve` prints the
// default partner's key once, as the partner contract has it, whatever stdout is
// (here a pipe, as a script or a supervisor reads it), except systemd's
// journal (JOURNAL_STREAM names stdout), where the notice names the key
// file instead.
func TestServeShowsFirstKey(t *testing.T) {
	for _, journal := range []bool{false, true} {
		t.Run(fmt.Sprintf("journal=%v", journal), func(t *testing.T) {
			dir := t.TempDir()
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), serveEnv+"=serve", "MAILHOST_DATA="+dir,
				"MAILHOST_HTTP=127.0.0.1:0", "MAILHOST_SMTP=127.0.0.1:0", "MAILHOST_IMAP=127.0.0.1:0",
				"MAILHOST_IMAPS=127.0.0.1:0", "MAILHOST_MANAGESIEVE=127.0.0.1:0", "MAILHOST_SUBMISSION=", "MAILHOST_SUBMISSIONS=",
				"MAILHOST_HOSTNAME=mx.test", "MAILHOST_INBOUND_CHECKS=false", "MAILHOST_STORE=", "JOURNAL_STREAM=")
			if journal {
				var st syscall.Stat_t
				if err := syscall.Fstat(int(w.Fd()), &st); err != nil {
					t.Fatal(err)
				}
				cmd.Env = append(cmd.Env, fmt.Sprintf("JOURNAL_STREAM=%d:%d", st.Dev, st.Ino))
			}
			cmd.Stdout = w
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			defer func() {
				cmd.Process.Signal(syscall.SIGTERM)
				cmd.Wait()
			}()
			notice := make(chan string, 1)
			go func() {
				// The notice is the output's first paragraph.
				var b strings.Builder
				sc := bufio.NewScanner(r)
				for sc.Scan() {
					b.WriteString(sc.Text() + "\n")
					if strings.Contains(b.String(), "delete") {
						break
					}
				}
				notice <- b.String()
			}()
			var out string
			select {
			case out = <-notice:
			case <-time.After(20 * time.Second):
				t.Fatal("no notice of the default partner on stdout after 20s")
			}
			file, err := os.ReadFile(dir + "/initial-api-key")
			if err != nil {
				t.Fatalf("key file: %v", err)
			}
			key := strings.TrimSpace(string(file))
			if _, _, err := credential.ParseAPIKey(key); err != nil {
				t.Fatalf("key file holds %q: %v", key, err)
			}
			if !strings.Contains(out, `Created partner "default"`) {
				t.Errorf("stdout = %q, want the notice of partner default", out)
			}
			if printed := strings.Contains(out, key); printed == journal {
				t.Errorf("stdout = %q: key printed %v, want %v", out, printed, !journal)
			}
		})
	}
}
