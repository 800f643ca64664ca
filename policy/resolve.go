package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mailhost/mailhost/mailstore"
)

// Errors of recipient resolution. Callers match them with errors.Is.
var (
	// ErrNotHosted: the address's domain is not hosted here.
	ErrNotHosted = errors.New("domain not hosted")
	// ErrUnknownUser: the domain is hosted but nothing (mailbox, alias,
	// catch-all) takes the address.
	ErrUnknownUser = errors.New("unknown user")
	// ErrAliasLoop: an alias chain comes back to an address it passed.
	ErrAliasLoop = errors.New("alias loop")
	// ErrAliasTooDeep: an alias chain is longer than MaxAliasDepth.
	ErrAliasTooDeep = errors.New("alias chain too long")
	// ErrNotVerified: the address's domain is hosted here, but by another
	// partner that has not verified it, so mail to it is routed as for a
	// domain not hosted here (DeliverLocally). It matches ErrNotHosted.
	ErrNotVerified = fmt.Errorf("%w for this sender: hosted by another partner, not verified", ErrNotHosted)
)

// MaxAliasDepth is the most alias hops (alias or catch-all) Resolve
// follows from the address it is given to a final destination.
const MaxAliasDepth = 8

// Directory is what Resolve looks addresses up in; mailstore.Store
// satisfies it. Each method answers an error matching mailstore.ErrNotFound
// when there is no such object.
type Directory interface {
	MailboxByEmail(ctx context.Context, email string) (mailstore.Mailbox, mailstore.Domain, error)
	AliasBySource(ctx context.Context, source string) (mailstore.Alias, error)
	DomainByName(ctx context.Context, name string) (mailstore.Domain, error)
}

// Resolution is where mail for one address goes.
type Resolution struct {
	// Mailboxes are the local accounts that receive the mail, each once.
	Mailboxes []mailstore.Mailbox
	// Remote are destination addresses in domains not hosted here, each
	// once; mail for them has to be relayed out.
	Remote []string
	// RemoteVia[i] is the hosted domain whose alias (exact or catch-all)
	// has Remote[i] as its destination: the domain that forwards the mail,
	// on whose behalf it is relayed (its transfer cap, its SRS address).
	RemoteVia []mailstore.Domain
}

// Resolve finds where mail for addr goes (docs/mail.md):
// a mailbox or an alias of that exact address first; the domain's
// catch-all ("@domain") only when the address is neither. Alias
// destinations are resolved the same way, up to MaxAliasDepth hops; an
// address met twice on the way is ErrAliasLoop, a longer chain
// ErrAliasTooDeep. A destination in a domain not hosted here is listed in
// Remote; one in a hosted domain that nothing takes is ErrUnknownUser.
//
// senderPartnerID is the partner the mail comes from, as DeliverLocally
// takes it: 0 for mail from outside (the MX), the user's partner for a
// submission, NoPartner when no partner stands behind it. Each hosted
// domain on the way is entered only when DeliverLocally allows it for
// the partner whose mailbox or alias leads there: at the first address
// senderPartnerID, after an alias the partner of the alias's domain. A
// domain it does not allow is routed as one not hosted here (a
// partner that names a domain it has not verified does not receive
// other partners' mail for it): at the first address ErrNotHosted, after
// an alias a Remote destination.
//
// addr must be normalised (see NormalizeAddress), as alias destinations
// are when stored. addr's own domain must be hosted, else ErrNotHosted: the
// caller decides what to do with mail for other domains (relay for an
// authenticated sender, refuse otherwise). Lookup failures other than
// "not found" are returned wrapped, for the caller to answer as temporary.
func Resolve(ctx context.Context, dir Directory, addr string, senderPartnerID int64) (Resolution, error) {
	return ResolveWith(ctx, dir, addr, senderPartnerID, ResolveOptions{})
}

// ResolveOptions are the options of ResolveWith.
type ResolveOptions struct {
	// Delimiter is the recipient delimiter of subaddresses (RFC 5233):
	// "local<Delimiter>detail@domain" that nothing takes as it is (no
	// mailbox, no alias of the whole address) goes where
	// "local@domain" goes, before the domain's catch-all is tried.
	// "": subaddresses are addresses like any other.
	Delimiter string
}

// ResolveWith is Resolve with subaddresses (ResolveOptions.Delimiter),
// on the address given and on every alias destination on the way: a
// mailbox or an alias of the whole address first, then a mailbox or an
// alias of the address without its detail, then the catch-all, as
// Postfix's recipient_delimiter does. The Resolution names the base
// address's mailbox, so quotas and transfer caps count there.
func ResolveWith(ctx context.Context, dir Directory, addr string, senderPartnerID int64, opts ResolveOptions) (Resolution, error) {
	r := resolver{dir: dir, sender: senderPartnerID, delim: opts.Delimiter}
	if err := r.resolve(ctx, addr, nil, mailstore.Domain{}); err != nil {
		return Resolution{}, fmt.Errorf("resolve %s: %w", addr, err)
	}
	return r.res, nil
}

