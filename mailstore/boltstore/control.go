package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

// CreatePartner implements Control.
func (s *Store) CreatePartner(ctx context.Context, name string, now time.Time) (mailstore.Partner, error) {
	if _, err := strconv.ParseUint(name, 10, 64); name == "" || err == nil {
		return mailstore.Partner{}, fmt.Errorf("create partner %q: name is empty or a number: %w", name, mailstore.ErrInvalidArgument)
	}
	var p mailstore.Partner
	err := s.update(ctx, func(tx *bolt.Tx) error {
		names := tx.Bucket(bPartnerNames)
		if names.Get([]byte(name)) != nil {
			return mailstore.ErrPartnerExists
		}
		b := tx.Bucket(bPartners)
		id, err := nextID(b)
		if err != nil {
			return err
		}
		p = mailstore.Partner{ID: id, Name: name, CreatedAt: mailstore.UTC(now)}
		if err := names.Put([]byte(name), id8(id)); err != nil {
			return err
		}
		return putJSON(b, id8(id), p)
	})
	if err != nil {
		return mailstore.Partner{}, fmt.Errorf("create partner %q: %w", name, err)
	}
	return p, nil
}

// Partners implements Control.
func (s *Store) Partners(ctx context.Context) ([]mailstore.Partner, error) {
	out := []mailstore.Partner{}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bPartners).ForEach(func(k, v []byte) error {
			var p mailstore.Partner
			if getJSON(tx.Bucket(bPartners), k, &p) {
				out = append(out, p)
			}
			return nil
		})
	})
	return out, err
}

// PartnerByName implements Control.
func (s *Store) PartnerByName(ctx context.Context, name string) (mailstore.Partner, error) {
	var p mailstore.Partner
	err := s.view(ctx, func(tx *bolt.Tx) error {
		var ok bool
		p, ok = partnerByName(tx, name)
		if !ok {
			return mailstore.ErrPartnerNotFound
		}
		return nil
	})
	return p, err
}

func partnerByName(tx *bolt.Tx, name string) (mailstore.Partner, bool) {
	var p mailstore.Partner
	if id := tx.Bucket(bPartnerNames).Get([]byte(name)); id != nil {
		return p, getJSON(tx.Bucket(bPartners), id, &p)
	}
	if n, err := strconv.ParseInt(name, 10, 64); err == nil {
		return p, getJSON(tx.Bucket(bPartners), id8(n), &p)
	}
	return p, false
}

func partnerExists(tx *bolt.Tx, id int64) bool {
	return tx.Bucket(bPartners).Get(id8(id)) != nil
}

// SetPartnerLimits implements Control.
func (s *Store) SetPartnerLimits(ctx context.Context, partnerID int64, l mailstore.PartnerLimits) (mailstore.Partner, error) {
	if l.MaxDomains != nil && *l.MaxDomains < 0 {
		return mailstore.Partner{}, fmt.Errorf("partner %d limits: max domains %d: %w", partnerID, *l.MaxDomains, mailstore.ErrInvalidArgument)
	}
	var p mailstore.Partner
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bPartners)
		if !getJSON(b, id8(partnerID), &p) {
			return mailstore.ErrPartnerNotFound
		}
		if l.MaxDomains != nil {
			p.MaxDomains = *l.MaxDomains
		}
		return putJSON(b, id8(partnerID), p)
	})
	if err != nil {
		return mailstore.Partner{}, fmt.Errorf("partner %d limits: %w", partnerID, err)
	}
	return p, nil
}

// partnerDomainCount is how many domains a partner has (partner_counts).
func partnerDomainCount(tx *bolt.Tx, partnerID int64) int64 {
	return int64(partnerCount(tx, partnerID, bPartnerDomains))
}

// AddAPIKey implements Control.
func (s *Store) AddAPIKey(ctx context.Context, partnerID int64, k mailstore.APIKey) (mailstore.APIKey, error) {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if !partnerExists(tx, partnerID) {
			return mailstore.ErrPartnerNotFound
		}
		b := tx.Bucket(bKeys)
		id, err := nextID(b)
		if err != nil {
			return err
		}
		k.ID, k.PartnerID, k.CreatedAt = id, partnerID, mailstore.UTC(k.CreatedAt)
		if tx.Bucket(bKeyLookup).Get([]byte(k.Lookup)) != nil {
			return fmt.Errorf("key lookup collision: %w", mailstore.ErrInvalidArgument)
		}
		if err := tx.Bucket(bKeyLookup).Put([]byte(k.Lookup), id8(id)); err != nil {
			return err
		}
		if err := tx.Bucket(bPartnerKeys).Put(pair(partnerID, id), nil); err != nil {
			return err
		}
		return putJSON(b, id8(id), k)
	})
	if err != nil {
		return mailstore.APIKey{}, fmt.Errorf("add API key: %w", err)
	}
	return k, nil
}

