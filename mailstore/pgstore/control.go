package pgstore

// The control plane: partners and their API keys here; domains in
// control_domain.go, mailboxes and aliases in control_mailbox.go, the
// mail plane's look-ups of them in control_lookup.go.
//
// Every partner-scoped query names the partner in its WHERE clause next to
// the unique key it looks up by, so that another partner's object is not
// found exactly as a missing one is, and no query reads another partner's
// rows.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

const partnerColumns = `id, name, created_at, max_domains`

func scanPartner(row pgx.Row) (mailstore.Partner, error) {
	var p mailstore.Partner
	if err := row.Scan(&p.ID, &p.Name, &p.CreatedAt, &p.MaxDomains); err != nil {
		return mailstore.Partner{}, err
	}
	p.CreatedAt = p.CreatedAt.UTC()
	return p, nil
}

// CreatePartner implements mailstore.Store.
func (s *Store) CreatePartner(ctx context.Context, name string, now time.Time) (mailstore.Partner, error) {
	// A name that is a number would read as an id in PartnerByName.
	if _, err := strconv.ParseUint(name, 10, 64); name == "" || err == nil {
		return mailstore.Partner{}, fmt.Errorf("create partner %q: name is empty or a number: %w", name, mailstore.ErrInvalidArgument)
	}
	var p mailstore.Partner
	err := s.write(ctx, func(tx pgx.Tx) (err error) {
		p, err = scanPartner(tx.QueryRow(ctx,
			`INSERT INTO partners (name, created_at) VALUES ($1, $2) RETURNING `+partnerColumns,
			name, mailstore.UTC(now)))
		if isUnique(err, "") {
			return mailstore.ErrPartnerExists
		}
		return err
	})
	if err != nil {
		return mailstore.Partner{}, fmt.Errorf("create partner %q: %w", name, err)
	}
	return p, nil
}

// Partners implements mailstore.Store.
func (s *Store) Partners(ctx context.Context) ([]mailstore.Partner, error) {
	var out []mailstore.Partner
	err := s.read(ctx, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT `+partnerColumns+` FROM partners ORDER BY id`)
		var err error
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (mailstore.Partner, error) { return scanPartner(r) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list partners: %w", err)
	}
	if out == nil {
		out = []mailstore.Partner{}
	}
	return out, nil
}

// PartnerByName implements mailstore.Store.
func (s *Store) PartnerByName(ctx context.Context, name string) (mailstore.Partner, error) {
	var p mailstore.Partner
	err := s.read(ctx, func(tx pgx.Tx) (err error) {
		p, err = scanPartner(tx.QueryRow(ctx, `SELECT `+partnerColumns+` FROM partners WHERE name = $1`, name))
		if !noRows(err) {
			return err
		}
		// Names are never numbers (CreatePartner), so a number is an id.
		id, perr := strconv.ParseInt(name, 10, 64)
		if perr != nil {
			return mailstore.ErrPartnerNotFound
		}
		p, err = scanPartner(tx.QueryRow(ctx, `SELECT `+partnerColumns+` FROM partners WHERE id = $1`, id))
		if noRows(err) {
			return mailstore.ErrPartnerNotFound
		}
		return err
	})
	if err != nil {
		// Unwrapped, as the bbolt store answers: callers (service's
		// key and limit commands) name the partner themselves.
		return mailstore.Partner{}, err
	}
	return p, nil
}

// SetPartnerLimits implements mailstore.Store.
func (s *Store) SetPartnerLimits(ctx context.Context, partnerID int64, l mailstore.PartnerLimits) (mailstore.Partner, error) {
	if l.MaxDomains != nil && *l.MaxDomains < 0 {
		return mailstore.Partner{}, fmt.Errorf("partner %d limits: max domains %d: %w", partnerID, *l.MaxDomains, mailstore.ErrInvalidArgument)
	}
	var p mailstore.Partner
	err := s.write(ctx, func(tx pgx.Tx) (err error) {
		// Lowering the limit below domain_count deletes nothing; the
		// conditional UPDATE of CreateDomain then takes no slot.
		p, err = scanPartner(tx.QueryRow(ctx,
			`UPDATE partners SET max_domains = COALESCE($2, max_domains) WHERE id = $1 RETURNING `+partnerColumns,
			partnerID, l.MaxDomains))
		if noRows(err) {
			return mailstore.ErrPartnerNotFound
		}
		return err
	})
	if err != nil {
		return mailstore.Partner{}, fmt.Errorf("partner %d limits: %w", partnerID, err)
	}
	return p, nil
}

// partnerExists is the check of the methods that answer
// ErrPartnerNotFound for an unknown partner.
func partnerExists(ctx context.Context, tx pgx.Tx, partnerID int64) error {
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM partners WHERE id = $1)`, partnerID).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return mailstore.ErrPartnerNotFound
	}
	return nil
}

