package pgstore

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// Lock order of the control plane's writers, parents first: partner,
// domain, mailbox, folders, bodies. A writer that needs a parent's counter
// takes the parent's row before it touches the children, so that two
// writers of one domain queue on its row instead of deadlocking.

// CreateDomain implements mailstore.Store.
func (s *Store) CreateDomain(ctx context.Context, partnerID int64, nd mailstore.NewDomain, now time.Time) (mailstore.Domain, error) {
	var d mailstore.Domain
	err := s.write(ctx, func(tx pgx.Tx) error {
		// The partner's slot first: one conditional UPDATE holds
		// MaxDomains under racing creates on any node (the row lock
		// queues them, and each sees the count the one before left).
		tag, err := tx.Exec(ctx, `
			UPDATE partners SET domain_count = domain_count + 1
			WHERE id = $1 AND (max_domains <= 0 OR domain_count < max_domains)`, partnerID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			// No slot: say why, in bbolt's order (a taken name is
			// ErrDomainExists even at the limit).
			if err := partnerExists(ctx, tx, partnerID); err != nil {
				return err
			}
			if err := nameTaken(ctx, tx, partnerID, nd.Name); err != nil {
				return err
			}
			return mailstore.ErrDomainLimit
		}
		if err := lockName(ctx, tx, nd.Name); err != nil {
			return err
		}
		if err := nameTaken(ctx, tx, partnerID, nd.Name); err != nil {
			return err // the rollback gives the slot back
		}
		// Live if no other claim is (control_claims.go): a later claim
		// never displaces one.
		d, err = scanDomain(tx.QueryRow(ctx, `
			INSERT INTO domains (partner_id, name, plan, max_mailboxes, max_aliases, quota_mb,
				retention_days, transfer_monthly_mb, created_at, verify_token, rev_name, live)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
				NOT EXISTS (SELECT 1 FROM domains WHERE name = $2 AND live))
			RETURNING `+domainColumns,
			partnerID, nd.Name, nd.Plan.Name, nd.MaxMailboxes, nd.MaxAliases, nd.Plan.QuotaMB,
			nd.Plan.RetentionDays, nd.Plan.TransferMonthlyMB, mailstore.UTC(now), nd.VerifyToken, mailstore.ReversedName(nd.Name)))
		if isUnique(err, "domains_name_partner") {
			return mailstore.ErrDomainExists
		}
		if err != nil {
			return err
		}
		// After the insert, so that a taken name is ErrDomainExists first,
		// as on bbolt; the rollback gives the slot and the name back.
		if err := checkRelated(ctx, tx, partnerID, nd.Name); err != nil {
			return err
		}
		_, err = putDKIMKeys(ctx, tx, d.ID, nd.DKIMKeys)
		return err
	})
	if err != nil {
		return mailstore.Domain{}, fmt.Errorf("create domain %s: %w", nd.Name, err)
	}
	return d, nil
}

// nameTaken answers ErrDomainExists when the partner has a claim of
// name already, or another partner has it verified; another partner's
// unverified claim does not block.
func nameTaken(ctx context.Context, tx pgx.Tx, partnerID int64, name string) error {
	var taken bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM domains WHERE name = $1 AND (partner_id = $2 OR verified))`,
		name, partnerID).Scan(&taken); err != nil {
		return err
	}
	if taken {
		return mailstore.ErrDomainExists
	}
	return nil
}

// pageArgs are the LIMIT and OFFSET of a page; a NULL limit is none.
func pageArgs(p mailstore.Page) (limit any, offset int) {
	if p.Limit > 0 {
		limit = p.Limit
	}
	return limit, max(p.Offset, 0)
}

// Domains implements mailstore.Store.
func (s *Store) Domains(ctx context.Context, partnerID int64, p mailstore.Page) ([]mailstore.Domain, int, error) {
	var out []mailstore.Domain
	var total int64
	limit, offset := pageArgs(p)
	err := s.read(ctx, func(tx pgx.Tx) error {
		// The total is the partner's counter, read in the same snapshot as
		// the page (an unknown partner has none).
		err := tx.QueryRow(ctx, `SELECT domain_count FROM partners WHERE id = $1`, partnerID).Scan(&total)
		if noRows(err) {
			total = 0
		} else if err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT `+domainColumns+` FROM domains WHERE partner_id = $1 ORDER BY id LIMIT $2 OFFSET $3`,
			partnerID, limit, offset)
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (mailstore.Domain, error) { return scanDomain(r) })
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("domains of partner %d: %w", partnerID, err)
	}
	if out == nil {
		out = []mailstore.Domain{}
	}
	return out, int(total), nil
}

