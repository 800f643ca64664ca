package storetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// RunCluster checks mailstore.Cluster against stores made by open, each
// new and empty; the suite closes them when they are io.Closers. What
// holds across several nodes of one shared store is the backend's to
// check (two handles on one database); this is what every Cluster does,
// the single node included.
func RunCluster(t *testing.T, open func(*testing.T) mailstore.Cluster) {
	mk := func(t *testing.T) mailstore.Cluster {
		t.Helper()
		c := open(t)
		if cl, ok := c.(io.Closer); ok {
			t.Cleanup(func() {
				if err := cl.Close(); err != nil {
					t.Errorf("Close() = %v, want nil", err)
				}
			})
		}
		return c
	}
	t.Run("run_once", func(t *testing.T) { clusterRunOnce(t, mk(t)) })
	t.Run("run_once_concurrent", func(t *testing.T) { clusterRunOnceConcurrent(t, mk(t)) })
	t.Run("setting", func(t *testing.T) { clusterSetting(t, mk(t)) })
	t.Run("setting_concurrent", func(t *testing.T) { clusterSettingConcurrent(t, mk(t)) })
	t.Run("invalid", func(t *testing.T) { clusterInvalid(t, mk(t)) })
	t.Run("context_done", func(t *testing.T) { clusterContextDone(t, mk(t)) })
}

var clusterDay = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

// clusterRunOnce: a slot runs once, later slots run in turn, and an
// earlier slot never runs again; jobs are independent.
func clusterRunOnce(t *testing.T, c mailstore.Cluster) {
	ctx := context.Background()
	next := clusterDay.Add(24 * time.Hour)
	for i, tc := range []struct {
		name string
		job  string
		slot time.Time
		want bool
	}{
		{"first slot", "retention", clusterDay, true},
		{"same slot again", "retention", clusterDay, false},
		{"same instant in another zone", "retention", clusterDay.In(time.FixedZone("CET", 3600)), false},
		{"within the slot's second", "retention", clusterDay.Add(500 * time.Millisecond), false},
		{"another job, same slot", "release", clusterDay, true},
		{"next slot", "retention", next, true},
		{"next slot again", "retention", next, false},
		{"an earlier slot after a later one", "retention", clusterDay.Add(time.Hour), false},
		{"a job name that prefixes another", "retention/", clusterDay, true},
		{"a slot before 1970", "old", time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{"a later slot before 1970", "old", time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC), true},
	} {
		got, err := c.RunOnce(ctx, tc.job, tc.slot)
		if err != nil || got != tc.want {
			t.Errorf("%d %s: RunOnce(%q, %v) = %v, %v; want %v, nil", i, tc.name, tc.job, tc.slot, got, err, tc.want)
		}
	}
}

