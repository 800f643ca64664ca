package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// directory is an in-memory Directory: hosted domains, mailboxes by
// address and aliases by source (destination as value). It counts lookups
// so that tests can bound the work Resolve does.
type directory struct {
	domains   map[string]bool
	mailboxes map[string]int64
	aliases   map[string]string
	// owners are the domains of partners other than 0, which are
	// unverified unless in verified (the rest: partner 0, verified).
	owners   map[string]int64
	verified map[string]bool
	fail     error // answered by every lookup when set
	lookups  int
}

func newDirectory(domains ...string) *directory {
	d := &directory{domains: map[string]bool{}, mailboxes: map[string]int64{}, aliases: map[string]string{}}
	for _, n := range domains {
		d.domains[n] = true
	}
	return d
}

func (d *directory) mailbox(addr string) *directory {
	d.mailboxes[addr] = int64(len(d.mailboxes) + 1)
	return d
}

func (d *directory) alias(src, dst string) *directory {
	d.aliases[src] = dst
	return d
}

func (d *directory) MailboxByEmail(ctx context.Context, email string) (mailstore.Mailbox, mailstore.Domain, error) {
	d.lookups++
	if d.fail != nil {
		return mailstore.Mailbox{}, mailstore.Domain{}, d.fail
	}
	id, ok := d.mailboxes[email]
	if !ok {
		return mailstore.Mailbox{}, mailstore.Domain{}, mailstore.ErrMailboxNotFound
	}
	// With its domain, as the stores answer it.
	name := DomainOf(email)
	owner, owned := d.owners[name]
	return mailstore.Mailbox{ID: id, Email: email}, mailstore.Domain{Name: name, PartnerID: owner, Verified: !owned || d.verified[name]}, nil
}

func (d *directory) AliasBySource(ctx context.Context, source string) (mailstore.Alias, error) {
	d.lookups++
	if d.fail != nil {
		return mailstore.Alias{}, d.fail
	}
	dst, ok := d.aliases[source]
	if !ok {
		return mailstore.Alias{}, mailstore.ErrAliasNotFound
	}
	return mailstore.Alias{Source: source, Destination: dst}, nil
}

func (d *directory) DomainByName(ctx context.Context, name string) (mailstore.Domain, error) {
	d.lookups++
	if d.fail != nil {
		return mailstore.Domain{}, d.fail
	}
	if !d.domains[name] {
		return mailstore.Domain{}, mailstore.ErrDomainNotFound
	}
	owner, ok := d.owners[name]
	return mailstore.Domain{Name: name, PartnerID: owner, Verified: !ok || d.verified[name]}, nil
}

// own gives domain name to partner p, verified or not.
func (d *directory) own(name string, p int64, verified bool) *directory {
	if d.owners == nil {
		d.owners, d.verified = map[string]int64{}, map[string]bool{}
	}
	d.owners[name], d.verified[name] = p, verified
	return d
}

// maxLookups bounds the lookups of one Resolve: four per address on a
// chain of at most MaxAliasDepth hops.
const maxLookups = 4 * (MaxAliasDepth + 1)

func emails(ms []mailstore.Mailbox) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Email)
	}
	return out
}

func TestResolve(t *testing.T) {
	// chainOf makes a1@a.test -> a2@a.test -> ... -> a<n>@a.test -> end.
	chainOf := func(d *directory, n int, end string) *directory {
		for i := 1; i < n; i++ {
			d.alias(fmt.Sprintf("a%d@a.test", i), fmt.Sprintf("a%d@a.test", i+1))
		}
		return d.alias(fmt.Sprintf("a%d@a.test", n), end)
	}
	for _, tc := range []struct {
		name      string
		dir       *directory
		addr      string
		mailboxes []string
		remote    []string
		err       error
	}{
		{
			name:      "mailbox",
			dir:       newDirectory("a.test").mailbox("bob@a.test"),
			addr:      "bob@a.test",
			mailboxes: []string{"bob@a.test"},
		},
		{
			name: "unknown user",
			dir:  newDirectory("a.test").mailbox("bob@a.test"),
			addr: "alice@a.test",
			err:  ErrUnknownUser,
		},
		{
			name: "not hosted",
			dir:  newDirectory("a.test").mailbox("bob@a.test"),
			addr: "bob@b.test",
			err:  ErrNotHosted,
		},
		{
			name: "not hosted even with a catch-all elsewhere",
			dir:  newDirectory("a.test").mailbox("bob@a.test").alias("@a.test", "bob@a.test"),
			addr: "bob@b.test",
			err:  ErrNotHosted,
		},
		{
			name:      "alias to a mailbox",
			dir:       newDirectory("a.test").mailbox("bob@a.test").alias("info@a.test", "bob@a.test"),
			addr:      "info@a.test",
			mailboxes: []string{"bob@a.test"},
		},
		{
			name:      "alias to another hosted domain",
			dir:       newDirectory("a.test", "b.test").mailbox("bob@b.test").alias("info@a.test", "bob@b.test"),
			addr:      "info@a.test",
			mailboxes: []string{"bob@b.test"},
		},
		{
			name:   "alias to a remote address",
			dir:    newDirectory("a.test").alias("info@a.test", "someone@remote.test"),
			addr:   "info@a.test",
			remote: []string{"someone@remote.test"},
		},
		{
			name: "alias to a missing address of a hosted domain",
			dir:  newDirectory("a.test").alias("info@a.test", "gone@a.test"),
			addr: "info@a.test",
			err:  ErrUnknownUser,
		},
		{
			name: "catch-all to a missing address of its domain",
			dir:  newDirectory("a.test").alias("@a.test", "gone@a.test"),
			addr: "anything@a.test",
			err:  ErrUnknownUser,
		},
		{
			name: "the missing destination of a catch-all itself",
			dir:  newDirectory("a.test").alias("@a.test", "gone@a.test"),
			addr: "gone@a.test",
			err:  ErrUnknownUser,
		},
		{
			name: "alias to a missing address under a catch-all to it",
			dir:  newDirectory("a.test").alias("info@a.test", "gone@a.test").alias("@a.test", "gone@a.test"),
			addr: "info@a.test",
			err:  ErrUnknownUser,
		},
		{
			name:      "catch-all takes an unknown address",
			dir:       newDirectory("a.test").mailbox("bob@a.test").alias("@a.test", "bob@a.test"),
			addr:      "anything@a.test",
			mailboxes: []string{"bob@a.test"},
		},
		{
			name:      "mailbox before catch-all",
			dir:       newDirectory("a.test").mailbox("bob@a.test").mailbox("carol@a.test").alias("@a.test", "bob@a.test"),
			addr:      "carol@a.test",
			mailboxes: []string{"carol@a.test"},
		},
		{
			name: "alias before catch-all",
			dir: newDirectory("a.test").mailbox("bob@a.test").mailbox("carol@a.test").
				alias("@a.test", "bob@a.test").alias("sales@a.test", "carol@a.test"),
			addr:      "sales@a.test",
			mailboxes: []string{"carol@a.test"},
		},
		{
			name:   "catch-all to a remote address",
			dir:    newDirectory("a.test").alias("@a.test", "owner@remote.test"),
			addr:   "x@a.test",
			remote: []string{"owner@remote.test"},
		},
		{
			name: "catch-all of the destination's domain applies along a chain",
			dir: newDirectory("a.test", "b.test").mailbox("root@b.test").
				alias("info@a.test", "nobody@b.test").alias("@b.test", "root@b.test"),
			addr:      "info@a.test",
			mailboxes: []string{"root@b.test"},
		},
		{
			name: "catch-all to a missing address",
			dir:  newDirectory("a.test", "b.test").alias("@a.test", "gone@b.test"),
			addr: "x@a.test",
			err:  ErrUnknownUser,
		},
		{
			name:      "chain of the full depth",
			dir:       chainOf(newDirectory("a.test").mailbox("end@a.test"), MaxAliasDepth, "end@a.test"),
			addr:      "a1@a.test",
			mailboxes: []string{"end@a.test"},
		},
		{
			name:   "chain of the full depth to a remote address",
			dir:    chainOf(newDirectory("a.test"), MaxAliasDepth, "end@remote.test"),
			addr:   "a1@a.test",
			remote: []string{"end@remote.test"},
		},
		{
			name: "chain one hop too deep",
			dir:  chainOf(newDirectory("a.test").mailbox("end@a.test"), MaxAliasDepth+1, "end@a.test"),
			addr: "a1@a.test",
			err:  ErrAliasTooDeep,
		},
		{
			name: "loop of two",
			dir:  newDirectory("a.test").alias("x@a.test", "y@a.test").alias("y@a.test", "x@a.test"),
			addr: "x@a.test",
			err:  ErrAliasLoop,
		},
		{
			name: "loop across domains",
			dir:  newDirectory("a.test", "b.test").alias("x@a.test", "y@b.test").alias("y@b.test", "x@a.test"),
			addr: "x@a.test",
			err:  ErrAliasLoop,
		},
		{
			name: "loop entered later in the chain",
			dir: newDirectory("a.test").alias("start@a.test", "x@a.test").
				alias("x@a.test", "y@a.test").alias("y@a.test", "z@a.test").alias("z@a.test", "x@a.test"),
			addr: "start@a.test",
			err:  ErrAliasLoop,
		},
		{
			name: "self alias (the store refuses it, resolution too)",
			dir:  newDirectory("a.test").alias("x@a.test", "x@a.test"),
			addr: "x@a.test",
			err:  ErrAliasLoop,
		},
		{
			name: "no at sign",
			dir:  newDirectory("a.test"),
			addr: "postmaster",
			err:  ErrBadAddress,
		},
		{
			name: "catch-all source is not an address",
			dir:  newDirectory("a.test").alias("@a.test", "bob@a.test"),
			addr: "@a.test",
			err:  ErrBadAddress,
		},
		{
			name: "alias to a malformed destination",
			dir:  newDirectory("a.test").alias("x@a.test", "broken@"),
			addr: "x@a.test",
			err:  ErrBadAddress,
		},
		{
			name: "lookup failure",
			dir:  &directory{fail: errTestStore},
			addr: "bob@a.test",
			err:  errTestStore,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Resolve(context.Background(), tc.dir, tc.addr, 0)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Resolve(%q) = %+v, %v, want %v", tc.addr, res, err, tc.err)
				}
				if !strings.Contains(err.Error(), tc.addr) {
					t.Errorf("Resolve(%q) error %q does not name the address", tc.addr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q) = %v", tc.addr, err)
			}
			if got := emails(res.Mailboxes); !slices.Equal(got, tc.mailboxes) {
				t.Errorf("Resolve(%q) mailboxes = %q, want %q", tc.addr, got, tc.mailboxes)
			}
			if !slices.Equal(res.Remote, tc.remote) {
				t.Errorf("Resolve(%q) remote = %q, want %q", tc.addr, res.Remote, tc.remote)
			}
			if tc.dir.lookups > maxLookups {
				t.Errorf("Resolve(%q) made %d lookups, want at most %d", tc.addr, tc.dir.lookups, maxLookups)
			}
		})
	}
}

