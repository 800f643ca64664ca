package mailauth

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/mail"
	"net/textproto"
	"strings"
	"time"

	"blitiri.com.ar/go/spf"
	"github.com/emersion/go-msgauth/authres"
	"github.com/emersion/go-msgauth/dkim"
	"github.com/emersion/go-msgauth/dmarc"
	"golang.org/x/net/publicsuffix"
)

// Checker runs the SPF, DKIM and DMARC checks of inbound mail.
type Checker struct {
	// Resolver answers the DNS queries; nil means net.DefaultResolver.
	Resolver Resolver
	// Hostname is the authserv-id of the Authentication-Results header
	// (RFC 8601 section 2.5): this server's host name. Required.
	Hostname string
	// Timeout bounds a whole Check when ctx has no earlier deadline; 0
	// means 20 seconds.
	Timeout time.Duration
}

// Input is what Check looks at: the connection and envelope of one
// message and the message itself (header and body as received, before
// this server adds trace fields).
type Input struct {
	IP       net.IP
	HELO     string
	MailFrom string // "" for the null sender
	Message  []byte
}

// Results are the outcomes of one Check. Values are those of RFC 8601
// section 2.7: pass, fail, softfail, neutral, none, temperror, permerror.
type Results struct {
	// SPF is the SPF result (RFC 7208 section 2.6) of SPFDomain: the MAIL
	// FROM domain, or the HELO name for the null sender (section 2.4).
	SPF       authres.ResultValue
	SPFDomain string
	// DKIM has one result per signature verified; empty for an unsigned
	// message (dkim=none in the header).
	DKIM []DKIMResult
	// DMARC is the DMARC result (RFC 7489) of FromDomain, the domain of
	// the From header field.
	DMARC      authres.ResultValue
	FromDomain string
	// Policy is the policy FromDomain asks receivers to apply when DMARC
	// fails (p=, or sp= when the record was found at the organizational
	// domain of a subdomain); empty when it publishes none. What to do
	// with it is the receiver's choice.
	Policy dmarc.Policy
}

// DKIMResult is the verification of one DKIM-Signature.
type DKIMResult struct {
	Value  authres.ResultValue
	Domain string // d=
	// Identifier is i=, when the signature has one.
	Identifier string
	// Reason says why it did not pass.
	Reason string
}

// maxDKIMSignatures bounds the signatures verified per message, each a
// DNS query and a public-key operation.
const maxDKIMSignatures = 5

// Check runs SPF, DKIM and DMARC on in and returns the
// Authentication-Results header field to prepend to the message (name,
// value and the final CRLF, folded at its ";" separators) with the
// results. It does not fail: a DNS query that cannot be answered in time
// is a temperror result. Every query is bounded by ctx and c.Timeout.
func (c *Checker) Check(ctx context.Context, in Input) (string, Results) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var res Resolver = net.DefaultResolver
	if c.Resolver != nil {
		res = c.Resolver
	}
	r := ctxResolver{res}
	txt := func(name string) ([]string, error) { return r.LookupTXT(ctx, name) }

	var out Results
	var spfRes authres.SPFResult
	out.SPF, out.SPFDomain, spfRes = checkSPF(ctx, r, in)

	spfRes.Helo, spfRes.From, spfRes.Reason = fieldValue(spfRes.Helo), fieldValue(spfRes.From), fieldValue(spfRes.Reason)
	hdrs := []authres.Result{&spfRes}
	out.DKIM = checkDKIM(in.Message, txt)
	if len(out.DKIM) == 0 {
		hdrs = append(hdrs, &authres.DKIMResult{Value: authres.ResultNone})
	}
	for _, d := range out.DKIM {
		hdrs = append(hdrs, &authres.DKIMResult{Value: d.Value, Domain: fieldValue(d.Domain), Identifier: fieldValue(d.Identifier), Reason: fieldValue(d.Reason)})
	}

	var reason string
	out.FromDomain, out.DMARC, out.Policy, reason = checkDMARC(in.Message, out, txt)
	hdrs = append(hdrs, &authres.DMARCResult{Value: out.DMARC, From: fieldValue(out.FromDomain), Reason: fieldValue(reason)})

	return foldResults(authres.Format(c.Hostname, hdrs)), out
}