// clusterRunOnceConcurrent: callers racing for one slot, one of them
// wins; racing for a run of slots, each slot is won at most once.
func clusterRunOnceConcurrent(t *testing.T, c mailstore.Cluster) {
	ctx := context.Background()
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	// wins counts true answers per slot; guarded by mu.
	wins := map[time.Time]int{}
	errs := make(chan error, 4*n)
	for i := range 4 * n {
		slot := clusterDay.Add(time.Duration(i%4) * time.Hour)
		wg.Go(func() {
			ok, err := c.RunOnce(ctx, "race", slot)
			if err != nil {
				errs <- err
				return
			}
			if ok {
				mu.Lock()
				wins[slot]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent RunOnce() = %v, want nil", err)
	}
	total := 0
	for slot, w := range wins {
		total += w
		if w != 1 {
			t.Errorf("slot %v won %d times, want once", slot, w)
		}
	}
	// Which slots win depends on the order the calls came in; the first
	// call always does, and the last slot is taken at the end.
	if total == 0 {
		t.Errorf("no RunOnce() answered true")
	}
	if ok, err := c.RunOnce(ctx, "race", clusterDay.Add(3*time.Hour)); err != nil || ok {
		t.Errorf("RunOnce(the last slot) after the race = %v, %v; want false (taken, or passed by a later one)", ok, err)
	}
}

// clusterSetting: a setting is made once, by the first caller's make;
// later callers get it without calling theirs; a failing make stores
// nothing.
func clusterSetting(t *testing.T, c mailstore.Cluster) {
	ctx := context.Background()
	calls := 0
	maker := func(v string) func() (string, error) {
		return func() (string, error) { calls++; return v, nil }
	}
	if got, err := c.Setting(ctx, "srs_secret", maker("first")); err != nil || got != "first" {
		t.Errorf("Setting(new) = %q, %v; want first, nil", got, err)
	}
	if got, err := c.Setting(ctx, "srs_secret", maker("second")); err != nil || got != "first" {
		t.Errorf("Setting(made) = %q, %v; want first, nil", got, err)
	}
	if calls != 1 {
		t.Errorf("make called %d times, want once", calls)
	}
	boom := errors.New("no entropy")
	if _, err := c.Setting(ctx, "other", func() (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Errorf("Setting(make fails) = %v, want its error", err)
	}
	if got, err := c.Setting(ctx, "other", maker("made later")); err != nil || got != "made later" {
		t.Errorf("Setting() after a failed make = %q, %v; want made later, nil", got, err)
	}
	// An empty value is a value.
	if got, err := c.Setting(ctx, "empty", maker("")); err != nil || got != "" {
		t.Errorf("Setting(empty value) = %q, %v; want empty, nil", got, err)
	}
	calls = 0
	if got, err := c.Setting(ctx, "empty", maker("not empty")); err != nil || got != "" || calls != 0 {
		t.Errorf("Setting(made empty) = %q, %v, %d calls of make; want empty, nil, none", got, err, calls)
	}
	// Settings and jobs are apart, whatever their names.
	if got, err := c.Setting(ctx, "retention", maker("v")); err != nil || got != "v" {
		t.Errorf("Setting(retention) = %q, %v; want v", got, err)
	}
	if ok, err := c.RunOnce(ctx, "retention", clusterDay); err != nil || !ok {
		t.Errorf("RunOnce(retention) after Setting(retention) = %v, %v; want true", ok, err)
	}
}

// clusterSettingConcurrent: callers racing to make a setting all answer
// one value, one of those made.
func clusterSettingConcurrent(t *testing.T, c mailstore.Cluster) {
	ctx := context.Background()
	const n = 16
	var wg sync.WaitGroup
	got := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			got[i], errs[i] = c.Setting(ctx, "secret", func() (string, error) { return fmt.Sprint("v", i), nil })
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("concurrent Setting() %d = %v", i, errs[i])
		}
		if got[i] != got[0] {
			t.Errorf("concurrent Setting() answered %q and %q, want one value", got[0], got[i])
		}
	}
	if v, err := c.Setting(ctx, "secret", func() (string, error) { return "late", nil }); err != nil || v != got[0] {
		t.Errorf("Setting() after the race = %q, %v; want %q", v, err, got[0])
	}
}

func clusterInvalid(t *testing.T, c mailstore.Cluster) {
	ctx := context.Background()
	if _, err := c.RunOnce(ctx, "", clusterDay); !errors.Is(err, mailstore.ErrInvalidArgument) {
		t.Errorf("RunOnce(empty name) = %v, want ErrInvalidArgument", err)
	}
	if _, err := c.Setting(ctx, "", func() (string, error) { return "x", nil }); !errors.Is(err, mailstore.ErrInvalidArgument) {
		t.Errorf("Setting(empty name) = %v, want ErrInvalidArgument", err)
	}
}

// clusterContextDone: with a done context both methods answer its error
// and take or make nothing.
func clusterContextDone(t *testing.T, c mailstore.Cluster) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.RunOnce(ctx, "job", clusterDay); !errors.Is(err, context.Canceled) {
		t.Errorf("RunOnce(done context) = %v, want context.Canceled", err)
	}
	made := false
	if _, err := c.Setting(ctx, "s", func() (string, error) { made = true; return "x", nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Setting(done context) = %v, want context.Canceled", err)
	}
	if made {
		t.Errorf("Setting(done context) called make")
	}
	bg := context.Background()
	if ok, err := c.RunOnce(bg, "job", clusterDay); err != nil || !ok {
		t.Errorf("RunOnce() after one with a done context = %v, %v; want true", ok, err)
	}
	if v, err := c.Setting(bg, "s", func() (string, error) { return "y", nil }); err != nil || v != "y" {
		t.Errorf("Setting() after one with a done context = %q, %v; want y", v, err)
	}
}