// APIKeys implements Control.
func (s *Store) APIKeys(ctx context.Context, partnerID int64) ([]mailstore.APIKey, error) {
	out := []mailstore.APIKey{}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if !partnerExists(tx, partnerID) {
			return mailstore.ErrPartnerNotFound
		}
		keys := tx.Bucket(bKeys)
		return eachChild(tx.Bucket(bPartnerKeys), partnerID, 0, func(id []byte) {
			var k mailstore.APIKey
			if getJSON(keys, id, &k) {
				out = append(out, k)
			}
		})
	})
	return out, err
}

// APIKeyByLookup implements Control.
func (s *Store) APIKeyByLookup(ctx context.Context, lookup string) (mailstore.APIKey, error) {
	var k mailstore.APIKey
	err := s.view(ctx, func(tx *bolt.Tx) error {
		id := tx.Bucket(bKeyLookup).Get([]byte(lookup))
		if id == nil || !getJSON(tx.Bucket(bKeys), id, &k) {
			return mailstore.ErrKeyNotFound
		}
		return nil
	})
	return k, err
}

// RevokeAPIKey implements Control.
func (s *Store) RevokeAPIKey(ctx context.Context, keyID int64, now time.Time) (mailstore.APIKey, error) {
	var k mailstore.APIKey
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bKeys)
		if !getJSON(b, id8(keyID), &k) {
			return mailstore.ErrKeyNotFound
		}
		if k.Revoked {
			return nil
		}
		k.Revoked, k.RevokedAt = true, mailstore.UTC(now)
		return putJSON(b, id8(keyID), k)
	})
	if err != nil {
		return mailstore.APIKey{}, fmt.Errorf("revoke key %d: %w", keyID, err)
	}
	return k, nil
}

// eachChild calls fn with the child id of every partnerID|child key of an
// index bucket, in id order, from the first child after `after`.
func eachChild(idx *bolt.Bucket, parent int64, after int64, fn func(child []byte)) error {
	prefix := id8(parent)
	c := idx.Cursor()
	for k, _ := c.Seek(pair(parent, after+1)); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		fn(k[8:])
	}
	return nil
}

// page walks a parent|child index with limit and offset, decoding each
// child from records into T, and counts the total.
func page[T any](idx, records *bolt.Bucket, parent int64, p mailstore.Page) ([]T, int) {
	return countedPage[T](idx, records, parent, p, -1)
}

// countedPage is page for an index whose total the caller has from a
// counter (partner_counts, a domain's record), or -1: with it the walk
// stops at the page's last row.
func countedPage[T any](idx, records *bolt.Bucket, parent int64, p mailstore.Page, counted int) ([]T, int) {
	prefix := id8(parent)
	out := []T{}
	total := 0
	c := idx.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		total++
		if total <= p.Offset {
			continue
		}
		if p.Limit > 0 && len(out) >= p.Limit {
			if counted >= 0 {
				return out, counted
			}
			continue
		}
		var v T
		if getJSON(records, k[8:], &v) {
			out = append(out, v)
		}
	}
	if counted >= 0 {
		return out, counted
	}
	return out, total
}

func putDomain(tx *bolt.Tx, d mailstore.Domain) error {
	return putJSON(tx.Bucket(bDomains), id8(d.ID), d)
}

