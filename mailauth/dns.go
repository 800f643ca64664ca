package mailauth

import (
	"fmt"
	"strings"

	"github.com/mailhost/mailhost/mailstore"
)

// Record is one DNS record a hosted domain publishes. Name and, for MX,
// SRV and CNAME, Value are host names without the trailing dot.
//
// Priority, Weight and Port apply to MX (Priority) and SRV (all three)
// only; DNSRecords never makes them zero, so they are left out of the
// JSON of the other types.
type Record struct {
	Type string `json:"type"` // "MX", "TXT", "SRV" or "CNAME"
	Name string `json:"name"`
	// Value is the target host (MX, SRV, CNAME) or the text (TXT, whole:
	// a DNS provider's form splits it into 255-byte strings itself; Zone
	// does it for a zone file).
	Value    string `json:"value"`
	Priority int    `json:"priority,omitempty"`
	Weight   int    `json:"weight,omitempty"`
	Port     int    `json:"port,omitempty"`
	// Purpose says in a few words what the record is for.
	Purpose string `json:"purpose"`
}

// Zone is the record as a zone-file line (RFC 1035 section 5.1), names
// fully qualified, TXT text split into quoted strings of at most 255
// bytes (RFC 7208 section 3.3, RFC 6376 section 3.6.2.2).
func (r Record) Zone() string {
	name := r.Name + "."
	switch r.Type {
	case "MX":
		return fmt.Sprintf("%s IN MX %d %s.", name, r.Priority, r.Value)
	case "SRV":
		return fmt.Sprintf("%s IN SRV %d %d %d %s.", name, r.Priority, r.Weight, r.Port, r.Value)
	case "TXT":
		var parts []string
		for s := r.Value; ; s = s[255:] {
			if len(s) <= 255 {
				parts = append(parts, quoteTXT(s))
				break
			}
			parts = append(parts, quoteTXT(s[:255]))
		}
		return name + " IN TXT " + strings.Join(parts, " ")
	default:
		return fmt.Sprintf("%s IN %s %s.", name, r.Type, r.Value)
	}
}

func quoteTXT(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Ports of the client configuration records: the standard ones (RFC 6409,
// RFC 8314, RFC 3501), which a production mailhost listens on.
const (
	portSubmission  = 587
	portSubmissions = 465
	portIMAP        = 143
	portIMAPS       = 993
)

// SPF and DMARC policies published for hosted domains; see DNSRecords.
const (
	spfPolicy   = "~all"
	dmarcRecord = "v=DMARC1; p=none; adkim=r; aspf=r"
)

// DNSRecords are the records a customer publishes for domain when its mail
// is hosted on mxHost, in this order:
//
//   - MX: domain to mxHost, priority 10.
//   - SPF (RFC 7208): "v=spf1 mx a:<mxHost> ~all". "mx" authorises the
//     domain's MX hosts, "a:<mxHost>" this server even when the customer
//     puts a filtering service in front of it as MX. "~all" (softfail),
//     not "-all": mail of the domain forwarded by third parties without
//     SRS would otherwise be refused outright, and the DMARC record below
//     is where the domain states its policy.
//   - One DKIM key record per key, "<selector>._domainkey.<domain>"
//     (RFC 6376 section 3.6.2.1), text of PublicKeyRecord. A key that does
//     not decode is left out.
//   - DMARC (RFC 7489): "_dmarc.<domain>" "v=DMARC1; p=none; adkim=r;
//     aspf=r". Mail sent through mailhost passes DMARC by its DKIM
//     signature, but a new customer often has other senders (a shop, a
//     newsletter service) not yet covered; p=none loses none of their
//     mail while they check, and the customer tightens it to quarantine
//     or reject once every sender signs. Relaxed alignment lets
//     subdomains of the domain send.
//   - Client configuration (RFC 6186, RFC 8314 section 5.1): SRV
//     _submissions._tcp (465), _submission._tcp (587), _imaps._tcp (993)
//     and _imap._tcp (143) to mxHost. Clients compare the priority across
//     a protocol's variants (RFC 6186 section 3.4); implicit TLS has the
//     lower number, so it is preferred (RFC 8314 section 5.1).
//   - autoconfig.<domain> and autodiscover.<domain> CNAMEs to mxHost, the
//     names Thunderbird and Outlook ask for their account set-up.
func DNSRecords(domain, mxHost string, keys []mailstore.DKIMKey) []Record {
	out := []Record{
		{Type: "MX", Name: domain, Value: mxHost, Priority: 10, Purpose: "Inbound mail"},
		{Type: "TXT", Name: domain, Value: "v=spf1 mx a:" + mxHost + " " + spfPolicy, Purpose: "SPF: hosts allowed to send mail of the domain"},
	}
	for _, k := range keys {
		txt, err := PublicKeyRecord(k)
		if err != nil {
			continue
		}
		out = append(out, Record{Type: "TXT", Name: k.Selector + "._domainkey." + domain, Value: txt,
			Purpose: "DKIM public key (" + k.Algorithm + ")"})
	}
	out = append(out,
		Record{Type: "TXT", Name: "_dmarc." + domain, Value: dmarcRecord, Purpose: "DMARC policy"},
		Record{Type: "SRV", Name: "_submissions._tcp." + domain, Value: mxHost, Priority: 5, Weight: 1, Port: portSubmissions,
			Purpose: "Mail client set-up: submission over implicit TLS"},
		Record{Type: "SRV", Name: "_submission._tcp." + domain, Value: mxHost, Priority: 10, Weight: 1, Port: portSubmission,
			Purpose: "Mail client set-up: submission with STARTTLS"},
		Record{Type: "SRV", Name: "_imaps._tcp." + domain, Value: mxHost, Priority: 5, Weight: 1, Port: portIMAPS,
			Purpose: "Mail client set-up: IMAP over implicit TLS"},
		Record{Type: "SRV", Name: "_imap._tcp." + domain, Value: mxHost, Priority: 10, Weight: 1, Port: portIMAP,
			Purpose: "Mail client set-up: IMAP with STARTTLS"},
		Record{Type: "CNAME", Name: "autoconfig." + domain, Value: mxHost, Purpose: "Mail client set-up (Thunderbird autoconfig)"},
		Record{Type: "CNAME", Name: "autodiscover." + domain, Value: mxHost, Purpose: "Mail client set-up (Outlook autodiscover)"},
	)
	return out
}
