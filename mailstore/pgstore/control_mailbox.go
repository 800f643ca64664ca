package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// Mailboxes and aliases. A create takes its slot in the domain with one
// conditional UPDATE of the domain's counter (which also queues the
// creates of one domain on its row), then claims the address in the
// addresses table, whose primary key keeps a mailbox address and an alias
// source apart under racing creates on any node.

// domainOf returns what follows an address's last "@".
func domainOf(addr string) string {
	return addr[strings.LastIndexByte(addr, '@')+1:]
}

// inDomain reports whether addr is local@domain or "@domain". An address
// without "@" is in no domain, even if it is the domain's name.
func inDomain(addr, domain string) bool {
	at := strings.LastIndexByte(addr, '@')
	return at >= 0 && addr[at+1:] == domain
}

// ownDomain answers nil if the partner has the domain, else
// ErrDomainNotFound: the first check of a create that fails, so that it
// answers what bbolt does (an unknown domain before anything else).
func ownDomain(ctx context.Context, tx pgx.Tx, partnerID int64, name string) error {
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM domains WHERE name = $1 AND partner_id = $2)`, name, partnerID).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return mailstore.ErrDomainNotFound
	}
	return nil
}

// addressTaken reports whether an address is a mailbox or an alias
// source in the partner's claim of its domain.
func addressTaken(ctx context.Context, tx pgx.Tx, partnerID int64, domainName, address string) (bool, error) {
	var taken bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM addresses
		WHERE domain_id = (SELECT id FROM domains WHERE name = $1 AND partner_id = $2) AND address = $3)`,
		domainName, partnerID, address).Scan(&taken)
	return taken, err
}

// ownClaim is the WHERE condition of a partner's row (mailboxes,
// aliases) by address: in the partner's own claim of the address's
// domain ($2 the partner, $3 the domain's name), by the claim's
// (domain_id, address) key.
const ownClaim = `domain_id = (SELECT id FROM domains WHERE name = $3 AND partner_id = $2)`

// claimAddress enters an address in the namespace; a unique violation
// (the address is taken, or was taken by a create that committed
// meanwhile) answers exists.
func claimAddress(ctx context.Context, tx pgx.Tx, address string, domainID int64, kind string, targetID int64, exists error) error {
	_, err := tx.Exec(ctx, `INSERT INTO addresses (address, domain_id, kind, target_id) VALUES ($1, $2, $3, $4)`,
		address, domainID, kind, targetID)
	if isUnique(err, "") {
		return exists
	}
	return err
}

// CreateMailbox implements mailstore.Store.
func (s *Store) CreateMailbox(ctx context.Context, partnerID int64, domainName, email, passwordHash string, now time.Time) (mailstore.Mailbox, error) {
	var m mailstore.Mailbox
	err := s.write(ctx, func(tx pgx.Tx) error {
		if !inDomain(email, domainName) || strings.HasPrefix(email, "@") {
			if err := ownDomain(ctx, tx, partnerID, domainName); err != nil {
				return err
			}
			return mailstore.ErrWrongDomain
		}
		// A limit of 0 (or below) is none, as in bbolt.
		var domainID, quota int64
		err := tx.QueryRow(ctx, `
			UPDATE domains SET mailbox_count = mailbox_count + 1
			WHERE name = $1 AND partner_id = $2 AND (max_mailboxes <= 0 OR mailbox_count < max_mailboxes)
			RETURNING id, quota_mb`, domainName, partnerID).Scan(&domainID, &quota)
		if noRows(err) {
			// No slot: say why, in bbolt's order (a taken address is
			// ErrEmailExists even at the limit).
			if err := ownDomain(ctx, tx, partnerID, domainName); err != nil {
				return err
			}
			if taken, err := addressTaken(ctx, tx, partnerID, domainName, email); err != nil || taken {
				if err == nil {
					err = mailstore.ErrEmailExists
				}
				return err
			}
			return mailstore.ErrMailboxLimit
		}
		if err != nil {
			return err
		}
		n := len(mailstore.DefaultFolders)
		t := mailstore.UTC(now)
		m, err = scanMailbox(tx.QueryRow(ctx, `
			INSERT INTO mailboxes (domain_id, partner_id, email, password_hash, quota_mb, folder_count,
				created_at, password_changed_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
			RETURNING `+mailboxColumns,
			domainID, partnerID, email, passwordHash, quota, n, t))
		if isUnique(err, "") {
			return mailstore.ErrEmailExists
		}
		if err != nil {
			return err
		}
		if err := claimAddress(ctx, tx, email, domainID, "m", m.ID, mailstore.ErrEmailExists); err != nil {
			return err
		}
		names, uses := make([]string, n), make([]string, n)
		for i, f := range mailstore.DefaultFolders {
			names[i], uses[i] = f[0], f[1]
		}
		// UIDVALIDITY from the store-wide sequence, so that a folder made
		// again under an old name has a new one.
		if _, err := tx.Exec(ctx, `
			INSERT INTO folders (mailbox_id, name, special_use, uid_validity)
			SELECT $1, f.name, f.special_use, nextval('uid_validity_seq')
			FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS f(name, special_use, n)
			ORDER BY f.n`, m.ID, names, uses); err != nil {
			return fmt.Errorf("create folders: %w", err)
		}
		// Subscribed, for clients that show only subscribed folders.
		// (Migration 009's trigger has done it already, from the
		// folders' subscribed column; it goes once every node is past 9.)
		if _, err := tx.Exec(ctx, `INSERT INTO subscriptions (mailbox_id, name)
			SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`, m.ID, names); err != nil {
			return fmt.Errorf("subscribe folders: %w", err)
		}
		return nil
	})
	if err != nil {
		return mailstore.Mailbox{}, fmt.Errorf("create mailbox %s: %w", email, err)
	}
	return m, nil
}

