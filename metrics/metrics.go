// Package metrics keeps mailhost's Prometheus series and serves them in
// the text exposition format, with github.com/prometheus/client_golang
// (the Prometheus project's own client: its registry, collectors for the
// Go runtime and the process, and the exposition handler).
//
// A Set is made once by the wiring and handed to each server through
// that server's Config as a narrow observer (Set.SMTP, Set.IMAP, Set.API,
// Set.Outbound, Set.ManageSieve); each server declares the interface it calls, and a nil
// one means no metrics. There is no package-level state: every Set has a
// registry of its own, so tests can make as many as they like.
//
// Label values are bounded: listener and protocol names, outcomes from
// fixed lists, route patterns of the API's table, HTTP status codes. An
// address, a domain or a user never becomes a label.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Set is every series of one mailhost process. Its methods may be called
// from any goroutine.
type Set struct {
	reg *prometheus.Registry

	smtpSessions     *prometheus.CounterVec
	smtpOpen         *prometheus.GaugeVec
	smtpMessages     *prometheus.CounterVec
	smtpRecipients   *prometheus.CounterVec
	smtpDelivery     *prometheus.HistogramVec
	logins           *prometheus.CounterVec
	imapSessions     *prometheus.CounterVec
	imapOpen         prometheus.Gauge
	apiRequests      *prometheus.CounterVec
	apiDuration      *prometheus.HistogramVec
	outboundAttempts *prometheus.CounterVec
	outboundRcpts    *prometheus.CounterVec
	outboundDuration prometheus.Histogram
	retentionMsgs    prometheus.Counter
	retentionBytes   prometheus.Counter
	sieveSessions    *prometheus.CounterVec
	sieveOpen        prometheus.Gauge
	sieveCommands    *prometheus.CounterVec
}

