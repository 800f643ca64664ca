// Package dovecottest starts a Dovecot 2.3 of its own for a test, as the
// reference that mailhost's IMAP and ManageSieve are compared with.
//
// The instance lives in t.TempDir(): its own configuration (no file of
// the system's is read), a maildir, one passwd-file user with a known
// password, IMAP and ManageSieve on free 127.0.0.1 ports, plaintext
// authentication allowed (loopback only, no TLS), and it is stopped when
// the test ends. Debian's dovecot-imapd, dovecot-sieve and
// dovecot-managesieved provide it. Without Dovecot the test is skipped
// with a message; under CI=true it fails instead, since CI must run the
// comparison.
package dovecottest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// User and Password are the one account's login.
const (
	User     = "alice@example.com"
	Password = "alice's secret"
)

// Binary is where Debian installs the server.
const Binary = "/usr/sbin/dovecot"

// Dovecot is a running instance.
type Dovecot struct {
	// IMAPAddr and ManageSieveAddr are host:port on 127.0.0.1;
	// ManageSieveAddr is "" when Options.ManageSieve was false.
	IMAPAddr, ManageSieveAddr string
	// Dir is the instance's directory (configuration, log, mail).
	Dir string
}

// Options says what to start.
type Options struct {
	// ManageSieve adds the ManageSieve listener (needs
	// dovecot-managesieved and dovecot-sieve).
	ManageSieve bool
	// IMAPCapability, when set, replaces the IMAP capability list
	// Dovecot announces after login (imap_capability).
	IMAPCapability string
}

