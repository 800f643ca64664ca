package mailauth

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var testSecret = []byte("tops3cr3t")

func newSRS(now time.Time) *SRS {
	return &SRS{Secret: testSecret, Now: func() time.Time { return now }}
}

// The expected addresses were computed apart from this code (Python hmac
// and base64, the libsrs2 algorithm): day 299 of the 1024-day cycle is
// "JL".
func TestSRSForward(t *testing.T) {
	s := newSRS(testNow)
	tests := []struct {
		name, sender, domain, want string
	}{
		{"null sender", "", "forward.example", ""},
		{"plain", "Alice@example.com", "forward.example", "SRS0=eEttNugi=JL=example.com=Alice@forward.example"},
		{"domain given as address", "Alice@example.com", "list@forward.example", "SRS0=eEttNugi=JL=example.com=Alice@forward.example"},
		{"own domain", "bob@forward.example", "Forward.Example", "bob@forward.example"},
		{"srs0 becomes srs1", "SRS0=eEttNugi=JL=example.com=Alice@forward.example", "next.example",
			"SRS1=QnCHbPIS=forward.example==eEttNugi=JL=example.com=Alice@next.example"},
		{"srs1 keeps first forwarder", "SRS1=xxxx=forward.example==eEttNugi=JL=example.com=Alice@next.example", "third.example",
			"SRS1=QnCHbPIS=forward.example==eEttNugi=JL=example.com=Alice@third.example"},
		{"malformed srs0 is a plain local part", "SRS0=junk@other.example", "forward.example", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Forward(tt.sender, tt.domain)
			if err != nil {
				t.Fatalf("Forward(%q, %q) = %v", tt.sender, tt.domain, err)
			}
			if tt.want == "" && tt.sender != "" {
				// Only the shape is known: a fresh SRS0 of the whole local part.
				if !strings.HasPrefix(got, "SRS0=") || !strings.HasSuffix(got, "=JL=other.example=SRS0=junk@forward.example") {
					t.Errorf("Forward(%q) = %q, want SRS0=HHHHHHHH=JL=other.example=SRS0=junk@forward.example", tt.sender, got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("Forward(%q, %q) = %q, want %q", tt.sender, tt.domain, got, tt.want)
			}
		})
	}
}

func TestSRSForwardErrors(t *testing.T) {
	for _, tt := range []struct {
		name, sender, domain string
		secret               []byte
		want                 error
	}{
		{"no secret", "a@example.com", "forward.example", nil, ErrNoSecret},
		{"no domain", "alice", "forward.example", testSecret, nil},
		{"empty local", "@example.com", "forward.example", testSecret, nil},
		{"quoted local", `"a b"@example.com`, "forward.example", testSecret, nil},
		{"bad sender domain", "a@exa=mple.com", "forward.example", testSecret, nil},
		{"bad forward domain", "a@example.com", "for ward.example", testSecret, nil},
		{"empty forward domain", "a@example.com", "", testSecret, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &SRS{Secret: tt.secret, Now: func() time.Time { return testNow }}
			got, err := s.Forward(tt.sender, tt.domain)
			if err == nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Forward(%q, %q) = %q, %v; want error %v", tt.sender, tt.domain, got, err, tt.want)
			}
		})
	}
}

