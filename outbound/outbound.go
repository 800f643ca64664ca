// Package outbound delivers the durable outbound queue (mailstore.Queue):
// mail submitted by users, forwarded through aliases to remote addresses,
// and bounces. A Sender claims due entries with a lease, delivers each one
// to its destination domain (locally when the domain is hosted here, else
// over SMTP to the domain's MX hosts or to a configured relay), records the
// outcome, retries what was deferred with exponential backoff, and sends a
// delivery status notification (RFC 3464) for what failed for good
// (docs/mail.md). Claims are spread over destinations,
// so that a backlog to one slow domain does not hold the others back
// (loop.go), and the mail of a suspended domain waits until it is
// resumed.
//
// SMTP sessions outlive their message: once a transaction is over, the
// session goes into a cache of idle sessions by server, and the next
// message for that server takes it instead of connecting, greeting,
// starting TLS and logging in again (RFC 5321 section 3.3: a session
// carries any number of transactions). As Postfix bounds its connection
// cache, a session carries at most SessionMessages messages, waits idle
// at most SessionIdle, and at most as many wait per server as the
// sessions allowed at once to one destination; the rest say QUIT. See
// cache.go.
//
// With RelayUsername set, sessions to the relay log in (RFC 4954) after
// STARTTLS; see relayauth.go. With RelayVerifyTLS, they use TLS with a
// verified certificate or nothing.
//
// With MTASTS, mail to MX hosts follows the destination's MTA-STS policy
// (RFC 8461; mtasts.go): the policy is found through DNS
// ("_mta-sts.<domain>" TXT), fetched over HTTPS and kept for its max_age,
// in memory and in the Store, so that a restart does not forget it. In
// "enforce" mode only the MX hosts the policy names are tried, each with
// TLS and a certificate valid for its name; anything less defers the mail
// (4.7.5), never sends it in plain text. Sessions
// opened that way are cached apart from opportunistic ones (cache.go).
// Mail to the relay is not affected.
//
// Without AllowPrivate, the addresses MX hosts resolve to are checked by
// internal/publicip's rule, the one webhooks follow: loopback, private,
// link-local and other non-public addresses are not connected to.
package outbound

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/mailhost/mailhost/delivery"
	"github.com/mailhost/mailhost/mailstore"
)