// domainNotFound maps "no row" to ErrDomainNotFound.
func domainNotFound(err error) error {
	if noRows(err) {
		return mailstore.ErrDomainNotFound
	}
	return err
}

// Domain implements mailstore.Store.
func (s *Store) Domain(ctx context.Context, partnerID int64, name string) (mailstore.Domain, error) {
	var d mailstore.Domain
	err := s.read(ctx, func(tx pgx.Tx) (err error) {
		d, err = scanDomain(tx.QueryRow(ctx, `SELECT `+domainColumns+` FROM domains WHERE name = $1 AND partner_id = $2`, name, partnerID))
		return domainNotFound(err)
	})
	if err != nil {
		return mailstore.Domain{}, fmt.Errorf("domain %s: %w", name, err)
	}
	return d, nil
}

// DomainByID implements mailstore.Store.
func (s *Store) DomainByID(ctx context.Context, partnerID int64, id int64) (mailstore.Domain, error) {
	var d mailstore.Domain
	err := s.read(ctx, func(tx pgx.Tx) (err error) {
		d, err = scanDomain(tx.QueryRow(ctx, `SELECT `+domainColumns+` FROM domains WHERE id = $1 AND partner_id = $2`, id, partnerID))
		return domainNotFound(err)
	})
	if err != nil {
		return mailstore.Domain{}, fmt.Errorf("domain %d: %w", id, err)
	}
	return d, nil
}

// changeDomain sets columns of a partner's domain with one UPDATE (set
// names its arguments from $3 on) and answers the row as it is then; then,
// if given, runs also in the same transaction.
func (s *Store) changeDomain(ctx context.Context, partnerID int64, name, set string, args []any, also func(tx pgx.Tx, d mailstore.Domain) error) (mailstore.Domain, error) {
	var d mailstore.Domain
	err := s.write(ctx, func(tx pgx.Tx) (err error) {
		d, err = scanDomain(tx.QueryRow(ctx,
			`UPDATE domains SET `+set+` WHERE name = $1 AND partner_id = $2 RETURNING `+domainColumns,
			append([]any{name, partnerID}, args...)...))
		if err != nil {
			return domainNotFound(err)
		}
		if also != nil {
			return also(tx, d)
		}
		return nil
	})
	if err != nil {
		return mailstore.Domain{}, fmt.Errorf("domain %s: %w", name, err)
	}
	return d, nil
}

// ApplyPlan implements mailstore.Store.
func (s *Store) ApplyPlan(ctx context.Context, partnerID int64, name string, plan mailstore.Plan) (mailstore.Domain, error) {
	return s.changeDomain(ctx, partnerID, name,
		`plan = $3, quota_mb = $4, retention_days = $5, transfer_monthly_mb = $6`,
		[]any{plan.Name, plan.QuotaMB, plan.RetentionDays, plan.TransferMonthlyMB},
		func(tx pgx.Tx, d mailstore.Domain) error {
			// Every mailbox of the domain gets the plan's quota, a
			// mailbox's own quota included (bbolt does the same); the
			// domain's row lock, taken above, orders this after any
			// CreateMailbox that read the old quota.
			_, err := tx.Exec(ctx, `UPDATE mailboxes SET quota_mb = $2 WHERE domain_id = $1 AND quota_mb <> $2`, d.ID, plan.QuotaMB)
			return err
		})
}

// SetDomainLimits implements mailstore.Store.
func (s *Store) SetDomainLimits(ctx context.Context, partnerID int64, name string, l mailstore.DomainLimits) (mailstore.Domain, error) {
	// A limit lowered below the count deletes nothing: the conditional
	// UPDATEs of CreateMailbox and CreateAlias then take no slot.
	return s.changeDomain(ctx, partnerID, name,
		`max_mailboxes = COALESCE($3, max_mailboxes), max_aliases = COALESCE($4, max_aliases)`,
		[]any{l.MaxMailboxes, l.MaxAliases}, nil)
}

// SetSpamFilter implements mailstore.Store.
func (s *Store) SetSpamFilter(ctx context.Context, partnerID int64, name, filter string) (mailstore.Domain, error) {
	if filter != "" && !mailstore.ValidSpamFilter(filter) {
		return mailstore.Domain{}, fmt.Errorf("spam filter %q: %w", filter, mailstore.ErrInvalidArgument)
	}
	return s.changeDomain(ctx, partnerID, name, `spam_filter = $3`, []any{filter}, nil)
}