// CreateDomain implements Control.
func (s *Store) CreateDomain(ctx context.Context, partnerID int64, nd mailstore.NewDomain, now time.Time) (mailstore.Domain, error) {
	var d mailstore.Domain
	err := s.update(ctx, func(tx *bolt.Tx) error {
		var p mailstore.Partner
		if !getJSON(tx.Bucket(bPartners), id8(partnerID), &p) {
			return mailstore.ErrPartnerNotFound
		}
		claims := tx.Bucket(bDomainClaims)
		if claims.Get(claimKey(nd.Name, partnerID)) != nil {
			return mailstore.ErrDomainExists
		}
		// Another partner's unverified claim does not block; its
		// verified one does (the live claim is the verified one).
		if live, err := liveDomain(tx, nd.Name); err == nil && live.Verified {
			return mailstore.ErrDomainExists
		}
		// Counted only under a limit: the count walks the partner's domains.
		if p.MaxDomains > 0 && mailstore.LimitReached(p.MaxDomains, partnerDomainCount(tx, partnerID)) {
			return mailstore.ErrDomainLimit
		}
		if relatedVerified(tx, partnerID, nd.Name) {
			return mailstore.ErrDomainRelated
		}
		b := tx.Bucket(bDomains)
		id, err := nextID(b)
		if err != nil {
			return err
		}
		d = mailstore.Domain{
			ID: id, PartnerID: partnerID, Name: nd.Name, Plan: nd.Plan.Name,
			MaxMailboxes: nd.MaxMailboxes, MaxAliases: nd.MaxAliases,
			QuotaMB: nd.Plan.QuotaMB, RetentionDays: nd.Plan.RetentionDays,
			TransferMonthlyMB: nd.Plan.TransferMonthlyMB, CreatedAt: mailstore.UTC(now),
			VerifyToken: nd.VerifyToken,
		}
		if err := claims.Put(claimKey(nd.Name, partnerID), id8(id)); err != nil {
			return err
		}
		if err := partnerIndexPut(tx, bPartnerDomains, partnerID, id, nil); err != nil {
			return err
		}
		if _, err := putDKIMKeys(tx, id, nd.DKIMKeys); err != nil {
			return err
		}
		if err := putDomain(tx, d); err != nil {
			return err
		}
		// Live if no other claim is: a later claim never displaces one.
		names := tx.Bucket(bDomainNames)
		if names.Get([]byte(nd.Name)) == nil {
			return names.Put([]byte(nd.Name), id8(id))
		}
		return nil
	})
	if err != nil {
		return mailstore.Domain{}, fmt.Errorf("create domain %s: %w", nd.Name, err)
	}
	return d, nil
}

// Domains implements Control.
func (s *Store) Domains(ctx context.Context, partnerID int64, p mailstore.Page) ([]mailstore.Domain, int, error) {
	var out []mailstore.Domain
	var total int
	err := s.view(ctx, func(tx *bolt.Tx) error {
		out, total = countedPage[mailstore.Domain](tx.Bucket(bPartnerDomains), tx.Bucket(bDomains), partnerID, p,
			partnerCount(tx, partnerID, bPartnerDomains))
		return nil
	})
	return out, total, err
}

// Domain implements Control.
func (s *Store) Domain(ctx context.Context, partnerID int64, name string) (mailstore.Domain, error) {
	var d mailstore.Domain
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		d, err = domainOf(tx, partnerID, name)
		return err
	})
	return d, err
}

// DomainByID implements Control.
func (s *Store) DomainByID(ctx context.Context, partnerID int64, id int64) (mailstore.Domain, error) {
	var d mailstore.Domain
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if !getJSON(tx.Bucket(bDomains), id8(id), &d) || d.PartnerID != partnerID {
			return mailstore.ErrDomainNotFound
		}
		return nil
	})
	return d, err
}

// changeDomain loads a partner's domain, lets fn change it and stores it.
func (s *Store) changeDomain(ctx context.Context, partnerID int64, name string, fn func(tx *bolt.Tx, d *mailstore.Domain) error) (mailstore.Domain, error) {
	var d mailstore.Domain
	err := s.update(ctx, func(tx *bolt.Tx) (err error) {
		if d, err = domainOf(tx, partnerID, name); err != nil {
			return err
		}
		if err := fn(tx, &d); err != nil {
			return err
		}
		return putDomain(tx, d)
	})
	if err != nil {
		return mailstore.Domain{}, fmt.Errorf("domain %s: %w", name, err)
	}
	return d, nil
}

// ApplyPlan implements Control.
func (s *Store) ApplyPlan(ctx context.Context, partnerID int64, name string, plan mailstore.Plan) (mailstore.Domain, error) {
	return s.changeDomain(ctx, partnerID, name, func(tx *bolt.Tx, d *mailstore.Domain) error {
		d.Plan, d.QuotaMB = plan.Name, plan.QuotaMB
		d.RetentionDays, d.TransferMonthlyMB = plan.RetentionDays, plan.TransferMonthlyMB
		mbs := tx.Bucket(bMailboxes)
		var ids [][]byte
		eachChild(tx.Bucket(bDomainMailboxes), d.ID, 0, func(id []byte) { ids = append(ids, id) })
		for _, id := range ids {
			var m mailstore.Mailbox
			if !getJSON(mbs, id, &m) || m.QuotaMB == plan.QuotaMB {
				continue
			}
			m.QuotaMB = plan.QuotaMB
			if err := putJSON(mbs, id, m); err != nil {
				return err
			}
		}
		return nil
	})
}

