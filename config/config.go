// Package config is mailhost's configuration: every setting has a key in
// the TOML file, an environment variable and a command-line flag, with a
// default. Flags beat the environment, which beats the file.
package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// Config is the whole configuration of one mailhost process.
type Config struct {
	DataDir string
	// Store is where the mail store lives: empty for bbolt in DataDir, or
	// a postgres:// URL shared by several nodes. It may hold a password:
	// never log it.
	Store string
	// Node names this process among the nodes of one PostgreSQL store
	// (the queue's leases, the periodic jobs); empty: host name and data
	// directory.
	Node string
	HTTP string
	// Mail listeners; an empty address turns a listener off.
	SMTP, Submission, Submissions, IMAP, IMAPS string
	// ManageSieve is the ManageSieve (RFC 5804) listen address, with
	// STARTTLS; empty turns it off.
	ManageSieve string

	Hostname string
	// AutoconfigHTTP and AutoconfigHTTPS serve the mail clients' set-up
	// endpoints alone (package autoconfig), in plain HTTP and over TLS;
	// empty: off (the API listener serves them too).
	AutoconfigHTTP, AutoconfigHTTPS string
	// Client*Port are the ports mail clients are told to use; 0: not
	// offered.
	ClientIMAPSPort, ClientIMAPPort, ClientSubmissionsPort, ClientSubmissionPort int64
	Relay                                                                        string
	// RelayUsername and RelayPassword log in to Relay; empty: no login.
	RelayUsername, RelayPassword string
	// RelayVerifyTLS requires TLS with a verified certificate to Relay.
	RelayVerifyTLS bool
	// MTASTS applies destinations' MTA-STS policies to mail sent to MX
	// hosts.
	MTASTS bool
	// OutboundAllowPrivate lets mail go to MX hosts at loopback, private
	// and other non-public addresses (outbound.Config.AllowPrivate).
	OutboundAllowPrivate bool
	// RspamdURL is rspamd's normal worker (package spam); empty: no spam
	// filter. RspamdControllerURL and RspamdPassword are its controller,
	// taught what users move into and out of Junk; RspamdTimeout bounds
	// each request; RspamdFail is "open" or "tempfail"; SpamFilter is the
	// setting of domains without their own.
	RspamdURL, RspamdControllerURL, RspamdPassword string
	RspamdTimeout                                  time.Duration
	RspamdFail, SpamFilter                         string
	TLSCert, TLSKey                                string
	AllowInsecureAuth                              bool
	// HTTPS serves the management API over TLS (and answers ACME's
	// TLS-ALPN-01 challenges there); empty: off.
	HTTPS string
	// ACME obtains and renews certificates from ACMEDirectory, kept in
	// the store; ACMEHTTP is the HTTP-01 challenge listener (port 80).
	ACME                     bool
	ACMEEmail, ACMEDirectory string
	ACMEHTTP                 string

	RetentionTime        string // HH:MM UTC, daily
	MaxMessageBytes      int64
	MessageMemoryMB      int64
	DefaultMaxMailboxes  int64
	DefaultMaxAliases    int64
	APIRateLimit         float64
	APIRateBurst         int
	MetricsToken         string
	RefuseInboundOverCap bool
	QueueLifetime        time.Duration
	QueueDelayWarning    time.Duration
	QueueWorkers         int64
	// AuditRetentionDays is how long the audit log keeps an entry.
	AuditRetentionDays int64
	// WebhookAllowPrivate lets webhooks point to loopback and private
	// addresses.
	WebhookAllowPrivate bool
	// Connection limits (policy.ConnLimits): per client address for
	// IMAP and submission, for the MX, per mailbox and address, new
	// connections a minute per address, and IMAP sessions per node.
	MaxConnsPerIP     int64
	MXMaxConnsPerIP   int64
	MaxConnsPerUserIP int64
	MaxConnRatePerIP  int64
	MaxIMAPConns      int64
	// IMAPMaxKeywords is the most distinct keywords an IMAP folder may
	// hold (mailstore.DefaultMaxKeywords).
	IMAPMaxKeywords  int64
	SendLimitPerHour int64
	DNS              string
	InboundChecks    bool
	// DMARCEnforce refuses inbound mail that fails DMARC for a domain
	// publishing p=reject, and sends it to Junk, marked, for p=quarantine.
	DMARCEnforce bool
	// DNSBL are the DNS blocklist zones the MX looks clients up in.
	DNSBL []string
	// AutoReplyInterval is the least time between two auto-replies of a
	// mailbox to one sender.
	AutoReplyInterval time.Duration
	// RecipientDelimiter separates an address's subaddress detail (RFC
	// 5233): mail to local<delimiter>detail@domain goes where
	// local@domain goes; "" turns subaddresses off.
	RecipientDelimiter string
	SRSSecret          string
	Postmaster         string
	LogLevel           string
	LogFormat          string

	// Plans are extra (or replacement) plans; only the TOML file sets them.
	Plans []mailstore.Plan
}

