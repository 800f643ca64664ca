package smtpd

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/mail"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

const crashDirEnv = "MAILHOST_SMTPD_CRASH_DIR"

// TestMain runs the test binary as TestCrash's child when
// $MAILHOST_SMTPD_CRASH_DIR says so: it serves SMTP over the store there,
// prints "ADDR host:port" and runs until killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashChild(dir)
	}
	os.Exit(m.Run())
}

func crashChild(dir string) {
	st, err := boltstore.Open(context.Background(), dir, boltstore.Options{LockTimeout: 5 * time.Second})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Println("ADDR", ln.Addr())
	srv := New(Config{Store: st, Hostname: "mx.test", MaxConnsPerIP: 100})
	srv.Serve(ln)
	select {}
}

// TestCrash kills a server (SIGKILL) while several clients deliver, then
// checks the reopened store: every message answered 250 is there whole, and
// each mailbox's counters match its messages.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	dir := t.TempDir()
	f := newFixture(t, dir)
	f.st.Close()

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	var addr string
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			addr = a
			break
		}
	}
	if addr == "" {
		t.Fatalf("helper printed no address")
	}
	e := &env{fixture: f, addr: addr}

	var (
		mu    sync.Mutex
		acked = map[string]string{} // subject -> message
		wg    sync.WaitGroup
	)
	rcptSets := [][]string{{"bob@a.test"}, {"carol@a.test", "info@a.test"}, {"dave@b.test", "whoever@b.test", "erin@b.test"}}
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				subj := fmt.Sprintf("crash-%d-%d", w, i)
				msg := message(subj, strings.Repeat(fmt.Sprintf("%s line\r\n", subj), 1+i%50))
				c, err := dialClient(addr)
				if err != nil {
					return
				}
				err = c.SendMail("s@remote.test", rcptSets[(w+i)%len(rcptSets)], strings.NewReader(msg))
				c.Close()
				if err == nil {
					mu.Lock()
					acked[subj] = msg
					mu.Unlock()
				}
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 40 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	close(stop)
	wg.Wait()
	if len(acked) == 0 {
		t.Fatal("no message was accepted before the kill")
	}

	st, err := boltstore.Open(context.Background(), dir, boltstore.Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer st.Close()
	e.fixture = &fixture{t: t, st: st, dir: dir}
	found := map[string]bool{}
	ctx := context.Background()
	for _, addr := range []string{"bob@a.test", "carol@a.test", "dave@b.test", "erin@b.test"} {
		var sum int64
		bodies := e.inbox(t, addr)
		for _, b := range bodies {
			sum += int64(len(b))
			m, err := mail.ReadMessage(bytes.NewReader(b))
			if err != nil {
				t.Errorf("%s: stored message unreadable: %v", addr, err)
				continue
			}
			subj := m.Header.Get("Subject")
			if want, ok := acked[subj]; ok {
				found[subj] = true
				if !bytes.HasSuffix(b, []byte(want)) {
					t.Errorf("%s: message %s is not whole", addr, subj)
				}
			}
		}
		mb, _, err := st.MailboxByEmail(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		if mb.UsedBytes != sum || mb.MessageCount != int64(len(bodies)) {
			t.Errorf("%s: counters say %d bytes in %d messages, messages sum to %d in %d", addr, mb.UsedBytes, mb.MessageCount, sum, len(bodies))
		}
	}
	for subj := range acked {
		if !found[subj] {
			t.Errorf("message %s was answered 250 but is not in the store", subj)
		}
	}
	t.Logf("%d messages acknowledged before the kill, all found", len(acked))
}

func dialClient(addr string) (*smtp.Client, error) {
	c, err := smtp.Dial(addr)
	if err != nil {
		return nil, err
	}
	if err := c.Hello("client.test"); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}
