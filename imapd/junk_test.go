package imapd

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/spam"
	"github.com/mailhost/mailhost/spam/rspamdtest"
)

type junkMove struct {
	folderID int64
	uids     []uint32
	spam     bool
}

// TestJunkMoveHook: Config.OnJunkMove hears of a MOVE into Junk (spam)
// and out of it (ham), with the messages' new place, and of no other.
func TestJunkMoveHook(t *testing.T) {
	var mu sync.Mutex
	var got []junkMove
	e := newEnv(t, envOptions{insecureAuth: true, onJunkMove: func(mailboxID, folderID int64, uids []uint32, isSpam bool) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, junkMove{folderID, slices.Clone(uids), isSpam})
	}})
	e.deliver(msgPlain, t1)
	e.deliver(msgPlain, t2)
	junk, err := e.st.Folder(context.Background(), e.mb.ID, "Junk")
	if err != nil {
		t.Fatal(err)
	}
	rc := rawLogin(t, e)
	mustOK(t, rc, "SELECT INBOX")
	mustOK(t, rc, "UID MOVE 1 Archive")
	mustOK(t, rc, "UID MOVE 2 Junk")
	mustOK(t, rc, "SELECT Junk")
	mustOK(t, rc, "UID MOVE 1 INBOX")
	mu.Lock()
	defer mu.Unlock()
	inbox := e.inbox()
	want := []junkMove{{junk.ID, []uint32{1}, true}, {inbox.ID, []uint32{3}, false}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("OnJunkMove calls = %v, want %v", got, want)
	}
}

// TestJunkMoveLearns: a message moved into Junk over IMAP is learnt as
// spam by a real rspamd (its controller's learned counter grows), and the
// MOVE does not wait for it.
func TestJunkMoveLearns(t *testing.T) {
	rspamdtest.RequireRedis(t)
	r := rspamdtest.Start(t)
	c, err := spam.New(spam.Config{URL: r.URL, ControllerURL: r.ControllerURL, Password: rspamdtest.Password})
	if err != nil {
		t.Fatal(err)
	}
	learnt := make(chan error, 4)
	var l *spam.Learner
	e := newEnv(t, envOptions{insecureAuth: true, onJunkMove: func(mailboxID, folderID int64, uids []uint32, isSpam bool) {
		l.Moved(mailboxID, folderID, uids, isSpam)
	}})
	l = spam.NewLearner(c, e.st, nil)
	l.OnLearnt = func(err error) { learnt <- err }
	t.Cleanup(func() { l.Shutdown(context.Background()) })
	ctx := context.Background()
	before, err := c.Stat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Unique, so that rspamd has not learnt it on an earlier run (its
	// statistics stay in Redis).
	e.deliver(crlf(fmt.Sprintf("From: Promo <promo@example.org>\nTo: alice@example.com\nSubject: Offer %d\nMessage-ID: <%d@example.org>\n\n"+
		"Cheap replica watches, best prices online %d, order today, limited offer for every reader of this message.\n",
		time.Now().UnixNano(), time.Now().UnixNano(), time.Now().UnixNano())), t1)
	rc := rawLogin(t, e)
	mustOK(t, rc, "SELECT INBOX")
	mustOK(t, rc, "UID MOVE 1 Junk")
	select {
	case err := <-learnt:
		if err != nil {
			t.Fatalf("learn = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nothing learnt 30 s after the MOVE")
	}
	after, err := c.Stat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Learned != before.Learned+1 {
		t.Errorf("rspamd learned = %d after the MOVE, want %d", after.Learned, before.Learned+1)
	}
}