type resolver struct {
	dir    Directory
	sender int64 // the partner of the first address (Resolve)
	delim  string
	res    Resolution
}

// BaseAddress is addr without its subaddress detail (RFC 5233): the
// local part cut at the first delim, "" when delim is "" or addr has no
// detail. A local part that starts with delim has no base.
func BaseAddress(addr, delim string) string {
	at := strings.LastIndexByte(addr, '@')
	if delim == "" || at <= 0 {
		return ""
	}
	i := strings.Index(addr[:at], delim)
	if i <= 0 {
		return ""
	}
	return addr[:i] + addr[at:]
}

// resolve follows addr; path holds the addresses that led to it, first
// the one Resolve was given, and via is the hosted domain of the last of
// them (zero for the first). Each alias has one destination, so the
// expansion is a chain, but Resolution keeps lists so that a
// multi-destination alias would need no new API.
func (r *resolver) resolve(ctx context.Context, addr string, path []string, via mailstore.Domain) error {
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 || at == len(addr)-1 {
		return fmt.Errorf("%q: %w", addr, ErrBadAddress)
	}
	for _, p := range path {
		if p == addr {
			return fmt.Errorf("%s: %w", chain(path, addr), ErrAliasLoop)
		}
	}
	if len(path) > MaxAliasDepth {
		return fmt.Errorf("%s: %w", chain(path, addr), ErrAliasTooDeep)
	}
	path = append(path, addr)
	domain := addr[at+1:]

	// A mailbox comes with its domain in one look-up (one round trip to
	// a shared store), so the usual recipient costs one; the domain alone
	// is looked up only when no mailbox has the address.
	m, dom, err := r.dir.MailboxByEmail(ctx, addr)
	mailbox := err == nil
	switch {
	case mailbox:
	case !errors.Is(err, mailstore.ErrNotFound):
		return err
	default:
		dom, err = r.dir.DomainByName(ctx, domain)
	}
	if err != nil {
		if !errors.Is(err, mailstore.ErrNotFound) {
			return err
		}
		if len(path) == 1 {
			return fmt.Errorf("%s: %w", domain, ErrNotHosted)
		}
		r.addRemote(addr, via)
		return nil
	}
	from := r.sender
	if len(path) > 1 {
		from = via.PartnerID
	}
	if !DeliverLocally(from, dom) {
		if len(path) == 1 {
			return fmt.Errorf("%s: %w", domain, ErrNotVerified)
		}
		r.addRemote(addr, via)
		return nil
	}

	if mailbox {
		r.addMailbox(m)
		return nil
	}

	a, err := r.dir.AliasBySource(ctx, addr)
	if base := BaseAddress(addr, r.delim); errors.Is(err, mailstore.ErrNotFound) && base != "" {
		// The subaddress: the base's mailbox, else its alias, both in
		// the domain just entered.
		m, _, err := r.dir.MailboxByEmail(ctx, base)
		switch {
		case err == nil:
			r.addMailbox(m)
			return nil
		case !errors.Is(err, mailstore.ErrNotFound):
			return err
		}
		if a, err = r.dir.AliasBySource(ctx, base); err == nil {
			return r.resolve(ctx, a.Destination, path, dom)
		}
		if !errors.Is(err, mailstore.ErrNotFound) {
			return err
		}
	}
	if errors.Is(err, mailstore.ErrNotFound) {
		a, err = r.dir.AliasBySource(ctx, "@"+domain)
		// A catch-all does not take its own destination: when that
		// address is itself missing (a deleted mailbox, say), nothing
		// takes it, and mail for it is an unknown user, not a loop
		// through the catch-all (Postfix's virtual aliases stop, too,
		// where an address maps onto itself).
		if err == nil && a.Destination == addr {
			err = mailstore.ErrNotFound
		}
		if errors.Is(err, mailstore.ErrNotFound) {
			if len(path) == 1 {
				return ErrUnknownUser
			}
			return fmt.Errorf("%s: %w", chain(path[:len(path)-1], addr), ErrUnknownUser)
		}
	}
	if err != nil {
		return err
	}
	return r.resolve(ctx, a.Destination, path, dom)
}

func (r *resolver) addMailbox(m mailstore.Mailbox) {
	for _, have := range r.res.Mailboxes {
		if have.ID == m.ID {
			return
		}
	}
	r.res.Mailboxes = append(r.res.Mailboxes, m)
}

func (r *resolver) addRemote(addr string, via mailstore.Domain) {
	for _, have := range r.res.Remote {
		if have == addr {
			return
		}
	}
	r.res.Remote = append(r.res.Remote, addr)
	r.res.RemoteVia = append(r.res.RemoteVia, via)
}

// chain renders an alias path for error texts: "a@x -> b@x -> a@x".
func chain(path []string, last string) string {
	return strings.Join(append(append([]string(nil), path...), last), " -> ")
}