// Config configures a Sender. Zero values are replaced by the defaults
// stated on each field.
type Config struct {
	// Store holds the queue, the mailboxes that local destinations and
	// bounces are delivered to, and the MTA-STS policies fetched.
	// Required.
	Store Store
	// Hostname is the name said in EHLO and the Reporting-MTA of bounces,
	// which come from MAILER-DAEMON@Hostname. "" means os.Hostname.
	Hostname string
	// Resolver finds MX hosts, addresses and MTA-STS TXT records. nil:
	// net.DefaultResolver.
	Resolver Resolver
	// Relay, "host:port", when set, takes every message for a remote
	// domain instead of that domain's MX hosts (a smarthost). "": MX.
	Relay string
	// RelayUsername and RelayPassword, when RelayUsername is set, log in
	// to the relay with AUTH PLAIN, or LOGIN when the relay offers only
	// that (RFC 4954), after STARTTLS: the password is never sent in
	// clear text, unless the relay's address is a loopback one. A relay
	// that refuses the login, even with 535, defers the mail: a wrong
	// password is this server's configuration, not a reason to bounce
	// every message. MX hosts are never logged in to. "": no login.
	RelayUsername, RelayPassword string
	// RelayVerifyTLS makes TLS to the relay mandatory and verified: the
	// session must start TLS, and the relay's certificate must be valid
	// for the relay's host name (or IP address) under TLS's RootCAs (nil:
	// the system's). Otherwise the attempt is deferred, never sent in
	// plain text. For a relay with a public certificate, and above all
	// one given a password, which opportunistic TLS protects from
	// eavesdroppers but not from an attacker in the path. false: the
	// relay gets opportunistic TLS, as MX hosts do.
	RelayVerifyTLS bool
	// MTASTS applies the MTA-STS policies (RFC 8461) of destination
	// domains to delivery over MX: an "enforce" policy limits the MX
	// hosts tried to those it names and requires TLS with a certificate
	// valid for the host's name under TLS's RootCAs (nil: the system's),
	// else defers the mail. No effect with Relay set. false: MX hosts get
	// opportunistic TLS whatever their domain publishes.
	MTASTS bool
	// MTASTSClient fetches MTA-STS policies; redirects are never
	// followed whatever it says (RFC 8461 section 3.3). nil: a client
	// that verifies certificates under TLS's RootCAs (nil: the system's)
	// and resolves names with Resolver.
	MTASTSClient *http.Client
	// AllowPrivate lets mail go to MX hosts at loopback, private,
	// link-local and other non-public addresses (publicip.Is): test
	// setups and internal networks. false: such an address is never
	// connected to, whatever the name resolved to, so that a user cannot
	// make the server talk to a service of the operator's network that
	// trusts it by pointing a domain's MX there (SSRF); a destination that
	// leads only there bounces (550 5.4.4; see deliverRemote). Relay is
	// the operator's own and is trusted whatever its address: with it set
	// nothing is checked.
	AllowPrivate bool
	// Port is the SMTP port of MX hosts. 0 means 25.
	Port int
	// Metrics, when set, is told of every attempt once it is recorded
	// (or its recording failed). nil: none.
	Metrics Metrics
	// Workers is the most entries being sent at once (SMTP sessions, and
	// local deliveries). Recording an attempt's outcome once it is sent
	// takes no worker. Sessions waiting idle for their next message
	// (SessionIdle) take no worker either. 0 means 8.
	Workers int
	// PerDestination is the most SMTP sessions at once to one destination
	// domain. 0 means 4.
	PerDestination int
	// PerRelay is the most SMTP sessions at once to Relay, when it is set.
	// 0 means Workers: a smarthost is run to take all of our outbound
	// mail, and with 4 sessions the queue drained at a tenth of the rate
	// submission filled it while the cores were busy (bench/README.md).
	PerRelay int
	// Lifetime is how long an entry is retried after it was queued; the
	// recipients still pending after the first attempt past it fail with
	// "delivery time expired" and are bounced. 0 means 120h (5 days).
	Lifetime time.Duration
	// DelayWarning is how long after an entry was queued an attempt that
	// defers it sends the sender a delay notice (RFC 3464, Action:
	// delayed), once per entry. 0 means 4 hours (sendmail's default);
	// negative: never.
	DelayWarning time.Duration
	// OnBounce, when set, is told of each submission (a mailbox's own
	// message) whose failed recipients were bounced, with each one's
	// reply, once the bounce is stored: the wiring records the
	// message.bounced event. nil: nothing.
	OnBounce func(ctx context.Context, e mailstore.Outbound, failed map[string]string)
	// RetryMin is the wait after the first deferred attempt; each further
	// attempt doubles it, up to RetryMax. 0 means 1 minute and 1 hour.
	RetryMin, RetryMax time.Duration
	// Lease is how long a claimed entry is kept from other workers (see
	// mailstore.Queue.ClaimOutbound); an attempt is cut off before its
	// lease runs out. 0 means 15 minutes.
	Lease time.Duration
	// PollInterval is how often the queue is looked at for entries that
	// came due (retries) and for held entries to release; Wake starts a
	// round at once. 0 means 5 seconds.
	PollInterval time.Duration
	// DialTimeout bounds each TCP connection attempt. 0 means 30 seconds.
	DialTimeout time.Duration
	// CommandTimeout bounds the wait for the greeting and for each reply,
	// and the writing of the message data; DataTimeout bounds the wait
	// for the reply to the end of the data. 0 means 5 and 10 minutes
	// (RFC 5321 section 4.5.3.2).
	CommandTimeout, DataTimeout time.Duration
	// SessionMessages is the most messages one SMTP session carries
	// before it says QUIT; 1 turns the reuse of sessions off. 0 means
	// 100.
	SessionMessages int
	// SessionIdle is how long a session waits in the cache for another
	// message before it says QUIT: long enough to catch the next message
	// of a busy queue, short enough not to hold connections a server
	// would rather give to others (Postfix waits 2 s,
	// smtp_connection_cache_time_limit). 0 means 2 seconds.
	SessionIdle time.Duration
	// TLS is the client configuration for STARTTLS; ServerName is set to
	// the host's name when empty. nil means opportunistic TLS: no
	// certificate verification (see connect). Either way a failed TLS
	// handshake falls back to plain text, except where RelayVerifyTLS or
	// an MTA-STS "enforce" policy requires a verified certificate, which
	// is checked under its RootCAs.
	TLS *tls.Config
	// Now is the queue's clock: claims, attempt times, backoff and
	// lifetime. nil: time.Now. Network deadlines always use the real
	// clock.
	Now func() time.Time
	// Logger receives one line per attempt. nil: discard.
	Logger *slog.Logger
	// SRS, when set, reverses Sender Rewriting Scheme addresses: a bounce
	// for forwarded mail whose envelope sender is an SRS address goes to
	// the original sender. It also rewrites the sender of mail that a
	// local delivery forwards on through an alias. nil: bounces go to the
	// envelope sender as it is, and forwards keep it.
	SRS SRS
	// RefuseInboundOverCap defers a recipient of an entry delivered here
	// (451 4.7.1) while the domain of a mailbox it reaches has used its
	// transfer cap for the month, as the MX refuses it at RCPT with the
	// same setting (delivery.Config.RefuseInboundOverCap): the entry
	// waits, and bounces if the cap stays used for Lifetime. Default
	// false: delivered and counted, as inbound mail is.
	RefuseInboundOverCap bool
	// RecipientDelimiter and Sieve are delivery.Config's, for the
	// entries delivered here.
	RecipientDelimiter string
	Sieve              *delivery.Sieve
}

