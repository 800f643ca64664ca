package service

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// The operator's mailbox is postmaster@ the server's host name
// (policy.OperatorMailbox), a mailbox of the partner "default" in a
// domain of that name made below the API (which refuses the name to
// partners) and verified, since it is the server's own. Mail to the
// domainless "postmaster", and to postmaster@ and abuse@ every hosted
// domain that has none of its own, reaches it (policy.RoleFallback)
// unless the postmaster setting names another address.

// PasswordFileName is the file in the data directory that receives the
// operator mailbox's first password, mode 0600, when stdout is systemd's
// journal (IsJournal) and the password is not printed.
const PasswordFileName = "initial-postmaster-password"

// operatorMailbox makes the operator's mailbox when it is missing (at
// first start, and at the first start of a data directory made before
// it existed) and hands its password out once, as firstStart does the
// key: on stdout when show is set, else into DATA/PasswordFileName. It
// answers the mailbox's address, or "" when the host name is not a
// domain name (a warning is logged: nothing is made, and mail to
// postmaster goes only where the postmaster setting says) or there is
// no partner "default". Another partner holding the name, or a mailbox
// or alias of that address already, leaves things as they are.
func operatorMailbox(ctx context.Context, st mailstore.Store, hostname string, plans *policy.Plans, stdout io.Writer, show bool, dataDir string, now time.Time, log *slog.Logger) (string, error) {
	addr, err := policy.OperatorMailbox(hostname)
	if err != nil {
		log.Warn("no operator mailbox: the hostname setting is not a domain name, so mail to postmaster is refused unless the postmaster setting names an address", "hostname", hostname)
		return "", nil
	}
	if policy.HostnameProblem(hostname) != "" {
		log.Warn("the operator mailbox is at a local name, since the hostname setting is not the server's public name: set it, and postmaster@ that name is made at the next start", "mailbox", addr, "hostname", hostname)
	}
	domain := policy.DomainOf(addr)
	if _, _, err := st.MailboxByEmail(ctx, addr); err == nil {
		return addr, nil
	} else if !errors.Is(err, mailstore.ErrNotFound) {
		return "", fmt.Errorf("operator mailbox %s: %w", addr, err)
	}
	p, err := st.PartnerByName(ctx, "default")
	if errors.Is(err, mailstore.ErrNotFound) {
		log.Warn("no operator mailbox: there is no partner \"default\" to hold it", "mailbox", addr)
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("operator mailbox: partner default: %w", err)
	}
	d, err := st.Domain(ctx, p.ID, domain)
	if errors.Is(err, mailstore.ErrNotFound) {
		plan, _ := plans.Get("starter")
		d, err = st.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: domain, Plan: plan}, now)
		if errors.Is(err, mailstore.ErrDomainExists) {
			// Another node sharing the store made it a moment ago, or
			// another partner holds the name: the first is ours.
			if mine, merr := st.Domain(ctx, p.ID, domain); merr == nil {
				d, err = mine, nil
			}
		}
	}
	if err != nil {
		if errors.Is(err, mailstore.ErrDomainExists) || errors.Is(err, mailstore.ErrDomainRelated) || errors.Is(err, mailstore.ErrDomainLimit) {
			log.Warn("no operator mailbox: its domain, the hostname setting, cannot be the default partner's", "mailbox", addr, "err", err)
			return "", nil
		}
		return "", fmt.Errorf("operator mailbox: domain %s: %w", domain, err)
	}
	if !d.Verified {
		if _, err := st.SetVerified(ctx, p.ID, domain, true, now); err != nil {
			return "", fmt.Errorf("operator mailbox: verify %s: %w", domain, err)
		}
	}
	password := rand.Text()
	hash, err := credential.HashPassword(password)
	if err != nil {
		return "", fmt.Errorf("operator mailbox: %w", err)
	}
	m, err := st.CreateMailbox(ctx, p.ID, domain, addr, hash, now)
	if errors.Is(err, mailstore.ErrEmailExists) {
		// Another node made it first and handed its password out, or
		// the address is an alias the operator made: it stays.
		return addr, nil
	}
	if err != nil {
		return "", fmt.Errorf("operator mailbox %s: %w", addr, err)
	}
	if show {
		fmt.Fprintf(stdout, "Created the operator's mailbox %s (partner %q), where mail to postmaster and abuse goes. Its password, shown only this once:\n\n    %s\n\nLog in with it over IMAP and submission; change it with: mailhost mailbox password %s\n\n", addr, p.Name, password, addr)
	} else {
		path := filepath.Join(dataDir, PasswordFileName)
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if err := writeSynced(path, []byte(password+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("write the operator mailbox's password to %s: %w", path, err)
		}
		fmt.Fprintf(stdout, "Created the operator's mailbox %s (partner %q), where mail to postmaster and abuse goes. Its password is in %s (mode 0600, not printed: stdout is systemd's journal).\nRead it, then delete the file; change the password with: mailhost mailbox password %s\n\n", addr, p.Name, path, addr)
	}
	log.Info("created the operator mailbox", "mailbox", addr, "mailbox_id", m.ID, "partner_id", p.ID)
	return addr, nil
}
