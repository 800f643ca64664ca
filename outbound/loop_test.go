package outbound

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// TestBacklogDoesNotHoldOthersBack: a backlog to one destination that
// takes no more sessions fills neither the workers nor the waiting list;
// mail to another destination, queued after all of it, goes out while
// that destination is stuck.
func TestBacklogDoesNotHoldOthersBack(t *testing.T) {
	f := newFixture(t)
	clk := newClock()
	mx := newMX(t, nil)
	unblock := make(chan struct{})
	mx.rcpt = func(to string) error {
		if strings.HasSuffix(to, "@slow.test") {
			<-unblock
		}
		return nil
	}
	const backlog = 40
	for i := range backlog {
		f.queue(testNow.Add(time.Duration(i-backlog-1)*time.Second), f.submission(fmt.Sprintf("u%d@slow.test", i)), message("slow"))
	}
	f.queue(testNow.Add(-time.Second), f.submission("x@fast.test"), message("fast"))
	var once sync.Once
	release := func() { once.Do(func() { close(unblock) }) }
	t.Cleanup(release)
	e := f.start(clk, func(c *Config) {
		c.Resolver = mxFor("slow.test", "fast.test")
		c.Port = mx.port
		c.Workers = 4
		c.PerDestination = 1
	})
	got := mx.waitMessages(t, 1)
	if len(got[0].to) != 1 || got[0].to[0] != "x@fast.test" {
		t.Fatalf("first message the MX got went to %v, want x@fast.test", got[0].to)
	}
	release()
	mx.waitMessages(t, backlog+1)
	e.waitEmpty()
	mx.mu.Lock()
	defer mx.mu.Unlock()
	if n := mx.maxByDomain["slow.test"]; n != 1 {
		t.Errorf("sessions at once to slow.test = %d, want 1 (PerDestination)", n)
	}
}

// Mail a suspended domain queued (a submission, a forward) waits, as a
// deferral, until the domain is resumed; bounces still go.
func TestSuspendedDomainHeld(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	mx := newMX(t, nil)
	clk := newClock()
	f.queue(clk.Now(), f.submission("x@remote.test"), message("submitted"))
	f.queue(clk.Now(), mailstore.Relay{Kind: mailstore.KindForward, DomainID: f.domain.ID, From: "someone@orig.test", To: []string{"y@remote.test"}}, message("forwarded"))
	f.queue(clk.Now(), mailstore.Relay{Kind: mailstore.KindBounce, To: []string{"z@remote.test"}}, message("bounce"))
	// A bounce relayed back through an SRS address of a.test's alias.
	f.queue(clk.Now(), mailstore.Relay{Kind: mailstore.KindBounce, DomainID: f.domain.ID, To: []string{"w@remote.test"}}, message("srs bounce"))
	if _, err := f.st.SetSuspended(ctx, f.partner.ID, "a.test", true); err != nil {
		t.Fatal(err)
	}
	e := f.start(clk, func(c *Config) { c.Resolver = mxFor("remote.test"); c.Port = mx.port })
	if got := mx.waitMessages(t, 1)[0]; len(got.to) != 1 || got.to[0] != "z@remote.test" {
		t.Fatalf("MX got a message to %v, want only the bounce to z@remote.test", got.to)
	}
	waitFor(t, "the three held entries attempted", func() bool {
		es := f.entries()
		return len(es) == 3 && es[0].Attempts == 1 && es[1].Attempts == 1 && es[2].Attempts == 1
	})
	for _, en := range f.entries() {
		if !strings.Contains(en.LastError, "a.test is suspended") || !en.NextAttempt.After(clk.Now()) {
			t.Errorf("entry %d: last error %q, next attempt %v; want held as suspended, retried later", en.ID, en.LastError, en.NextAttempt)
		}
	}
	if n := len(mx.messages()); n != 1 {
		t.Errorf("MX got %d messages while a.test was suspended, want only the bounce", n)
	}

	if _, err := f.st.SetSuspended(ctx, f.partner.ID, "a.test", false); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.FlushOutbound(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	e.sender.Wake()
	mx.waitMessages(t, 4)
	f.waitEmpty()
}

// Entries a former Run claimed (it was killed before it recorded them)
// go at once when the next Run starts, not when their lease runs out.
func TestRunReleasesFormerLeases(t *testing.T) {
	f := newFixture(t)
	clk := newClock()
	mx := newMX(t, nil)
	f.queue(clk.Now(), f.submission("x@remote.test"), message("claimed before a crash"))
	got, err := f.st.ClaimOutbound(context.Background(), clk.Now(), DefaultLease, 10, mailstore.ClaimOptions{})
	if err != nil || len(got) != 1 {
		t.Fatalf("ClaimOutbound() = %+v, %v", got, err)
	}
	e := f.start(clk, func(c *Config) { c.Resolver = mxFor("remote.test"); c.Port = mx.port })
	mx.waitMessages(t, 1)
	f.waitEmpty()
	if !strings.Contains(e.logs.String(), "released the leases of a former run") {
		t.Errorf("no log line for the released lease:\n%s", e.logs.String())
	}
}