// listTotal reads a list's total from the domain counter named by column
// (mailbox_count or alias_count): one domain's, which must be the
// partner's, or the sum over the partner's domains (domainID 0), in the
// snapshot the list is read in.
func listTotal(ctx context.Context, tx pgx.Tx, partnerID, domainID int64, column string) (int64, error) {
	var total int64
	if domainID == 0 {
		err := tx.QueryRow(ctx, `SELECT COALESCE(sum(`+column+`), 0)::bigint FROM domains WHERE partner_id = $1`, partnerID).Scan(&total)
		return total, err
	}
	err := tx.QueryRow(ctx, `SELECT `+column+` FROM domains WHERE id = $1 AND partner_id = $2`, domainID, partnerID).Scan(&total)
	return total, domainNotFound(err)
}

// listScope is the WHERE clause of a list of all the partner's rows
// (domainID 0) or of one domain's, each read through its own index.
func listScope(partnerID, domainID int64) (string, int64) {
	if domainID == 0 {
		return `partner_id = $1`, partnerID
	}
	return `domain_id = $1`, domainID
}

// deferredOffset is the offset from which a page of mailboxes is read
// by its ids first: below it, the rows before the page are few and the
// join's look-up of each row of the page by id would cost more than it
// saves.
const deferredOffset = 500

// Mailboxes implements mailstore.Store.
func (s *Store) Mailboxes(ctx context.Context, partnerID int64, domainID int64, p mailstore.Page) ([]mailstore.MailboxEntry, int, error) {
	var out []mailstore.MailboxEntry
	var total int64
	limit, offset := pageArgs(p)
	err := s.read(ctx, func(tx pgx.Tx) (err error) {
		if total, err = listTotal(ctx, tx, partnerID, domainID, "mailbox_count"); err != nil {
			return err
		}
		where, arg := listScope(partnerID, domainID)
		query := `SELECT id, domain_id, partner_id, email, created_at FROM mailboxes
			WHERE ` + where + ` ORDER BY id LIMIT $2 OFFSET $3`
		if offset >= deferredOffset {
			// Far into the list, the page's ids come from the scope's
			// (..., id) index alone and only its own rows from the
			// table, so the rows before it cost index entries, not
			// table rows (bench/README.md, "A provider-size store").
			query = `SELECT m.id, m.domain_id, m.partner_id, m.email, m.created_at
				FROM (SELECT id FROM mailboxes WHERE ` + where + ` ORDER BY id LIMIT $2 OFFSET $3) page
				JOIN mailboxes m USING (id) ORDER BY m.id`
		}
		rows, _ := tx.Query(ctx, query, arg, limit, offset)
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (mailstore.MailboxEntry, error) {
			var e mailstore.MailboxEntry
			err := r.Scan(&e.ID, &e.DomainID, &e.PartnerID, &e.Email, &e.CreatedAt)
			e.CreatedAt = e.CreatedAt.UTC()
			return e, err
		})
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("mailboxes of partner %d, domain %d: %w", partnerID, domainID, err)
	}
	if out == nil {
		out = []mailstore.MailboxEntry{}
	}
	return out, int(total), nil
}