// Setting describes one setting for the file, the environment, the flags and
// the docs.
type Setting struct {
	Key     string // TOML key; the flag is the same with "-" for "_"
	Env     string
	Default string
	Help    string
	set     func(c *Config, v string) error
}

// Flag is the setting's command-line flag name.
func (s Setting) Flag() string { return strings.ReplaceAll(s.Key, "_", "-") }

func str(p func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error { *p(c) = v; return nil }
}

func integer(p func(*Config) *int64, min int64) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < min {
			return fmt.Errorf("want an integer >= %d, got %q", min, v)
		}
		*p(c) = n
		return nil
	}
}

func port(p func(*Config) *int64) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("want a port from 1 to 65535, or 0 for none, got %q", v)
		}
		*p(c) = n
		return nil
	}
}

func boolean(p func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false, got %q", v)
		}
		*p(c) = b
		return nil
	}
}

// Settings lists every setting, in the order of the docs.
var Settings = []Setting{
	{"data", "MAILHOST_DATA", "./data", "data directory: the store, the TLS certificate, the control socket", str(func(c *Config) *string { return &c.DataDir })},
	{"store", "MAILHOST_STORE", "", "where the mail store lives: empty = a bbolt file in the data directory; a postgres:// URL = PostgreSQL 15 or later, which several mailhost nodes can share", func(c *Config, v string) error {
		if v != "" && !strings.HasPrefix(v, "postgres://") && !strings.HasPrefix(v, "postgresql://") {
			return errors.New("want empty (bbolt in the data directory) or a postgres:// URL")
		}
		c.Store = v
		return nil
	}},
	{"node", "MAILHOST_NODE", "", "this node's name among the nodes sharing a PostgreSQL store (queue leases, periodic jobs); must differ between nodes and stay the same across restarts; empty: the host name and the data directory", str(func(c *Config) *string { return &c.Node })},
	{"http", "MAILHOST_HTTP", "127.0.0.1:8080", "management API listen address", str(func(c *Config) *string { return &c.HTTP })},
	{"smtp", "MAILHOST_SMTP", "127.0.0.1:2525", "inbound SMTP (MX) listen address; empty turns it off", str(func(c *Config) *string { return &c.SMTP })},
	{"submission", "MAILHOST_SUBMISSION", "127.0.0.1:2587", "SMTP submission (STARTTLS) listen address; empty turns it off", str(func(c *Config) *string { return &c.Submission })},
	{"submissions", "MAILHOST_SUBMISSIONS", "127.0.0.1:2465", "SMTP submission over implicit TLS listen address; empty turns it off", str(func(c *Config) *string { return &c.Submissions })},
	{"imap", "MAILHOST_IMAP", "127.0.0.1:2143", "IMAP (STARTTLS) listen address; empty turns it off", str(func(c *Config) *string { return &c.IMAP })},
	{"imaps", "MAILHOST_IMAPS", "127.0.0.1:2993", "IMAP over implicit TLS listen address; empty turns it off", str(func(c *Config) *string { return &c.IMAPS })},
	{"managesieve", "MAILHOST_MANAGESIEVE", "127.0.0.1:4190", "ManageSieve (STARTTLS) listen address, where mail clients edit the mailbox's Sieve filters; empty turns it off", str(func(c *Config) *string { return &c.ManageSieve })},
	{"hostname", "MAILHOST_HOSTNAME", "", "the server's host name in SMTP greetings and Received headers; empty: the system host name", str(func(c *Config) *string { return &c.Hostname })},
	{"autoconfig_http", "MAILHOST_AUTOCONFIG_HTTP", "", "listen address (such as :80) serving only the mail clients' set-up: Thunderbird's autoconfig and Outlook's Autodiscover, for autoconfig.<domain> and autodiscover.<domain>; empty turns it off (the http listener serves them too)", str(func(c *Config) *string { return &c.AutoconfigHTTP })},
	{"autoconfig_https", "MAILHOST_AUTOCONFIG_HTTPS", "", "the same over TLS (such as :443) with tls_cert, which must then name autoconfig.<domain> and autodiscover.<domain> of the domains pointing there; empty turns it off", str(func(c *Config) *string { return &c.AutoconfigHTTPS })},
	{"client_imaps_port", "MAILHOST_CLIENT_IMAPS_PORT", "993", "IMAP-over-TLS port mail clients are told to use (autoconfig, Autodiscover, Apple profiles): the port they reach at hostname, which behind NAT may differ from the imaps listen address; 0 = not offered", port(func(c *Config) *int64 { return &c.ClientIMAPSPort })},
	{"client_imap_port", "MAILHOST_CLIENT_IMAP_PORT", "143", "IMAP (STARTTLS) port mail clients are told to use; 0 = not offered", port(func(c *Config) *int64 { return &c.ClientIMAPPort })},
	{"client_submissions_port", "MAILHOST_CLIENT_SUBMISSIONS_PORT", "465", "submission-over-TLS port mail clients are told to use; 0 = not offered", port(func(c *Config) *int64 { return &c.ClientSubmissionsPort })},
	{"client_submission_port", "MAILHOST_CLIENT_SUBMISSION_PORT", "587", "submission (STARTTLS) port mail clients are told to use; 0 = not offered", port(func(c *Config) *int64 { return &c.ClientSubmissionPort })},
	{"relay", "MAILHOST_RELAY", "", "host:port of a smarthost for all outbound mail; empty: deliver to each domain's MX", str(func(c *Config) *string { return &c.Relay })},
	{"relay_username", "MAILHOST_RELAY_USERNAME", "", "user name to log in to the relay with (SMTP AUTH PLAIN, or LOGIN), always over TLS unless the relay is on loopback; empty: no login", str(func(c *Config) *string { return &c.RelayUsername })},
	{"relay_password", "MAILHOST_RELAY_PASSWORD", "", "password for relay_username; prefer the file or the environment to the flag, which other users can see", str(func(c *Config) *string { return &c.RelayPassword })},
	{"relay_verify_tls", "MAILHOST_RELAY_VERIFY_TLS", "false", "require TLS to the relay with a certificate valid for its name (system roots), else defer the mail; set it for a relay with a public certificate, above all with a login", boolean(func(c *Config) *bool { return &c.RelayVerifyTLS })},
	{"mta_sts", "MAILHOST_MTA_STS", "true", "apply each destination domain's MTA-STS policy (RFC 8461) to mail sent to its MX hosts: with mode enforce, only the MX hosts it names, over TLS with a certificate valid for their names (system roots), else the mail waits; no effect with relay", boolean(func(c *Config) *bool { return &c.MTASTS })},
	{"outbound_allow_private", "MAILHOST_OUTBOUND_ALLOW_PRIVATE", "false", "deliver to MX hosts at loopback, private, link-local and other non-public addresses (tests, internal networks); false never connects to them and bounces mail for a domain whose MX hosts lead only there (550 5.4.4), so that a user cannot make the server talk to the operator's network; the relay is trusted whatever its address", boolean(func(c *Config) *bool { return &c.OutboundAllowPrivate })},
	{"tls_cert", "MAILHOST_TLS_CERT", "", "PEM certificate chain file; empty: a self-signed certificate made in the data directory", str(func(c *Config) *string { return &c.TLSCert })},
	{"tls_key", "MAILHOST_TLS_KEY", "", "PEM private key file for tls_cert", str(func(c *Config) *string { return &c.TLSKey })},
	{"https", "MAILHOST_HTTPS", "", "management API over TLS listen address (443 in production), with the certificate the mail listeners use; with acme it also answers TLS-ALPN-01 challenges; empty turns it off", str(func(c *Config) *string { return &c.HTTPS })},
	{"acme", "MAILHOST_ACME", "false", "obtain and renew certificates for hostname and the hosted domains' mta-sts., autoconfig. and autodiscover. names from acme_directory (TLS-ALPN-01 on https, HTTP-01 on acme_http), kept in the store so that nodes share them; instead of tls_cert", boolean(func(c *Config) *bool { return &c.ACME })},
	{"acme_email", "MAILHOST_ACME_EMAIL", "", "contact address of the ACME account (the CA may write about problems with the certificates); empty: none", str(func(c *Config) *string { return &c.ACMEEmail })},
	{"acme_directory", "MAILHOST_ACME_DIRECTORY", "https://acme-v02.api.letsencrypt.org/directory", "ACME directory URL of the certificate authority; Let's Encrypt's staging one is https://acme-staging-v02.api.letsencrypt.org/directory", func(c *Config, v string) error {
		if !strings.HasPrefix(v, "https://") {
			return fmt.Errorf("want an https:// URL, got %q", v)
		}
		c.ACMEDirectory = v
		return nil
	}},
	{"acme_http", "MAILHOST_ACME_HTTP", "", "listen address of the HTTP-01 challenge responder (\"0.0.0.0:80\" in production; other requests are redirected to https); empty turns it off", str(func(c *Config) *string { return &c.ACMEHTTP })},
	{"allow_insecure_auth", "MAILHOST_ALLOW_INSECURE_AUTH", "false", "allow IMAP, submission and ManageSieve logins without TLS (for tests only)", boolean(func(c *Config) *bool { return &c.AllowInsecureAuth })},
	{"retention_time", "MAILHOST_RETENTION_TIME", "03:00", "time of day (UTC, HH:MM) of the daily retention pass and re-check of verified domains", func(c *Config, v string) error {
		if _, err := time.Parse("15:04", v); err != nil {
			return fmt.Errorf("want HH:MM, got %q", v)
		}
		c.RetentionTime = v
		return nil
	}},
	{"message_memory_mb", "MAILHOST_MESSAGE_MEMORY_MB", "256", "the most message data, in MB, SMTP and IMAP APPEND hold in memory at once over all sessions; a message that finds no room within 30 s is answered 452 4.3.1 (IMAP: NO [UNAVAILABLE]); at least max_message_bytes", integer(func(c *Config) *int64 { return &c.MessageMemoryMB }, 1)},
	{"max_message_bytes", "MAILHOST_MAX_MESSAGE_BYTES", "52428800", "largest message accepted over SMTP and IMAP APPEND, in bytes", integer(func(c *Config) *int64 { return &c.MaxMessageBytes }, 1024)},
	{"default_max_mailboxes", "MAILHOST_DEFAULT_MAX_MAILBOXES", "1000", "mailbox count limit of a new domain when its create call names none; 0 = unlimited", integer(func(c *Config) *int64 { return &c.DefaultMaxMailboxes }, 0)},
	{"default_max_aliases", "MAILHOST_DEFAULT_MAX_ALIASES", "1000", "alias count limit of a new domain when its create call names none; 0 = unlimited", integer(func(c *Config) *int64 { return &c.DefaultMaxAliases }, 0)},
	{"api_rate_limit", "MAILHOST_API_RATE_LIMIT", "20", "sustained API requests per second per key (429 beyond)", func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return fmt.Errorf("want a positive number, got %q", v)
		}
		c.APIRateLimit = f
		return nil
	}},
	{"api_rate_burst", "MAILHOST_API_RATE_BURST", "100", "API requests a key may burst above the rate", func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("want a positive integer, got %q", v)
		}
		c.APIRateBurst = n
		return nil
	}},
	{"metrics_token", "MAILHOST_METRICS_TOKEN", "", "bearer token that lets addresses other than loopback read GET /metrics on the HTTP listeners (Authorization: Bearer <token>); empty: /metrics is open to loopback only", str(func(c *Config) *string { return &c.MetricsToken })},
	{"refuse_inbound_over_cap", "MAILHOST_REFUSE_INBOUND_OVER_CAP", "false", "also refuse mail to a domain (451 4.7.1 at RCPT) once it has used its monthly transfer cap; forwards already queued for it wait in the queue", boolean(func(c *Config) *bool { return &c.RefuseInboundOverCap })},
	{"send_limit_per_hour", "MAILHOST_SEND_LIMIT_PER_HOUR", "0", "most recipients one mailbox may send to in an hour over submission (450 4.7.1 beyond; a quiet mailbox may use them at once): what a stolen password can send; 0 = no limit", integer(func(c *Config) *int64 { return &c.SendLimitPerHour }, 0)},
	{"max_conns_per_ip", "MAILHOST_MAX_CONNS_PER_IP", "1500", "most connections at once from one client address (an IPv6 /64 counts as one) to IMAP (143 and 993 together), to submission (587 and 465 together) and to ManageSieve, each counted on its own: an office of 200 behind one NAT address holds up to 200 x (5 desktop + 2 phone) = 1,400; beyond it IMAP answers BYE [UNAVAILABLE], submission 421 4.7.0, ManageSieve BYE, and the implicit-TLS ports close the connection before the handshake", integer(func(c *Config) *int64 { return &c.MaxConnsPerIP }, 1)},
	{"mx_max_conns_per_ip", "MAILHOST_MX_MAX_CONNS_PER_IP", "50", "most connections at once from one client address to the MX (Postfix's smtpd_client_connection_count_limit); beyond it 421 4.7.0", integer(func(c *Config) *int64 { return &c.MXMaxConnsPerIP }, 1)},
	{"max_conns_per_user_ip", "MAILHOST_MAX_CONNS_PER_USER_IP", "10", "most logged-in connections at once of one mailbox from one client address, to IMAP and to submission each (Dovecot's mail_max_userip_connections: a desktop client's 5, a phone and a tablet); beyond it the login is answered NO [UNAVAILABLE] (IMAP) or 454 4.7.0 (submission); 0 = no limit", integer(func(c *Config) *int64 { return &c.MaxConnsPerUserIP }, 0)},
	{"max_conn_rate_per_ip", "MAILHOST_MAX_CONN_RATE_PER_IP", "600", "new connections one client address may open a minute to each service, after a burst of its max_conns_per_ip (mx_max_conns_per_ip for the MX): an office whose clients all reconnect at once passes, a scanner or a flood is refused as over the connection limit; 0 = no limit", integer(func(c *Config) *int64 { return &c.MaxConnRatePerIP }, 0)},
	{"max_imap_conns", "MAILHOST_MAX_IMAP_CONNS", "4000", "most IMAP connections at once on this node, from all addresses (about 40 KiB each while idle, some 700 KiB more for one that enabled COMPRESS, whose deflate state Go keeps whatever the level); beyond it BYE [UNAVAILABLE]", integer(func(c *Config) *int64 { return &c.MaxIMAPConns }, 1)},
	{"imap_max_keywords", "MAILHOST_IMAP_MAX_KEYWORDS", "1000", "most distinct keywords (flags other than the system flags, such as $Forwarded or a client's tags) one IMAP folder may hold; a STORE, APPEND, COPY or MOVE that would add one beyond is answered NO [LIMIT] and changes nothing", integer(func(c *Config) *int64 { return &c.IMAPMaxKeywords }, 1)},
	{"rspamd_url", "MAILHOST_RSPAMD_URL", "", "rspamd's normal worker, such as http://127.0.0.1:11333: every message the MX or submission takes is checked there (/checkv2) before the 250; empty: no spam filter", str(func(c *Config) *string { return &c.RspamdURL })},
	{"rspamd_controller_url", "MAILHOST_RSPAMD_CONTROLLER_URL", "", "rspamd's controller, such as http://127.0.0.1:11334: a message a user moves into Junk over IMAP is learnt as spam there, one moved out of Junk as ham; empty: no learning", str(func(c *Config) *string { return &c.RspamdControllerURL })},
	{"rspamd_password", "MAILHOST_RSPAMD_PASSWORD", "", "the controller's password (its password setting); empty: none, for a controller that trusts this host (secure_ip)", str(func(c *Config) *string { return &c.RspamdPassword })},
	{"rspamd_timeout", "MAILHOST_RSPAMD_TIMEOUT", "5s", "how long a check or a learn may take (Go duration); past it rspamd is taken as down (see rspamd_fail)", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond || d > 5*time.Minute {
			return fmt.Errorf("want a duration between 100ms and 5m, such as 5s, got %q", v)
		}
		c.RspamdTimeout = d
		return nil
	}},
	{"rspamd_fail", "MAILHOST_RSPAMD_FAIL", "open", "when rspamd is down or slow: open delivers the message unscanned with a header that says so, tempfail answers 451 4.3.0 so that the sender retries", func(c *Config, v string) error {
		if v != "open" && v != "tempfail" {
			return fmt.Errorf("want open or tempfail, got %q", v)
		}
		c.RspamdFail = v
		return nil
	}},
	{"spam_filter", "MAILHOST_SPAM_FILTER", "junk", "what rspamd's verdicts do to a domain's mail unless the domain sets its own (PUT /domains/{name}/spam): off (not filtered), junk (spam to the Junk folder, even what rspamd rejects), reject (what rspamd rejects refused with 550 5.7.1, junk to Junk)", func(c *Config, v string) error {
		if v != "off" && v != "junk" && v != "reject" {
			return fmt.Errorf("want off, junk or reject, got %q", v)
		}
		c.SpamFilter = v
		return nil
	}},
	{"queue_lifetime", "MAILHOST_QUEUE_LIFETIME", "120h", "how long the outbound queue retries a message before it bounces it (Go duration)", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute {
			return fmt.Errorf("want a duration of at least 1m, such as 120h, got %q", v)
		}
		c.QueueLifetime = d
		return nil
	}},
	{"queue_delay_warning", "MAILHOST_QUEUE_DELAY_WARNING", "4h", "how long after it was queued a message still deferred gets its sender one delay notice (Go duration; 0 = never)", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("want a duration such as 4h, or 0 for none, got %q", v)
		}
		c.QueueDelayWarning = d
		return nil
	}},
	{"queue_workers", "MAILHOST_QUEUE_WORKERS", "20", "outbound delivery workers: SMTP sessions at once to remote servers (at most 4 to one domain; all of them to the relay)", integer(func(c *Config) *int64 { return &c.QueueWorkers }, 1)},
	{"audit_retention_days", "MAILHOST_AUDIT_RETENTION_DAYS", "400", "days the audit log (GET /audit/) keeps each write; older entries go in the daily retention pass", integer(func(c *Config) *int64 { return &c.AuditRetentionDays }, 1)},
	{"webhook_allow_private", "MAILHOST_WEBHOOK_ALLOW_PRIVATE", "false", "let webhooks point to loopback, private and link-local addresses (tests, private networks); false refuses them at creation and at delivery (SSRF)", boolean(func(c *Config) *bool { return &c.WebhookAllowPrivate })},
	{"dns", "MAILHOST_DNS", "", "host:port of the DNS server for MX, SPF, DKIM and DMARC lookups and domain verification; empty: the system resolver", str(func(c *Config) *string { return &c.DNS })},
	{"inbound_checks", "MAILHOST_INBOUND_CHECKS", "true", "check SPF, DKIM and DMARC of inbound mail and record them in an Authentication-Results header", boolean(func(c *Config) *bool { return &c.InboundChecks })},
	{"dmarc_enforce", "MAILHOST_DMARC_ENFORCE", "true", "apply the sender domain's DMARC policy to inbound mail (needs inbound_checks): a message failing DMARC for a domain publishing p=reject is refused (550 5.7.1), one for p=quarantine goes to Junk with an X-Mailhost-Quarantine header; ARC is not evaluated, so turn it off if much of your mail comes through forwarders that break DKIM", boolean(func(c *Config) *bool { return &c.DMARCEnforce })},
	{"dnsbl", "MAILHOST_DNSBL", "", "DNS blocklists (RFC 5782) the MX looks each client up in, once per connection, such as [\"zen.spamhaus.org\"] in the file or zen.spamhaus.org,bl.spamcop.net in the environment and the flag; a listed client is refused at RCPT (554 5.7.1 naming the list), except mail to postmaster; empty: none", func(c *Config, v string) error {
		c.DNSBL = nil
		for _, z := range strings.Split(v, ",") {
			z = strings.TrimSuffix(strings.TrimSpace(z), ".")
			if z == "" {
				continue
			}
			if strings.ContainsAny(z, " /:@") || !strings.Contains(z, ".") {
				return fmt.Errorf("want DNS zone names such as zen.spamhaus.org, got %q", z)
			}
			c.DNSBL = append(c.DNSBL, strings.ToLower(z))
		}
		return nil
	}},
	{"autoreply_interval", "MAILHOST_AUTOREPLY_INTERVAL", "168h", "least time between two auto-replies (vacation) of a mailbox to the same sender (Go duration; RFC 3834 section 2 suggests 7 days); remembered in the store, so nodes and restarts agree", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute {
			return fmt.Errorf("want a duration of at least 1m, such as 168h, got %q", v)
		}
		c.AutoReplyInterval = d
		return nil
	}},
	{"recipient_delimiter", "MAILHOST_RECIPIENT_DELIMITER", "+", "separator of subaddresses (RFC 5233): mail to local+detail@domain that no mailbox or alias takes as it is goes where local@domain goes, before the catch-all, and Sieve's :detail sees the detail; one character of the local part's printable ASCII; empty: off", func(c *Config, v string) error {
		if len(v) > 1 || v != "" && (v[0] <= ' ' || v[0] >= 0x7f || strings.ContainsRune("@<>()[]\\,;:\"", rune(v[0]))) {
			return fmt.Errorf("want one printable ASCII character allowed in a local part, such as + or -, or empty, got %q", v)
		}
		c.RecipientDelimiter = v
		return nil
	}},
	{"srs_secret", "MAILHOST_SRS_SECRET", "", "secret of the Sender Rewriting Scheme for forwarded mail; empty: a random one kept in the data directory (srs.key)", str(func(c *Config) *string { return &c.SRSSecret })},
	{"postmaster", "MAILHOST_POSTMASTER", "", "address that mail to RCPT TO:<postmaster> (RFC 5321 section 4.5.1) goes to, and mail to postmaster@ and abuse@ of every hosted domain with no such mailbox, alias or catch-all; a hosted address or one elsewhere; empty: the operator mailbox postmaster@<hostname> made at start (at <name>.localhost when hostname is not a domain name)", func(c *Config, v string) error {
		if v != "" {
			if _, err := policy.NormalizeAddress(v); err != nil {
				return fmt.Errorf("want an email address, got %q: %w", v, err)
			}
		}
		c.Postmaster = v
		return nil
	}},
	{"log_level", "MAILHOST_LOG_LEVEL", "info", "debug, info, warn or error", func(c *Config, v string) error {
		switch v {
		case "debug", "info", "warn", "error":
			c.LogLevel = v
			return nil
		}
		return fmt.Errorf("want debug, info, warn or error, got %q", v)
	}},
	{"log_format", "MAILHOST_LOG_FORMAT", "text", "text or json", func(c *Config, v string) error {
		if v != "text" && v != "json" {
			return fmt.Errorf("want text or json, got %q", v)
		}
		c.LogFormat = v
		return nil
	}},
}