// SetDomainLimits implements Control.
func (s *Store) SetDomainLimits(ctx context.Context, partnerID int64, name string, l mailstore.DomainLimits) (mailstore.Domain, error) {
	return s.changeDomain(ctx, partnerID, name, func(_ *bolt.Tx, d *mailstore.Domain) error {
		if l.MaxMailboxes != nil {
			d.MaxMailboxes = *l.MaxMailboxes
		}
		if l.MaxAliases != nil {
			d.MaxAliases = *l.MaxAliases
		}
		return nil
	})
}

// SetRetention implements Control.
func (s *Store) SetRetention(ctx context.Context, partnerID int64, name string, days int64) (mailstore.Domain, error) {
	return s.changeDomain(ctx, partnerID, name, func(_ *bolt.Tx, d *mailstore.Domain) error {
		d.RetentionDays = days
		return nil
	})
}

// SetTransferCap implements Control.
func (s *Store) SetTransferCap(ctx context.Context, partnerID int64, name string, mb int64) (mailstore.Domain, error) {
	return s.changeDomain(ctx, partnerID, name, func(_ *bolt.Tx, d *mailstore.Domain) error {
		d.TransferMonthlyMB = mb
		return nil
	})
}

// SetSuspended implements Control.
func (s *Store) SetSuspended(ctx context.Context, partnerID int64, name string, suspended bool) (mailstore.Domain, error) {
	return s.changeDomain(ctx, partnerID, name, func(tx *bolt.Tx, d *mailstore.Domain) error {
		if d.Suspended == suspended {
			return nil // repeated: no event
		}
		d.Suspended = suspended
		typ := mailstore.EventDomainResumed
		if suspended {
			typ = mailstore.EventDomainSuspended
		}
		e := mailstore.NewDomainEvent(typ, *d, s.now())
		return addEventTx(tx, &e)
	})
}