// latencyBuckets are the buckets of the latency histograms, in seconds:
// from a millisecond (an API read, a small local delivery) to a minute
// (a remote server that answers slowly).
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// New makes a Set with every series registered, the Go runtime's and the
// process's included.
func New() *Set {
	s := &Set{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { s.reg.MustRegister(c) }
	s.smtpSessions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mailhost_smtp_sessions_total",
		Help: "SMTP connections by listener (smtp, submission, submissions) and outcome: accepted, or refused over the per-address connection limits.",
	}, []string{"listener", "outcome"})
	s.smtpOpen = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mailhost_smtp_sessions_open",
		Help: "SMTP connections open now, by listener.",
	}, []string{"listener"})
	s.smtpMessages = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mailhost_smtp_messages_total",
		Help: "Messages at the end of DATA or BDAT by listener and outcome: delivered (stored or queued), over_quota, over_cap (transfer cap), or refused_4xx / refused_5xx by reply class.",
	}, []string{"listener", "outcome"})
	s.smtpRecipients = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mailhost_smtp_recipients_total",
		Help: "RCPT commands by listener and outcome: accepted, over_quota, over_cap (transfer cap), or refused_4xx / refused_5xx by reply class.",
	}, []string{"listener", "outcome"})
	s.smtpDelivery = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mailhost_smtp_delivery_duration_seconds",
		Help:    "Time the store took to deliver a message (its local copies and queue entries, committed and synced before the 250), by listener.",
		Buckets: latencyBuckets,
	}, []string{"listener"})
	s.logins = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mailhost_logins_total",
		Help: "Mailbox logins by protocol (imap, submission, managesieve) and outcome: success, invalid (wrong address or password), throttled (over the failed-login budget), refused (TLS required, too many connections of the user), error.",
	}, []string{"protocol", "outcome"})
	s.imapSessions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mailhost_imap_sessions_total",
		Help: "IMAP connections by outcome: accepted, or refused (over the per-address limits, too many connections, shutting down).",
	}, []string{"outcome"})
	s.imapOpen = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mailhost_imap_sessions_open",
		Help: "IMAP sessions open now.",
	})
	s.apiRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mailhost_api_requests_total",
		Help: `Management API requests by route (the route table's pattern, "unmatched" for none) and status code.`,
	}, []string{"route", "status"})
	s.apiDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mailhost_api_request_duration_seconds",
		Help:    `Management API request latency by route (the route table's pattern, "unmatched" for none).`,
		Buckets: latencyBuckets,
	}, []string{"route"})
	s.outboundAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mailhost_outbound_attempts_total",
		Help: "Delivery attempts of outbound queue entries by outcome: delivered, deferred, failed (bounced), partial (a mix), none (nothing was pending).",
	}, []string{"outcome"})
	s.outboundRcpts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mailhost_outbound_recipients_total",
		Help: "Recipients of outbound delivery attempts by outcome: delivered, deferred, failed (bounced).",
	}, []string{"outcome"})
	s.outboundDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "mailhost_outbound_attempt_duration_seconds",
		Help:    "Duration of outbound delivery attempts, from the claim to the recorded outcome.",
		Buckets: latencyBuckets,
	})
	s.retentionMsgs = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mailhost_retention_deleted_messages_total",
		Help: "Messages deleted by retention passes (daily, and mailhost retention run).",
	})
	s.retentionBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mailhost_retention_deleted_bytes_total",
		Help: "Bytes of the messages deleted by retention passes.",
	})
	s.sieveSessions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mailhost_managesieve_sessions_total",
		Help: "ManageSieve connections by outcome: accepted, or refused (over the connection limits).",
	}, []string{"outcome"})
	s.sieveOpen = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mailhost_managesieve_sessions_open",
		Help: "ManageSieve sessions open now.",
	})
	s.sieveCommands = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mailhost_managesieve_commands_total",
		Help: `ManageSieve commands by name (RFC 5804's, "unknown" for others) and result: ok, no, bye.`,
	}, []string{"command", "result"})
	for _, c := range []prometheus.Collector{
		s.sieveSessions, s.sieveOpen, s.sieveCommands,
		s.smtpSessions, s.smtpOpen, s.smtpMessages, s.smtpRecipients, s.smtpDelivery,
		s.logins, s.imapSessions, s.imapOpen, s.apiRequests, s.apiDuration,
		s.outboundAttempts, s.outboundRcpts, s.outboundDuration, s.retentionMsgs, s.retentionBytes,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		f(c)
	}
	// Series of fixed label values start at 0, so that a rate or an
	// absence alert has a series from the first scrape.
	for _, o := range []string{"success", "invalid", "throttled", "refused", "error"} {
		s.logins.WithLabelValues("imap", o)
		s.logins.WithLabelValues("submission", o)
		s.logins.WithLabelValues("managesieve", o)
	}
	for _, o := range []string{"accepted", "refused"} {
		s.sieveSessions.WithLabelValues(o)
	}
	for _, o := range []string{"accepted", "refused"} {
		s.imapSessions.WithLabelValues(o)
	}
	for _, o := range []string{"delivered", "deferred", "failed", "partial", "none"} {
		s.outboundAttempts.WithLabelValues(o)
	}
	for _, o := range []string{"delivered", "deferred", "failed"} {
		s.outboundRcpts.WithLabelValues(o)
	}
	return s
}

// Handler serves the Set in the Prometheus text format (or what the
// scraper negotiates). A collector's error is logged by the scraper's
// side as a failed scrape; the other series are still served.
func (s *Set) Handler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Registry is the Set's registry, for tests (prometheus/testutil) and
// for collectors of the wiring.
func (s *Set) Registry() *prometheus.Registry { return s.reg }

// RetentionDeleted counts what one retention pass deleted.
func (s *Set) RetentionDeleted(messages, bytes int64) {
	s.retentionMsgs.Add(float64(messages))
	s.retentionBytes.Add(float64(bytes))
}

// SMTP is the observer smtpd's Config.Metrics takes.
func (s *Set) SMTP() *SMTP { return &SMTP{s} }

// IMAP is the observer imapd's Config.Metrics takes.
func (s *Set) IMAP() *IMAP { return &IMAP{s} }

// API is the observer adminapi's Config.Metrics takes.
func (s *Set) API() *API { return &API{s} }

// Outbound is the observer outbound's Config.Metrics takes.
func (s *Set) Outbound() *Outbound { return &Outbound{s} }

// ManageSieve is the observer managesieve's Config.Metrics takes.
func (s *Set) ManageSieve() *ManageSieve { return &ManageSieve{s} }

// SMTP counts what the SMTP servers (MX and submission) do.
type SMTP struct{ s *Set }

// Session counts a connection on listener; refused is one over the
// connection limits, closed at once. An accepted one is open until
// SessionClosed.
func (m *SMTP) Session(listener string, refused bool) {
	if refused {
		m.s.smtpSessions.WithLabelValues(listener, "refused").Inc()
		return
	}
	m.s.smtpSessions.WithLabelValues(listener, "accepted").Inc()
	m.s.smtpOpen.WithLabelValues(listener).Inc()
}

