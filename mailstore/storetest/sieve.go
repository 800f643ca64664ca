package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// RunSieveScripts runs the conformance tests of mailstore.SieveScripts
// against stores made by open, which must implement it. Apart from Run,
// as RunAutoReplies is.
func RunSieveScripts(t *testing.T, open Open) {
	runSieveScriptWrites(t, open)
	runSieveScriptActivation(t, open)
}

// sieveSetup opens a store with one mailbox, and its SieveScripts.
func sieveSetup(t *testing.T, open Open) (*ctl, mailstore.SieveScripts, mailstore.Mailbox) {
	t.Helper()
	c := newCtl(t, open)
	s, ok := c.s.(mailstore.SieveScripts)
	if !ok {
		t.Fatalf("%T does not implement mailstore.SieveScripts", c.s)
	}
	p := c.partner("acme")
	c.domain(p.ID, "example.com", ctlStarter, 10, 10)
	return c, s, c.mailbox(p.ID, "example.com", "alice@example.com")
}

// sieveNames lists a mailbox's script names, the active one marked "*".
func sieveNames(t *testing.T, s mailstore.SieveScripts, mailboxID int64) string {
	t.Helper()
	list, err := s.SieveScripts(context.Background(), mailboxID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, sc := range list {
		n := sc.Name
		if sc.Active {
			n += "*"
		}
		out = append(out, n)
	}
	return strings.Join(out, " ")
}

// runSieveScriptWrites: put, read, replace, delete, rename, limits.
func runSieveScriptWrites(t *testing.T, open Open) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	t.Run("put, read, replace, activate", func(t *testing.T) {
		_, s, mb := sieveSetup(t, open)
		if _, err := s.ActiveSieveScript(ctx, mb.ID); !errors.Is(err, mailstore.ErrNotFound) {
			t.Errorf("ActiveSieveScript with none = %v, want ErrNotFound", err)
		}
		if got := sieveNames(t, s, mb.ID); got != "" {
			t.Errorf("SieveScripts of a new mailbox = %q, want none", got)
		}
		put := func(sc mailstore.SieveScript) {
			t.Helper()
			sc.MailboxID = mb.ID
			if err := s.PutSieveScript(ctx, sc); err != nil {
				t.Fatalf("PutSieveScript(%s) = %v", sc.Name, err)
			}
		}
		put(mailstore.SieveScript{Name: "vacation", Script: "keep;", UpdatedAt: t0})
		put(mailstore.SieveScript{Name: "rules", Script: "discard;", Active: true, UpdatedAt: t0.Add(time.Second)})
		if got := sieveNames(t, s, mb.ID); got != "rules* vacation" {
			t.Errorf("SieveScripts = %q, want \"rules* vacation\" (byte order, rules active)", got)
		}
		a, err := s.ActiveSieveScript(ctx, mb.ID)
		if err != nil || a.Name != "rules" || a.Script != "discard;" || !a.Active || !a.UpdatedAt.Equal(t0.Add(time.Second)) {
			t.Errorf("ActiveSieveScript = %+v, %v; want rules, discard;, at t0+1s", a, err)
		}
		// Replacing the active script keeps it active; putting another
		// one active moves the mark.
		put(mailstore.SieveScript{Name: "rules", Script: "keep;", UpdatedAt: t0.Add(2 * time.Second)})
		if got := sieveNames(t, s, mb.ID); got != "rules* vacation" {
			t.Errorf("after replacing the active script: %q, want it still active", got)
		}
		put(mailstore.SieveScript{Name: "vacation", Script: "keep;", Active: true, UpdatedAt: t0})
		if got := sieveNames(t, s, mb.ID); got != "rules vacation*" {
			t.Errorf("after putting vacation active: %q, want only vacation active", got)
		}
		if err := s.SetActiveSieveScript(ctx, mb.ID, "rules"); err != nil {
			t.Fatal(err)
		}
		if got := sieveNames(t, s, mb.ID); got != "rules* vacation" {
			t.Errorf("after SetActive(rules): %q", got)
		}
		if err := s.SetActiveSieveScript(ctx, mb.ID, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ActiveSieveScript(ctx, mb.ID); !errors.Is(err, mailstore.ErrNotFound) {
			t.Errorf("ActiveSieveScript after SetActive(\"\") = %v, want ErrNotFound", err)
		}
		if err := s.SetActiveSieveScript(ctx, mb.ID, "nope"); !errors.Is(err, mailstore.ErrNotFound) {
			t.Errorf("SetActive(nope) = %v, want ErrNotFound", err)
		}
		got, err := s.SieveScript(ctx, mb.ID, "rules")
		if err != nil || got.Script != "keep;" || got.Active {
			t.Errorf("SieveScript(rules) = %+v, %v", got, err)
		}
		if _, err := s.SieveScript(ctx, mb.ID, "nope"); !errors.Is(err, mailstore.ErrNotFound) {
			t.Errorf("SieveScript(nope) = %v, want ErrNotFound", err)
		}
	})
	t.Run("delete and rename", func(t *testing.T) {
		_, s, mb := sieveSetup(t, open)
		for _, sc := range []mailstore.SieveScript{{Name: "a", Active: true}, {Name: "b"}} {
			sc.MailboxID, sc.Script, sc.UpdatedAt = mb.ID, "keep;", t0
			if err := s.PutSieveScript(ctx, sc); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.DeleteSieveScript(ctx, mb.ID, "a"); !errors.Is(err, mailstore.ErrSieveActive) {
			t.Errorf("DeleteSieveScript(active) = %v, want ErrSieveActive", err)
		}
		if err := s.DeleteSieveScript(ctx, mb.ID, "nope"); !errors.Is(err, mailstore.ErrNotFound) {
			t.Errorf("DeleteSieveScript(nope) = %v, want ErrNotFound", err)
		}
		if err := s.RenameSieveScript(ctx, mb.ID, "a", "b"); !errors.Is(err, mailstore.ErrSieveExists) {
			t.Errorf("Rename(a, b) = %v, want ErrSieveExists", err)
		}
		if err := s.RenameSieveScript(ctx, mb.ID, "nope", "c"); !errors.Is(err, mailstore.ErrNotFound) {
			t.Errorf("Rename(nope, c) = %v, want ErrNotFound", err)
		}
		if err := s.RenameSieveScript(ctx, mb.ID, "a", "bad\nname"); !errors.Is(err, mailstore.ErrInvalidArgument) {
			t.Errorf("Rename(a, bad\\nname) = %v, want ErrInvalidArgument", err)
		}
		if err := s.RenameSieveScript(ctx, mb.ID, "a", "c"); err != nil {
			t.Fatal(err)
		}
		if got := sieveNames(t, s, mb.ID); got != "b c*" {
			t.Errorf("after renaming the active a to c: %q, want \"b c*\"", got)
		}
		if err := s.DeleteSieveScript(ctx, mb.ID, "b"); err != nil {
			t.Fatal(err)
		}
		if got := sieveNames(t, s, mb.ID); got != "c*" {
			t.Errorf("after deleting b: %q", got)
		}
	})
	t.Run("limits", func(t *testing.T) {
		_, s, mb := sieveSetup(t, open)
		for _, name := range []string{"", " lead", "trail ", "a\x00b", "a\rb", strings.Repeat("n", mailstore.MaxSieveNameBytes+1), "\xff"} {
			err := s.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: mb.ID, Name: name, Script: "keep;", UpdatedAt: t0})
			if !errors.Is(err, mailstore.ErrInvalidArgument) {
				t.Errorf("PutSieveScript(name %q) = %v, want ErrInvalidArgument", name, err)
			}
		}
		big := strings.Repeat("#", mailstore.MaxSieveScriptBytes+1)
		if err := s.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: mb.ID, Name: "big", Script: big, UpdatedAt: t0}); !errors.Is(err, mailstore.ErrSieveLimit) {
			t.Errorf("PutSieveScript of %d bytes = %v, want ErrSieveLimit", len(big), err)
		}
		for i := range mailstore.MaxSieveScripts {
			if err := s.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: mb.ID, Name: fmt.Sprintf("s%02d", i), Script: "keep;", UpdatedAt: t0}); err != nil {
				t.Fatalf("script %d: %v", i, err)
			}
		}
		if err := s.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: mb.ID, Name: "one more", Script: "keep;", UpdatedAt: t0}); !errors.Is(err, mailstore.ErrSieveLimit) {
			t.Errorf("script %d = %v, want ErrSieveLimit", mailstore.MaxSieveScripts+1, err)
		}
		// Replacing one of them is no new script.
		if err := s.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: mb.ID, Name: "s00", Script: "discard;", UpdatedAt: t0}); err != nil {
			t.Errorf("replacing a script at the limit = %v", err)
		}
		if err := s.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: mb.ID + 1000, Name: "x", Script: "keep;", UpdatedAt: t0}); !errors.Is(err, mailstore.ErrMailboxNotFound) {
			t.Errorf("PutSieveScript for no mailbox = %v, want ErrMailboxNotFound", err)
		}
	})
}

