package service

import (
	"fmt"
	"log/slog"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/smtpd"
	"github.com/mailhost/mailhost/spam"
)

// newSpamClient is the rspamd client of rspamd_url and
// rspamd_controller_url; nil when both are empty.
func newSpamClient(cfg *config.Config) (*spam.Client, error) {
	if cfg.RspamdURL == "" && cfg.RspamdControllerURL == "" {
		return nil, nil
	}
	c, err := spam.New(spam.Config{
		URL: cfg.RspamdURL, ControllerURL: cfg.RspamdControllerURL,
		Password: cfg.RspamdPassword, Timeout: cfg.RspamdTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("spam filter: %w", err)
	}
	return c, nil
}

// withSpam sets the spam filter of an SMTP server's configuration when
// rspamd_url is set.
func withSpam(c smtpd.Config, cfg *config.Config, client *spam.Client) smtpd.Config {
	if client == nil || cfg.RspamdURL == "" {
		return c
	}
	c.Spam = client
	c.SpamDefault = cfg.SpamFilter
	c.SpamFailClosed = cfg.RspamdFail == "tempfail"
	return c
}

// spamLearner is the background learner of the IMAP moves into and out of
// Junk, when rspamd_controller_url is set; nil otherwise.
func spamLearner(cfg *config.Config, client *spam.Client, bodies spam.Bodies, log *slog.Logger) *spam.Learner {
	if client == nil || cfg.RspamdControllerURL == "" {
		return nil
	}
	return spam.NewLearner(client, bodies, log)
}