// SetRetention implements mailstore.Store.
func (s *Store) SetRetention(ctx context.Context, partnerID int64, name string, days int64) (mailstore.Domain, error) {
	return s.changeDomain(ctx, partnerID, name, `retention_days = $3`, []any{days}, nil)
}

// SetTransferCap implements mailstore.Store.
func (s *Store) SetTransferCap(ctx context.Context, partnerID int64, name string, mb int64) (mailstore.Domain, error) {
	return s.changeDomain(ctx, partnerID, name, `transfer_monthly_mb = $3`, []any{mb}, nil)
}

// SetSuspended implements mailstore.Store.
func (s *Store) SetSuspended(ctx context.Context, partnerID int64, name string, suspended bool) (mailstore.Domain, error) {
	typ := mailstore.EventDomainResumed
	if suspended {
		typ = mailstore.EventDomainSuspended
	}
	// The old state is read in the UPDATE (a self-join under the row
	// lock), so that a repeat records no event.
	return s.changeDomainEvent(ctx, partnerID, name, `suspended = $3`, []any{suspended},
		`suspended <> $3`, func(d mailstore.Domain) mailstore.Event {
			return mailstore.NewDomainEvent(typ, d, s.now())
		})
}

// changeDomainEvent is changeDomain that also records the event made by
// event when the row matched changed (when before, a condition on the
// row as it was, holds).
func (s *Store) changeDomainEvent(ctx context.Context, partnerID int64, name, set string, args []any, before string, event func(mailstore.Domain) mailstore.Event) (mailstore.Domain, error) {
	var d mailstore.Domain
	err := s.write(ctx, func(tx pgx.Tx) error {
		var changed bool
		err := tx.QueryRow(ctx, `SELECT `+before+` FROM domains WHERE name = $1 AND partner_id = $2 FOR NO KEY UPDATE`,
			append([]any{name, partnerID}, args...)...).Scan(&changed)
		if err != nil {
			return domainNotFound(err)
		}
		d, err = scanDomain(tx.QueryRow(ctx,
			`UPDATE domains SET `+set+` WHERE name = $1 AND partner_id = $2 RETURNING `+domainColumns,
			append([]any{name, partnerID}, args...)...))
		if err != nil {
			return domainNotFound(err)
		}
		if changed {
			_, err = addEvents(ctx, tx, event(d))
		}
		return err
	})
	if err != nil {
		return mailstore.Domain{}, fmt.Errorf("domain %s: %w", name, err)
	}
	return d, nil
}