func TestSRSReverse(t *testing.T) {
	const srs0 = "SRS0=eEttNugi=JL=example.com=Alice@forward.example"
	const srs1 = "SRS1=QnCHbPIS=forward.example==eEttNugi=JL=example.com=Alice@next.example"
	day := 24 * time.Hour
	tests := []struct {
		name string
		now  time.Time
		addr string
		want string
		err  error
	}{
		{"srs0", testNow, srs0, "Alice@example.com", nil},
		{"srs0 lower-cased on the way", testNow, strings.ToLower(srs0), "alice@example.com", nil},
		{"srs0 upper-cased", testNow, strings.ToUpper(srs0), "ALICE@EXAMPLE.COM", nil},
		{"srs1", testNow, srs1, "SRS0=eEttNugi=JL=example.com=Alice@forward.example", nil},
		{"srs1 lower-cased", testNow, strings.ToLower(srs1), "SRS0=eettnugi=jl=example.com=alice@forward.example", nil},
		{"21 days old", testNow.Add(21 * day), srs0, "Alice@example.com", nil},
		{"22 days old", testNow.Add(22 * day), srs0, "", ErrExpired},
		{"srs1 22 days old", testNow.Add(22 * day), srs1, "", ErrExpired},
		{"a day ahead", testNow.Add(-day), srs0, "Alice@example.com", nil},
		{"two days ahead", testNow.Add(-2 * day), srs0, "", ErrExpired},
		{"a cycle later", testNow.Add(1024 * day), srs0, "Alice@example.com", nil},
		{"bad hash", testNow, "SRS0=eEttNugj=JL=example.com=Alice@forward.example", "", ErrBadHash},
		{"4-character hash of earlier versions", testNow, "SRS0=eEtt=JL=example.com=Alice@forward.example", "", ErrBadHash},
		{"srs1 4-character hash of earlier versions", testNow, "SRS1=hluZ=forward.example==eEtt=JL=example.com=Alice@next.example", "", ErrBadHash},
		{"hash too long", testNow, "SRS0=eEttNugiX=JL=example.com=Alice@forward.example", "", ErrBadHash},
		{"local part altered", testNow, "SRS0=eEttNugi=JL=example.com=Mallory@forward.example", "", ErrBadHash},
		{"domain altered", testNow, "SRS0=eEttNugi=JL=evil.example=Alice@forward.example", "", ErrBadHash},
		{"stamp altered", testNow, "SRS0=eEttNugi=JM=example.com=Alice@forward.example", "", ErrBadHash},
		{"srs1 first forwarder altered", testNow, "SRS1=QnCHbPIS=evil.example==eEttNugi=JL=example.com=Alice@next.example", "", ErrBadHash},
		{"plain address", testNow, "alice@example.com", "", ErrNotSRS},
		{"no at", testNow, "SRS0=eEttNugi=JL=example.com=Alice", "", ErrNotSRS},
		{"srs0 missing fields", testNow, "SRS0=eEttNugi=JL=example.com@forward.example", "", ErrNotSRS},
		{"srs0 bad stamp", testNow, "SRS0=eEttNugi=J1=example.com=Alice@forward.example", "", ErrNotSRS},
		{"srs0 empty local", testNow, "SRS0=eEttNugi=JL=example.com=@forward.example", "", ErrNotSRS},
		{"other separator", testNow, "SRS0+eEttNugi=JL=example.com=Alice@forward.example", "", ErrNotSRS},
		{"srs2", testNow, "SRS2=eEttNugi=JL=example.com=Alice@forward.example", "", ErrNotSRS},
		{"srs1 no srs0 part", testNow, "SRS1=QnCHbPIS=forward.example@next.example", "", ErrNotSRS},
		{"srs1 malformed srs0 part", testNow, "SRS1=QnCHbPIS=forward.example==eEttNugi=JL@next.example", "", ErrNotSRS},
		{"bad domain after at", testNow, "SRS0=eEttNugi=JL=example.com=Alice@for=ward", "", ErrNotSRS},
		{"empty", testNow, "", "", ErrNotSRS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := newSRS(tt.now).Reverse(tt.addr)
			if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Errorf("Reverse(%q) = %q, %v; want %q, %v", tt.addr, got, err, tt.want, tt.err)
			}
		})
	}
	if _, err := (&SRS{Secret: []byte("other")}).Reverse(srs0); !errors.Is(err, ErrBadHash) {
		t.Errorf("Reverse with another secret = %v, want ErrBadHash", err)
	}
	if _, err := (&SRS{}).Reverse(srs0); !errors.Is(err, ErrNoSecret) {
		t.Errorf("Reverse without secret = %v, want ErrNoSecret", err)
	}
}

