package boltstore

// Claims of domain names on bbolt (schema 8). Each partner's claim of a
// name is its own Domain record; three indexes find them, each by key:
//
//	domain_claims     name 0x00 partnerID(8) -> domainID(8): every claim,
//	                  a partner's by key, a name's by prefix (few: one per
//	                  partner that claims it)
//	domain_names      name -> domainID(8) of the live claim (LiveClaim);
//	                  no key when every claim of the name has ended
//	domain_addresses  domainID(8) address -> 'm'|'a' + id: the mailbox
//	                  addresses and alias sources ("@domain" for the
//	                  catch-all) of one claim, one namespace so that an
//	                  address is never both in a claim
//
// The mail plane looks an address up as domain_names[domain], then
// domain_addresses[id|address]: changing the live claim is one key, not
// a rewrite of its addresses. The API looks it up through the partner's
// claim, domain_claims[domain|partner], then the same.
//
// Invariant, kept by CreateDomain, SetVerified, SetVerifiedSole and
// DeleteDomain in their transactions (relive): domain_names holds, for
// each name, LiveClaim of the claims domain_claims lists for it.

import (
	"bytes"
	"fmt"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

var (
	bDomainClaims    = []byte("domain_claims")
	bDomainAddresses = []byte("domain_addresses")
)

// claimPrefix is the prefix of every claim of name; a name holds no 0x00.
func claimPrefix(name string) []byte {
	return append([]byte(name), 0)
}

func claimKey(name string, partnerID int64) []byte {
	return append(claimPrefix(name), id8(partnerID)...)
}

func addrKey(domainID int64, addr string) []byte {
	return append(id8(domainID), addr...)
}

// domainOf loads a partner's claim of a name, live or not; another
// partner's is not found.
func domainOf(tx *bolt.Tx, partnerID int64, name string) (mailstore.Domain, error) {
	var d mailstore.Domain
	id := tx.Bucket(bDomainClaims).Get(claimKey(name, partnerID))
	if id == nil || !getJSON(tx.Bucket(bDomains), id, &d) || d.PartnerID != partnerID {
		return mailstore.Domain{}, mailstore.ErrDomainNotFound
	}
	return d, nil
}

// liveDomain loads the live claim of a name.
func liveDomain(tx *bolt.Tx, name string) (mailstore.Domain, error) {
	var d mailstore.Domain
	id := tx.Bucket(bDomainNames).Get([]byte(name))
	if id == nil || !getJSON(tx.Bucket(bDomains), id, &d) {
		return mailstore.Domain{}, mailstore.ErrDomainNotFound
	}
	return d, nil
}

// claimsOf loads every claim of a name.
func claimsOf(tx *bolt.Tx, name string) []mailstore.Domain {
	var out []mailstore.Domain
	prefix := claimPrefix(name)
	domains := tx.Bucket(bDomains)
	c := tx.Bucket(bDomainClaims).Cursor()
	for k, id := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, id = c.Next() {
		var d mailstore.Domain
		if getJSON(domains, id, &d) {
			out = append(out, d)
		}
	}
	return out
}

// relive sets the name's live claim from its claims as stored (LiveClaim).
func relive(tx *bolt.Tx, name string) error {
	names := tx.Bucket(bDomainNames)
	live, ok := mailstore.LiveClaim(claimsOf(tx, name))
	if !ok {
		return names.Delete([]byte(name))
	}
	return names.Put([]byte(name), id8(live.ID))
}

// addressOf answers the kind and id an address has in a claim.
func addressOf(tx *bolt.Tx, domainID int64, addr string) (kind byte, id []byte, ok bool) {
	v := tx.Bucket(bDomainAddresses).Get(addrKey(domainID, addr))
	if len(v) != 9 {
		return 0, nil, false
	}
	return v[0], v[1:], true
}

// mailboxIn loads the mailbox an address names in a claim.
func mailboxIn(tx *bolt.Tx, domainID int64, email string) (mailstore.Mailbox, error) {
	var m mailstore.Mailbox
	kind, id, ok := addressOf(tx, domainID, email)
	if !ok || kind != addrMailbox || !getJSON(tx.Bucket(bMailboxes), id, &m) {
		return mailstore.Mailbox{}, mailstore.ErrMailboxNotFound
	}
	return m, nil
}

// aliasIn loads the alias whose source is an address in a claim.
func aliasIn(tx *bolt.Tx, domainID int64, source string) (mailstore.Alias, error) {
	var a mailstore.Alias
	kind, id, ok := addressOf(tx, domainID, source)
	if !ok || kind != addrAlias || !getJSON(tx.Bucket(bAliases), id, &a) {
		return mailstore.Alias{}, mailstore.ErrAliasNotFound
	}
	return a, nil
}

// winClaim makes d, being verified by its partner, the name's owner: the
// live claim, and every other partner's claim that stands ends, with an
// event and an audit entry for its partner. The caller stores d. A
// proof that does not name the partner (sole) wins only while no other
// partner holds a claim of the name, unless d is verified already.
func (s *Store) winClaim(tx *bolt.Tx, d *mailstore.Domain, sole bool, now time.Time) error {
	domains := tx.Bucket(bDomains)
	var others []mailstore.Domain
	for _, o := range claimsOf(tx, d.Name) {
		if o.ID == d.ID {
			continue
		}
		if o.Verified {
			return mailstore.ErrDomainOwned
		}
		others = append(others, o)
	}
	if sole && len(others) > 0 && !d.Verified {
		return mailstore.ErrDomainShared
	}
	for _, o := range others {
		if o.Ended() {
			continue
		}
		o.ClaimEndedAt = mailstore.UTC(now)
		if err := putJSON(domains, id8(o.ID), o); err != nil {
			return err
		}
		e := mailstore.NewClaimEndedEvent(o, now)
		if err := addEventTx(tx, &e); err != nil {
			return err
		}
		if _, err := addAuditTx(tx, mailstore.NewClaimEndedAudit(o, now)); err != nil {
			return err
		}
	}
	if !d.Verified {
		e := mailstore.NewDomainEvent(mailstore.EventDomainVerified, *d, now)
		if err := addEventTx(tx, &e); err != nil {
			return err
		}
	}
	d.Verified, d.VerifiedAt, d.ClaimEndedAt = true, mailstore.UTC(now), time.Time{}
	idx, err := tx.CreateBucketIfNotExists(bDomainVerified)
	if err != nil {
		return err
	}
	if err := idx.Put([]byte(mailstore.ReversedName(d.Name)), id8(d.ID)); err != nil {
		return err
	}
	return tx.Bucket(bDomainNames).Put([]byte(d.Name), id8(d.ID))
}

// migrateClaims (schema 7 -> 8) indexes every domain as its partner's
// claim (each name had one, which is live: domain_names stays), and
// moves the addresses from the store-wide namespace into their domain's.
func migrateClaims(tx *bolt.Tx) error {
	claims, err := tx.CreateBucketIfNotExists(bDomainClaims)
	if err != nil {
		return err
	}
	if err := eachJSON(tx, bDomains, func(_ []byte, d *mailstore.Domain) error {
		return claims.Put(claimKey(d.Name, d.PartnerID), id8(d.ID))
	}); err != nil {
		return err
	}
	addrs, err := tx.CreateBucketIfNotExists(bDomainAddresses)
	if err != nil {
		return err
	}
	old := tx.Bucket(bAddresses)
	if old == nil {
		return nil
	}
	if err := old.ForEach(func(k, v []byte) error {
		if len(v) != 9 {
			return fmt.Errorf("address %q: value of %d bytes", k, len(v))
		}
		var domainID int64
		switch v[0] {
		case addrMailbox:
			var m mailstore.Mailbox
			if !getJSON(tx.Bucket(bMailboxes), v[1:], &m) {
				return nil // a dangling key: nothing to move
			}
			domainID = m.DomainID
		case addrAlias:
			var a mailstore.Alias
			if !getJSON(tx.Bucket(bAliases), v[1:], &a) {
				return nil
			}
			domainID = a.DomainID
		default:
			return fmt.Errorf("address %q: kind %q", k, v[0])
		}
		return addrs.Put(addrKey(domainID, string(k)), bytes.Clone(v))
	}); err != nil {
		return err
	}
	return tx.DeleteBucket(bAddresses)
}
