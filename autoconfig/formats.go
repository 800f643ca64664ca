// Package autoconfig tells mail clients how to reach this server, from an
// address alone: Thunderbird's autoconfig (the Mozilla ISPDB format),
// Outlook's Autodiscover (the 2006 "POX" protocol) and Apple's
// configuration profiles (.mobileconfig).
//
// It is a package of its own, not part of adminapi, because it is a role of
// its own: its public endpoints answer mail clients, not partners, without
// an API key, and are also served on listeners of their own (ports 80 and
// 443 of autoconfig.<domain> and autodiscover.<domain>) where the API is
// not. adminapi mounts the same Handler on the API listener and serves the
// Apple profile, which needs a partner key, through Profile.
package autoconfig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"strings"
)

// Servers are the host name and the ports mail clients are told to use.
// The ports are those clients reach, which behind NAT or a port forward may
// differ from the addresses the listeners bind; 0 means the service is not
// offered. A client is given implicit TLS first (RFC 8314 section 5.1),
// then STARTTLS.
type Servers struct {
	// Host is the name of the IMAP and submission servers: the `hostname`
	// setting, which the DNS records of GET /domains/{d}/dns point at.
	Host string
	// IMAPS is IMAP over implicit TLS (993), IMAP with STARTTLS (143).
	IMAPS, IMAP int
	// Submissions is submission over implicit TLS (465, RFC 8314),
	// Submission with STARTTLS (587, RFC 6409).
	Submissions, Submission int
}

// endpoint is one way to reach a service.
type endpoint struct {
	port int
	// implicit is implicit TLS; otherwise STARTTLS.
	implicit bool
}

// incoming lists the IMAP endpoints, preferred first.
func (s Servers) incoming() []endpoint { return s.pair(s.IMAPS, s.IMAP) }

// outgoing lists the submission endpoints, preferred first.
func (s Servers) outgoing() []endpoint { return s.pair(s.Submissions, s.Submission) }

func (s Servers) pair(implicit, starttls int) []endpoint {
	var out []endpoint
	if implicit > 0 {
		out = append(out, endpoint{implicit, true})
	}
	if starttls > 0 {
		out = append(out, endpoint{starttls, false})
	}
	return out
}

// Complete reports whether clients can be configured at all: a host, an
// IMAP port and a submission port.
func (s Servers) Complete() bool {
	return s.Host != "" && len(s.incoming()) > 0 && len(s.outgoing()) > 0
}

// The Mozilla ISPDB format, version 1.1
// (https://wiki.mozilla.org/Thunderbird:Autoconfiguration:ConfigFileFormat).
type clientConfig struct {
	XMLName  xml.Name      `xml:"clientConfig"`
	Version  string        `xml:"version,attr"`
	Provider emailProvider `xml:"emailProvider"`
}

type emailProvider struct {
	ID               string        `xml:"id,attr"`
	Domain           []string      `xml:"domain"`
	DisplayName      string        `xml:"displayName"`
	DisplayShortName string        `xml:"displayShortName"`
	Incoming         []ispdbServer `xml:"incomingServer"`
	Outgoing         []ispdbServer `xml:"outgoingServer"`
}

type ispdbServer struct {
	Type           string `xml:"type,attr"`
	Hostname       string `xml:"hostname"`
	Port           int    `xml:"port"`
	SocketType     string `xml:"socketType"`
	Authentication string `xml:"authentication"`
	Username       string `xml:"username"`
}

// Thunderbird is the ISPDB configuration of domain: every IMAP and
// submission endpoint, implicit TLS first, the full address as user name
// (%EMAILADDRESS%, which the client fills in) and the password sent over
// TLS ("password-cleartext": PLAIN or LOGIN, which is all the servers
// offer). It names no address, so it is the same for every address of the
// domain.
func Thunderbird(s Servers, domain string) []byte {
	ispdb := func(typ string, e endpoint) ispdbServer {
		sock := "STARTTLS"
		if e.implicit {
			sock = "SSL"
		}
		return ispdbServer{Type: typ, Hostname: s.Host, Port: e.port, SocketType: sock,
			Authentication: "password-cleartext", Username: "%EMAILADDRESS%"}
	}
	p := emailProvider{ID: domain, Domain: []string{domain}, DisplayName: domain, DisplayShortName: domain}
	for _, e := range s.incoming() {
		p.Incoming = append(p.Incoming, ispdb("imap", e))
	}
	for _, e := range s.outgoing() {
		p.Outgoing = append(p.Outgoing, ispdb("smtp", e))
	}
	return marshal(clientConfig{Version: "1.1", Provider: p})
}