func mailboxNotFound(err error) error {
	if noRows(err) {
		return mailstore.ErrMailboxNotFound
	}
	return err
}

// Mailbox implements mailstore.Store.
func (s *Store) Mailbox(ctx context.Context, partnerID int64, email string) (mailstore.Mailbox, error) {
	var m mailstore.Mailbox
	err := s.read(ctx, func(tx pgx.Tx) (err error) {
		m, err = scanMailbox(tx.QueryRow(ctx, `SELECT `+mailboxColumns+` FROM mailboxes WHERE email = $1 AND partner_id = $2 AND `+ownClaim,
			email, partnerID, domainOf(email)))
		return mailboxNotFound(err)
	})
	if err != nil {
		return mailstore.Mailbox{}, fmt.Errorf("mailbox %s: %w", email, err)
	}
	return m, nil
}

// changeMailbox sets columns of a partner's mailbox with one UPDATE (set
// names its arguments from $4 on) and answers the row as it is then.
func (s *Store) changeMailbox(ctx context.Context, partnerID int64, email, set string, args ...any) (mailstore.Mailbox, error) {
	var m mailstore.Mailbox
	err := s.write(ctx, func(tx pgx.Tx) (err error) {
		m, err = scanMailbox(tx.QueryRow(ctx,
			`UPDATE mailboxes SET `+set+` WHERE email = $1 AND partner_id = $2 AND `+ownClaim+` RETURNING `+mailboxColumns,
			append([]any{email, partnerID, domainOf(email)}, args...)...))
		return mailboxNotFound(err)
	})
	if err != nil {
		return mailstore.Mailbox{}, fmt.Errorf("mailbox %s: %w", email, err)
	}
	return m, nil
}

// SetPassword implements mailstore.Store.
func (s *Store) SetPassword(ctx context.Context, partnerID int64, email, passwordHash string, now time.Time) (mailstore.Mailbox, error) {
	return s.changeMailbox(ctx, partnerID, email, `password_hash = $4, password_changed_at = $5`, passwordHash, mailstore.UTC(now))
}

// SetQuota implements mailstore.Store.
func (s *Store) SetQuota(ctx context.Context, partnerID int64, email string, mb int64) (mailstore.Mailbox, error) {
	return s.changeMailbox(ctx, partnerID, email, `quota_mb = $4`, mb)
}

