package outbound

import (
	"container/list"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
	"golang.org/x/sync/singleflight"

	"github.com/mailhost/mailhost/internal/publicip"
	"github.com/mailhost/mailhost/mailstore"
)

// MTA-STS (RFC 8461): a domain publishes, in DNS and over HTTPS, which MX
// hosts it has and that they have TLS with certificates valid for their
// names. With mode "enforce", mail goes only to those hosts, only over
// TLS with a verified certificate, and waits in the queue otherwise; an
// attacker in the path can then neither strip STARTTLS nor stand in for
// the MX, which opportunistic TLS (connect) cannot prevent.

// Limits of policy discovery.
const (
	// stsFetchTimeout bounds the fetch of a policy, connection and body
	// together (RFC 8461 section 3.3 asks for a timeout; it suggests
	// "a minute or so" for the whole discovery, and the attempt waits on
	// it).
	stsFetchTimeout = 20 * time.Second
	// stsMaxPolicyBytes bounds the body of a policy (RFC 8461 section
	// 3.3 suggests 64 KiB).
	stsMaxPolicyBytes = 64 << 10
	// stsMaxAge caps max_age (RFC 8461 section 3.2: 31557600 s, a year).
	stsMaxAge = 31557600 * time.Second
	// stsRetryFailed is how long a policy fetch that failed is not tried
	// again for the same TXT id: a domain whose policy server is down
	// would otherwise cost a fetch (up to stsFetchTimeout) and a log line
	// for every message.
	stsRetryFailed = 5 * time.Minute
	// stsMaxMX bounds a policy's mx patterns. RFC 8461 sets no number;
	// real policies name a handful. A policy with more is invalid (the
	// domain gets opportunistic TLS, as without one), so that no domain
	// can make a cached policy, which is also kept in the store, large.
	stsMaxMX = 64
	// stsMaxDomains bounds the policy cache; the entry stored longest
	// ago goes first.
	stsMaxDomains = 10000
	// stsRefreshMax bounds how long before its expiry a policy still in
	// use is fetched again (see stsRefreshWindow).
	stsRefreshMax = 24 * time.Hour
)

// stsRefreshWindow is how long before a cached policy expires the next
// delivery to its domain fetches it again, though its id is unchanged:
// the last quarter of its max_age, at most stsRefreshMax. A domain mail
// keeps going to then never starts cold, without its policy, and a fetch
// that an attacker blocks at that moment finds the policy still valid
// (RFC 8461 sections 5.1 and 10.2; its authors advise keeping policies
// of domains in use "warm").
func stsRefreshWindow(maxAge time.Duration) time.Duration {
	return min(maxAge/4, stsRefreshMax)
}

// stsMode is a policy's mode (RFC 8461 section 5).
type stsMode string

const (
	stsEnforce stsMode = "enforce"
	stsTesting stsMode = "testing"
	stsNone    stsMode = "none"
)

// stsPolicy is a domain's MTA-STS policy (RFC 8461 section 3.2).
type stsPolicy struct {
	mode stsMode
	// mx are the patterns of the allowed MX hosts, lower case: a name, or
	// "*." and a name for any name one label below it.
	mx     []string
	maxAge time.Duration
}

// errSTSRequired: the destination's MTA-STS policy is "enforce", and the
// session could not have TLS with a certificate valid for the MX host.
var errSTSRequired = errors.New("MTA-STS policy requires TLS with a certificate valid for the MX host")

