// Package roundcube runs Debian's Roundcube for tests and benchmarks:
// served by PHP's built-in server on loopback with a configuration of its
// own, driven in headless Chromium, its IMAP traffic counted by a proxy.
package roundcube

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Debian's roundcube package: its public tree and its configuration
// directory (whose defaults.inc.php and mimetypes.php a configuration
// directory of our own links to).
const (
	rcPublic = "/var/lib/roundcube/public_html"
	rcEtc    = "/etc/roundcube"
)

// Missing says what is missing to run Roundcube, or "".
func Missing() string {
	var missing []string
	if _, err := exec.LookPath("php"); err != nil {
		missing = append(missing, "php (php-cli)")
	}
	if _, err := os.Stat(filepath.Join(rcPublic, "index.php")); err != nil {
		missing = append(missing, "roundcube")
	}
	if _, err := os.Stat("/usr/share/roundcube/plugins/managesieve/managesieve.php"); err != nil {
		missing = append(missing, "roundcube-plugins")
	}
	if ChromiumPath() == "" {
		missing = append(missing, "chromium")
	}
	return strings.Join(missing, ", ")
}

func ChromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// counter is a TCP proxy in front of an IMAP (or other) server that counts
// the bytes both ways: Roundcube opens a connection per HTTP request, so
// what one action costs is what crossed the proxy while it ran.
type Counter struct {
	ln      net.Listener
	backend string
	up      atomic.Int64 // client to server
	down    atomic.Int64 // server to client
	Conns   atomic.Int64
	wg      sync.WaitGroup
}

func NewCounter(backend string) (*Counter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy listen: %w", err)
	}
	c := &Counter{ln: ln, backend: backend}
	c.wg.Add(1)
	go c.accept()
	return c, nil
}

func (c *Counter) Addr() string { return c.ln.Addr().String() }

func (c *Counter) accept() {
	defer c.wg.Done()
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return
		}
		c.Conns.Add(1)
		go c.serve(conn)
	}
}

func (c *Counter) serve(conn net.Conn) {
	defer conn.Close()
	back, err := net.DialTimeout("tcp", c.backend, 5*time.Second)
	if err != nil {
		return
	}
	defer back.Close()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn, n *atomic.Int64) {
		buf := make([]byte, 32<<10)
		for {
			// Both ends are ours on loopback; an idle hour means a leak.
			src.SetReadDeadline(time.Now().Add(time.Hour))
			k, err := src.Read(buf)
			if k > 0 {
				n.Add(int64(k))
				if _, werr := dst.Write(buf[:k]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		if tc, ok := dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(back, conn, &c.up)
	go cp(conn, back, &c.down)
	<-done
	<-done
}

// bytes is the total both ways so far.
func (c *Counter) Bytes() int64 { return c.up.Load() + c.down.Load() }

func (c *Counter) Close() { c.ln.Close(); c.wg.Wait() }

// Options are what a Roundcube instance is pointed at.
type Options struct {
	Dir         string // its state: configuration, SQLite database, logs, temp
	IMAP        string // host:port
	SMTP        string // host:port, or "" (no sending)
	ManageSieve string // host:port, or "" (no managesieve plugin)
	Debug       bool   // imap_debug and managesieve_debug into Dir/logs
}

// roundcube is Debian's Roundcube served by PHP's built-in server.
type Server struct {
	URL string
	cmd *exec.Cmd
	log *os.File
}

// Start writes a configuration directory of its own (nothing
// under /etc is touched) and serves Debian's Roundcube with php -S on a
// free loopback port.
func Start(o Options) (*Server, error) {
	cfgDir := filepath.Join(o.Dir, "config")
	for _, d := range []string{cfgDir, filepath.Join(o.Dir, "logs"), filepath.Join(o.Dir, "temp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	for _, f := range []string{"defaults.inc.php", "mimetypes.php"} {
		dst := filepath.Join(cfgDir, f)
		os.Remove(dst)
		if err := os.Symlink(filepath.Join(rcEtc, f), dst); err != nil {
			return nil, err
		}
	}
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }
	var b strings.Builder
	b.WriteString("<?php\n// Written by bench/rcbench; rewritten on every start.\n$config = [];\n")
	fmt.Fprintf(&b, "$config['db_dsnw'] = %s;\n", q("sqlite:///"+filepath.Join(o.Dir, "roundcube.db")+"?mode=0640"))
	fmt.Fprintf(&b, "$config['imap_host'] = %s;\n", q(o.IMAP))
	fmt.Fprintf(&b, "$config['log_dir'] = %s;\n$config['temp_dir'] = %s;\n", q(filepath.Join(o.Dir, "logs")+"/"), q(filepath.Join(o.Dir, "temp")+"/"))
	b.WriteString("$config['des_key'] = 'rcbench-not-a-secret-key';\n")
	b.WriteString("$config['skin'] = 'elastic';\n$config['enable_spellcheck'] = false;\n")
	b.WriteString("$config['create_default_folders'] = true;\n$config['enable_installer'] = false;\n")
	b.WriteString("$config['imap_cache'] = null;\n$config['messages_cache'] = false;\n")
	b.WriteString("$config['login_rate_limit'] = 0;\n$config['refresh_interval'] = 0;\n")
	b.WriteString("$config['mail_domain'] = '';\n$config['username_domain'] = '';\n")
	if o.Debug {
		b.WriteString("$config['imap_debug'] = true;\n$config['smtp_debug'] = true;\n$config['managesieve_debug'] = true;\n")
		// Microseconds, so that each command's time can be read from the log.
		b.WriteString("$config['log_date_format'] = 'd-M-Y H:i:s.u O';\n")
	}
	if o.SMTP != "" {
		fmt.Fprintf(&b, "$config['smtp_host'] = %s;\n$config['smtp_user'] = '';\n$config['smtp_pass'] = '';\n", q(o.SMTP))
	}
	if o.ManageSieve != "" {
		b.WriteString("$config['plugins'] = ['managesieve'];\n")
		fmt.Fprintf(&b, "$config['managesieve_host'] = %s;\n", q(o.ManageSieve))
		b.WriteString("$config['managesieve_usetls'] = false;\n$config['managesieve_vacation'] = 1;\n")
		b.WriteString("$config['managesieve_auth_type'] = 'PLAIN';\n")
	} else {
		b.WriteString("$config['plugins'] = [];\n")
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.inc.php"), []byte(b.String()), 0o644); err != nil {
		return nil, err
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logf, err := os.Create(filepath.Join(o.Dir, "logs", "php-server.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("php", "-d", "opcache.enable_cli=1", "-d", "memory_limit=256M", "-S", addr, "-t", rcPublic)
	// Several workers: the browser sends requests side by side (a list
	// and its unread counts), which one worker would queue.
	cmd.Env = append(os.Environ(), "ROUNDCUBE_CONFIG_DIR="+cfgDir, "PHP_CLI_SERVER_WORKERS=4")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start php -S: %w", err)
	}
	rc := &Server{URL: "http://" + addr, cmd: cmd, log: logf}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(rc.URL + "/?_task=login")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return rc, nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			rc.Stop()
			return nil, fmt.Errorf("roundcube at %s did not answer (see %s): %w", rc.URL, logf.Name(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop ends the PHP server and its workers (one process group).
func (rc *Server) Stop() {
	if rc.cmd.Process != nil {
		syscall.Kill(-rc.cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- rc.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-rc.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	rc.log.Close()
}

// errorsLog is Roundcube's own error log, for a failure's message.
func (rc *Server) ErrorsLog(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "logs", "errors.log"))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	s := string(b)
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return s
}