// Defaults of Config.
const (
	DefaultPort            = 25
	DefaultWorkers         = 8
	DefaultPerDestination  = 4
	DefaultLifetime        = 120 * time.Hour
	DefaultDelayWarning    = 4 * time.Hour
	DefaultRetryMin        = time.Minute
	DefaultRetryMax        = time.Hour
	DefaultLease           = 15 * time.Minute
	DefaultPollInterval    = 5 * time.Second
	DefaultDialTimeout     = 30 * time.Second
	DefaultCommandTimeout  = 5 * time.Minute
	DefaultDataTimeout     = 10 * time.Minute
	DefaultSessionMessages = 100
	DefaultSessionIdle     = 2 * time.Second
)

// Resolver looks up the DNS records delivery needs; *net.Resolver
// satisfies it. LookupTXT finds MTA-STS records.
type Resolver interface {
	LookupMX(ctx context.Context, name string) ([]*net.MX, error)
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
	LookupTXT(ctx context.Context, name string) ([]string, error)
}

// SRS is the Sender Rewriting Scheme; *mailauth.SRS satisfies it.
type SRS interface {
	// Forward rewrites sender for mail forwarded out on behalf of
	// forwardDomain.
	Forward(sender, forwardDomain string) (string, error)
	// Reverse returns the address an SRS address ("SRS0=...@forwarder")
	// was made from, or an error when addr is not one this server made or
	// its timestamp is too old.
	Reverse(addr string) (string, error)
}

// Sender delivers the outbound queue. Its methods may be called from any
// goroutine.
type Sender struct {
	cfg      Config
	log      *slog.Logger
	now      func() time.Time
	hostname string
	resolver Resolver
	// wake holds at most one pending signal: several Wakes before the
	// loop looks coalesce into one round.
	wake    chan struct{}
	running atomic.Bool
	// sessions are the idle SMTP sessions, open while Run runs.
	sessions *sessionCache
	// sts holds the MTA-STS policies of destinations; stsClient fetches
	// them.
	sts       *stsCache
	stsClient *http.Client
	// delivery accepts the recipients of entries delivered here.
	delivery *delivery.Agent
}

