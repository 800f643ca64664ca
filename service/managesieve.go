package service

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/managesieve"
	"github.com/mailhost/mailhost/policy"
)

// newManageSieve serves ManageSieve (RFC 5804), where mail clients edit
// the mailboxes' Sieve scripts.
func newManageSieve(p *parts) component {
	return &listening{name: "managesieve", p: p, make: func() ([]endpoint, func(context.Context) error) {
		cfg := p.cfg
		s := managesieve.New(managesieve.Config{
			Store: sieveStore{p.st}, Auth: sieveLogins{p.logins}, TLS: p.tls, AllowInsecureAuth: cfg.AllowInsecureAuth,
			Parse: policy.SieveOptions, Logger: p.log, Metrics: p.mset.ManageSieve(),
			// A webmail's ManageSieve connections all come from its one
			// address: the IMAP limit, which allows for an office's.
			MaxConnsPerIP: int(cfg.MaxConnsPerIP),
		})
		return []endpoint{{name: "managesieve", addr: cfg.ManageSieve, bound: &p.addrs.ManageSieve, serve: s.Serve}}, s.Shutdown
	}}
}

// sieveLogins checks ManageSieve logins with the mailbox's own password
// through the logins IMAP and submission share, so that their throttle
// counts guesses over all three. The user is the mailbox id.
type sieveLogins struct{ logins *credential.Logins }

func (a sieveLogins) Authenticate(ctx context.Context, username, password string, ip netip.Addr) (string, error) {
	mb, err := a.logins.Authenticate(ctx, username, password, ip)
	switch {
	case errors.Is(err, credential.ErrInvalidCredentials):
		return "", fmt.Errorf("%w: %w", managesieve.ErrAuth, err)
	case errors.Is(err, credential.ErrThrottled):
		return "", fmt.Errorf("%w: %w", managesieve.ErrThrottled, err)
	case err != nil:
		return "", err
	}
	return strconv.FormatInt(mb.ID, 10), nil
}

// sieveStore is managesieve.ScriptStore over the mailbox's scripts in
// the store; the user is the mailbox id sieveLogins answered.
type sieveStore struct{ st mailstore.SieveScripts }

func mailboxID(user string) (int64, error) {
	id, err := strconv.ParseInt(user, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("managesieve user %q: %w", user, err)
	}
	return id, nil
}

// sieveErr maps the store's errors to those managesieve answers with a
// response code; others stay as they are (TRYLATER).
func sieveErr(err error, size int) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, mailstore.ErrNotFound):
		return fmt.Errorf("%w: %w", managesieve.ErrNotFound, err)
	case errors.Is(err, mailstore.ErrSieveActive):
		return fmt.Errorf("%w: %w", managesieve.ErrActive, err)
	case errors.Is(err, mailstore.ErrSieveExists):
		return fmt.Errorf("%w: %w", managesieve.ErrExists, err)
	case errors.Is(err, mailstore.ErrInvalidArgument):
		return fmt.Errorf("%w: %w", managesieve.ErrBadName, err)
	case errors.Is(err, mailstore.ErrSieveLimit) && size > mailstore.MaxSieveScriptBytes:
		return fmt.Errorf("%w: %w", managesieve.ErrQuotaSize, err)
	case errors.Is(err, mailstore.ErrSieveLimit):
		return fmt.Errorf("%w: %w", managesieve.ErrQuotaScripts, err)
	}
	return err
}

func (s sieveStore) ListScripts(ctx context.Context, user string) ([]managesieve.Script, error) {
	id, err := mailboxID(user)
	if err != nil {
		return nil, err
	}
	list, err := s.st.SieveScripts(ctx, id)
	if err != nil {
		return nil, sieveErr(err, 0)
	}
	out := make([]managesieve.Script, len(list))
	for i, sc := range list {
		out[i] = managesieve.Script{Name: sc.Name, Active: sc.Active}
	}
	return out, nil
}

func (s sieveStore) GetScript(ctx context.Context, user, name string) ([]byte, error) {
	id, err := mailboxID(user)
	if err != nil {
		return nil, err
	}
	sc, err := s.st.SieveScript(ctx, id, name)
	if err != nil {
		return nil, sieveErr(err, 0)
	}
	return []byte(sc.Script), nil
}

func (s sieveStore) PutScript(ctx context.Context, user, name string, content []byte) error {
	id, err := mailboxID(user)
	if err != nil {
		return err
	}
	return sieveErr(s.st.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: id, Name: name, Script: string(content)}), len(content))
}

func (s sieveStore) DeleteScript(ctx context.Context, user, name string) error {
	id, err := mailboxID(user)
	if err != nil {
		return err
	}
	return sieveErr(s.st.DeleteSieveScript(ctx, id, name), 0)
}

func (s sieveStore) RenameScript(ctx context.Context, user, oldName, newName string) error {
	id, err := mailboxID(user)
	if err != nil {
		return err
	}
	return sieveErr(s.st.RenameSieveScript(ctx, id, oldName, newName), 0)
}

func (s sieveStore) SetActive(ctx context.Context, user, name string) error {
	id, err := mailboxID(user)
	if err != nil {
		return err
	}
	return sieveErr(s.st.SetActiveSieveScript(ctx, id, name), 0)
}

// HaveSpace answers from the store's limits; PutScript checks them again
// in its transaction.
func (s sieveStore) HaveSpace(ctx context.Context, user, name string, size int64) error {
	id, err := mailboxID(user)
	if err != nil {
		return err
	}
	if size > mailstore.MaxSieveScriptBytes {
		return managesieve.ErrQuotaSize
	}
	if !mailstore.ValidSieveName(name) {
		return managesieve.ErrBadName
	}
	list, err := s.st.SieveScripts(ctx, id)
	if err != nil {
		return sieveErr(err, 0)
	}
	for _, sc := range list {
		if sc.Name == name {
			return nil
		}
	}
	if len(list) >= mailstore.MaxSieveScripts {
		return managesieve.ErrQuotaScripts
	}
	return nil
}