// Autodiscover namespaces ([MS-OXDSCLI] section 2.2.4, the 2006 "POX"
// protocol Outlook speaks to autodiscover.<domain>).
const (
	nsResponse        = "http://schemas.microsoft.com/exchange/autodiscover/responseschema/2006"
	nsOutlookResponse = "http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a"
)

// AutodiscoverRequest is the body Outlook posts.
type AutodiscoverRequest struct {
	XMLName xml.Name `xml:"Autodiscover"`
	Request struct {
		EMailAddress             string `xml:"EMailAddress"`
		AcceptableResponseSchema string `xml:"AcceptableResponseSchema"`
	} `xml:"Request"`
}

// Acceptable reports whether the client takes the Outlook settings this
// server answers with; ActiveSync clients ask for the "mobilesync" schema,
// which describes a protocol mailhost does not speak.
func (r AutodiscoverRequest) Acceptable() bool {
	s := strings.TrimSpace(r.Request.AcceptableResponseSchema)
	return s == "" || s == nsOutlookResponse
}

type autodiscoverResponse struct {
	XMLName  xml.Name `xml:"Autodiscover"`
	XMLNS    string   `xml:"xmlns,attr"`
	Response struct {
		XMLNS   string `xml:"xmlns,attr"`
		Account struct {
			AccountType string     `xml:"AccountType"`
			Action      string     `xml:"Action"`
			Protocol    []protocol `xml:"Protocol"`
		} `xml:"Account"`
	} `xml:"Response"`
}

// protocol is an Autodiscover <Protocol> ([MS-OXDSCLI] 2.2.4.1.1.2.3).
type protocol struct {
	Type           string `xml:"Type"`
	Server         string `xml:"Server"`
	Port           int    `xml:"Port"`
	LoginName      string `xml:"LoginName"`
	DomainRequired string `xml:"DomainRequired"`
	SPA            string `xml:"SPA"`
	SSL            string `xml:"SSL"`
	// Encryption, when present, overrides SSL: "SSL" is implicit TLS,
	// "TLS" is STARTTLS.
	Encryption   string `xml:"Encryption"`
	AuthRequired string `xml:"AuthRequired"`
}

// Autodiscover is the answer to an Outlook request for email: the
// preferred IMAP and submission endpoints, with email as the login name.
// The answer is the same for every address of a hosted domain, whether a
// mailbox or not, so it tells nothing of which addresses exist.
func Autodiscover(s Servers, email string) []byte {
	proto := func(typ string, e endpoint) protocol {
		p := protocol{Type: typ, Server: s.Host, Port: e.port, LoginName: email,
			DomainRequired: "off", SPA: "off", SSL: "on", Encryption: "TLS", AuthRequired: "on"}
		if e.implicit {
			p.Encryption = "SSL"
		}
		return p
	}
	var r autodiscoverResponse
	r.XMLNS = nsResponse
	r.Response.XMLNS = nsOutlookResponse
	r.Response.Account.AccountType = "email"
	r.Response.Account.Action = "settings"
	if in := s.incoming(); len(in) > 0 {
		r.Response.Account.Protocol = append(r.Response.Account.Protocol, proto("IMAP", in[0]))
	}
	if out := s.outgoing(); len(out) > 0 {
		r.Response.Account.Protocol = append(r.Response.Account.Protocol, proto("SMTP", out[0]))
	}
	return marshal(r)
}