var errTestStore = errors.New("disk on fire")

// TestResolveUnverified: a domain another partner hosts without having
// verified it is entered only by mail from outside and by that partner's
// own mailboxes and aliases (DeliverLocally); from anyone else
// it is routed as a domain not hosted here.
func TestResolveUnverified(t *testing.T) {
	const a, b = 1, 2
	// a.test is partner a's, unverified; b.test partner b's, unverified;
	// v.test partner b's, verified.
	dir := func() *directory {
		return newDirectory("a.test", "b.test", "v.test").
			own("a.test", a, false).own("b.test", b, false).own("v.test", b, true).
			mailbox("alice@a.test").mailbox("bob@b.test").mailbox("vic@v.test").
			alias("tob@a.test", "bob@b.test").alias("tob@v.test", "bob@b.test").
			alias("toa@b.test", "alice@a.test").alias("chain@a.test", "tob@v.test")
	}
	for _, tc := range []struct {
		name      string
		addr      string
		sender    int64
		mailboxes []string
		remote    []string
		via       string
		err       error
	}{
		{name: "from outside, unverified", addr: "bob@b.test", sender: 0, mailboxes: []string{"bob@b.test"}},
		{name: "own partner, unverified", addr: "bob@b.test", sender: b, mailboxes: []string{"bob@b.test"}},
		{name: "other partner, unverified", addr: "bob@b.test", sender: a, err: ErrNotHosted},
		{name: "other partner, verified", addr: "vic@v.test", sender: a, mailboxes: []string{"vic@v.test"}},
		{name: "other partner's alias into its own unverified domain", addr: "tob@v.test", sender: a, mailboxes: []string{"bob@b.test"}},
		{name: "alias into another partner's unverified domain, from outside", addr: "tob@a.test", sender: 0, remote: []string{"bob@b.test"}, via: "a.test"},
		{name: "alias into another partner's unverified domain, own user", addr: "tob@a.test", sender: a, remote: []string{"bob@b.test"}, via: "a.test"},
		{name: "the alias's partner decides, not the sender's", addr: "toa@b.test", sender: b, remote: []string{"alice@a.test"}, via: "b.test"},
		{name: "chain through a verified domain of the destination's partner", addr: "chain@a.test", sender: 0, mailboxes: []string{"bob@b.test"}},
		{name: "no partner, unverified", addr: "bob@b.test", sender: NoPartner, err: ErrNotHosted},
		{name: "no partner, verified", addr: "vic@v.test", sender: NoPartner, mailboxes: []string{"vic@v.test"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Resolve(context.Background(), dir(), tc.addr, tc.sender)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !errors.Is(err, ErrNotVerified) {
					t.Fatalf("Resolve(%q, %d) = %+v, %v, want %v", tc.addr, tc.sender, res, err, ErrNotVerified)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q, %d) = %v", tc.addr, tc.sender, err)
			}
			if got := emails(res.Mailboxes); !slices.Equal(got, tc.mailboxes) {
				t.Errorf("Resolve(%q, %d) mailboxes = %q, want %q", tc.addr, tc.sender, got, tc.mailboxes)
			}
			if !slices.Equal(res.Remote, tc.remote) {
				t.Errorf("Resolve(%q, %d) remote = %q, want %q", tc.addr, tc.sender, res.Remote, tc.remote)
			}
			if tc.via != "" && (len(res.RemoteVia) != 1 || res.RemoteVia[0].Name != tc.via) {
				t.Errorf("Resolve(%q, %d) remote via %v, want %s", tc.addr, tc.sender, res.RemoteVia, tc.via)
			}
		})
	}
}