// DeleteDomain implements Control.
func (s *Store) DeleteDomain(ctx context.Context, partnerID int64, name string, force bool) error {
	err := s.deleting(ctx, func(tx *bolt.Tx) error {
		d, err := domainOf(tx, partnerID, name)
		if err != nil {
			return err
		}
		if (d.MailboxCount > 0 || d.AliasCount > 0) && !force {
			return mailstore.ErrDomainNotEmpty
		}
		var mids, aids [][]byte
		eachChild(tx.Bucket(bDomainMailboxes), d.ID, 0, func(id []byte) { mids = append(mids, id) })
		eachChild(tx.Bucket(bDomainAliases), d.ID, 0, func(id []byte) { aids = append(aids, id) })
		for _, id := range mids {
			var m mailstore.Mailbox
			if getJSON(tx.Bucket(bMailboxes), id, &m) {
				if err := s.deleteMailboxTx(tx, &d, m); err != nil {
					return err
				}
			}
		}
		for _, id := range aids {
			var a mailstore.Alias
			if getJSON(tx.Bucket(bAliases), id, &a) {
				if err := deleteAliasTx(tx, &d, a); err != nil {
					return err
				}
			}
		}
		// Its DKIM keys and transfer history go with the domain; its queued
		// mail does not (queue.go).
		if err := tx.Bucket(bDKIM).Delete(id8(d.ID)); err != nil {
			return err
		}
		c := tx.Bucket(bTransfer).Cursor()
		prefix := id8(d.ID)
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		if err := partnerIndexDelete(tx, bPartnerDomains, partnerID, d.ID); err != nil {
			return err
		}
		if err := unindexVerified(tx, d); err != nil {
			return err
		}
		if err := tx.Bucket(bDomainClaims).Delete(claimKey(d.Name, partnerID)); err != nil {
			return err
		}
		if err := tx.Bucket(bDomains).Delete(id8(d.ID)); err != nil {
			return err
		}
		if live := tx.Bucket(bDomainNames).Get([]byte(d.Name)); bytes.Equal(live, id8(d.ID)) {
			return relive(tx, d.Name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete domain %s: %w", name, err)
	}
	return nil
}

// DomainUsage implements Control.
func (s *Store) DomainUsage(ctx context.Context, partnerID int64, name string, month string) (mailstore.DomainUsage, error) {
	var u mailstore.DomainUsage
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		if u.Domain, err = domainOf(tx, partnerID, name); err != nil {
			return err
		}
		u.Transfer = transferOf(tx, u.Domain.ID, month)
		return nil
	})
	return u, err
}

func transferOf(tx *bolt.Tx, domainID int64, month string) mailstore.Transfer {
	t := mailstore.Transfer{Month: month}
	getJSON(tx.Bucket(bTransfer), transferKey(domainID, month), &t)
	return t
}

func transferKey(domainID int64, month string) []byte {
	return append(id8(domainID), month...)
}

// domainPart returns what follows the last "@".
func domainPart(addr string) string {
	return addr[strings.LastIndexByte(addr, '@')+1:]
}

// inDomain reports whether addr is local@domain or "@domain". An address
// without "@" is in no domain, even if it is the domain's name.
func inDomain(addr, domain string) bool {
	return strings.Contains(addr, "@") && domainPart(addr) == domain
}

// address index values: kind byte then id.
const (
	addrMailbox = 'm'
	addrAlias   = 'a'
)

func addrValue(kind byte, id int64) []byte { return append([]byte{kind}, id8(id)...) }

// CreateMailbox implements Control.
func (s *Store) CreateMailbox(ctx context.Context, partnerID int64, domainName, email, passwordHash string, now time.Time) (mailstore.Mailbox, error) {
	var m mailstore.Mailbox
	err := s.update(ctx, func(tx *bolt.Tx) (err error) {
		m, err = createMailboxTx(tx, partnerID, domainName, email, passwordHash, now)
		return err
	})
	if err != nil {
		return mailstore.Mailbox{}, fmt.Errorf("create mailbox %s: %w", email, err)
	}
	return m, nil
}

// createMailboxTx is CreateMailbox within tx (benchmarks load with it, many
// mailboxes to a transaction).
func createMailboxTx(tx *bolt.Tx, partnerID int64, domainName, email, passwordHash string, now time.Time) (mailstore.Mailbox, error) {
	d, err := domainOf(tx, partnerID, domainName)
	if err != nil {
		return mailstore.Mailbox{}, err
	}
	if !inDomain(email, d.Name) || strings.HasPrefix(email, "@") {
		return mailstore.Mailbox{}, mailstore.ErrWrongDomain
	}
	addrs := tx.Bucket(bDomainAddresses)
	if addrs.Get(addrKey(d.ID, email)) != nil {
		return mailstore.Mailbox{}, mailstore.ErrEmailExists
	}
	if mailstore.LimitReached(d.MaxMailboxes, d.MailboxCount) {
		return mailstore.Mailbox{}, mailstore.ErrMailboxLimit
	}
	b := tx.Bucket(bMailboxes)
	id, err := nextID(b)
	if err != nil {
		return mailstore.Mailbox{}, err
	}
	m := mailstore.Mailbox{
		ID: id, DomainID: d.ID, PartnerID: partnerID, Email: email,
		PasswordHash: passwordHash, QuotaMB: d.QuotaMB, CreatedAt: mailstore.UTC(now),
		PasswordChangedAt: mailstore.UTC(now),
	}
	if err := addrs.Put(addrKey(d.ID, email), addrValue(addrMailbox, id)); err != nil {
		return mailstore.Mailbox{}, err
	}
	entry := entryValue(m)
	if err := partnerIndexPut(tx, bPartnerMailboxes, partnerID, id, entry); err != nil {
		return mailstore.Mailbox{}, err
	}
	if err := tx.Bucket(bDomainMailboxes).Put(pair(d.ID, id), entry); err != nil {
		return mailstore.Mailbox{}, err
	}
	if err := createMailboxFolders(tx, m); err != nil {
		return mailstore.Mailbox{}, err
	}
	d.MailboxCount++
	if err := putDomain(tx, d); err != nil {
		return mailstore.Mailbox{}, err
	}
	return m, putJSON(b, id8(id), m)
}

// Mailboxes implements Control.
//
// The index keys it walks (partner_mailboxes, domain_mailboxes) hold the
// entry itself (entryValue): a list reads no mailbox record. Keys written
// before they did hold nothing, and their record is read instead.
func (s *Store) Mailboxes(ctx context.Context, partnerID int64, domainID int64, p mailstore.Page) ([]mailstore.MailboxEntry, int, error) {
	var out []mailstore.MailboxEntry
	var total int
	err := s.view(ctx, func(tx *bolt.Tx) error {
		idx, parent := tx.Bucket(bPartnerMailboxes), partnerID
		// The total is a counter (the domain's record, partner_counts;
		// verify checks both against the index), so a page stops at its
		// last row instead of walking the rest of the list to count it.
		total = partnerCount(tx, partnerID, bPartnerMailboxes)
		if domainID != 0 {
			var d mailstore.Domain
			if !getJSON(tx.Bucket(bDomains), id8(domainID), &d) || d.PartnerID != partnerID {
				return mailstore.ErrDomainNotFound
			}
			idx, parent = tx.Bucket(bDomainMailboxes), domainID
			total = int(d.MailboxCount)
		}
		records := tx.Bucket(bMailboxes)
		prefix := id8(parent)
		out = []mailstore.MailboxEntry{}
		c := idx.Cursor()
		n := 0
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			n++
			if n <= p.Offset {
				continue
			}
			if p.Limit > 0 && len(out) >= p.Limit {
				break
			}
			if e, ok := parseEntry(k, v); ok {
				out = append(out, e)
				continue
			}
			var m mailstore.Mailbox
			if getJSON(records, k[8:], &m) {
				out = append(out, m.Entry())
			}
		}
		return nil
	})
	return out, total, err
}

