// Package rspamdtest starts a real rspamd for tests: the Debian package's
// binary and rules, with the minimal configuration in
// spam/testdata/rspamd (loopback ports, no DNS, no network modules; bayes
// in Redis, DB RedisDB). A test that needs it calls Start, which skips
// the test when rspamd is not installed, unless CI=true, where it fails.
package rspamdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Password is the controller's password in the test configuration.
const Password = "mailhost-test"

// RedisAddr and RedisDB are where the test rspamd keeps its bayes
// statistics: a database of its own, so that a shared Redis is not
// disturbed.
const (
	RedisAddr = "127.0.0.1:6379"
	RedisDB   = "13"
)

// GTUBE is the standard test string rspamd answers "reject" to.
const GTUBE = "XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X"

// JunkToken is the test configuration's multimap token: a message with it
// scores above "add header" and below "reject".
const JunkToken = "MAILHOST-TEST-JUNK-TOKEN"

// startTimeout bounds rspamd's start. The first start on a machine
// compiles the Hyperscan databases (one or two minutes), later ones take
// seconds (hsCacheDir).
const startTimeout = 5 * time.Minute

// Server is a running rspamd.
type Server struct {
	URL           string // the normal worker, for /checkv2
	ControllerURL string // the controller, for /learnspam
	Dir           string // its state and log

	cmd  *exec.Cmd
	once sync.Once
	done chan struct{}
}

// Available reports whether the rspamd binary is installed.
func Available() bool {
	_, err := exec.LookPath("rspamd")
	return err == nil
}

// Require skips t when rspamd is not installed, or fails it under
// CI=true.
func Require(t testing.TB) {
	t.Helper()
	if Available() {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("rspamd is not installed (apt-get install rspamd); under CI=true the rspamd tests must run")
	}
	t.Skip("rspamd is not installed (apt-get install rspamd): skipping")
}

// RequireRedis skips t (or fails it under CI=true) when Redis does not
// answer at RedisAddr: rspamd's bayes, which learning feeds, keeps its
// statistics there.
func RequireRedis(t testing.TB) {
	t.Helper()
	c, err := net.DialTimeout("tcp", RedisAddr, 2*time.Second)
	if err == nil {
		c.Close()
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("Redis does not answer at %s (%v); under CI=true the learning test must run", RedisAddr, err)
	}
	t.Skipf("Redis does not answer at %s (%v): skipping", RedisAddr, err)
}

// Start starts rspamd on free loopback ports (after Require) and stops
// it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	Require(t)
	_, file, _, _ := runtime.Caller(0)
	confDir := filepath.Join(filepath.Dir(file), "..", "testdata", "rspamd")
	dir := t.TempDir()
	hs, err := hsCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	normal, controller := freePort(t), freePort(t)
	s := &Server{
		URL:           "http://127.0.0.1:" + strconv.Itoa(normal),
		ControllerURL: "http://127.0.0.1:" + strconv.Itoa(controller),
		Dir:           dir,
		done:          make(chan struct{}),
	}
	vars := map[string]string{
		"CONFDIR": "/etc/rspamd", "LOCAL_CONFDIR": confDir,
		"DBDIR": dir, "RUNDIR": dir, "LOGDIR": dir, "HS_CACHE_DIR": hs,
		"NORMAL_PORT": strconv.Itoa(normal), "CONTROLLER_PORT": strconv.Itoa(controller),
		"CONTROLLER_PASSWORD": Password, "REDIS_SERVER": RedisAddr, "REDIS_DB": RedisDB,
	}
	args := []string{"-f", "-i", "-c", filepath.Join(confDir, "rspamd.conf")}
	for k, v := range vars {
		args = append(args, "--var", k+"="+v)
	}
	out, err := os.Create(filepath.Join(dir, "stdout.log"))
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command("rspamd", args...)
	s.cmd.Stdout, s.cmd.Stderr = out, out
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start rspamd: %v", err)
	}
	go func() {
		s.cmd.Wait()
		out.Close()
		close(s.done)
	}()
	t.Cleanup(s.Stop)
	if err := s.wait(startTimeout); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "stdout.log"))
		t.Fatalf("rspamd did not start: %v\n%s", err, log)
	}
	return s
}

// wait polls both workers' /ping until they answer.
func (s *Server) wait(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for _, u := range []string{s.URL, s.ControllerURL} {
		for {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u+"/ping", nil)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-s.done:
				return errors.New("rspamd exited")
			case <-ctx.Done():
				return fmt.Errorf("%s/ping: %w", u, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// Stop stops rspamd (SIGTERM to its main process, which stops its
// workers) and waits until it has exited. Safe to call more than once.
func (s *Server) Stop() {
	s.once.Do(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
	})
}

// hsCacheDir is where the compiled Hyperscan databases are kept between
// runs: MAILHOST_RSPAMD_HS_CACHE, or a directory in the user's cache.
func hsCacheDir() (string, error) {
	dir := os.Getenv("MAILHOST_RSPAMD_HS_CACHE")
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "mailhost-test", "rspamd-hs")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("rspamd Hyperscan cache: %w", err)
	}
	return dir + "/", nil
}

// freePort is a loopback port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