// ConfigEnv names the configuration file; so does the -config flag.
const ConfigEnv = "MAILHOST_CONFIG"

// Flags registers -config and one flag per setting on fs; Load reads them
// back after fs.Parse.
type Flags struct {
	fs     *flag.FlagSet
	file   *string
	values map[string]*string
}

// Register adds the flags to fs.
func Register(fs *flag.FlagSet) *Flags {
	f := &Flags{fs: fs, values: map[string]*string{}}
	f.file = fs.String("config", "", "TOML configuration file (env "+ConfigEnv+")")
	for _, s := range Settings {
		f.values[s.Key] = fs.String(s.Flag(), "", fmt.Sprintf("%s (env %s, default %q)", s.Help, s.Env, s.Default))
	}
	return f
}

// Load builds the configuration: defaults, then the file, then the
// environment (getenv; nil means os.LookupEnv), then the flags that were
// set on the command line.
func (f *Flags) Load(getenv func(string) (string, bool)) (*Config, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	c := &Config{}
	for _, s := range Settings {
		if err := s.set(c, s.Default); err != nil && s.Default != "" {
			return nil, fmt.Errorf("default of %s: %w", s.Key, err)
		}
	}
	set := map[string]bool{}
	if f != nil {
		f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	}
	path, _ := getenv(ConfigEnv)
	if f != nil && set["config"] {
		path = *f.file
	}
	if path != "" {
		if err := loadFile(c, path); err != nil {
			return nil, err
		}
	}
	for _, s := range Settings {
		if v, ok := getenv(s.Env); ok {
			if err := s.set(c, v); err != nil {
				return nil, fmt.Errorf("%s: %w", s.Env, err)
			}
		}
	}
	if f != nil {
		for _, s := range Settings {
			if set[s.Flag()] {
				if err := s.set(c, *f.values[s.Key]); err != nil {
					return nil, fmt.Errorf("-%s: %w", s.Flag(), err)
				}
			}
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, errors.New("tls_cert and tls_key go together: set both or neither")
	}
	if c.ACME && c.TLSCert != "" {
		return nil, errors.New("acme and tls_cert exclude each other: certificates come from one or the other")
	}
	if c.ACME && c.HTTPS == "" && c.ACMEHTTP == "" {
		// No listener could answer a challenge: no certificate would come.
		return nil, errors.New("acme needs https (TLS-ALPN-01 on port 443) or acme_http (HTTP-01 on port 80)")
	}
	if !c.ACME && c.ACMEHTTP != "" {
		return nil, errors.New("acme_http is set but acme is not")
	}
	if (c.RelayUsername == "") != (c.RelayPassword == "") {
		return nil, errors.New("relay_username and relay_password go together: set both or neither")
	}
	if c.MessageMemoryMB<<20 < c.MaxMessageBytes {
		// A message of the largest size would never find room.
		return nil, fmt.Errorf("message_memory_mb (%d MB) is less than max_message_bytes (%d bytes)", c.MessageMemoryMB, c.MaxMessageBytes)
	}
	if c.RelayVerifyTLS && c.Relay == "" {
		return nil, errors.New("relay_verify_tls is set but relay is not")
	}
	if c.RelayUsername != "" && c.Relay == "" {
		// Mail to MX hosts never logs in: the setting would do nothing.
		return nil, errors.New("relay_username is set but relay is not")
	}
	return c, nil
}

type filePlan struct {
	Name              string `toml:"name"`
	QuotaMB           int64  `toml:"quota_mb"`
	RetentionDays     int64  `toml:"retention_days"`
	TransferMonthlyMB int64  `toml:"transfer_monthly_mb"`
}

func loadFile(c *Config, path string) error {
	var raw map[string]any
	md, err := toml.DecodeFile(path, &raw)
	if err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	known := map[string]Setting{}
	for _, s := range Settings {
		known[s.Key] = s
	}
	for _, k := range md.Keys() {
		if len(k) != 1 {
			continue
		}
		name := k[0]
		if name == "plans" {
			continue
		}
		s, ok := known[name]
		if !ok {
			return fmt.Errorf("config file %s: unknown setting %q", path, name)
		}
		var v string
		switch x := raw[name].(type) {
		case string:
			v = x
		case int64, float64, bool:
			v = fmt.Sprint(x)
		case []any:
			// A list of strings (dnsbl): the form the environment and
			// the flag take.
			parts := make([]string, len(x))
			for i, e := range x {
				str, ok := e.(string)
				if !ok || strings.Contains(str, ",") {
					return fmt.Errorf("config file %s: %s: want a list of names, got %v", path, name, x)
				}
				parts[i] = str
			}
			v = strings.Join(parts, ",")
		default:
			return fmt.Errorf("config file %s: %s: unsupported value %v", path, name, x)
		}
		if err := s.set(c, v); err != nil {
			return fmt.Errorf("config file %s: %s: %w", path, name, err)
		}
	}
	var plans struct {
		Plans []filePlan `toml:"plans"`
	}
	if _, err := toml.DecodeFile(path, &plans); err != nil {
		return fmt.Errorf("config file %s: plans: %w", path, err)
	}
	for i, p := range plans.Plans {
		if p.Name == "" || p.QuotaMB < 1 || p.RetentionDays < 1 || p.TransferMonthlyMB < 1 {
			return fmt.Errorf("config file %s: plan %d: name, quota_mb, retention_days and transfer_monthly_mb are required and positive", path, i+1)
		}
		c.Plans = append(c.Plans, mailstore.Plan(p))
	}
	return nil
}