// entryValue is the value of a mailbox's index keys: domain id, partner
// id, created_at (Unix seconds), 8 bytes each, then the address.
func entryValue(m mailstore.Mailbox) []byte {
	v := make([]byte, 24, 24+len(m.Email))
	binary.BigEndian.PutUint64(v, uint64(m.DomainID))
	binary.BigEndian.PutUint64(v[8:], uint64(m.PartnerID))
	binary.BigEndian.PutUint64(v[16:], uint64(m.CreatedAt.Unix()))
	return append(v, m.Email...)
}

// parseEntry reads an index key (parent, id) and its entryValue; false
// when the value is empty (written before values were).
func parseEntry(k, v []byte) (mailstore.MailboxEntry, bool) {
	if len(k) != 16 || len(v) <= 24 {
		return mailstore.MailboxEntry{}, false
	}
	return mailstore.MailboxEntry{
		ID:        int64(binary.BigEndian.Uint64(k[8:])),
		DomainID:  int64(binary.BigEndian.Uint64(v)),
		PartnerID: int64(binary.BigEndian.Uint64(v[8:])),
		CreatedAt: time.Unix(int64(binary.BigEndian.Uint64(v[16:])), 0).UTC(),
		Email:     string(v[24:]),
	}, true
}

// mailboxOf loads a partner's mailbox by address, in its own claim of
// the address's domain.
func mailboxOf(tx *bolt.Tx, partnerID int64, email string) (mailstore.Mailbox, error) {
	d, err := domainOf(tx, partnerID, domainPart(email))
	if err != nil {
		return mailstore.Mailbox{}, mailstore.ErrMailboxNotFound
	}
	m, err := mailboxIn(tx, d.ID, email)
	if err != nil || m.PartnerID != partnerID {
		return mailstore.Mailbox{}, mailstore.ErrMailboxNotFound
	}
	return m, nil
}

// mailboxByEmail loads a mailbox by address in the live claim of its
// domain: the mail plane's look-up.
func mailboxByEmail(tx *bolt.Tx, email string) (mailstore.Mailbox, error) {
	d, err := liveDomain(tx, domainPart(email))
	if err != nil {
		return mailstore.Mailbox{}, mailstore.ErrMailboxNotFound
	}
	return mailboxIn(tx, d.ID, email)
}

// Mailbox implements Control.
func (s *Store) Mailbox(ctx context.Context, partnerID int64, email string) (mailstore.Mailbox, error) {
	var m mailstore.Mailbox
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		m, err = mailboxOf(tx, partnerID, email)
		return err
	})
	return m, err
}

func (s *Store) changeMailbox(ctx context.Context, partnerID int64, email string, fn func(m *mailstore.Mailbox)) (mailstore.Mailbox, error) {
	var m mailstore.Mailbox
	err := s.update(ctx, func(tx *bolt.Tx) (err error) {
		if m, err = mailboxOf(tx, partnerID, email); err != nil {
			return err
		}
		fn(&m)
		return putJSON(tx.Bucket(bMailboxes), id8(m.ID), m)
	})
	if err != nil {
		return mailstore.Mailbox{}, fmt.Errorf("mailbox %s: %w", email, err)
	}
	return m, nil
}

// SetPassword implements Control.
func (s *Store) SetPassword(ctx context.Context, partnerID int64, email, passwordHash string, now time.Time) (mailstore.Mailbox, error) {
	return s.changeMailbox(ctx, partnerID, email, func(m *mailstore.Mailbox) {
		m.PasswordHash, m.PasswordChangedAt = passwordHash, mailstore.UTC(now)
	})
}

// SetQuota implements Control.
func (s *Store) SetQuota(ctx context.Context, partnerID int64, email string, mb int64) (mailstore.Mailbox, error) {
	return s.changeMailbox(ctx, partnerID, email, func(m *mailstore.Mailbox) { m.QuotaMB = mb })
}

// DeleteMailbox implements Control.
func (s *Store) DeleteMailbox(ctx context.Context, partnerID int64, email string) error {
	err := s.deleting(ctx, func(tx *bolt.Tx) error {
		m, err := mailboxOf(tx, partnerID, email)
		if err != nil {
			return err
		}
		var d mailstore.Domain
		if !getJSON(tx.Bucket(bDomains), id8(m.DomainID), &d) {
			return fmt.Errorf("mailbox %d: domain %d missing", m.ID, m.DomainID)
		}
		if err := s.deleteMailboxTx(tx, &d, m); err != nil {
			return err
		}
		return putDomain(tx, d)
	})
	if err != nil {
		return fmt.Errorf("delete mailbox %s: %w", email, err)
	}
	return nil
}

// deleteMailboxTx removes a mailbox, its indexes and its messages, and
// takes them off the domain's counters (the caller stores d).
func (s *Store) deleteMailboxTx(tx *bolt.Tx, d *mailstore.Domain, m mailstore.Mailbox) error {
	msgs, bytes, err := s.deleteMailboxMessages(tx, m)
	if err != nil {
		return err
	}
	d.MessageCount -= msgs
	d.UsedBytes -= bytes
	d.MailboxCount--
	if err := partnerIndexDelete(tx, bPartnerMailboxes, m.PartnerID, m.ID); err != nil {
		return err
	}
	for _, del := range []struct {
		b []byte
		k []byte
	}{
		{bDomainAddresses, addrKey(m.DomainID, m.Email)},
		{bDomainMailboxes, pair(m.DomainID, m.ID)},
		{bMailboxes, id8(m.ID)},
	} {
		if err := tx.Bucket(del.b).Delete(del.k); err != nil {
			return err
		}
	}
	if err := deleteSieveTx(tx, m.ID); err != nil {
		return err
	}
	return deleteAutoReplyTx(tx, m.ID)
}

// CreateAlias implements Control.
func (s *Store) CreateAlias(ctx context.Context, partnerID int64, domainName, source, destination string, now time.Time) (mailstore.Alias, error) {
	var a mailstore.Alias
	err := s.update(ctx, func(tx *bolt.Tx) error {
		d, err := domainOf(tx, partnerID, domainName)
		if err != nil {
			return err
		}
		if !inDomain(source, d.Name) {
			return mailstore.ErrWrongDomain
		}
		if source == destination {
			return fmt.Errorf("destination is the source: %w", mailstore.ErrInvalidArgument)
		}
		addrs := tx.Bucket(bDomainAddresses)
		if addrs.Get(addrKey(d.ID, source)) != nil {
			return mailstore.ErrAliasExists
		}
		if mailstore.LimitReached(d.MaxAliases, d.AliasCount) {
			return mailstore.ErrAliasLimit
		}
		b := tx.Bucket(bAliases)
		id, err := nextID(b)
		if err != nil {
			return err
		}
		a = mailstore.Alias{ID: id, DomainID: d.ID, PartnerID: partnerID, Source: source, Destination: destination, CreatedAt: mailstore.UTC(now)}
		if err := addrs.Put(addrKey(d.ID, source), addrValue(addrAlias, id)); err != nil {
			return err
		}
		if err := partnerIndexPut(tx, bPartnerAliases, partnerID, id, nil); err != nil {
			return err
		}
		if err := tx.Bucket(bDomainAliases).Put(pair(d.ID, id), nil); err != nil {
			return err
		}
		d.AliasCount++
		if err := putDomain(tx, d); err != nil {
			return err
		}
		return putJSON(b, id8(id), a)
	})
	if err != nil {
		return mailstore.Alias{}, fmt.Errorf("create alias %s: %w", source, err)
	}
	return a, nil
}

// Aliases implements Control.
func (s *Store) Aliases(ctx context.Context, partnerID int64, domainID int64, p mailstore.Page) ([]mailstore.Alias, int, error) {
	var out []mailstore.Alias
	var total int
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if domainID == 0 {
			out, total = countedPage[mailstore.Alias](tx.Bucket(bPartnerAliases), tx.Bucket(bAliases), partnerID, p,
				partnerCount(tx, partnerID, bPartnerAliases))
			return nil
		}
		var d mailstore.Domain
		if !getJSON(tx.Bucket(bDomains), id8(domainID), &d) || d.PartnerID != partnerID {
			return mailstore.ErrDomainNotFound
		}
		out, total = countedPage[mailstore.Alias](tx.Bucket(bDomainAliases), tx.Bucket(bAliases), domainID, p, int(d.AliasCount))
		return nil
	})
	return out, total, err
}

