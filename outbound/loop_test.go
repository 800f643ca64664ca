package outbound

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
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
