package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/storecopy"
)

// TestBackupWhileServing makes a backup through the control socket while
// a client delivers mail, restores it into a new data directory, and
// checks it: every message answered 250 before the backup began is in
// it, and every counter matches what it counts (store verify), so the
// copy is one consistent moment. With the server stopped, the same
// command copies the file itself.
func TestBackupWhileServing(t *testing.T) {
	dir := t.TempDir()
	addrs, out, stop := startServer(t, dir)
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	for _, c := range []struct{ path, body string }{
		{"/domains/", `{"name":"example.com"}`},
		{"/users/", `{"domain_name":"example.com","email":"alice@example.com","password":"password123"}`},
	} {
		if code, body := call(t, "POST", api+c.path, key, c.body); code != 201 {
			t.Fatalf("POST %s = %d %s", c.path, code, body)
		}
	}

	// A client delivers until told to stop; delivered counts the 250s.
	var delivered atomic.Int64
	quit := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		c, err := smtp.Dial(addrs.SMTP)
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		body := "From: bob@elsewhere.test\r\nTo: alice@example.com\r\nSubject: load\r\n\r\n" + strings.Repeat(strings.Repeat("x", 76)+"\r\n", 250)
		for {
			select {
			case <-quit:
				done <- nil
				return
			default:
			}
			if err := c.SendMail("bob@elsewhere.test", []string{"alice@example.com"}, strings.NewReader(body)); err != nil {
				done <- err
				return
			}
			delivered.Add(1)
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for delivered.Load() < 20 {
		select {
		case err := <-done:
			t.Fatalf("delivery: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages delivered after 30s, want 20", delivered.Load())
		}
	}

	cfg := &config.Config{DataDir: dir}
	file := filepath.Join(t.TempDir(), "backup.db")
	before := delivered.Load()
	res, err := Backup(context.Background(), cfg, file)
	after := delivered.Load()
	close(quit)
	if err := <-done; err != nil {
		t.Fatalf("delivery during the backup: %v", err)
	}
	if err != nil {
		t.Fatalf("Backup = %v", err)
	}
	if !res.Live || res.Bytes == 0 {
		t.Errorf("Backup = %+v, want a live copy with bytes", res)
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() != res.Bytes || fi.Mode().Perm() != 0o600 {
		t.Errorf("backup file: %v, %v; want %d bytes, mode 0600", fi, err, res.Bytes)
	}
	if _, err := os.Stat(file + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left: %v", err)
	}

	n := restoredMessages(t, file)
	if n < before || n > after {
		t.Errorf("restored copy holds %d messages, want between %d (250s before the backup) and %d (after)", n, before, after)
	}
	t.Logf("backup of %d bytes with %d messages, %d delivered while it ran", res.Bytes, n, after-before)

	// Stopped: the CLI opens the file itself.
	stop()
	res, err = Backup(context.Background(), cfg, file)
	if err != nil || res.Live {
		t.Fatalf("Backup of a stopped store = %+v, %v; want a copy of the file", res, err)
	}
	if n := restoredMessages(t, file); n != delivered.Load() {
		t.Errorf("copy of the stopped store holds %d messages, want %d", n, delivered.Load())
	}

	if _, err := Backup(context.Background(), &config.Config{DataDir: dir, Store: "postgres://db/mailhost"}, file); err == nil || !strings.Contains(err.Error(), "pg_dump") {
		t.Errorf("Backup of a PostgreSQL store = %v, want an error naming pg_dump", err)
	}
}

// restoredMessages restores a backup as the README says (the file as
// DATA/mailhost.db), checks that no counter drifts, and answers alice's
// message count.
func restoredMessages(t *testing.T, file string) int64 {
	t.Helper()
	dir := t.TempDir()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, boltstore.FileName), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	drift, err := storecopy.Verify(context.Background(), dir)
	if err != nil || len(drift) > 0 {
		t.Fatalf("store verify of the restored copy = %v, %v; want no drift", drift, err)
	}
	st, err := boltstore.Open(context.Background(), dir, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mb, _, err := st.MailboxByEmail(context.Background(), "alice@example.com")
	if err != nil {
		t.Fatalf("restored copy: %v", err)
	}
	return mb.MessageCount
}
