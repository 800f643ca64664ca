package service

import (
	"context"
	"net"

	"github.com/emersion/go-msgauth/authres"

	"github.com/mailhost/mailhost/mailauth"
	"github.com/mailhost/mailhost/smtpd"
)

// newMX serves SMTP to the Internet: mail for the hosted addresses.
func newMX(p *parts) component {
	return &listening{name: "smtp", p: p, make: func() ([]endpoint, func(context.Context) error) {
		cfg := p.cfg
		mx := smtpd.Config{
			Store: p.st, Hostname: p.hostname, TLS: p.tls, Logger: p.log, Now: p.o.Now,
			MaxMessageBytes: cfg.MaxMessageBytes, OnQueued: p.sender.Wake, Memory: p.memory,
			MaxConnsPerIP: int(cfg.MXMaxConnsPerIP), MaxConnRatePerIP: noLimit(cfg.MaxConnRatePerIP),
			SRS: p.srs, RefuseInboundOverCap: cfg.RefuseInboundOverCap,
			Postmaster: p.postmaster, OnQuotaFull: p.events.quotaFull, Metrics: p.mset.SMTP(),
			DNSBL: cfg.DNSBL, DNSBLResolver: p.resolver, DMARCEnforce: cfg.DMARCEnforce,
			RecipientDelimiter: cfg.RecipientDelimiter, Sieve: p.sieve, AutoReply: p.responder,
		}
		if cfg.InboundChecks {
			mx.Authenticator = checker{&mailauth.Checker{Resolver: p.resolver, Hostname: p.hostname}}
		}
		s := smtpd.New(withSpam(mx, cfg, p.spam))
		return []endpoint{{name: "smtp", addr: cfg.SMTP, bound: &p.addrs.SMTP, serve: s.Serve}}, s.Shutdown
	}}
}

// newSubmission serves the mailboxes' own mail, on submission (STARTTLS)
// and submissions (implicit TLS).
func newSubmission(p *parts) component {
	return &listening{name: "submission", p: p, make: func() ([]endpoint, func(context.Context) error) {
		cfg := p.cfg
		sub := smtpd.Config{
			Store: p.st, Hostname: p.hostname, TLS: p.tls, Logger: p.log, Now: p.o.Now,
			MaxMessageBytes: cfg.MaxMessageBytes, OnQueued: p.sender.Wake, Memory: p.memory,
			MaxConnsPerIP: int(cfg.MaxConnsPerIP), MaxConnRatePerIP: noLimit(cfg.MaxConnRatePerIP),
			MaxConnsPerUserIP: noLimit(cfg.MaxConnsPerUserIP), Logins: p.logins, AllowInsecureAuth: cfg.AllowInsecureAuth,
			MaxRecipientsPerHour: int(cfg.SendLimitPerHour), Share: p.share, Postmaster: p.postmaster, OnQuotaFull: p.events.quotaFull,
			Signer:  p.signer(),
			Metrics: p.mset.SMTP(), DMARCEnforce: cfg.DMARCEnforce,
			RecipientDelimiter: cfg.RecipientDelimiter, Sieve: p.sieve,
		}
		if cfg.InboundChecks {
			// For the messages that reach another partner's mailbox,
			// which get the MX's checks.
			sub.Authenticator = checker{&mailauth.Checker{Resolver: p.resolver, Hostname: p.hostname}}
		}
		s := smtpd.NewSubmission(withSpam(sub, cfg, p.spam))
		return []endpoint{
			{name: "submission", addr: cfg.Submission, bound: &p.addrs.Submission, serve: s.Serve},
			{name: "submissions", addr: cfg.Submissions, bound: &p.addrs.Submissions, serve: s.ServeTLS},
		}, s.Shutdown
	}}
}

// checker adapts mailauth.Checker to smtpd.Authenticator.
type checker struct{ c *mailauth.Checker }

func (c checker) Check(ctx context.Context, ip net.IP, helo, mailFrom string, msg []byte) string {
	h, _ := c.c.Check(ctx, mailauth.Input{IP: ip, HELO: helo, MailFrom: mailFrom, Message: msg})
	return h
}

// CheckDMARC makes checker an smtpd.DMARCAuthenticator.
func (c checker) CheckDMARC(ctx context.Context, ip net.IP, helo, mailFrom string, msg []byte) (string, smtpd.DMARCVerdict) {
	h, r := c.c.Check(ctx, mailauth.Input{IP: ip, HELO: helo, MailFrom: mailFrom, Message: msg})
	return h, smtpd.DMARCVerdict{Fail: r.DMARC == authres.ResultFail, Domain: r.FromDomain, Policy: smtpd.DMARCPolicy(r.Policy)}
}

// noLimit maps a setting's 0 (no limit) to the servers' -1 (their 0 is
// their default).
func noLimit(n int64) int {
	if n == 0 {
		return -1
	}
	return int(n)
}