// MobileConfig is an Apple configuration profile with one mail account
// (payload type com.apple.mail.managed) for email: the preferred IMAP and
// submission endpoints, email as user name for both, and no password: the
// device asks for it when the profile is installed. The profile is not
// signed, so iOS and macOS show it as unverified. Its identifiers and
// UUIDs derive from the host and the address, so installing it again
// replaces the earlier copy instead of adding a second account.
func MobileConfig(s Servers, email string) []byte {
	in, out := s.incoming(), s.outgoing()
	var b bytes.Buffer
	b.WriteString(xml.Header)
	b.WriteString(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	b.WriteString("<plist version=\"1.0\">\n<dict>\n")
	key := func(indent, k string) { fmt.Fprintf(&b, "%s<key>%s</key>\n", indent, esc(k)) }
	str := func(indent, k, v string) { key(indent, k); fmt.Fprintf(&b, "%s<string>%s</string>\n", indent, esc(v)) }
	num := func(indent, k string, v int) { key(indent, k); fmt.Fprintf(&b, "%s<integer>%d</integer>\n", indent, v) }
	boolean := func(indent, k string, v bool) {
		key(indent, k)
		if v {
			fmt.Fprintf(&b, "%s<true/>\n", indent)
		} else {
			fmt.Fprintf(&b, "%s<false/>\n", indent)
		}
	}
	id := profileID(s.Host, email)
	const in2 = "\t\t\t"
	key("\t", "PayloadContent")
	b.WriteString("\t<array>\n\t\t<dict>\n")
	str(in2, "EmailAccountDescription", email)
	str(in2, "EmailAccountType", "EmailTypeIMAP")
	str(in2, "EmailAddress", email)
	if len(in) > 0 {
		str(in2, "IncomingMailServerAuthentication", "EmailAuthPassword")
		str(in2, "IncomingMailServerHostName", s.Host)
		num(in2, "IncomingMailServerPortNumber", in[0].port)
		// Apple's clients use STARTTLS on a port that does not start
		// with TLS when UseSSL is set: TLS either way.
		boolean(in2, "IncomingMailServerUseSSL", true)
		str(in2, "IncomingMailServerUsername", email)
	}
	if len(out) > 0 {
		str(in2, "OutgoingMailServerAuthentication", "EmailAuthPassword")
		str(in2, "OutgoingMailServerHostName", s.Host)
		num(in2, "OutgoingMailServerPortNumber", out[0].port)
		boolean(in2, "OutgoingMailServerUseSSL", true)
		str(in2, "OutgoingMailServerUsername", email)
		boolean(in2, "OutgoingPasswordSameAsIncomingPassword", true)
	}
	str(in2, "PayloadDescription", "Mail account "+email)
	str(in2, "PayloadDisplayName", email)
	str(in2, "PayloadIdentifier", id+".account")
	str(in2, "PayloadType", "com.apple.mail.managed")
	str(in2, "PayloadUUID", uuidOf(s.Host, email, "account"))
	num(in2, "PayloadVersion", 1)
	b.WriteString("\t\t</dict>\n\t</array>\n")
	str("\t", "PayloadDescription", "Mail settings of "+email+" on "+s.Host)
	str("\t", "PayloadDisplayName", "Mail: "+email)
	str("\t", "PayloadIdentifier", id)
	boolean("\t", "PayloadRemovalDisallowed", false)
	str("\t", "PayloadType", "Configuration")
	str("\t", "PayloadUUID", uuidOf(s.Host, email, "profile"))
	num("\t", "PayloadVersion", 1)
	b.WriteString("</dict>\n</plist>\n")
	return b.Bytes()
}

// profileID is the profile's PayloadIdentifier: the host reversed, as
// Apple's identifiers read, and a digest of the address, which keeps
// characters an identifier should not carry out of it.
func profileID(host, email string) string {
	labels := strings.Split(host, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	sum := sha256.Sum256([]byte(email))
	return strings.Join(labels, ".") + ".mailhost.mail." + hex.EncodeToString(sum[:8])
}

// uuidOf is a name-based UUID (the layout of RFC 9562 version 5, with
// SHA-256 in place of SHA-1) of host, email and kind: the same profile
// gets the same UUIDs each time it is made.
func uuidOf(host, email, kind string) string {
	sum := sha256.Sum256([]byte(host + "\x00" + email + "\x00" + kind))
	u := sum[:16]
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	h := strings.ToUpper(hex.EncodeToString(u))
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// marshal encodes v with the XML declaration; v's types cannot fail to
// encode.
func marshal(v any) []byte {
	out, err := xml.MarshalIndent(v, "", "  ")
	if err != nil {
		panic("autoconfig: " + err.Error())
	}
	return append([]byte(xml.Header), append(out, '\n')...)
}