// parseSTSPolicy parses a policy's body (RFC 8461 section 3.2): lines of
// "key: value", CRLF or LF ended. version, mode and max_age are required,
// and at least one mx unless mode is none. Unknown keys are ignored; a
// known key given twice, other than mx, makes the policy invalid rather
// than have this server guess which one the domain meant.
func parseSTSPolicy(text string) (stsPolicy, error) {
	var p stsPolicy
	seen := map[string]bool{}
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			return stsPolicy{}, fmt.Errorf("line %q is not key: value", trimForError(line))
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if key != "mx" && seen[key] {
			return stsPolicy{}, fmt.Errorf("%s given twice", trimForError(key))
		}
		seen[key] = true
		switch key {
		case "version":
			if value != "STSv1" {
				return stsPolicy{}, fmt.Errorf("version %q, want STSv1", trimForError(value))
			}
		case "mode":
			switch m := stsMode(value); m {
			case stsEnforce, stsTesting, stsNone:
				p.mode = m
			default:
				return stsPolicy{}, fmt.Errorf("mode %q, want enforce, testing or none", trimForError(value))
			}
		case "max_age":
			// 1*10DIGIT; a value above the cap is taken as the cap.
			n, err := strconv.ParseUint(value, 10, 64)
			if err != nil || len(value) > 10 || strings.TrimLeft(value, "0123456789") != "" {
				return stsPolicy{}, fmt.Errorf("max_age %q is not a number of seconds", trimForError(value))
			}
			p.maxAge = time.Duration(min(n, uint64(stsMaxAge/time.Second))) * time.Second
		case "mx":
			pat := strings.ToLower(strings.TrimSuffix(value, "."))
			if !validMXPattern(pat) {
				return stsPolicy{}, fmt.Errorf("mx %q is not a host name pattern", trimForError(value))
			}
			if len(p.mx) == stsMaxMX {
				return stsPolicy{}, fmt.Errorf("more than %d mx", stsMaxMX)
			}
			p.mx = append(p.mx, pat)
		}
	}
	switch {
	case !seen["version"]:
		return stsPolicy{}, errors.New("no version")
	case p.mode == "":
		return stsPolicy{}, errors.New("no mode")
	case !seen["max_age"]:
		return stsPolicy{}, errors.New("no max_age")
	case len(p.mx) == 0 && p.mode != stsNone:
		return stsPolicy{}, errors.New("no mx")
	}
	return p, nil
}