// TestResolveRemoteVia checks which hosted domain a remote destination is
// reported to come through: the domain of the alias that names it.
func TestResolveRemoteVia(t *testing.T) {
	for _, tc := range []struct {
		name, addr, via string
		dir             *directory
	}{
		{"alias", "info@a.test", "a.test", newDirectory("a.test").alias("info@a.test", "x@r.test")},
		{"catch-all", "any@a.test", "a.test", newDirectory("a.test").alias("@a.test", "x@r.test")},
		{"chain across domains", "info@a.test", "b.test",
			newDirectory("a.test", "b.test").alias("info@a.test", "fwd@b.test").alias("fwd@b.test", "x@r.test")},
		{"chain through a catch-all", "info@a.test", "b.test",
			newDirectory("a.test", "b.test").alias("info@a.test", "nobody@b.test").alias("@b.test", "x@r.test")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Resolve(context.Background(), tc.dir, tc.addr, 0)
			if err != nil {
				t.Fatalf("Resolve(%q) = %v", tc.addr, err)
			}
			if len(res.Remote) != 1 || len(res.RemoteVia) != 1 || res.RemoteVia[0].Name != tc.via {
				t.Errorf("Resolve(%q) remote = %q via %v, want x@r.test via %s", tc.addr, res.Remote, res.RemoteVia, tc.via)
			}
		})
	}
}

func TestResolveDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d := newDirectory("a.test").mailbox("bob@a.test")
	d.fail = ctx.Err()
	if _, err := Resolve(ctx, d, "bob@a.test", 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Resolve with a done context = %v, want context.Canceled", err)
	}
}

func TestResolutionDeduplicates(t *testing.T) {
	r := resolver{}
	r.addMailbox(mailstore.Mailbox{ID: 1, Email: "a@a.test"})
	r.addMailbox(mailstore.Mailbox{ID: 2, Email: "b@a.test"})
	r.addMailbox(mailstore.Mailbox{ID: 1, Email: "a@a.test"})
	r.addRemote("x@r.test", mailstore.Domain{Name: "a.test"})
	r.addRemote("x@r.test", mailstore.Domain{Name: "b.test"})
	if got := emails(r.res.Mailboxes); !slices.Equal(got, []string{"a@a.test", "b@a.test"}) {
		t.Errorf("mailboxes = %q, want each once", got)
	}
	if !slices.Equal(r.res.Remote, []string{"x@r.test"}) || len(r.res.RemoteVia) != 1 || r.res.RemoteVia[0].Name != "a.test" {
		t.Errorf("remote = %q via %v, want each once, via the first domain", r.res.Remote, r.res.RemoteVia)
	}
}

// FuzzResolve builds a random directory from the input: for each of a
// fixed set of addresses in two hosted domains, whether it is a mailbox, an
// alias (and to which address, hosted, remote or malformed) or nothing, and
// the catch-alls. Resolve must not panic, must end within the lookup bound,
// and must answer either one known error or where the chain really ends.
func FuzzResolve(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, uint8(0))
	f.Add([]byte{2, 1, 2, 2, 2, 3, 2, 0}, uint8(1))
	f.Add([]byte{2, 1, 2, 2, 2, 3, 2, 4, 2, 5, 2, 6, 2, 7, 2, 8, 2, 9, 1, 0}, uint8(0))
	f.Add([]byte{3, 9, 3, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 3, 4, 12}, uint8(5))
	f.Fuzz(func(t *testing.T, graph []byte, start uint8) {
		// 16 addresses: 0-7 in a.test, 8-11 in b.test (both hosted), 12-13
		// in remote.test, 14 malformed, 15 the catch-all source of a.test.
		addrs := make([]string, 16)
		for i := range 8 {
			addrs[i] = fmt.Sprintf("u%d@a.test", i)
		}
		for i := 8; i < 12; i++ {
			addrs[i] = fmt.Sprintf("u%d@b.test", i)
		}
		addrs[12], addrs[13], addrs[14], addrs[15] = "r12@remote.test", "r13@remote.test", "bad@", "@a.test"
		d := newDirectory("a.test", "b.test")
		for i := 0; i+1 < len(graph) && i/2 < 12; i += 2 {
			src := addrs[i/2]
			switch graph[i] % 4 {
			case 1:
				d.mailbox(src)
			case 2:
				d.alias(src, addrs[int(graph[i+1])%len(addrs)])
			}
		}
		// Trailing pairs set the catch-alls of a.test and b.test.
		for i, dom := range []string{"@a.test", "@b.test"} {
			if j := 24 + 2*i; j+1 < len(graph) && graph[j]%2 == 1 {
				d.alias(dom, addrs[int(graph[j+1])%len(addrs)])
			}
		}
		addr := addrs[int(start)%len(addrs)]

		res, err := Resolve(context.Background(), d, addr, 0)
		if d.lookups > maxLookups {
			t.Fatalf("Resolve(%q) made %d lookups, want at most %d", addr, d.lookups, maxLookups)
		}
		if err != nil {
			for _, want := range []error{ErrUnknownUser, ErrNotHosted, ErrAliasLoop, ErrAliasTooDeep, ErrBadAddress} {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("Resolve(%q) = %v, want a policy error", addr, err)
		}
		if n := len(res.Mailboxes) + len(res.Remote); n != 1 {
			t.Fatalf("Resolve(%q) = %+v, want one destination (aliases have one)", addr, res)
		}
		for _, m := range res.Mailboxes {
			if _, ok := d.mailboxes[m.Email]; !ok {
				t.Fatalf("Resolve(%q) mailbox %q is not a mailbox", addr, m.Email)
			}
		}
		if len(res.RemoteVia) != len(res.Remote) {
			t.Fatalf("Resolve(%q) = %+v, want one RemoteVia per Remote", addr, res)
		}
		for _, r := range res.Remote {
			if d.domains[DomainOf(r)] {
				t.Fatalf("Resolve(%q) remote %q is in a hosted domain", addr, r)
			}
		}
		// The same answer by plain iteration: follow at most
		// MaxAliasDepth hops, mailbox first, alias next, catch-all last.
		cur, via := addr, ""
		for hop := 0; ; hop++ {
			if hop > MaxAliasDepth {
				t.Fatalf("Resolve(%q) = %+v, but the chain is longer than %d", addr, res, MaxAliasDepth)
			}
			if !d.domains[DomainOf(cur)] {
				if res.Remote == nil || res.Remote[0] != cur || res.RemoteVia[0].Name != via {
					t.Fatalf("Resolve(%q) = %+v, want remote %q via %s", addr, res, cur, via)
				}
				break
			}
			if _, ok := d.mailboxes[cur]; ok {
				if res.Mailboxes == nil || res.Mailboxes[0].Email != cur {
					t.Fatalf("Resolve(%q) = %+v, want mailbox %q", addr, res, cur)
				}
				break
			}
			next, ok := d.aliases[cur]
			if !ok {
				next = d.aliases["@"+DomainOf(cur)]
			}
			cur, via = next, DomainOf(cur)
		}
	})
}