// aliasBySource loads an alias by source in the live claim of its
// domain: the mail plane's look-up.
func aliasBySource(tx *bolt.Tx, source string) (mailstore.Alias, error) {
	d, err := liveDomain(tx, domainPart(source))
	if err != nil {
		return mailstore.Alias{}, mailstore.ErrAliasNotFound
	}
	return aliasIn(tx, d.ID, source)
}

// aliasOf loads a partner's alias by source, in its own claim of the
// source's domain.
func aliasOf(tx *bolt.Tx, partnerID int64, source string) (mailstore.Alias, error) {
	d, err := domainOf(tx, partnerID, domainPart(source))
	if err != nil {
		return mailstore.Alias{}, mailstore.ErrAliasNotFound
	}
	a, err := aliasIn(tx, d.ID, source)
	if err != nil || a.PartnerID != partnerID {
		return mailstore.Alias{}, mailstore.ErrAliasNotFound
	}
	return a, nil
}

// DeleteAlias implements Control.
func (s *Store) DeleteAlias(ctx context.Context, partnerID int64, source string) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		a, err := aliasOf(tx, partnerID, source)
		if err != nil {
			return err
		}
		var d mailstore.Domain
		if !getJSON(tx.Bucket(bDomains), id8(a.DomainID), &d) {
			return fmt.Errorf("alias %d: domain %d missing", a.ID, a.DomainID)
		}
		if err := deleteAliasTx(tx, &d, a); err != nil {
			return err
		}
		return putDomain(tx, d)
	})
	if err != nil {
		return fmt.Errorf("delete alias %s: %w", source, err)
	}
	return nil
}

func deleteAliasTx(tx *bolt.Tx, d *mailstore.Domain, a mailstore.Alias) error {
	d.AliasCount--
	if err := partnerIndexDelete(tx, bPartnerAliases, a.PartnerID, a.ID); err != nil {
		return err
	}
	for _, del := range []struct {
		b []byte
		k []byte
	}{
		{bDomainAddresses, addrKey(a.DomainID, a.Source)},
		{bDomainAliases, pair(a.DomainID, a.ID)},
		{bAliases, id8(a.ID)},
	} {
		if err := tx.Bucket(del.b).Delete(del.k); err != nil {
			return err
		}
	}
	return nil
}

// MailboxByEmail implements Mail.
func (s *Store) MailboxByEmail(ctx context.Context, email string) (mailstore.Mailbox, mailstore.Domain, error) {
	var m mailstore.Mailbox
	var d mailstore.Domain
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		if m, err = mailboxByEmail(tx, email); err != nil {
			return err
		}
		if !getJSON(tx.Bucket(bDomains), id8(m.DomainID), &d) {
			return mailstore.ErrDomainNotFound
		}
		if b := tx.Bucket(bAutoReplies); b != nil {
			m.HasAutoReply = b.Get(id8(m.ID)) != nil
		}
		if m.HasSieve = sieveActiveName(tx, m.ID) != ""; m.HasSieve {
			m.SieveVersion = sieveVersion(tx, m.ID)
		}
		return nil
	})
	return m, d, err
}

// AliasBySource implements Mail.
func (s *Store) AliasBySource(ctx context.Context, source string) (mailstore.Alias, error) {
	var a mailstore.Alias
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		a, err = aliasBySource(tx, source)
		return err
	})
	return a, err
}

// DomainWithID implements Mail.
func (s *Store) DomainWithID(ctx context.Context, id int64) (mailstore.Domain, error) {
	var d mailstore.Domain
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if !getJSON(tx.Bucket(bDomains), id8(id), &d) {
			return mailstore.ErrDomainNotFound
		}
		return nil
	})
	return d, err
}

// DomainByName implements Mail.
func (s *Store) DomainByName(ctx context.Context, name string) (mailstore.Domain, error) {
	var d mailstore.Domain
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		d, err = liveDomain(tx, name)
		return err
	})
	return d, err
}

// SetSpamFilter implements Control.
func (s *Store) SetSpamFilter(ctx context.Context, partnerID int64, name, filter string) (mailstore.Domain, error) {
	if filter != "" && !mailstore.ValidSpamFilter(filter) {
		return mailstore.Domain{}, fmt.Errorf("spam filter %q: %w", filter, mailstore.ErrInvalidArgument)
	}
	return s.changeDomain(ctx, partnerID, name, func(_ *bolt.Tx, d *mailstore.Domain) error {
		d.SpamFilter = filter
		return nil
	})
}