// trimForError keeps what an error quotes from a policy short.
func trimForError(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// validMXPattern: p is a host name, or "*." and one, of labels of
// letters, digits and hyphens (RFC 8461 section 3.2; internationalized
// names appear as A-labels).
func validMXPattern(p string) bool {
	p = strings.TrimPrefix(p, "*.")
	if p == "" || len(p) > 253 {
		return false
	}
	for label := range strings.SplitSeq(p, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// allows says whether the policy lists host among its MX hosts.
func (p stsPolicy) allows(host string) bool {
	for _, pat := range p.mx {
		if matchMXPattern(pat, host) {
			return true
		}
	}
	return false
}

// matchMXPattern matches an MX host name against a policy's mx pattern
// (RFC 8461 section 4.1): the same name, or for "*.example.net" a name
// with exactly one more label on the left ("mx.example.net", not
// "example.net" nor "a.mx.example.net"). Case and a final dot do not
// count.
func matchMXPattern(pattern, host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	pattern = strings.ToLower(strings.TrimSuffix(pattern, "."))
	if rest, ok := strings.CutPrefix(pattern, "*."); ok {
		first, parent, ok := strings.Cut(host, ".")
		return ok && first != "" && parent == rest
	}
	return host == pattern
}

// parseSTSRecord finds the id of a domain's "_mta-sts" TXT records (RFC
// 8461 section 3.1): those that do not start with "v=STSv1;" are not
// about MTA-STS; there must be exactly one that is, with an id of 1 to 32
// letters and digits. Other fields are extensions and ignored.
func parseSTSRecord(txts []string) (string, error) {
	var rec string
	n := 0
	for _, t := range txts {
		// sts-version is first, and sts-sep may have spaces around ";".
		if v, _, _ := strings.Cut(t, ";"); strings.TrimRight(v, " \t") == "v=STSv1" {
			rec = t
			n++
		}
	}
	switch {
	case n == 0:
		return "", errNoSTSRecord
	case n > 1:
		return "", fmt.Errorf("%d MTA-STS TXT records, want one", n)
	}
	for field := range strings.SplitSeq(rec, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(field), "=")
		if k != "id" {
			continue
		}
		if v == "" || len(v) > 32 || strings.TrimLeft(strings.ToLower(v), "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
			return "", fmt.Errorf("MTA-STS TXT record id %q is not 1 to 32 letters and digits", trimForError(v))
		}
		return v, nil
	}
	return "", errors.New("MTA-STS TXT record has no id")
}

// errNoSTSRecord: the domain publishes no MTA-STS TXT record.
var errNoSTSRecord = errors.New("no MTA-STS TXT record")

// stsEntry is what is known of one domain's policy.
type stsEntry struct {
	domain string
	// policy is the last valid policy fetched, nil if none; it holds
	// until expires, and id is the TXT record's id it was fetched for.
	policy  *stsPolicy
	id      string
	expires time.Time
	// failedID is the TXT id whose fetch last failed, at failedAt.
	failedID string
	failedAt time.Time
}

// stsCache holds the policies of the destinations delivered to: the
// first level of two, the store (Config.Store: STSPolicy, PutSTSPolicy)
// the second. Every policy fetched is written to the store too, and a
// domain the cache has no entry of is read from there (loadSTS): after a
// restart, or once the cache dropped it, a domain is not left as safe as
// its DNS until its policy is fetched again, which an attacker who blocks
// the TXT lookup or the fetch could prevent (RFC 8461 sections 5.1 and
// 10). A domain with an entry, even an empty one, has been read from the
// store already: a destination's messages cost one store read, not one
// each.
type stsCache struct {
	max int
	// fetches joins concurrent fetches of the same domain and id: a
	// burst of mail to one domain makes one HTTPS request.
	fetches singleflight.Group

	// mu guards the fields below.
	mu sync.Mutex
	// byDomain are the entries; order holds them, the one stored longest
	// ago at the front.
	byDomain map[string]*list.Element
	order    list.List
}

func (c *stsCache) get(domain string) (stsEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byDomain[domain]
	if !ok {
		return stsEntry{}, false
	}
	return *el.Value.(*stsEntry), true
}

// put stores e, the newest entry, and drops the oldest beyond max.
func (c *stsCache) put(e stsEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(e)
}

// add stores e as put does unless the domain has an entry already, and
// answers the domain's entry: what the store had must not replace a
// policy fetched meanwhile.
func (c *stsCache) add(e stsEntry) stsEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byDomain[e.domain]; ok {
		return *el.Value.(*stsEntry)
	}
	c.putLocked(e)
	return e
}

func (c *stsCache) putLocked(e stsEntry) {
	if c.byDomain == nil {
		c.byDomain = map[string]*list.Element{}
	}
	if el, ok := c.byDomain[e.domain]; ok {
		c.order.Remove(el)
	}
	c.byDomain[e.domain] = c.order.PushBack(&e)
	for c.order.Len() > c.max {
		old := c.order.Remove(c.order.Front()).(*stsEntry)
		delete(c.byDomain, old.domain)
	}
}

// stsPolicy answers the MTA-STS policy of a destination domain, nil when
// it has none that applies (RFC 8461 sections 3 and 5.1). The TXT record
// is looked up for every attempt (the service's resolver caches it); the
// policy is fetched when its id is new, when the cached policy expired,
// or when it is about to (stsRefreshWindow). A
// valid cached policy, in memory or in the store, keeps applying when the
// TXT record is gone or the fetch fails (section 5.1: an attacker who can
// block DNS or HTTPS must not be able to turn a policy off). A domain
// with a TXT record but no policy that can be fetched gets opportunistic
// TLS, as if it had none.
func (s *Sender) stsPolicy(ctx context.Context, domain string) *stsPolicy {
	domain = strings.ToLower(strings.TrimSuffix(domain, "."))
	now := s.now()
	cached, ok := s.sts.get(domain)
	if !ok {
		cached = s.loadSTS(ctx, domain, now)
	}
	var valid *stsPolicy
	if cached.policy != nil && now.Before(cached.expires) {
		valid = cached.policy
	}
	txts, err := s.resolver.LookupTXT(ctx, "_mta-sts."+domain)
	var id string
	if err == nil {
		id, err = parseSTSRecord(txts)
	}
	var dnsErr *net.DNSError
	switch {
	case err == nil:
	case errors.Is(err, errNoSTSRecord) || errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return valid
	default:
		// A failed lookup or a broken record: the cached policy, if
		// any, is all there is to go by.
		if valid == nil {
			s.log.Debug("no MTA-STS policy", "domain", domain, "err", err)
		}
		return valid
	}
	if valid != nil && cached.id == id && cached.expires.Sub(now) > stsRefreshWindow(valid.maxAge) {
		return valid
	}
	if cached.failedID == id && now.Sub(cached.failedAt) < stsRetryFailed {
		return valid
	}
	// The fetch logs and stores its result once, however many attempts
	// waited on it.
	v, err, _ := s.sts.fetches.Do(domain+" "+id, func() (any, error) {
		p, err := s.fetchSTSPolicy(ctx, domain)
		if err != nil {
			if ctx.Err() != nil {
				// The attempt was cut off; the domain did nothing wrong.
				return nil, err
			}
			s.log.Info("MTA-STS policy fetch failed", "domain", domain, "id", id, "cached_policy", valid != nil, "err", err)
			e, _ := s.sts.get(domain)
			e.domain, e.failedID, e.failedAt = domain, id, now
			s.sts.put(e)
			return nil, err
		}
		s.log.Info("MTA-STS policy fetched", "domain", domain, "id", id, "mode", string(p.mode), "max_age_s", int64(p.maxAge/time.Second))
		s.sts.put(stsEntry{domain: domain, policy: &p, id: id, expires: now.Add(p.maxAge)})
		s.storeSTS(ctx, domain, id, p, now)
		return &p, nil
	})
	if err != nil {
		return valid
	}
	return v.(*stsPolicy)
}

// loadSTS reads from the store the policy of a domain the cache has no
// entry of, and makes it the domain's entry: its policy when the store
// has one still valid at now, else an empty entry, so that the domain's
// next messages do not read the store again. A read that fails otherwise
// is logged and leaves the cache alone, for the next message to try
// again; this one goes by what DNS and the policy server say.
func (s *Sender) loadSTS(ctx context.Context, domain string, now time.Time) stsEntry {
	e := stsEntry{domain: domain}
	sp, err := s.cfg.Store.STSPolicy(ctx, domain, now)
	switch {
	case errors.Is(err, mailstore.ErrSTSPolicyNotFound):
	case err != nil:
		if ctx.Err() == nil {
			s.log.Error("read the stored MTA-STS policy", "domain", domain, "err", err)
		}
		return e
	default:
		switch m := stsMode(sp.Mode); m {
		case stsEnforce, stsTesting, stsNone:
			p := stsPolicy{mode: m, mx: sp.MX, maxAge: sp.MaxAge}
			e.policy, e.id, e.expires = &p, sp.ID, sp.Expires
		default:
			// Not written by this package: fetch the policy again.
			s.log.Error("stored MTA-STS policy has an unknown mode", "domain", domain, "mode", sp.Mode)
		}
	}
	return s.sts.add(e)
}

// storeSTS writes a policy just fetched to the store, for the Senders
// that come after this one. Failing that, the policy still applies from
// memory: the error is logged, and the next fetch writes it again.
func (s *Sender) storeSTS(ctx context.Context, domain, id string, p stsPolicy, now time.Time) {
	sp := mailstore.STSPolicy{Domain: domain, ID: id, Mode: string(p.mode), MX: p.mx, MaxAge: p.maxAge, Expires: now.Add(p.maxAge)}
	if err := s.cfg.Store.PutSTSPolicy(ctx, sp, now); err != nil {
		s.log.Error("store the MTA-STS policy", "domain", domain, "id", id, "err", err)
	}
}

// fetchSTSPolicy gets and parses https://mta-sts.<domain>/.well-known/mta-sts.txt
// (RFC 8461 section 3.3): a certificate valid for that name, status 200
// without following redirects, text/plain, at most stsMaxPolicyBytes,
// within stsFetchTimeout.
func (s *Sender) fetchSTSPolicy(ctx context.Context, domain string) (stsPolicy, error) {
	url := "https://mta-sts." + domain + "/.well-known/mta-sts.txt"
	ctx, cancel := context.WithTimeout(ctx, stsFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return stsPolicy{}, fmt.Errorf("fetch %s: %w", url, err)
	}
	resp, err := s.stsClient.Do(req)
	if err != nil {
		return stsPolicy{}, fmt.Errorf("fetch %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return stsPolicy{}, fmt.Errorf("fetch %s: status %s", url, resp.Status)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "text/plain" {
		return stsPolicy{}, fmt.Errorf("fetch %s: content type %q, want text/plain", url, resp.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, stsMaxPolicyBytes+1))
	if err != nil {
		return stsPolicy{}, fmt.Errorf("fetch %s: %w", url, err)
	}
	if len(body) > stsMaxPolicyBytes {
		return stsPolicy{}, fmt.Errorf("fetch %s: policy larger than %d bytes", url, stsMaxPolicyBytes)
	}
	p, err := parseSTSPolicy(string(body))
	if err != nil {
		return stsPolicy{}, fmt.Errorf("policy at %s: %w", url, err)
	}
	return p, nil
}

// newSTSClient makes the client that fetches policies when
// Config.MTASTSClient is nil: certificates verified under TLS's RootCAs
// (nil: the system's), names resolved with Config.Resolver like the MX
// hosts (the dns setting), no HTTP proxy: the policy comes from the
// domain's own server (RFC 8461 section 3.3), as its mail goes to its MX
// hosts directly.
func (s *Sender) newSTSClient() *http.Client {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.cfg.TLS != nil {
		tc.RootCAs = s.cfg.TLS.RootCAs
	}
	return &http.Client{Transport: &http.Transport{
		DialContext:           s.dialHTTPS,
		TLSClientConfig:       tc,
		TLSHandshakeTimeout:   stsFetchTimeout,
		ResponseHeaderTimeout: stsFetchTimeout,
		// The body is bounded in fetchSTSPolicy; the headers would
		// otherwise be allowed 10 MB, and a policy needs a few lines.
		MaxResponseHeaderBytes: stsMaxPolicyBytes,
		// A domain's policy is fetched once per max_age: a kept-alive
		// connection would seldom serve again, and would outlive Run.
		DisableKeepAlives: true,
	}}
}

// dialHTTPS connects to addr ("host:port") through Config.Resolver.
func (s *Sender) dialHTTPS(ctx context.Context, network, addr string) (net.Conn, error) {
	name, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, refused, err := s.addrs(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("look up %s: %w", name, err)
	}
	if len(ips) == 0 {
		// The policy server is the destination's too: not fetched from
		// where its MX hosts would not be delivered to.
		return nil, fmt.Errorf("%s resolves only to non-public addresses (%s): %w", name, strings.Join(refused, ", "), publicip.ErrNotPublic)
	}
	d := s.dialer()
	for _, ip := range ips {
		var c net.Conn
		if c, err = d.DialContext(ctx, network, net.JoinHostPort(ip, port)); err == nil {
			return c, nil
		}
	}
	return nil, err
}

// noRedirects keeps a client from following redirects (RFC 8461 section
// 3.3): the 3xx is answered as it is, and is not 200.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// applySTS narrows the hosts of a route to those an "enforce" policy
// allows, and answers whether their sessions need verified TLS (enforce),
// or the reply that defers every recipient when no host is allowed. "testing"
// and "none" change nothing; "testing" logs the hosts "enforce" would
// skip (RFC 8461 section 5: report, do not act).
func (s *Sender) applySTS(p *stsPolicy, domain string, hosts []host) (_ []host, enforce bool, _ *reply) {
	if p == nil || p.mode == stsNone {
		return hosts, false, nil
	}
	var allowed []host
	for _, h := range hosts {
		if p.allows(h.name) {
			allowed = append(allowed, h)
			continue
		}
		s.log.Info("MX host not in the MTA-STS policy", "domain", domain, "host", h.name, "mode", string(p.mode))
	}
	if p.mode != stsEnforce {
		return hosts, false, nil
	}
	if len(allowed) == 0 {
		return nil, true, &reply{Text: "no MX host matches the MTA-STS policy of " + domain, Enhanced: smtp.EnhancedCode{4, 7, 5}}
	}
	return allowed, true, nil
}
