package policy

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormalizeDomain(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string // want "" means ErrBadDomain
	}{
		{"plain", "example.com", "example.com"},
		{"upper case", "Example.COM", "example.com"},
		{"subdomains", "mail.eu.example.co.uk", "mail.eu.example.co.uk"},
		{"digits and hyphens", "a-1.b2-c.example", "a-1.b2-c.example"},
		{"digit label", "123.example", "123.example"},
		{"tld with a digit", "example.a1", "example.a1"},
		{"idn", "bücher.example", "xn--bcher-kva.example"},
		{"idn upper case", "BÜCHER.Example", "xn--bcher-kva.example"},
		{"idn already ascii", "xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"idn ascii upper case", "XN--BCHER-KVA.EXAMPLE", "xn--bcher-kva.example"},
		{"idn german", "münchen.de", "xn--mnchen-3ya.de"},
		{"idn sharp s kept (nontransitional)", "faß.de", "xn--fa-hia.de"},
		{"idn japanese", "例え.テスト", "xn--r8jz45g.xn--zckzah"},
		{"fullwidth letters", "ｅｘａｍｐｌｅ.com", "example.com"},
		{"fullwidth, over 253 octets until mapped", strings.Repeat(strings.Repeat("Ａ", 60)+".", 3) + "com", strings.Repeat(strings.Repeat("a", 60)+".", 3) + "com"},
		{"ideographic full stop", "example。com", "example.com"},
		{"label of 63", strings.Repeat("a", 63) + ".com", strings.Repeat("a", 63) + ".com"},
		{"253 octets", strings.Repeat(strings.Repeat("a", 49)+".", 5) + "abc", strings.Repeat(strings.Repeat("a", 49)+".", 5) + "abc"},

		{"empty", "", ""},
		{"one label", "localhost", ""},
		{"trailing dot", "example.com.", ""},
		{"trailing ideographic dot", "example.com。", ""},
		{"leading dot", ".example.com", ""},
		{"empty label", "a..example", ""},
		{"leading space", " example.com", ""},
		{"trailing space", "example.com ", ""},
		{"inner space", "ex ample.com", ""},
		{"underscore", "a_b.example", ""},
		{"leading hyphen", "-a.example", ""},
		{"trailing hyphen", "a-.example", ""},
		{"hyphens at 3 and 4", "ab--cd.example", ""},
		{"bad punycode", "xn--a.example", ""},
		{"ipv4", "192.0.2.1", ""},
		{"numeric tld", "example.123", ""},
		{"address literal", "[192.0.2.1]", ""},
		{"at sign", "user@example.com", ""},
		{"slash", "exa/mple.com", ""},
		{"label of 64", strings.Repeat("a", 64) + ".com", ""},
		{"254 octets", strings.Repeat(strings.Repeat("a", 49)+".", 5) + "abcd", ""},
		{"zero width joiner", "a\u200db.example", ""},
		{"zero width space", "exa\u200bmple.com", ""},
		{"soft hyphen", "exa\u00admple.com", ""},
		{"byte order mark", "\ufeffexample.com", ""},
		{"no-break space", "exa\u00a0mple.com", ""},
		{"control", "exa\x00mple.com", ""},
		{"invalid utf-8", "ex\xffample.com", ""},
		{"replacement character", "ex\ufffdample.com", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalizeDomain(tc.in)
			if tc.want == "" {
				if !errors.Is(err, ErrBadDomain) {
					t.Errorf("NormalizeDomain(%q) = %q, %v, want ErrBadDomain", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("NormalizeDomain(%q) = %q, %v, want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestNormalizeAddress(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string // want "" means ErrBadAddress
	}{
		{"plain", "john@example.com", "john@example.com"},
		{"upper case", "John.Doe@Example.COM", "john.doe@example.com"},
		{"plus tag", "a+tag@example.com", "a+tag@example.com"},
		{"atext specials", "!#$%&'*+-/=?^_`{|}~@example.com", "!#$%&'*+-/=?^_`{|}~@example.com"},
		{"apostrophe", "O'Neil@example.com", "o'neil@example.com"},
		{"idn domain", "user@bücher.example", "user@xn--bcher-kva.example"},
		{"utf-8 local", "José@example.com", "josé@example.com"},
		{"utf-8 local upper case", "ÄÖÜ@Bücher.Example", "äöü@xn--bcher-kva.example"},
		{"utf-8 local nfc", "jose\u0301@example.com", "jos\u00e9@example.com"},
		{"local of 64", strings.Repeat("a", 64) + "@example.com", strings.Repeat("a", 64) + "@example.com"},
		{"local of 64 once nfc", strings.Repeat("e\u0301", 32) + "@example.com", strings.Repeat("\u00e9", 32) + "@example.com"},
		{"fullwidth domain, over 254 octets until mapped", "a@" + strings.Repeat(strings.Repeat("ｂ", 60)+".", 3) + "com", "a@" + strings.Repeat(strings.Repeat("b", 60)+".", 3) + "com"},
		{"254 octets", strings.Repeat("a", 64) + "@" + strings.Repeat(strings.Repeat("b", 40)+".", 4) + strings.Repeat("c", 25), strings.Repeat("a", 64) + "@" + strings.Repeat(strings.Repeat("b", 40)+".", 4) + strings.Repeat("c", 25)},

		{"empty", "", ""},
		{"no at", "john.example.com", ""},
		{"no local", "@example.com", ""},
		{"no domain", "john@", ""},
		{"two ats", "a@b@example.com", ""},
		{"one-label domain", "john@localhost", ""},
		{"trailing dot in domain", "john@example.com.", ""},
		{"bad domain", "john@-example.com", ""},
		{"ip literal", "john@[192.0.2.1]", ""},
		{"leading dot", ".john@example.com", ""},
		{"trailing dot", "john.@example.com", ""},
		{"double dot", "jo..hn@example.com", ""},
		{"quoted", `"john doe"@example.com`, ""},
		{"space", "john doe@example.com", ""},
		{"angle brackets", "<john@example.com>", ""},
		{"comma", "a,b@example.com", ""},
		{"control", "jo\x01hn@example.com", ""},
		{"invalid utf-8", "jo\xffhn@example.com", ""},
		{"replacement character", "jo\ufffdhn@example.com", ""},
		{"zero width space", "jo\u200bhn@example.com", ""},
		{"right-to-left override", "jo\u202ehn@example.com", ""},
		{"no-break space", "jo\u00a0hn@example.com", ""},
		{"line separator", "jo\u2028hn@example.com", ""},
		{"byte order mark", "\ufeffjohn@example.com", ""},
		{"c1 control", "jo\u0085hn@example.com", ""},
		{"local of 65", strings.Repeat("a", 65) + "@example.com", ""},
		{"local longer once lower case", strings.Repeat("\u023a", 32) + "@example.com", ""},
		{"255 octets", strings.Repeat("a", 64) + "@" + strings.Repeat(strings.Repeat("b", 40)+".", 4) + strings.Repeat("c", 26), ""},
		{"longer than 254 once idna", strings.Repeat("a", 64) + "@" + strings.Repeat(strings.Repeat("ü", 20)+".", 7) + "example", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalizeAddress(tc.in)
			if tc.want == "" {
				if !errors.Is(err, ErrBadAddress) {
					t.Errorf("NormalizeAddress(%q) = %q, %v, want ErrBadAddress", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("NormalizeAddress(%q) = %q, %v, want %q", tc.in, got, err, tc.want)
			}
			if d := DomainOf(got); d != got[strings.LastIndexByte(got, '@')+1:] {
				t.Errorf("DomainOf(%q) = %q", got, d)
			}
		})
	}
}

func TestNormalizeAliasSource(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string // want "" means ErrBadAddress
	}{
		{"address", "Info@Example.com", "info@example.com"},
		{"catch-all", "@example.com", "@example.com"},
		{"catch-all upper case", "@Example.COM", "@example.com"},
		{"catch-all idn", "@bücher.example", "@xn--bcher-kva.example"},
		{"address idn", "info@BÜCHER.example", "info@xn--bcher-kva.example"},

		{"empty", "", ""},
		{"at only", "@", ""},
		{"two ats", "@@example.com", ""},
		{"catch-all one label", "@localhost", ""},
		{"catch-all trailing dot", "@example.com.", ""},
		{"catch-all bad domain", "@exa_mple.com", ""},
		{"no at", "example.com", ""},
		{"bad local", "a..b@example.com", ""},
		{"wildcard", "*@example.com", "*@example.com"}, // '*' is atext, a plain address
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalizeAliasSource(tc.in)
			if tc.want == "" {
				if !errors.Is(err, ErrBadAddress) {
					t.Errorf("NormalizeAliasSource(%q) = %q, %v, want ErrBadAddress", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("NormalizeAliasSource(%q) = %q, %v, want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestDomainOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"john@example.com", "example.com"},
		{"@example.com", "example.com"},
		{"example.com", "example.com"},
	} {
		if got := DomainOf(tc.in); got != tc.want {
			t.Errorf("DomainOf(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// checkDomainForm checks what every normalised domain is: lower-case ASCII
// letters, digits, hyphens and dots.
func checkDomainForm(t *testing.T, fn, in, dom string) {
	t.Helper()
	if dom == "" || len(dom) > 253 {
		t.Fatalf("%s(%q) domain = %q, want 1 to 253 octets", fn, in, dom)
	}
	for i := 0; i < len(dom); i++ {
		c := dom[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			t.Fatalf("%s(%q) domain = %q, has %q, want lower-case ASCII", fn, in, dom, c)
		}
	}
}

var fuzzSeeds = []string{
	"john@example.com", "John.Doe@Example.COM", "user@bücher.example", "José@example.com",
	"jose\u0301@Example.com", "a+b@xn--bcher-kva.example", "@example.com", "a@b@c.d",
	"\u023a\u023a@example.com", "İ@example.com", "ǅ@ǅ.com", "a@例え.テスト", "x@ｅｘａｍｐｌｅ.com",
	"a@example。com", "", "@", "a@", ".a@b.c", "a@b.c.", "a@b..c", "a@1.2.3.4", "a@xn--a.com",
	strings.Repeat("a", 64) + "@" + strings.Repeat("b", 63) + ".com",
}

func FuzzNormalizeAddress(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := NormalizeAddress(in)
		if err != nil {
			if !errors.Is(err, ErrBadAddress) {
				t.Fatalf("NormalizeAddress(%q) = %v, want ErrBadAddress", in, err)
			}
			return
		}
		if !utf8.ValidString(out) || len(out) > MaxAddressLen {
			t.Fatalf("NormalizeAddress(%q) = %q, want valid UTF-8 of at most %d octets", in, out, MaxAddressLen)
		}
		at := strings.LastIndexByte(out, '@')
		if at <= 0 || at > 64 || strings.Count(out, "@") != 1 {
			t.Fatalf("NormalizeAddress(%q) = %q, want one @ after a local part of 1 to 64 octets", in, out)
		}
		checkDomainForm(t, "NormalizeAddress", in, out[at+1:])
		if local := out[:at]; strings.ToLower(local) != local {
			t.Fatalf("NormalizeAddress(%q) local part = %q, want lower case", in, local)
		}
		again, err := NormalizeAddress(out)
		if err != nil || again != out {
			t.Fatalf("NormalizeAddress(%q) = %q, %v, want %q (idempotent)", out, again, err, out)
		}
		if src, err := NormalizeAliasSource(in); err != nil || src != out {
			t.Fatalf("NormalizeAliasSource(%q) = %q, %v, want %q", in, src, err, out)
		}
	})
}

func FuzzNormalizeDomain(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s[strings.LastIndexByte(s, '@')+1:])
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := NormalizeDomain(in)
		if err != nil {
			if !errors.Is(err, ErrBadDomain) {
				t.Fatalf("NormalizeDomain(%q) = %v, want ErrBadDomain", in, err)
			}
			if _, err := NormalizeAliasSource("@" + in); !errors.Is(err, ErrBadAddress) {
				t.Fatalf("NormalizeAliasSource(%q) = %v, want ErrBadAddress", "@"+in, err)
			}
			return
		}
		checkDomainForm(t, "NormalizeDomain", in, out)
		if !strings.Contains(out, ".") || strings.HasPrefix(out, ".") || strings.HasSuffix(out, ".") || strings.Contains(out, "..") {
			t.Fatalf("NormalizeDomain(%q) = %q, want two or more non-empty labels", in, out)
		}
		again, err := NormalizeDomain(out)
		if err != nil || again != out {
			t.Fatalf("NormalizeDomain(%q) = %q, %v, want %q (idempotent)", out, again, err, out)
		}
		if src, err := NormalizeAliasSource("@" + in); err != nil || src != "@"+out {
			t.Fatalf("NormalizeAliasSource(%q) = %q, %v, want %q", "@"+in, src, err, "@"+out)
		}
	})
}