const apiKeyColumns = `id, partner_id, lookup, prefix, secret_hash, created_at, revoked_at`

func scanAPIKey(row pgx.Row) (mailstore.APIKey, error) {
	var k mailstore.APIKey
	var revoked *time.Time
	if err := row.Scan(&k.ID, &k.PartnerID, &k.Lookup, &k.Prefix, &k.SecretHash, &k.CreatedAt, &revoked); err != nil {
		return mailstore.APIKey{}, err
	}
	k.CreatedAt = k.CreatedAt.UTC()
	k.Revoked, k.RevokedAt = revoked != nil, fromNull(revoked)
	return k, nil
}

// AddAPIKey implements mailstore.Store.
func (s *Store) AddAPIKey(ctx context.Context, partnerID int64, k mailstore.APIKey) (mailstore.APIKey, error) {
	hash := k.SecretHash
	if hash == nil {
		hash = []byte{} // the column is NOT NULL; bbolt keeps an empty hash too
	}
	var out mailstore.APIKey
	err := s.write(ctx, func(tx pgx.Tx) (err error) {
		if err := partnerExists(ctx, tx, partnerID); err != nil {
			return err
		}
		out, err = scanAPIKey(tx.QueryRow(ctx, `
			INSERT INTO api_keys (partner_id, lookup, prefix, secret_hash, created_at)
			VALUES ($1, $2, $3, $4, $5) RETURNING `+apiKeyColumns,
			partnerID, k.Lookup, k.Prefix, hash, mailstore.UTC(k.CreatedAt)))
		if isUnique(err, "api_keys_lookup_key") {
			return fmt.Errorf("key lookup collision: %w", mailstore.ErrInvalidArgument)
		}
		return err
	})
	if err != nil {
		return mailstore.APIKey{}, fmt.Errorf("add API key: %w", err)
	}
	return out, nil
}

// APIKeys implements mailstore.Store.
func (s *Store) APIKeys(ctx context.Context, partnerID int64) ([]mailstore.APIKey, error) {
	var out []mailstore.APIKey
	err := s.read(ctx, func(tx pgx.Tx) error {
		if err := partnerExists(ctx, tx, partnerID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE partner_id = $1 ORDER BY id`, partnerID)
		var err error
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (mailstore.APIKey, error) { return scanAPIKey(r) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("API keys of partner %d: %w", partnerID, err)
	}
	if out == nil {
		out = []mailstore.APIKey{}
	}
	return out, nil
}

// APIKeyByLookup implements mailstore.Store.
func (s *Store) APIKeyByLookup(ctx context.Context, lookup string) (mailstore.APIKey, error) {
	var k mailstore.APIKey
	err := s.read(ctx, func(tx pgx.Tx) (err error) {
		k, err = scanAPIKey(tx.QueryRow(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE lookup = $1`, lookup))
		if noRows(err) {
			return mailstore.ErrKeyNotFound
		}
		return err
	})
	if err != nil {
		return mailstore.APIKey{}, fmt.Errorf("API key %q: %w", lookup, err)
	}
	return k, nil
}

// RevokeAPIKey implements mailstore.Store.
func (s *Store) RevokeAPIKey(ctx context.Context, keyID int64, now time.Time) (mailstore.APIKey, error) {
	var k mailstore.APIKey
	err := s.write(ctx, func(tx pgx.Tx) (err error) {
		// COALESCE keeps the first revocation time when it is repeated.
		k, err = scanAPIKey(tx.QueryRow(ctx,
			`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1 RETURNING `+apiKeyColumns,
			keyID, mailstore.UTC(now)))
		if noRows(err) {
			return mailstore.ErrKeyNotFound
		}
		return err
	})
	if err != nil {
		return mailstore.APIKey{}, fmt.Errorf("revoke key %d: %w", keyID, err)
	}
	return k, nil
}
