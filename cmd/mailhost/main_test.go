package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

func mh(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return mhIn(t, "", args...)
}

// mhIn runs the command line with stdin.
func mhIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCLI(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := mh(t, "partner", "create", "acme", "-data", dir)
	if code != 0 {
		t.Fatalf("partner create = %d, stderr %s", code, errs)
	}
	var p struct {
		ID     int64  `json:"id"`
		Name   string `json:"name"`
		APIKey string `json:"api_key"`
		KeyID  int64  `json:"key_id"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.Name != "acme" || !strings.HasPrefix(p.APIKey, "mhk_") || p.ID == 0 {
		t.Fatalf("partner create printed %q (%v), want JSON with id, name, api_key", out, err)
	}
	if code, _, errs := mh(t, "partner", "create", "-data", dir, "acme"); code != 1 || !strings.Contains(errs, "already exists") {
		t.Errorf("duplicate partner create = %d %q, want 1 and 'already exists'", code, errs)
	}
	for _, bad := range []string{"evil\nINFO forged line", "tab\there", "esc\x1b[2J"} {
		if code, _, errs := mh(t, "partner", "create", "-data", dir, bad); code != 1 || !strings.Contains(errs, "control characters") {
			t.Errorf("partner create %q = %d %q, want 1 and 'control characters'", bad, code, errs)
		}
	}
	if code, out, _ := mh(t, "partner", "list", "-data", dir); code != 0 || !strings.Contains(out, `"acme"`) {
		t.Errorf("partner list = %d %q", code, out)
	}
	if code, out, _ := mh(t, "key", "create", "acme", "-data", dir); code != 0 || !strings.Contains(out, "mhk_") {
		t.Errorf("key create = %d %q", code, out)
	}
	code, out, _ = mh(t, "key", "list", "1", "-data", dir) // by id
	if code != 0 || strings.Count(out, `"prefix"`) != 2 || strings.Contains(out, p.APIKey) {
		t.Errorf("key list = %d %q, want two keys and no secret", code, out)
	}
	if code, out, _ := mh(t, "key", "revoke", "1", "-data", dir); code != 0 || !strings.Contains(out, `"revoked": true`) {
		t.Errorf("key revoke = %d %q", code, out)
	}
	if code, _, errs := mh(t, "key", "list", "nobody", "-data", dir); code != 1 || !strings.Contains(errs, "not found") {
		t.Errorf("key list unknown partner = %d %q", code, errs)
	}
	if code, out, errs := mh(t, "partner", "limits", "acme", "-max-domains", "3", "-data", dir); code != 0 || !strings.Contains(out, `"max_domains": 3`) {
		t.Errorf("partner limits = %d %q %q, want max_domains 3", code, out, errs)
	}
	if code, out, _ := mh(t, "queue", "list", "-data", dir); code != 0 || !strings.Contains(out, `"total": 0`) {
		t.Errorf("queue list = %d %q, want an empty queue", code, out)
	}
	if code, out, _ := mh(t, "queue", "flush", "-data", dir); code != 0 || !strings.Contains(out, `"flushed": 0`) {
		t.Errorf("queue flush = %d %q", code, out)
	}
	if code, _, errs := mh(t, "queue", "delete", "42", "-data", dir); code != 1 || !strings.Contains(errs, "not found") {
		t.Errorf("queue delete of no entry = %d %q, want 1 and not found", code, errs)
	}
	if code, _, errs := mh(t, "queue", "delete", "x", "-data", dir); code != 1 || !strings.Contains(errs, "must be a number") {
		t.Errorf("queue delete x = %d %q, want 1 and must be a number", code, errs)
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"help", []string{"help"}, 0},
		{"no args", nil, 2},
		{"unknown", []string{"frobnicate"}, 2},
		{"missing arg", []string{"partner", "create"}, 2},
		{"extra arg", []string{"partner", "list", "x"}, 2},
		{"bad flag value", []string{"partner", "list", "-retention-time", "99"}, 2},
		{"limits without a limit", []string{"partner", "limits", "acme"}, 2},
		{"max-domains on another command", []string{"partner", "list", "-max-domains", "2"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, _, _ := mh(t, tt.args...); code != tt.code {
				t.Errorf("run(%q) = %d, want %d", tt.args, code, tt.code)
			}
		})
	}
}

// TestPartnerTimes checks that partner list and partner limits print
// created_at as the partner contract writes every created_at (UTC,
// YYYY-MM-DDTHH:MM:SS, no offset, no fraction), as key list does, not
// as RFC 3339 with a "Z".
func TestPartnerTimes(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := mh(t, "partner", "create", "acme", "-data", dir); code != 0 {
		t.Fatalf("partner create = %d, stderr %s", code, errs)
	}
	form := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$`)
	code, out, errs := mh(t, "partner", "list", "-data", dir)
	var ps []struct {
		Name      string `json:"name"`
		CreatedAt string `json:"created_at"`
	}
	if err := json.Unmarshal([]byte(out), &ps); code != 0 || err != nil || len(ps) != 1 {
		t.Fatalf("partner list = %d %q %q (%v), want one partner", code, out, errs, err)
	}
	if !form.MatchString(ps[0].CreatedAt) {
		t.Errorf("partner list created_at = %q, want YYYY-MM-DDTHH:MM:SS", ps[0].CreatedAt)
	}
	code, out, errs = mh(t, "partner", "limits", "acme", "-max-domains", "2", "-data", dir)
	var p struct {
		CreatedAt  string `json:"created_at"`
		MaxDomains int64  `json:"max_domains"`
	}
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil || p.MaxDomains != 2 {
		t.Fatalf("partner limits = %d %q %q (%v), want max_domains 2", code, out, errs, err)
	}
	if !form.MatchString(p.CreatedAt) {
		t.Errorf("partner limits created_at = %q, want YYYY-MM-DDTHH:MM:SS", p.CreatedAt)
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		code, out, errs := mh(t, arg)
		if code != 0 || errs != "" {
			t.Fatalf("mailhost %s = %d, stderr %q", arg, code, errs)
		}
		if !regexp.MustCompile(`(?m)^mailhost \S+\n`).MatchString(out) || !regexp.MustCompile(`(?m)^go go1\.\d+`).MatchString(out) {
			t.Errorf("mailhost %s printed %q, want a 'mailhost <version>' line and a 'go go1.N' line", arg, out)
		}
	}
}

// TestMailboxPassword: mailhost mailbox password sets any partner's
// mailbox password from the first line of stdin, checks its length, and
// names an unknown mailbox.
func TestMailboxPassword(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st, err := boltstore.Open(ctx, dir, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.CreatePartner(ctx, "acme", time.Now())
	if err == nil {
		_, err = st.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "a.test", Plan: mailstore.Plan{Name: "starter", QuotaMB: 10, RetentionDays: 30, TransferMonthlyMB: 100}}, time.Now())
	}
	if err == nil {
		_, err = st.CreateMailbox(ctx, p.ID, "a.test", "bob@a.test", "not a hash", time.Now())
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	code, out, errs := mhIn(t, "a new password\r\nignored\n", "mailbox", "password", "Bob@A.test", "-data", dir)
	if code != 0 || !strings.Contains(out, `"email": "bob@a.test"`) {
		t.Fatalf("mailbox password = %d %q %q, want 0 and the mailbox", code, out, errs)
	}
	for _, tc := range []struct {
		stdin, email string
		code         int
		errs         string
	}{
		{"short\n", "bob@a.test", 1, "8 to 1024"},
		{"a new password\n", "nobody@a.test", 1, "not found"},
		{"", "bob@a.test", 2, "on stdin"},
	} {
		if code, _, errs := mhIn(t, tc.stdin, "mailbox", "password", tc.email, "-data", dir); code != tc.code || !strings.Contains(errs, tc.errs) {
			t.Errorf("mailbox password %s with %q = %d %q, want %d and %q", tc.email, tc.stdin, code, errs, tc.code, tc.errs)
		}
	}
	st, err = boltstore.Open(ctx, dir, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m, _, err := st.MailboxByEmail(ctx, "bob@a.test")
	if err != nil {
		t.Fatal(err)
	}
	if err := credential.VerifyPassword(m.PasswordHash, "a new password"); err != nil {
		t.Errorf("the stored hash does not verify the new password: %v", err)
	}
}