// DeleteMailbox implements mailstore.Store.
func (s *Store) DeleteMailbox(ctx context.Context, partnerID int64, email string) error {
	var id int64
	err := s.write(ctx, func(tx pgx.Tx) error {
		var domainID int64
		err := tx.QueryRow(ctx, `SELECT id, domain_id FROM mailboxes WHERE email = $1 AND partner_id = $2 AND `+ownClaim,
			email, partnerID, domainOf(email)).Scan(&id, &domainID)
		if err != nil {
			return mailboxNotFound(err)
		}
		// Parents first (control_domain.go): the domain's row, whose
		// counters this changes, then the mailbox's. A mailbox deleted
		// meanwhile is not found; the rollback undoes the count.
		if _, err := tx.Exec(ctx, `UPDATE domains SET mailbox_count = mailbox_count - 1 WHERE id = $1`, domainID); err != nil {
			return fmt.Errorf("count domain's mailboxes: %w", err)
		}
		var locked bool
		if err := tx.QueryRow(ctx, `SELECT true FROM mailboxes WHERE id = $1 FOR UPDATE`, id).Scan(&locked); err != nil {
			return mailboxNotFound(err)
		}
		msgs, size, err := dropMailboxes(ctx, tx, []int64{id})
		if err != nil {
			return err
		}
		if msgs > 0 {
			if _, err := tx.Exec(ctx, `
				UPDATE domains SET message_count = message_count - $2, used_bytes = used_bytes - $3
				WHERE id = $1`, domainID, msgs, size); err != nil {
				return fmt.Errorf("count domain's messages: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM addresses WHERE domain_id = $1 AND address = $2 AND kind = 'm'`, domainID, email); err != nil {
			return fmt.Errorf("free address: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete mailbox %s: %w", email, err)
	}
	s.notify(id)
	return nil
}

const aliasColumns = `id, domain_id, partner_id, source, destination, created_at`

func scanAlias(row pgx.Row) (mailstore.Alias, error) {
	var a mailstore.Alias
	if err := row.Scan(&a.ID, &a.DomainID, &a.PartnerID, &a.Source, &a.Destination, &a.CreatedAt); err != nil {
		return mailstore.Alias{}, err
	}
	a.CreatedAt = a.CreatedAt.UTC()
	return a, nil
}

// CreateAlias implements mailstore.Store.
func (s *Store) CreateAlias(ctx context.Context, partnerID int64, domainName, source, destination string, now time.Time) (mailstore.Alias, error) {
	var a mailstore.Alias
	err := s.write(ctx, func(tx pgx.Tx) error {
		if !inDomain(source, domainName) || source == destination {
			if err := ownDomain(ctx, tx, partnerID, domainName); err != nil {
				return err
			}
			if source == destination && inDomain(source, domainName) {
				return fmt.Errorf("destination is the source: %w", mailstore.ErrInvalidArgument)
			}
			return mailstore.ErrWrongDomain
		}
		var domainID int64
		err := tx.QueryRow(ctx, `
			UPDATE domains SET alias_count = alias_count + 1
			WHERE name = $1 AND partner_id = $2 AND (max_aliases <= 0 OR alias_count < max_aliases)
			RETURNING id`, domainName, partnerID).Scan(&domainID)
		if noRows(err) {
			if err := ownDomain(ctx, tx, partnerID, domainName); err != nil {
				return err
			}
			if taken, err := addressTaken(ctx, tx, partnerID, domainName, source); err != nil || taken {
				if err == nil {
					err = mailstore.ErrAliasExists
				}
				return err
			}
			return mailstore.ErrAliasLimit
		}
		if err != nil {
			return err
		}
		a, err = scanAlias(tx.QueryRow(ctx, `
			INSERT INTO aliases (domain_id, partner_id, source, destination, created_at)
			VALUES ($1, $2, $3, $4, $5) RETURNING `+aliasColumns,
			domainID, partnerID, source, destination, mailstore.UTC(now)))
		if isUnique(err, "") {
			return mailstore.ErrAliasExists
		}
		if err != nil {
			return err
		}
		return claimAddress(ctx, tx, source, domainID, "a", a.ID, mailstore.ErrAliasExists)
	})
	if err != nil {
		return mailstore.Alias{}, fmt.Errorf("create alias %s: %w", source, err)
	}
	return a, nil
}

// Aliases implements mailstore.Store.
func (s *Store) Aliases(ctx context.Context, partnerID int64, domainID int64, p mailstore.Page) ([]mailstore.Alias, int, error) {
	var out []mailstore.Alias
	var total int64
	limit, offset := pageArgs(p)
	err := s.read(ctx, func(tx pgx.Tx) (err error) {
		if total, err = listTotal(ctx, tx, partnerID, domainID, "alias_count"); err != nil {
			return err
		}
		where, arg := listScope(partnerID, domainID)
		rows, _ := tx.Query(ctx, `SELECT `+aliasColumns+` FROM aliases WHERE `+where+` ORDER BY id LIMIT $2 OFFSET $3`,
			arg, limit, offset)
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (mailstore.Alias, error) { return scanAlias(r) })
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("aliases of partner %d, domain %d: %w", partnerID, domainID, err)
	}
	if out == nil {
		out = []mailstore.Alias{}
	}
	return out, int(total), nil
}

// DeleteAlias implements mailstore.Store.
func (s *Store) DeleteAlias(ctx context.Context, partnerID int64, source string) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		// The domain's row first (parents first); an alias deleted
		// meanwhile is then not found below, and the rollback undoes the
		// count.
		var domainID int64
		err := tx.QueryRow(ctx, `
			UPDATE domains SET alias_count = alias_count - 1
			WHERE id = (SELECT domain_id FROM aliases WHERE source = $1 AND partner_id = $2 AND `+ownClaim+`)
			RETURNING id`, source, partnerID, domainOf(source)).Scan(&domainID)
		if noRows(err) {
			return mailstore.ErrAliasNotFound
		}
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM aliases WHERE source = $1 AND partner_id = $2 AND domain_id = $3`, source, partnerID, domainID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return mailstore.ErrAliasNotFound
		}
		if _, err := tx.Exec(ctx, `DELETE FROM addresses WHERE domain_id = $1 AND address = $2 AND kind = 'a'`, domainID, source); err != nil {
			return fmt.Errorf("free address: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete alias %s: %w", source, err)
	}
	return nil
}
