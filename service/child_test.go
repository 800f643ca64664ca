package service

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// childEnv carries a childSpec (JSON) from a test to TestMain in the
// child process it starts.
const childEnv = "MAILHOST_TEST_CHILD"

// childSpec is what a child process serves: testConfig with Env's
// overrides (setting variables and values; MAILHOST_DATA is the data
// directory), and the Options a configuration does not hold.
type childSpec struct {
	Env        map[string]string
	QueueLease time.Duration
	QueuePoll  time.Duration
}

// TestMain runs the test binary as a child server when childEnv says so:
// the whole service, as `mailhost serve` runs it, in a process of its own
// that a test can kill (SIGKILL). It prints what Run prints (the key, on
// a first start), then "ADDRS " and its Addrs as JSON, logs to stderr,
// and runs until killed.
func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(serveChild(spec))
	}
	os.Exit(m.Run())
}

func serveChild(raw string) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	var env []string
	for k, v := range spec.Env {
		env = append(env, k, v)
	}
	cfg, err := testConfig(spec.Env["MAILHOST_DATA"], env...)
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	err = Run(context.Background(), cfg, Options{
		Stdout: os.Stdout, ShowKey: true, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		QueueLease: spec.QueueLease, QueuePoll: spec.QueuePoll,
		Ready: func(a Addrs) {
			b, _ := json.Marshal(a)
			fmt.Printf("ADDRS %s\n", b)
		},
	})
	fmt.Println("ERR", err)
	return 1
}

// child is a server running in a child process (TestMain).
type child struct {
	Addrs
	cmd *exec.Cmd
	// printed is what the child printed before it was ready: the
	// default partner's key on a first start.
	printed string
}

// api is the base URL of the child's management API.
func (c *child) api() string { return "http://" + c.HTTP }

// kill ends the child with SIGKILL and waits for it.
func (c *child) kill() {
	c.cmd.Process.Kill()
	c.cmd.Wait()
}

// startChild starts a child server for spec and waits until it is ready.
// It is killed when the test ends; its log (stderr) is shown if the test
// failed.
func startChild(t *testing.T, spec childSpec) *child {
	t.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	logPath := filepath.Join(t.TempDir(), "child.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logFile.Close()
	c := &child{cmd: cmd}
	t.Cleanup(func() {
		c.kill()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
			t.Logf("log of the child on %s (last %d lines):\n%s", spec.Env["MAILHOST_DATA"], min(60, len(lines)), bytes.Join(lines[max(0, len(lines)-60):], []byte("\n")))
		}
	})
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		var printed strings.Builder
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "ADDRS "); ok {
				c.printed = printed.String()
				ready <- json.Unmarshal([]byte(rest), &c.Addrs)
				for sc.Scan() { // keep the pipe drained
				}
				return
			}
			printed.WriteString(sc.Text() + "\n")
		}
		ready <- fmt.Errorf("the child printed no addresses: %q", printed.String())
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("child not ready after 20s")
	}
	return c
}
