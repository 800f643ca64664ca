package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// Claims of domain names (migration 011): each partner's claim is a
// domains row, unique by (name, partner_id); the live claim of a name
// (mailstore.LiveClaim) has live true, unique by domains_live_name.
//
// Every writer that changes which claims a name has, or which of them
// is verified, ended or live (CreateDomain, SetVerified,
// SetVerifiedSole, DeleteDomain), first takes the name's transaction
// advisory lock (lockName): the claims of one name change one
// transaction at a time, on any node, so that the first verification
// wins and every claim it ends is seen. The lock comes after the
// partner's row where a writer takes that (control_domain.go's order),
// before the domains rows.

// lockName takes the name's claims lock until the transaction ends.
func lockName(ctx context.Context, tx pgx.Tx, name string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('mailhost.domain.' || current_schema() || '.' || $1, 0))`, name); err != nil {
		return fmt.Errorf("lock the claims of %s: %w", name, err)
	}
	return nil
}

// claimsOf reads every claim of a name (few: one per partner that
// claims it), with their ended times, under the name's lock.
func claimsOf(ctx context.Context, tx pgx.Tx, name string) ([]mailstore.Domain, error) {
	rows, _ := tx.Query(ctx, `SELECT `+domainColumns+` FROM domains WHERE name = $1 ORDER BY id`, name)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (mailstore.Domain, error) { return scanDomain(r) })
	if err != nil {
		return nil, fmt.Errorf("claims of %s: %w", name, err)
	}
	return out, nil
}

// relive sets the name's live claim by mailstore.LiveClaim, under the
// name's lock: the old one's flag goes first, so that the unique index
// never sees two.
func relive(ctx context.Context, tx pgx.Tx, name string) error {
	claims, err := claimsOf(ctx, tx, name)
	if err != nil {
		return err
	}
	var liveID int64
	if live, ok := mailstore.LiveClaim(claims); ok {
		liveID = live.ID
	}
	if _, err := tx.Exec(ctx, `UPDATE domains SET live = false WHERE name = $1 AND live AND id <> $2`, name, liveID); err != nil {
		return fmt.Errorf("unset the live claim of %s: %w", name, err)
	}
	if liveID != 0 {
		if _, err := tx.Exec(ctx, `UPDATE domains SET live = true WHERE id = $1 AND NOT live`, liveID); err != nil {
			return fmt.Errorf("set the live claim of %s: %w", name, err)
		}
	}
	return nil
}

// verify is SetVerified(true) and SetVerifiedSole: the partner's claim
// of name becomes verified and live, and every other partner's standing
// claim ends, with an event and an audit entry for its partner
// (bbolt's winClaim).
func (s *Store) verify(ctx context.Context, partnerID int64, name string, sole bool, now time.Time) (mailstore.Domain, error) {
	var d mailstore.Domain
	err := s.write(ctx, func(tx pgx.Tx) error {
		if err := lockName(ctx, tx, name); err != nil {
			return err
		}
		claims, err := claimsOf(ctx, tx, name)
		if err != nil {
			return err
		}
		var own *mailstore.Domain
		var ending []int64
		others, owned := 0, false
		for i, c := range claims {
			switch {
			case c.PartnerID == partnerID:
				own = &claims[i]
			case c.Verified:
				owned = true
			default:
				others++
				if !c.Ended() {
					ending = append(ending, c.ID)
				}
			}
		}
		if own == nil {
			return mailstore.ErrDomainNotFound
		}
		if owned {
			return mailstore.ErrDomainOwned
		}
		if sole && others > 0 && !own.Verified {
			return mailstore.ErrDomainShared
		}
		var events []mailstore.Event
		if len(ending) > 0 {
			rows, _ := tx.Query(ctx, `UPDATE domains SET claim_ended_at = $2, live = false
				WHERE id = ANY($1) RETURNING `+domainColumns, ending, mailstore.UTC(now))
			ended, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (mailstore.Domain, error) { return scanDomain(r) })
			if err != nil {
				return fmt.Errorf("end the other claims: %w", err)
			}
			for _, e := range ended {
				events = append(events, mailstore.NewClaimEndedEvent(e, now))
				if err := addAuditTx(ctx, tx, mailstore.NewClaimEndedAudit(e, now)); err != nil {
					return err
				}
			}
		}
		if !own.Verified {
			events = append(events, mailstore.NewDomainEvent(mailstore.EventDomainVerified, *own, now))
		}
		// An ended claim of another partner is not live; one that
		// stood was ended above: the flag is free.
		if _, err := tx.Exec(ctx, `UPDATE domains SET live = false WHERE name = $1 AND live AND id <> $2`, name, own.ID); err != nil {
			return fmt.Errorf("unset the live claim of %s: %w", name, err)
		}
		// rev_name too, so that a row inserted by a binary older than
		// migration 003 is indexed right.
		d, err = scanDomain(tx.QueryRow(ctx, `
			UPDATE domains SET verified = true, verified_at = $2, claim_ended_at = NULL, live = true, rev_name = $3
			WHERE id = $1 RETURNING `+domainColumns, own.ID, mailstore.UTC(now), mailstore.ReversedName(name)))
		if err != nil {
			return err
		}
		if len(events) > 0 {
			_, err = addEvents(ctx, tx, events...)
		}
		return err
	})
	if err != nil {
		return mailstore.Domain{}, fmt.Errorf("domain %s: %w", name, err)
	}
	return d, nil
}

// addAuditTx appends an audit entry within tx.
func addAuditTx(ctx context.Context, tx querier, e mailstore.AuditEntry) error {
	_, err := tx.Exec(ctx, `INSERT INTO audit_log (at, partner_id, key_prefix, method, route, object, status)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		mailstore.UTC(e.Time), e.PartnerID, e.KeyPrefix, e.Method, e.Route, e.Object, e.Status)
	if err != nil {
		return fmt.Errorf("add audit entry: %w", err)
	}
	return nil
}