// New makes a Sender from cfg; nothing happens until Run.
func New(cfg Config) *Sender {
	s := &Sender{cfg: cfg, log: cfg.Logger, now: cfg.Now, hostname: cfg.Hostname, resolver: cfg.Resolver,
		wake: make(chan struct{}, 1)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("service", "outbound")
	if s.now == nil {
		s.now = time.Now
	}
	if s.hostname == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "localhost"
		}
		s.hostname = h
	}
	if s.resolver == nil {
		s.resolver = net.DefaultResolver
	}
	s.delivery = delivery.New(delivery.Config{Store: cfg.Store, SRS: cfg.SRS, RefuseInboundOverCap: cfg.RefuseInboundOverCap, Now: s.now,
		RecipientDelimiter: cfg.RecipientDelimiter, Sieve: cfg.Sieve})
	c := &s.cfg
	setDefault(&c.Port, DefaultPort)
	setDefault(&c.Workers, DefaultWorkers)
	setDefault(&c.PerDestination, DefaultPerDestination)
	setDefault(&c.PerRelay, c.Workers)
	setDefault(&c.Lifetime, DefaultLifetime)
	setDefault(&c.RetryMin, DefaultRetryMin)
	setDefault(&c.RetryMax, DefaultRetryMax)
	if c.RetryMax < c.RetryMin {
		c.RetryMax = c.RetryMin
	}
	if c.DelayWarning == 0 { // negative stays: no notices
		c.DelayWarning = DefaultDelayWarning
	}
	setDefault(&c.Lease, DefaultLease)
	setDefault(&c.PollInterval, DefaultPollInterval)
	setDefault(&c.DialTimeout, DefaultDialTimeout)
	setDefault(&c.CommandTimeout, DefaultCommandTimeout)
	setDefault(&c.DataTimeout, DefaultDataTimeout)
	setDefault(&c.SessionMessages, DefaultSessionMessages)
	setDefault(&c.SessionIdle, DefaultSessionIdle)
	perServer := c.PerDestination
	if c.Relay != "" {
		perServer = c.PerRelay
	}
	s.sessions = &sessionCache{idle: c.SessionIdle, maxUses: c.SessionMessages, perServer: perServer, log: s.log}
	s.sts = &stsCache{max: stsMaxDomains}
	if c.MTASTSClient != nil {
		hc := *c.MTASTSClient
		s.stsClient = &hc
	} else {
		s.stsClient = s.newSTSClient()
	}
	s.stsClient.CheckRedirect = noRedirects
	return s
}

func setDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Wake tells the Sender that something was queued, so that a round starts
// at once rather than at the next poll. It never blocks, and may be called
// before Run starts: the signal waits for it.
func (s *Sender) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// ErrRunning answers a Run called while another is under way.
var ErrRunning = errors.New("outbound: sender already running")

// Run delivers the queue until ctx is done. It then cuts off the attempts
// under way (their connections are closed), records what they had learnt
// (an interrupted entry is due again at once, for the next Run), says
// QUIT to the idle sessions it kept, and returns nil once every goroutine
// and connection it started has ended. Entries it had claimed and not
// started yet keep their lease. The store must stay open until Run
// returns. Store failures are logged and retried; they do not end Run.
//
// Run takes itself for the only Sender of its node: it starts by ending
// the leases its node holds (Store.ReleaseLeases), so that what a former
// Run of this node had claimed, stopped or killed in the middle, goes at
// once instead of after its lease. Other nodes sharing the store keep
// theirs; the leases of a node that died run out and are claimed by the
// others.
func (s *Sender) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer s.running.Store(false)
	if n, err := s.cfg.Store.ReleaseLeases(ctx, s.now()); err != nil {
		// Not fatal: the leases run out by themselves.
		s.log.Error("release the leases of a former run", "err", err)
	} else if n > 0 {
		s.log.Info("released the leases of a former run", "entries", n)
	}
	s.sessions.open()
	// The loop returns once every attempt has ended, so no session is in
	// use when the cache closes.
	defer s.sessions.close()
	newLoop(s).run(ctx)
	return nil
}

// backoff is the wait after an entry's attempt number n (1 for the first)
// was deferred: lo doubled n-1 times, at most hi.
func backoff(n int, lo, hi time.Duration) time.Duration {
	d := lo
	for i := 1; i < n && d < hi; i++ {
		if d > hi/2 {
			d = hi // and no overflow
		} else {
			d *= 2
		}
	}
	return min(d, hi)
}
