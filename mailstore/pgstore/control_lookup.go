package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// The mail plane's look-ups of the control plane: by address or id,
// whoever the owner, for the protocol servers and the queue.

// sqlMailboxByEmail is MailboxByEmail's statement, made once: it runs for
// every recipient and every login. It finds the live claim of the
// address's domain ($2) by domains_live_name, then the address in it by
// mailboxes_domain_email.
var sqlMailboxByEmail = `SELECT ` + qualified("m", mailboxColumns) + `, ` + domainCols("d") + `,
	EXISTS (SELECT 1 FROM autoreplies a WHERE a.mailbox_id = m.id),
	coalesce((SELECT s.version FROM sieve_scripts s WHERE s.mailbox_id = m.id AND s.active), -1)
	FROM domains d JOIN mailboxes m ON m.domain_id = d.id
	WHERE d.name = $2 AND d.live AND m.email = $1`

// MailboxByEmail implements mailstore.Store.
func (s *Store) MailboxByEmail(ctx context.Context, email string) (mailstore.Mailbox, mailstore.Domain, error) {
	var m mailstore.Mailbox
	var d mailstore.Domain
	err := s.look(ctx, func(tx querier) error {
		var ms mailboxScan
		var ds domainScan
		var sieveVersion int64 // -1: no active script
		err := tx.QueryRow(ctx, sqlMailboxByEmail, email, domainOf(email)).Scan(append(append(ms.dest(), ds.dest()...), &ms.m.HasAutoReply, &sieveVersion)...)
		if err != nil {
			return mailboxNotFound(err)
		}
		m, d = ms.done(), ds.done()
		if sieveVersion >= 0 {
			m.HasSieve, m.SieveVersion = true, sieveVersion
		}
		return nil
	})
	if err != nil {
		return mailstore.Mailbox{}, mailstore.Domain{}, fmt.Errorf("mailbox %s: %w", email, err)
	}
	return m, d, nil
}

// AliasBySource implements mailstore.Store.
func (s *Store) AliasBySource(ctx context.Context, source string) (mailstore.Alias, error) {
	var a mailstore.Alias
	err := s.look(ctx, func(tx querier) (err error) {
		a, err = scanAlias(tx.QueryRow(ctx, `SELECT `+aliasColumns+` FROM aliases
			WHERE domain_id = (SELECT id FROM domains WHERE name = $2 AND live) AND source = $1`, source, domainOf(source)))
		if noRows(err) {
			return mailstore.ErrAliasNotFound
		}
		return err
	})
	if err != nil {
		return mailstore.Alias{}, fmt.Errorf("alias %s: %w", source, err)
	}
	return a, nil
}

// DomainWithID implements mailstore.Store.
func (s *Store) DomainWithID(ctx context.Context, id int64) (mailstore.Domain, error) {
	var d mailstore.Domain
	err := s.look(ctx, func(tx querier) (err error) {
		d, err = scanDomain(tx.QueryRow(ctx, `SELECT `+domainColumns+` FROM domains WHERE id = $1`, id))
		return domainNotFound(err)
	})
	if err != nil {
		return mailstore.Domain{}, fmt.Errorf("domain %d: %w", id, err)
	}
	return d, nil
}

// DomainByName implements mailstore.Store.
func (s *Store) DomainByName(ctx context.Context, name string) (mailstore.Domain, error) {
	var d mailstore.Domain
	err := s.look(ctx, func(tx querier) (err error) {
		d, err = scanDomain(tx.QueryRow(ctx, `SELECT `+domainColumns+` FROM domains WHERE name = $1 AND live`, name))
		return domainNotFound(err)
	})
	if err != nil {
		return mailstore.Domain{}, fmt.Errorf("domain %s: %w", name, err)
	}
	return d, nil
}

// RecordLogin implements mailstore.Store.
func (s *Store) RecordLogin(ctx context.Context, mailboxID int64, now time.Time) error {
	err := s.one(ctx, func(tx querier) error {
		tag, err := tx.Exec(ctx, `UPDATE mailboxes SET last_login = $2 WHERE id = $1`, mailboxID, mailstore.UTC(now))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return mailstore.ErrMailboxNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record login of mailbox %d: %w", mailboxID, err)
	}
	return nil
}

// Transfer implements mailstore.Store.
func (s *Store) Transfer(ctx context.Context, domainID int64, month string) (mailstore.Transfer, error) {
	x := mailstore.Transfer{Month: month}
	err := s.look(ctx, func(tx querier) error {
		// The domain's row answers whether it exists; a month without a
		// transfer row counted nothing.
		err := tx.QueryRow(ctx, `
			SELECT COALESCE(t.in_bytes, 0), COALESCE(t.out_bytes, 0)
			FROM domains d LEFT JOIN LATERAL (
				SELECT sum(in_bytes)::bigint AS in_bytes, sum(out_bytes)::bigint AS out_bytes
				FROM transfer WHERE domain_id = d.id AND month = $2) t ON true
			WHERE d.id = $1`, domainID, month).Scan(&x.InBytes, &x.OutBytes)
		return domainNotFound(err)
	})
	if err != nil {
		return mailstore.Transfer{}, fmt.Errorf("transfer of domain %d: %w", domainID, err)
	}
	return x, nil
}

// dkimKeys reads a domain's keys in the order they were given;
// ErrDomainNotFound.
func dkimKeys(ctx context.Context, tx pgx.Tx, domainID int64, lock bool) ([]mailstore.DKIMKey, error) {
	q := `SELECT true FROM domains WHERE id = $1`
	if lock {
		q += ` FOR NO KEY UPDATE`
	}
	var ok bool
	if err := tx.QueryRow(ctx, q, domainID).Scan(&ok); err != nil {
		return nil, domainNotFound(err)
	}
	rows, _ := tx.Query(ctx, `
		SELECT selector, algorithm, private, created_at FROM dkim_keys
		WHERE domain_id = $1 ORDER BY position`, domainID)
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (mailstore.DKIMKey, error) {
		var k mailstore.DKIMKey
		err := r.Scan(&k.Selector, &k.Algorithm, &k.Private, &k.CreatedAt)
		k.CreatedAt = k.CreatedAt.UTC()
		return k, err
	})
	if err != nil {
		return nil, err
	}
	if keys == nil {
		keys = []mailstore.DKIMKey{}
	}
	return keys, nil
}

// DKIMKeys implements mailstore.Store.
func (s *Store) DKIMKeys(ctx context.Context, domainID int64) ([]mailstore.DKIMKey, error) {
	var keys []mailstore.DKIMKey
	err := s.read(ctx, func(tx pgx.Tx) (err error) {
		keys, err = dkimKeys(ctx, tx, domainID, false)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("DKIM keys of domain %d: %w", domainID, err)
	}
	return keys, nil
}

// EnsureDKIMKeys implements mailstore.Store.
func (s *Store) EnsureDKIMKeys(ctx context.Context, domainID int64, keys []mailstore.DKIMKey) ([]mailstore.DKIMKey, error) {
	var out []mailstore.DKIMKey
	err := s.write(ctx, func(tx pgx.Tx) (err error) {
		// The domain's row lock queues two nodes ensuring keys at once:
		// the second finds the first one's keys and keeps them.
		if out, err = dkimKeys(ctx, tx, domainID, true); err != nil || len(out) > 0 {
			return err
		}
		out, err = putDKIMKeys(ctx, tx, domainID, keys)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ensure DKIM keys of domain %d: %w", domainID, err)
	}
	return out, nil
}