// Start starts Dovecot for t, or skips t (fails under CI=true) when it is
// not installed.
func Start(t testing.TB, o Options) *Dovecot {
	t.Helper()
	need := []string{Binary, "/usr/lib/dovecot/imap"}
	if o.ManageSieve {
		need = append(need, "/usr/lib/dovecot/managesieve", "/usr/lib/dovecot/modules/sieve")
	}
	for _, p := range need {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("Dovecot: %s missing (CI=true: the comparison with Dovecot must run; .ci/run installs dovecot-imapd, dovecot-sieve and dovecot-managesieved)", p)
			}
			t.Skipf("Dovecot not installed (%s missing): apt-get install dovecot-imapd dovecot-sieve dovecot-managesieved to run this test", p)
		}
	}

	dir := t.TempDir()
	// Dovecot's unprivileged processes must reach the sockets and the
	// mail under dir, and t.TempDir() makes each level 0700.
	for d := dir; d != os.TempDir() && d != "/" && d != "."; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	cur, err := user.Current()
	if err != nil {
		t.Fatalf("current user: %v", err)
	}
	// As root, the master runs as root, its helpers as Debian's dovecot
	// and dovenull users, and the mail belongs to dovecot (Dovecot will
	// not open mail as UID 0). Otherwise everything runs as the current
	// user.
	internalUser, loginUser, mailUser := cur.Username, cur.Username, cur
	internalGroup := cur.Gid
	if g, err := user.LookupGroupId(cur.Gid); err == nil {
		internalGroup = g.Name
	}
	if cur.Uid == "0" {
		internalUser, loginUser, internalGroup = "dovecot", "dovenull", "dovecot"
		if mailUser, err = user.Lookup("dovecot"); err != nil {
			t.Fatalf("Dovecot: user dovecot: %v", err)
		}
	}
	uid, _ := strconv.Atoi(mailUser.Uid)
	gid, _ := strconv.Atoi(mailUser.Gid)

	for _, d := range []string{"run", "state", "home"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(dir, "home")
	if err := os.Chown(home, uid, gid); err != nil && cur.Uid == "0" {
		t.Fatalf("chown %s: %v", home, err)
	}
	passwd := filepath.Join(dir, "passwd")
	line := fmt.Sprintf("%s:{PLAIN}%s:%d:%d::%s::\n", User, Password, uid, gid, home)
	if err := os.WriteFile(passwd, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}

	d := &Dovecot{Dir: dir, IMAPAddr: freeAddr(t)}
	protocols := "imap"
	var sieveConf string
	if o.ManageSieve {
		d.ManageSieveAddr = freeAddr(t)
		protocols += " sieve"
		sieveConf = fmt.Sprintf(`
service managesieve-login {
  chroot =
  inet_listener sieve {
    address = 127.0.0.1
    port = %s
  }
}
plugin {
  sieve = file:~/sieve;active=~/.dovecot.sieve
}
`, port(d.ManageSieveAddr))
	}
	var capConf string
	if o.IMAPCapability != "" {
		capConf = "imap_capability = " + o.IMAPCapability + "\n"
	}
	conf := fmt.Sprintf(`# Written by internal/dovecottest for one test.
instance_name = dovecottest
base_dir = %[1]s/run
state_dir = %[1]s/state
log_path = %[1]s/dovecot.log
protocols = %[2]s
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain
# A wrong password in a test needs no 2 s penalty.
auth_failure_delay = 0
default_internal_user = %[3]s
default_internal_group = %[9]s
default_login_user = %[4]s
first_valid_uid = 1
mail_location = maildir:~/Maildir
mail_privileged_group =
namespace inbox {
  inbox = yes
  separator = /
  prefix =
  mailbox INBOX {
    auto = subscribe
  }
  # mailhost's default folders (mailstore.DefaultFolders).
  mailbox Sent {
    auto = subscribe
    special_use = \Sent
  }
  mailbox Drafts {
    auto = subscribe
    special_use = \Drafts
  }
  mailbox Trash {
    auto = subscribe
    special_use = \Trash
  }
  mailbox Junk {
    auto = subscribe
    special_use = \Junk
  }
  mailbox Archive {
    auto = subscribe
    special_use = \Archive
  }
}
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%%u %[5]s
}
userdb {
  driver = passwd-file
  args = username_format=%%u %[5]s
}
# No chroot: only root may chroot, and the test may run as another user.
service imap-login {
  chroot =
  inet_listener imap {
    address = 127.0.0.1
    port = %[6]s
  }
  inet_listener imaps {
    port = 0
  }
}
service anvil {
  chroot =
}
service pop3-login {
  inet_listener pop3 {
    port = 0
  }
  inet_listener pop3s {
    port = 0
  }
}
service submission-login {
  inet_listener submission {
    port = 0
  }
}
service lmtp {
  unix_listener lmtp {
    mode = 0
  }
}
protocol imap {
  mail_plugins = $mail_plugins quota imap_quota
}
plugin {
  quota = maildir:User quota
  quota_rule = *:storage=1G
}
%[7]s%[8]s`, dir, protocols, internalUser, loginUser, passwd, port(d.IMAPAddr), capConf, sieveConf, internalGroup)
	confPath := filepath.Join(dir, "dovecot.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(Binary, "-F", "-c", confPath)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Its own process group, so that the stop reaches its children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dovecot: %v", err)
	}
	// exited is closed when the master has exited, waitErr then set.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	t.Cleanup(stop)

	addrs := []string{d.IMAPAddr}
	if d.ManageSieveAddr != "" {
		addrs = append(addrs, d.ManageSieveAddr)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, a := range addrs {
		for {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-exited:
				log, _ := os.ReadFile(filepath.Join(dir, "dovecot.log"))
				t.Fatalf("dovecot exited: %v\n%s%s", waitErr, out.String(), log)
			default:
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(filepath.Join(dir, "dovecot.log"))
				t.Fatalf("dovecot does not listen on %s: %v\n%s%s", a, err, out.String(), log)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return d
}

// Log is the instance's log so far, for a failing test to print.
func (d *Dovecot) Log() string {
	b, _ := os.ReadFile(filepath.Join(d.Dir, "dovecot.log"))
	return string(b)
}

// freeAddr is a 127.0.0.1 port free a moment ago. Dovecot takes its ports
// from its configuration, so the port is closed again before it binds;
// another process taking it in between makes Start fail, not hang.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func port(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }
