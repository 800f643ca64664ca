package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/internal/dnstest"
	"github.com/mailhost/mailhost/mailauth"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// TestRecheckVerifiedDomains runs the daily pass over a bbolt store with
// DNS from the stub: a domain whose proof is gone is unverified and
// logged; those whose proof stands, and one DNS does not answer for,
// stay verified.
func TestRecheckVerifiedDomains(t *testing.T) {
	ctx := context.Background()
	st, err := boltstore.Open(ctx, t.TempDir(), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dns := dnstest.Start(t)
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	a, err := st.CreatePartner(ctx, "a", now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.CreatePartner(ctx, "b", now)
	if err != nil {
		t.Fatal(err)
	}
	// name -> what DNS holds for it
	domains := []struct {
		pid  int64
		name string
		dns  func(d mailstore.Domain)
		want bool // still verified
	}{
		{a.ID, "txt.example", func(d mailstore.Domain) { dns.SetTXT("_mailhost."+d.Name, "mailhost-verify="+d.VerifyToken) }, true},
		{b.ID, "mx.example", func(d mailstore.Domain) { dns.SetMX(d.Name, "mx.test") }, true},
		{a.ID, "gone.example", func(d mailstore.Domain) {}, false},
		{b.ID, "moved.example", func(d mailstore.Domain) { dns.SetMX(d.Name, "mx.elsewhere.test") }, false},
		{a.ID, "wrong.example", func(d mailstore.Domain) { dns.SetTXT("_mailhost."+d.Name, "mailhost-verify=old") }, false},
		{b.ID, "outage.example", func(d mailstore.Domain) { dns.Fail("_mailhost."+d.Name, true); dns.Fail(d.Name, true) }, true},
	}
	for i, x := range domains {
		d, err := st.CreateDomain(ctx, x.pid, mailstore.NewDomain{Name: x.name, Plan: mailstore.Plan{Name: "starter", QuotaMB: 1, RetentionDays: 1, TransferMonthlyMB: 1},
			VerifyToken: fmt.Sprintf("token%d", i)}, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.SetVerified(ctx, x.pid, x.name, true, now); err != nil {
			t.Fatal(err)
		}
		x.dns(d)
	}
	if _, err := st.CreateDomain(ctx, a.ID, mailstore.NewDomain{Name: "never.example", VerifyToken: "t"}, now); err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	r := &rechecker{
		store: st, cluster: st, dns: dns.Resolver(), hostname: "mx.test",
		now: func() time.Time { return now }, log: slog.New(slog.NewTextHandler(&logs, nil)),
		batch: 2, parallel: 3,
	}
	res, ran := r.daily(ctx, now)
	if !ran {
		t.Fatalf("daily(%v) did not run on the only node", now)
	}
	if want := (recheckResult{Checked: 6, Lost: 3, Unanswered: 1}); res != want {
		t.Errorf("daily() = %+v, want %+v", res, want)
	}
	for _, x := range domains {
		d, err := st.Domain(ctx, x.pid, x.name)
		if err != nil {
			t.Fatal(err)
		}
		if d.Verified != x.want {
			t.Errorf("%s verified = %v after the pass, want %v", x.name, d.Verified, x.want)
		}
		if lost := strings.Contains(logs.String(), `msg="domain verification lost" domain=`+x.name); lost == x.want {
			t.Errorf("log of the pass says %s lost = %v, want %v:\n%s", x.name, lost, !x.want, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "no DNS answer, kept verified") {
		t.Errorf("log does not say outage.example was kept:\n%s", logs.String())
	}

	// The day's pass runs once: again for the same slot it does not, the
	// next day it does, over what is still verified.
	if _, ran := r.daily(ctx, now); ran {
		t.Errorf("daily(%v) ran twice", now)
	}
	res, ran = r.daily(ctx, now.AddDate(0, 0, 1))
	if want := (recheckResult{Checked: 3, Unanswered: 1}); !ran || res != want {
		t.Errorf("daily(next day) = %+v, %v, want %+v, true", res, ran, want)
	}
}

// TestVerifyThroughService: the API's verify asks the DNS server of the
// `dns` setting, and the README's walk-through (domain, mailbox) needs no
// DNS at all.
func TestVerifyThroughService(t *testing.T) {
	dns := dnstest.Start(t)
	addrs, out, _ := startServer(t, t.TempDir(), "MAILHOST_DNS", dns.Addr)
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	if code, body := call(t, "POST", api+"/domains/", key, `{"name":"example.com"}`); code != 201 || !strings.Contains(body, `"verified":false`) {
		t.Fatalf("POST /domains/ = %d %s, want 201 unverified", code, body)
	}
	if code, body := call(t, "POST", api+"/users/", key, `{"domain_name":"example.com","email":"alice@example.com","password":"correct horse battery"}`); code != 201 {
		t.Fatalf("POST /users/ = %d %s", code, body)
	}
	if code, body := call(t, "POST", api+"/domains/example.com/verify", key, ""); code != 409 || !strings.Contains(body, "_mailhost.example.com") {
		t.Fatalf("POST verify without records = %d %s, want 409 naming _mailhost.example.com", code, body)
	}
	code, body := call(t, "GET", api+"/domains/example.com/dns", key, "")
	if code != 200 {
		t.Fatalf("GET dns = %d %s", code, body)
	}
	var recs struct{ Records []mailauth.Record }
	if err := json.Unmarshal([]byte(body), &recs); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs.Records {
		if r.Name == "_mailhost.example.com" {
			dns.SetTXT(r.Name, r.Value)
		}
	}
	if code, body := call(t, "POST", api+"/domains/example.com/verify", key, ""); code != 200 || !strings.Contains(body, `"verified":true`) {
		t.Fatalf("POST verify with the record = %d %s, want 200 verified", code, body)
	}
}