// SessionClosed ends a connection Session accepted.
func (m *SMTP) SessionClosed(listener string) { m.s.smtpOpen.WithLabelValues(listener).Dec() }

// Recipient counts a RCPT's outcome (see mailhost_smtp_recipients_total).
func (m *SMTP) Recipient(listener, outcome string) {
	m.s.smtpRecipients.WithLabelValues(listener, outcome).Inc()
}

// Message counts a message's outcome and, when it was delivered, the
// time its delivery took.
func (m *SMTP) Message(listener, outcome string, d time.Duration) {
	m.s.smtpMessages.WithLabelValues(listener, outcome).Inc()
	if outcome == "delivered" {
		m.s.smtpDelivery.WithLabelValues(listener).Observe(d.Seconds())
	}
}

// Login counts a submission AUTH's outcome (see mailhost_logins_total).
func (m *SMTP) Login(outcome string) { m.s.logins.WithLabelValues("submission", outcome).Inc() }

// IMAP counts what the IMAP server does.
type IMAP struct{ s *Set }

// Session counts a connection greeted; an accepted one is open until
// SessionClosed.
func (m *IMAP) Session(refused bool) {
	if refused {
		m.s.imapSessions.WithLabelValues("refused").Inc()
		return
	}
	m.s.imapSessions.WithLabelValues("accepted").Inc()
	m.s.imapOpen.Inc()
}

// SessionClosed ends a session Session accepted.
func (m *IMAP) SessionClosed() { m.s.imapOpen.Dec() }

// Login counts a LOGIN's or AUTHENTICATE's outcome (see
// mailhost_logins_total).
func (m *IMAP) Login(outcome string) { m.s.logins.WithLabelValues("imap", outcome).Inc() }

// API counts the management API's requests.
type API struct{ s *Set }

// Request counts a request answered with status after d; route is the
// pattern of the route that took it, "" for none.
func (m *API) Request(route string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.s.apiRequests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.s.apiDuration.WithLabelValues(route).Observe(d.Seconds())
}

// Outbound counts the outbound queue's delivery attempts.
type Outbound struct{ s *Set }

// Attempt counts one attempt: its outcome, how many of its recipients
// were delivered, failed for good and deferred, and how long it took.
func (m *Outbound) Attempt(outcome string, delivered, failed, deferred int, d time.Duration) {
	m.s.outboundAttempts.WithLabelValues(outcome).Inc()
	m.s.outboundRcpts.WithLabelValues("delivered").Add(float64(delivered))
	m.s.outboundRcpts.WithLabelValues("failed").Add(float64(failed))
	m.s.outboundRcpts.WithLabelValues("deferred").Add(float64(deferred))
	m.s.outboundDuration.Observe(d.Seconds())
}

// ManageSieve counts what the ManageSieve server does.
type ManageSieve struct{ s *Set }

// sieveCommands are the command label's values: RFC 5804's commands;
// any other name counts as "unknown", so that a client cannot make
// series.
var sieveCommands = map[string]bool{
	"AUTHENTICATE": true, "STARTTLS": true, "LOGOUT": true, "CAPABILITY": true, "HAVESPACE": true,
	"PUTSCRIPT": true, "LISTSCRIPTS": true, "SETACTIVE": true, "GETSCRIPT": true, "DELETESCRIPT": true,
	"RENAMESCRIPT": true, "CHECKSCRIPT": true, "NOOP": true, "UNAUTHENTICATE": true,
}

// Session counts a connection; an accepted one is open until
// SessionClosed.
func (m *ManageSieve) Session(refused bool) {
	if refused {
		m.s.sieveSessions.WithLabelValues("refused").Inc()
		return
	}
	m.s.sieveSessions.WithLabelValues("accepted").Inc()
	m.s.sieveOpen.Inc()
}

// SessionClosed ends a session Session accepted.
func (m *ManageSieve) SessionClosed() { m.s.sieveOpen.Dec() }

// Command counts a command (its name in upper case) and its result:
// "ok", "no" or "bye".
func (m *ManageSieve) Command(name, result string) {
	if !sieveCommands[name] {
		name = "unknown"
	}
	m.s.sieveCommands.WithLabelValues(name, result).Inc()
}

// Login counts an AUTHENTICATE's outcome (see mailhost_logins_total).
func (m *ManageSieve) Login(outcome string) { m.s.logins.WithLabelValues("managesieve", outcome).Inc() }