// TestSRSRoundTrip forwards through up to three forwarders, all using
// this SRS, and reverses back hop by hop to the original sender.
func TestSRSRoundTrip(t *testing.T) {
	senders := []string{
		"alice@example.com", "Bob.Smith+tag@Sub.Example.ORG", "a=b@example.com",
		"x@x", "o'neil@example.co.uk", "user@xn--bcher-kva.example", "élan@example.fr",
	}
	for _, sender := range senders {
		for start := range 1024 {
			if start%97 != 0 {
				continue
			}
			now := testNow.Add(time.Duration(start) * 24 * time.Hour)
			s := newSRS(now)
			hop1, err := s.Forward(sender, "one.example")
			if err != nil {
				t.Fatalf("Forward(%q) = %v", sender, err)
			}
			hop2, err := s.Forward(hop1, "two.example")
			if err != nil {
				t.Fatalf("Forward(%q) = %v", hop1, err)
			}
			hop3, err := s.Forward(hop2, "three.example")
			if err != nil {
				t.Fatalf("Forward(%q) = %v", hop2, err)
			}
			if !strings.HasPrefix(hop2, "SRS1=") || !strings.HasPrefix(hop3, "SRS1=") {
				t.Fatalf("hops %q, %q: want SRS1", hop2, hop3)
			}
			// A bounce to hop3 goes to one.example's SRS0 address directly.
			later := newSRS(now.Add(20 * 24 * time.Hour))
			back, err := later.Reverse(hop3)
			if err != nil || back != hop1 {
				t.Fatalf("Reverse(%q) = %q, %v; want %q", hop3, back, err, hop1)
			}
			orig, err := later.Reverse(back)
			if err != nil || orig != sender {
				t.Fatalf("Reverse(%q) = %q, %v; want %q", back, orig, err, sender)
			}
		}
	}
}

// FuzzReverse: Reverse never panics, and any address it accepts is one
// Forward makes with the secret, up to ASCII case (MTAs may change case),
// on one of the days the address is valid.
func FuzzReverse(f *testing.F) {
	s := newSRS(testNow)
	for _, sender := range []string{"alice@example.com", "a=b@example.org", "SRS0=eEttNugi=JL=example.com=Alice@forward.example"} {
		a, err := s.Forward(sender, "forward.example")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(a)
		f.Add(strings.ToLower(a))
	}
	for _, seed := range []string{
		"", "@", "SRS0=", "SRS0=@x", "SRS1==x==@y", "SRS0=eEttNugi=JL=example.com=Alice@forward.example",
		"SRS1=QnCHbPIS=forward.example==eEttNugi=JL=example.com=Alice@next.example",
		"srs1=QNCHBPIS=forward.example==EETTNUGI=jl=example.com=alice@next.example",
		"SRS1=QnCHbPIS=forward.example=+eEttNugi=JL=example.com=Alice@next.example",
		"SRS0=eEttNugi=JL=example.com=Alice=more@forward.example", "SRS0=\xff\xfe=JL=x=y@z",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		got, err := s.Reverse(addr)
		if err != nil {
			if got != "" {
				t.Fatalf("Reverse(%q) = %q with error %v", addr, got, err)
			}
			return
		}
		domain := addr[strings.LastIndexByte(addr, '@')+1:]
		for d := -1; d <= 21; d++ {
			then := newSRS(testNow.Add(-time.Duration(d) * 24 * time.Hour))
			again, err := then.Forward(got, domain)
			if err == nil && asciiEqualFold(again, addr) {
				return
			}
		}
		t.Fatalf("Reverse(%q) = %q, which Forward to %s does not give back on any valid day", addr, got, domain)
	})
}

func asciiEqualFold(a, b string) bool { return asciiLower(a) == asciiLower(b) }