// maxResultValue bounds each value of the Authentication-Results field:
// the HELO name, MAIL FROM domain and DKIM d= and i= come from the
// client, and one result per line (three values at most, each quoted at
// worst) must stay under RFC 5322's 998 octets (a domain name has at
// most 255).
const maxResultValue = 255

// fieldValue is s as a value of the field: without control characters
// (a CR or LF from the client, which go-smtp keeps when bare, would end
// the field early and add fields of the client's own to the stored
// message), with ' for " and / for \ (authres quotes a value by escaping
// only ", so a \ at its end would escape the closing quote, and each "
// would double), at most maxResultValue octets of valid UTF-8.
func fieldValue(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r < ' ' || r == 0x7f:
			return -1
		case r == '"':
			return '\''
		case r == '\\':
			return '/'
		}
		return r
	}, s)
	if len(s) > maxResultValue {
		s = strings.ToValidUTF8(s[:maxResultValue], "")
	}
	return s
}

// foldResults makes the header field of a formatted value, one result per
// line (RFC 5322 section 2.2.3 folding), so no line nears the 998-octet
// limit. The values are fieldValue's.
func foldResults(v string) string {
	return "Authentication-Results: " + strings.ReplaceAll(v, "; ", ";\r\n\t") + "\r\n"
}

// checkSPF evaluates SPF for the MAIL FROM domain, or for the HELO name
// when the sender is null (RFC 7208 section 2.4), with
// "postmaster@<helo>" as the sender then (section 4.3) for the macros.
func checkSPF(ctx context.Context, r ctxResolver, in Input) (authres.ResultValue, string, authres.SPFResult) {
	sender, domain := in.MailFrom, ""
	if i := strings.LastIndexByte(sender, '@'); i >= 0 {
		domain = sender[i+1:]
	}
	if sender == "" || domain == "" {
		sender, domain = "postmaster@"+in.HELO, in.HELO
	}
	hr := authres.SPFResult{Helo: in.HELO}
	if in.MailFrom != "" {
		hr.From = domain
	}
	if domain == "" || in.IP == nil {
		hr.Value = authres.ResultNone
		return hr.Value, domain, hr
	}
	got, err := spf.CheckHostWithSender(in.IP, in.HELO, sender,
		spf.WithContext(ctx), spf.WithResolver(r))
	hr.Value = authres.ResultValue(got)
	if got == spf.PermError && err != nil {
		hr.Reason = reasonOf(err)
	}
	return hr.Value, domain, hr
}

// checkDKIM verifies the message's signatures.
func checkDKIM(msg []byte, txt func(string) ([]string, error)) []DKIMResult {
	vs, err := dkim.VerifyWithOptions(bytes.NewReader(msg), &dkim.VerifyOptions{
		LookupTXT:        txt,
		MaxVerifications: maxDKIMSignatures,
	})
	if err != nil && !errors.Is(err, dkim.ErrTooManySignatures) {
		// The message could not be read as one (no header end, say):
		// its signatures, if any, cannot verify.
		if bytes.Contains(bytes.ToLower(msg), []byte("dkim-signature:")) {
			return []DKIMResult{{Value: authres.ResultPermError, Reason: "message cannot be parsed"}}
		}
		return nil
	}
	out := make([]DKIMResult, 0, len(vs))
	for _, v := range vs {
		d := DKIMResult{Domain: v.Domain, Identifier: v.Identifier}
		switch {
		case v.Err == nil:
			d.Value = authres.ResultPass
		case dkim.IsTempFail(v.Err):
			d.Value, d.Reason = authres.ResultTempError, reasonOf(v.Err)
		case dkim.IsPermFail(v.Err):
			d.Value, d.Reason = authres.ResultPermError, reasonOf(v.Err)
		default:
			d.Value, d.Reason = authres.ResultFail, reasonOf(v.Err)
		}
		out = append(out, d)
	}
	return out
}