// DeleteDomain implements mailstore.Store.
func (s *Store) DeleteDomain(ctx context.Context, partnerID int64, name string, force bool) error {
	var gone []int64 // the mailboxes deleted, whose sessions are told
	err := s.write(ctx, func(tx pgx.Tx) error {
		gone = nil // fn may run again
		// The partner's row first, then the name's claims lock, as
		// CreateDomain takes them. An error below rolls the count back.
		if _, err := tx.Exec(ctx, `UPDATE partners SET domain_count = domain_count - 1 WHERE id = $1`, partnerID); err != nil {
			return fmt.Errorf("count partner's domains: %w", err)
		}
		if err := lockName(ctx, tx, name); err != nil {
			return err
		}
		// The domain's row lock makes every create in it wait, and then
		// find the domain gone; counts read under it are final.
		var id, mailboxes, aliases int64
		var live bool
		err := tx.QueryRow(ctx, `
			SELECT id, mailbox_count, alias_count, live FROM domains
			WHERE name = $1 AND partner_id = $2 FOR UPDATE`, name, partnerID).Scan(&id, &mailboxes, &aliases, &live)
		if err != nil {
			return domainNotFound(err)
		}
		if (mailboxes > 0 || aliases > 0) && !force {
			return mailstore.ErrDomainNotEmpty
		}
		rows, _ := tx.Query(ctx, `SELECT id FROM mailboxes WHERE domain_id = $1 ORDER BY id FOR UPDATE`, id)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("lock mailboxes: %w", err)
		}
		// The domain row goes, so its message counters need no update.
		if _, _, err := dropMailboxes(ctx, tx, ids); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM aliases WHERE domain_id = $1`, id); err != nil {
			return fmt.Errorf("delete aliases: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM addresses WHERE domain_id = $1`, id); err != nil {
			return fmt.Errorf("free addresses: %w", err)
		}
		// Its DKIM keys and transfer history go with it (ON DELETE
		// CASCADE); its queued mail stays: the queue names the domain by
		// id without a foreign key, and mail in flight outlives it.
		if _, err := tx.Exec(ctx, `DELETE FROM domains WHERE id = $1`, id); err != nil {
			return err
		}
		gone = ids
		if live {
			// The next claim of the name, if any, is live now.
			return relive(ctx, tx, name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete domain %s: %w", name, err)
	}
	s.notify(gone...)
	return nil
}

// dropMailboxes deletes mailboxes (locked by the caller) with their
// folders, change logs and messages, frees the messages' bodies, and
// answers how many messages and bytes went, for the caller to take off
// its domain. Addresses are the caller's.
func dropMailboxes(ctx context.Context, tx pgx.Tx, mailboxIDs []int64) (msgs, size int64, err error) {
	if len(mailboxIDs) == 0 {
		return 0, 0, nil
	}
	// Folder rows first: a delivery that holds one (it takes UIDs from
	// it) commits before the messages are read, and one that comes later
	// finds the folder gone. Without the lock, the cascade from folders
	// would delete its message without freeing the body.
	rows, _ := tx.Query(ctx, `SELECT id FROM folders WHERE mailbox_id = ANY($1) ORDER BY id FOR UPDATE`, mailboxIDs)
	folders, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, 0, fmt.Errorf("lock folders: %w", err)
	}
	drops := map[int64]int64{}
	if len(folders) > 0 {
		rows, _ := tx.Query(ctx, `DELETE FROM messages WHERE folder_id = ANY($1) RETURNING blob_id, size`, folders)
		var blob, n int64
		if _, err := pgx.ForEachRow(rows, []any{&blob, &n}, func() error {
			drops[blob]++
			msgs++
			size += n
			return nil
		}); err != nil {
			return 0, 0, fmt.Errorf("delete messages: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM changes WHERE folder_id = ANY($1)`, folders); err != nil {
			return 0, 0, fmt.Errorf("delete change logs: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM folders WHERE id = ANY($1)`, folders); err != nil {
			return 0, 0, fmt.Errorf("delete folders: %w", err)
		}
	}
	if err := unrefBlobs(ctx, tx, drops); err != nil {
		return 0, 0, err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM mailboxes WHERE id = ANY($1)`, mailboxIDs); err != nil {
		return 0, 0, fmt.Errorf("delete mailboxes: %w", err)
	}
	return msgs, size, nil
}

// DomainUsage implements mailstore.Store.
func (s *Store) DomainUsage(ctx context.Context, partnerID int64, name string, month string) (mailstore.DomainUsage, error) {
	var u mailstore.DomainUsage
	err := s.read(ctx, func(tx pgx.Tx) error {
		var ds domainScan
		u.Transfer = mailstore.Transfer{Month: month}
		err := tx.QueryRow(ctx, `
			SELECT `+domainCols("d")+`, COALESCE(t.in_bytes, 0), COALESCE(t.out_bytes, 0)
			FROM domains d LEFT JOIN LATERAL (
				SELECT sum(in_bytes)::bigint AS in_bytes, sum(out_bytes)::bigint AS out_bytes
				FROM transfer WHERE domain_id = d.id AND month = $3) t ON true
			WHERE d.name = $1 AND d.partner_id = $2`, name, partnerID, month).
			Scan(append(ds.dest(), &u.Transfer.InBytes, &u.Transfer.OutBytes)...)
		if err != nil {
			return domainNotFound(err)
		}
		u.Domain = ds.done()
		return nil
	})
	if err != nil {
		return mailstore.DomainUsage{}, fmt.Errorf("usage of domain %s: %w", name, err)
	}
	return u, nil
}

// putDKIMKeys stores a domain's keys (none: nothing) in the order given
// and answers them as stored; a key without selector or private key is
// ErrInvalidArgument.
func putDKIMKeys(ctx context.Context, tx pgx.Tx, domainID int64, keys []mailstore.DKIMKey) ([]mailstore.DKIMKey, error) {
	out := make([]mailstore.DKIMKey, len(keys))
	for i, k := range keys {
		if k.Selector == "" || len(k.Private) == 0 {
			return nil, fmt.Errorf("DKIM key %d: no selector or private key: %w", i, mailstore.ErrInvalidArgument)
		}
		k.Private = bytes.Clone(k.Private)
		k.CreatedAt = mailstore.UTC(k.CreatedAt)
		out[i] = k
	}
	for i, k := range out {
		if _, err := tx.Exec(ctx, `
			INSERT INTO dkim_keys (domain_id, position, selector, algorithm, private, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, domainID, i, k.Selector, k.Algorithm, k.Private, k.CreatedAt); err != nil {
			return nil, fmt.Errorf("store DKIM key %s: %w", k.Selector, err)
		}
	}
	return out, nil
}