// TestResolveSubaddress: with a delimiter, an address nothing takes as it
// is goes where its base goes (mailbox, then alias), before the
// catch-all; without one it is an address like any other.
func TestResolveSubaddress(t *testing.T) {
	dir := func() *directory {
		return newDirectory("example.com", "other.example").
			mailbox("ann@example.com").
			mailbox("ann+exact@example.com").
			mailbox("bob@other.example").
			alias("sales@example.com", "bob@other.example").
			alias("list+x@example.com", "bob@other.example").
			alias("fwd@example.com", "ann+fromalias@example.com")
	}
	tests := []struct {
		addr, delim string
		want        string // mailbox address, or the error text
	}{
		{"ann+news@example.com", "+", "ann@example.com"},
		{"ann+news+more@example.com", "+", "ann@example.com"},
		{"ann+exact@example.com", "+", "ann+exact@example.com"},
		{"sales+q3@example.com", "+", "bob@other.example"},
		{"list+x@example.com", "+", "bob@other.example"},
		{"fwd@example.com", "+", "ann@example.com"},
		{"ann-news@example.com", "-", "ann@example.com"},
		{"ann+news@example.com", "", "unknown user"},
		{"ann+news@example.com", "-", "unknown user"},
		{"+news@example.com", "+", "unknown user"},
		{"nobody+news@example.com", "+", "unknown user"},
	}
	for _, tc := range tests {
		res, err := ResolveWith(context.Background(), dir(), tc.addr, 0, ResolveOptions{Delimiter: tc.delim})
		got := ""
		if err != nil {
			got = err.Error()
		} else if len(res.Mailboxes) == 1 {
			got = res.Mailboxes[0].Email
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s (delimiter %q): %q, want %q", tc.addr, tc.delim, got, tc.want)
		}
	}

	// The base goes before the catch-all; the catch-all still takes what
	// has no base.
	d := dir().alias("@example.com", "ann+exact@example.com")
	for addr, want := range map[string]string{"ann+news@example.com": "ann@example.com", "nobody+x@example.com": "ann+exact@example.com"} {
		res, err := ResolveWith(context.Background(), d, addr, 0, ResolveOptions{Delimiter: "+"})
		if err != nil || len(res.Mailboxes) != 1 || res.Mailboxes[0].Email != want {
			t.Errorf("%s with a catch-all: %v, %v; want %s", addr, res.Mailboxes, err, want)
		}
	}
}