// reasonOf is an error as the short reason text of a result: the
// library's prefix dropped, no ";" (the header is folded at "; ").
func reasonOf(err error) string {
	s := strings.TrimPrefix(err.Error(), "dkim: ")
	s = strings.ReplaceAll(s, ";", ",")
	if len(s) > 100 {
		s = s[:100]
	}
	return s
}

// checkDMARC evaluates the From domain's DMARC policy against the SPF and
// DKIM results (RFC 7489 section 3.1 alignment, section 6.6 policy
// discovery with the organizational domain fallback).
func checkDMARC(msg []byte, res Results, txt func(string) ([]string, error)) (from string, value authres.ResultValue, policy dmarc.Policy, reason string) {
	from, err := fromDomain(msg)
	if err != nil {
		// RFC 7489 section 6.6.1: no single author domain, no DMARC.
		return "", authres.ResultPermError, "", err.Error()
	}
	org := orgDomain(from)
	rec, err := dmarc.LookupWithOptions(from, &dmarc.LookupOptions{LookupTXT: txt})
	atOrg := false
	if errors.Is(err, dmarc.ErrNoPolicy) && org != from {
		rec, err = dmarc.LookupWithOptions(org, &dmarc.LookupOptions{LookupTXT: txt})
		atOrg = true
	}
	switch {
	case errors.Is(err, dmarc.ErrNoPolicy):
		return from, authres.ResultNone, "", ""
	case dmarc.IsTempFail(err):
		return from, authres.ResultTempError, "", "DNS"
	case err != nil:
		return from, authres.ResultPermError, "", "bad DMARC record"
	}
	policy = rec.Policy
	if atOrg && rec.SubdomainPolicy != "" {
		policy = rec.SubdomainPolicy
	}

	if res.SPF == authres.ResultPass && aligned(from, res.SPFDomain, rec.SPFAlignment) {
		return from, authres.ResultPass, policy, ""
	}
	for _, d := range res.DKIM {
		if d.Value == authres.ResultPass && aligned(from, d.Domain, rec.DKIMAlignment) {
			return from, authres.ResultPass, policy, ""
		}
	}
	return from, authres.ResultFail, policy, ""
}

// aligned reports whether an authenticated domain is aligned with the From
// domain (RFC 7489 section 3.1): the same name in strict mode, the same
// organizational domain in relaxed mode.
func aligned(from, authDomain string, mode dmarc.AlignmentMode) bool {
	from, authDomain = strings.ToLower(strings.TrimSuffix(from, ".")), strings.ToLower(strings.TrimSuffix(authDomain, "."))
	if authDomain == "" {
		return false
	}
	if mode == dmarc.AlignmentStrict {
		return from == authDomain
	}
	return orgDomain(from) == orgDomain(authDomain)
}

// orgDomain is the organizational domain of d (RFC 7489 section 3.2): one
// label more than its public suffix; d itself when it has no more.
func orgDomain(d string) string {
	org, err := publicsuffix.EffectiveTLDPlusOne(d)
	if err != nil {
		return d
	}
	return org
}

// fromDomain is the lower-cased domain of the message's one author (From
// header field).
func fromDomain(msg []byte) (string, error) {
	tr := textproto.NewReader(bufio.NewReader(bytes.NewReader(msg)))
	h, err := tr.ReadMIMEHeader()
	if err != nil && len(h) == 0 {
		return "", errors.New("no header")
	}
	froms := h.Values("From")
	if len(froms) != 1 {
		return "", errors.New("not one From field")
	}
	addrs, err := (&mail.AddressParser{}).ParseList(froms[0])
	if err != nil || len(addrs) == 0 {
		return "", errors.New("From field cannot be parsed")
	}
	domain := ""
	for _, a := range addrs {
		i := strings.LastIndexByte(a.Address, '@')
		if i < 0 {
			return "", errors.New("From address has no domain")
		}
		d := strings.ToLower(a.Address[i+1:])
		if domain != "" && d != domain {
			return "", errors.New("From addresses of several domains")
		}
		domain = d
	}
	if !srsDomain(domain) {
		return "", errors.New("From domain is not a domain name")
	}
	return domain, nil
}