// runSieveScriptActivation: one active script, and whom scripts belong to.
func runSieveScriptActivation(t *testing.T, open Open) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	t.Run("one active under concurrent activation", func(t *testing.T) {
		_, s, mb := sieveSetup(t, open)
		const n = 8
		for i := range n {
			if err := s.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: mb.ID, Name: fmt.Sprintf("s%d", i), Script: "keep;", UpdatedAt: t0}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if err := s.SetActiveSieveScript(ctx, mb.ID, fmt.Sprintf("s%d", i)); err != nil {
					t.Errorf("SetActive(s%d) = %v", i, err)
				}
			})
		}
		wg.Wait()
		if got := strings.Count(sieveNames(t, s, mb.ID), "*"); got != 1 {
			t.Errorf("%d active scripts after concurrent activations, want 1", got)
		}
	})
	t.Run("scripts go with their mailbox", func(t *testing.T) {
		c, s, mb := sieveSetup(t, open)
		if err := s.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: mb.ID, Name: "rules", Script: "keep;", Active: true, UpdatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		other := c.mailbox(mb.PartnerID, "example.com", "bob@example.com")
		if got := sieveNames(t, s, other.ID); got != "" {
			t.Errorf("another mailbox's scripts = %q, want none", got)
		}
		if err := c.s.DeleteMailbox(ctx, mb.PartnerID, mb.Email); err != nil {
			t.Fatal(err)
		}
		if got := sieveNames(t, s, mb.ID); got != "" {
			t.Errorf("scripts of a deleted mailbox = %q, want none", got)
		}
		if _, err := s.ActiveSieveScript(ctx, mb.ID); !errors.Is(err, mailstore.ErrNotFound) {
			t.Errorf("ActiveSieveScript of a deleted mailbox = %v, want ErrNotFound", err)
		}
	})
	t.Run("MailboxByEmail says whether a script is active", func(t *testing.T) {
		c, s, mb := sieveSetup(t, open)
		has := func() bool {
			t.Helper()
			m, _, err := c.s.MailboxByEmail(ctx, mb.Email)
			if err != nil {
				t.Fatal(err)
			}
			return m.HasSieve
		}
		if has() {
			t.Error("HasSieve without scripts")
		}
		if err := s.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: mb.ID, Name: "rules", Script: "keep;", UpdatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if has() {
			t.Error("HasSieve with a script that is not active")
		}
		if err := s.SetActiveSieveScript(ctx, mb.ID, "rules"); err != nil {
			t.Fatal(err)
		}
		if !has() {
			t.Error("HasSieve false with an active script")
		}
		other := c.mailbox(mb.PartnerID, "example.com", "bob@example.com")
		if m, _, err := c.s.MailboxByEmail(ctx, other.Email); err != nil || m.HasSieve {
			t.Errorf("another mailbox: HasSieve %v, %v; want false", m.HasSieve, err)
		}
		if err := s.SetActiveSieveScript(ctx, mb.ID, ""); err != nil {
			t.Fatal(err)
		}
		if has() {
			t.Error("HasSieve after deactivating")
		}
	})
	t.Run("the active script's stamp changes with it", func(t *testing.T) {
		c, s, mb := sieveSetup(t, open)
		// stamp is the active script's Version as the recipient's
		// look-up and ActiveSieveScript read it: the same, and not 0.
		stamp := func() int64 {
			t.Helper()
			m, _, err := c.s.MailboxByEmail(ctx, mb.Email)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := s.ActiveSieveScript(ctx, mb.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !m.HasSieve || m.SieveVersion == 0 || m.SieveVersion != sc.Version {
				t.Fatalf("MailboxByEmail: HasSieve %v, SieveVersion %d; ActiveSieveScript.Version %d; want the same stamp, not 0",
					m.HasSieve, m.SieveVersion, sc.Version)
			}
			return sc.Version
		}
		put := func(name, text string, active bool) {
			t.Helper()
			if err := s.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: mb.ID, Name: name, Script: text, Active: active, UpdatedAt: t0}); err != nil {
				t.Fatal(err)
			}
		}
		put("a", "keep;", true)
		seen := map[int64]string{}
		step := func(what string, changes bool, prev int64) int64 {
			t.Helper()
			v := stamp()
			if changes && v == prev || !changes && v != prev {
				t.Errorf("%s: stamp %d after %d; want it changed: %v", what, v, prev, changes)
			}
			if changes {
				if was, ok := seen[v]; ok {
					t.Errorf("%s: stamp %d used before, after %s", what, v, was)
				}
				seen[v] = what
			}
			return v
		}
		v := step("activated", true, 0)
		put("b", "discard;", false)
		v = step("another script stored, not active", false, v)
		put("a", "discard;", false)
		v = step("the active script's text replaced", true, v)
		if err := s.SetActiveSieveScript(ctx, mb.ID, "b"); err != nil {
			t.Fatal(err)
		}
		v = step("another script activated", true, v)
		if err := s.SetActiveSieveScript(ctx, mb.ID, "a"); err != nil {
			t.Fatal(err)
		}
		v = step("the first activated again", true, v)
		if err := s.RenameSieveScript(ctx, mb.ID, "a", "c"); err != nil {
			t.Fatal(err)
		}
		stamp() // renamed: the same text, any stamp
		if err := s.SetActiveSieveScript(ctx, mb.ID, ""); err != nil {
			t.Fatal(err)
		}
		if m, _, err := c.s.MailboxByEmail(ctx, mb.Email); err != nil || m.HasSieve || m.SieveVersion != 0 {
			t.Errorf("deactivated: HasSieve %v, SieveVersion %d, %v; want false, 0", m.HasSieve, m.SieveVersion, err)
		}
		if sc, err := s.SieveScript(ctx, mb.ID, "b"); err != nil || sc.Version != 0 {
			t.Errorf("SieveScript of an inactive script: Version %d, %v; want 0", sc.Version, err)
		}
	})
}
