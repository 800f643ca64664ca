package adminapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/policy"
)

// Bench sizes: the measured partner has one domain of benchTarget
// mailboxes; benchOthers mailboxes of other partners sit around them,
// created interleaved with the target's.
const (
	benchTarget        = 10_000
	benchOthers        = 100_000
	benchOtherPartners = 10
	benchOtherDomains  = 10 // per other partner
)

// loadBenchStore fills a store with the bench data and returns its
// directory. The load runs on tmpfs when there is one (each CreateMailbox
// is a synced transaction; 110,000 of them on a disk would take minutes)
// and the file is then copied to dir, on the test's disk, so that the
// measured writes pay a real fsync.
func loadBenchStore(b *testing.B, dir string) (partnerID int64, key string) {
	b.Helper()
	ctx := context.Background()
	loadDir := dir
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "adminapi-bench-")
		if err == nil {
			loadDir = d
			defer os.RemoveAll(d)
		}
	}
	st, err := boltstore.Open(ctx, loadDir, boltstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	target, err := st.CreatePartner(ctx, "target", testNow)
	if err != nil {
		b.Fatal(err)
	}
	plan, _ := policy.NewPlans(nil).Get("business")
	if _, err := st.CreateDomain(ctx, target.ID, mailstore.NewDomain{Name: "target.example", Plan: plan}, testNow); err != nil {
		b.Fatal(err)
	}
	var others []int64
	for p := range benchOtherPartners {
		o, err := st.CreatePartner(ctx, fmt.Sprintf("other%d", p), testNow)
		if err != nil {
			b.Fatal(err)
		}
		others = append(others, o.ID)
		for d := range benchOtherDomains {
			if _, err := st.CreateDomain(ctx, o.ID, mailstore.NewDomain{Name: fmt.Sprintf("d%d.other%d.example", d, p), Plan: plan}, testNow); err != nil {
				b.Fatal(err)
			}
		}
	}
	perTarget := benchOthers / benchTarget
	for i := range benchTarget {
		if _, err := st.CreateMailbox(ctx, target.ID, "target.example", fmt.Sprintf("user%d@target.example", i), fakeHash, testNow); err != nil {
			b.Fatal(err)
		}
		for j := range perTarget {
			n := i*perTarget + j
			p := n % benchOtherPartners
			dom := fmt.Sprintf("d%d.other%d.example", (n/benchOtherPartners)%benchOtherDomains, p)
			if _, err := st.CreateMailbox(ctx, others[p], dom, fmt.Sprintf("user%d@%s", n, dom), fakeHash, testNow); err != nil {
				b.Fatal(err)
			}
		}
	}
	k, lookup, prefix, hash, err := credential.NewAPIKey()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.AddAPIKey(ctx, target.ID, mailstore.APIKey{Lookup: lookup, Prefix: prefix, SecretHash: hash, CreatedAt: testNow}); err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	if loadDir != dir {
		if err := copyFile(filepath.Join(loadDir, boltstore.FileName), filepath.Join(dir, boltstore.FileName)); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("loaded %d + %d mailboxes in %v (load dir %s)", benchTarget, benchOthers, time.Since(start).Round(time.Millisecond), loadDir)
	return target.ID, k
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// BenchmarkAPI measures, over HTTP on 127.0.0.1, the calls partners make
// most, on a store that holds 100,000 mailboxes of other partners besides
// the measured domain's 10,000. The load happens only here, never in go
// test. Each sub-benchmark also reports its median in ms. See
// BENCHMARKS.md for the command and the figures.
func BenchmarkAPI(b *testing.B) {
	dir := b.TempDir()
	_, key := loadBenchStore(b, dir)
	ctx := context.Background()
	st, err := boltstore.Open(ctx, dir, boltstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	d, err := st.DomainByName(ctx, "target.example")
	if err != nil || d.MailboxCount != benchTarget {
		b.Fatalf("DomainByName(target.example) = %+v, %v", d, err)
	}
	api := New(Config{Store: st, Plans: policy.NewPlans(nil), Logger: discardLogger(), RateLimit: 1e9, RateBurst: 1e9})
	// The targets are in server time: the handler's own duration, without
	// the client and the loopback round trip, recorded per request.
	var (
		serverMu    sync.Mutex
		serverTimes []time.Duration
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		api.ServeHTTP(w, r)
		d := time.Since(t0)
		serverMu.Lock()
		serverTimes = append(serverTimes, d)
		serverMu.Unlock()
	}))
	defer srv.Close()
	client := srv.Client()
	do := func(b *testing.B, method, path, body string, want int) int {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, srv.URL+path, rd)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != want {
			b.Fatalf("%s %s = %d, want %d", method, path, res.StatusCode, want)
		}
		return int(n)
	}
	// timed runs fn b.N times and reports the median as well as the mean,
	// and the median server time.
	timed := func(b *testing.B, fn func(i int)) {
		serverMu.Lock()
		serverTimes = serverTimes[:0]
		serverMu.Unlock()
		var times []time.Duration
		i := 0
		for b.Loop() {
			t0 := time.Now()
			fn(i)
			times = append(times, time.Since(t0))
			i++
		}
		slices.Sort(times)
		b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-ms")
		serverMu.Lock()
		slices.Sort(serverTimes)
		if len(serverTimes) > 0 {
			b.ReportMetric(float64(serverTimes[len(serverTimes)/2].Microseconds())/1000, "server-median-ms")
		}
		serverMu.Unlock()
	}

	b.Run("list_users_domain_10000", func(b *testing.B) {
		path := fmt.Sprintf("/users/?domain_id=%d", d.ID)
		timed(b, func(int) {
			if n := do(b, "GET", path, "", 200); n < benchTarget*80 {
				b.Fatalf("GET %s: %d bytes, too few for %d mailboxes", path, n, benchTarget)
			}
		})
	})
	b.Run("get_quota", func(b *testing.B) {
		timed(b, func(i int) {
			do(b, "GET", fmt.Sprintf("/users/user%d@target.example/quota", (i*7919)%benchTarget), "", 200)
		})
	})
	n := 0 // sources stay new across runs
	b.Run("create_alias", func(b *testing.B) {
		timed(b, func(int) {
			body := fmt.Sprintf(`{"domain_name":"target.example","source":"alias%d@target.example","destination":"user1@target.example"}`, n)
			do(b, "POST", "/aliases/", body, 201)
			n++
		})
	})
}
