package mailstore

import (
	"slices"
	"strings"
	"time"
)

// Partner is a hosting provider or reseller: it owns domains and API keys.
type Partner struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	// MaxDomains is how many domains the partner may have; 0 means no
	// limit. Lowering it below the domains it has deletes nothing: it
	// only stops new ones.
	MaxDomains int64 `json:"max_domains"`
}

// PartnerLimits changes a partner's limits; nil fields stay as they are.
type PartnerLimits struct {
	MaxDomains *int64
}

// APIKey is a partner's credential. Only a hash of its secret is stored; the
// secret is shown once, when the key is made.
type APIKey struct {
	ID        int64 `json:"id"`
	PartnerID int64 `json:"partner_id"`
	// Lookup is the public, random part of the key that finds this record
	// without a scan; Prefix is what listings show (it contains Lookup).
	Lookup     string    `json:"lookup"`
	Prefix     string    `json:"prefix"`
	SecretHash []byte    `json:"secret_hash"`
	CreatedAt  time.Time `json:"created_at"`
	Revoked    bool      `json:"revoked"`
	RevokedAt  time.Time `json:"revoked_at,omitzero"`
}

// Plan is a named set of the three plan-derived limits.
type Plan struct {
	Name              string `json:"name"`
	QuotaMB           int64  `json:"quota_mb"`
	RetentionDays     int64  `json:"retention_days"`
	TransferMonthlyMB int64  `json:"transfer_monthly_mb"`
}

// Domain is one partner's claim of a mail domain. Several partners may
// claim one name (each claim has its own id, mailboxes and aliases); the
// mail plane sees one of them, the live claim (LiveClaim). MailboxCount,
// AliasCount, MessageCount and UsedBytes are counters kept in the same
// transactions as what they count, so usage never needs a scan.
type Domain struct {
	ID                int64     `json:"id"`
	PartnerID         int64     `json:"partner_id"`
	Name              string    `json:"name"`
	Plan              string    `json:"plan"`
	MaxMailboxes      int64     `json:"max_mailboxes"`
	MaxAliases        int64     `json:"max_aliases"`
	QuotaMB           int64     `json:"quota_mb"`
	RetentionDays     int64     `json:"retention_days"`
	TransferMonthlyMB int64     `json:"transfer_monthly_mb"`
	Suspended         bool      `json:"suspended"`
	CreatedAt         time.Time `json:"created_at"`
	// Verified says the domain's owner has proven control of its DNS
	// (package mailauth, CheckOwnership): until then, mail to it from other
	// partners' mailboxes leaves as for a domain not hosted here (package
	// policy, DeliverLocally). VerifiedAt is when the proof was last seen;
	// it stays when the proof is lost, as a record of the last good check.
	Verified   bool      `json:"verified"`
	VerifiedAt time.Time `json:"verified_at,omitzero"`
	// ClaimEndedAt is when another partner's verification of the name
	// ended this claim: it is kept, with its mailboxes and aliases, for
	// its partner to read and delete, but it is never live again unless
	// its partner verifies it. Zero while the claim stands.
	ClaimEndedAt time.Time `json:"claim_ended_at,omitzero"`
	// VerifyToken is the random value of the TXT record that proves
	// ownership ("mailhost-verify=<token>" at "_mailhost.<name>"). Domains
	// made before verification existed have none until EnsureVerifyToken
	// gives them one.
	VerifyToken string `json:"verify_token,omitempty"`
	// SpamFilter is what the spam filter's verdicts do to the domain's
	// mail (SpamFilterOff, SpamFilterJunk, SpamFilterReject); "" follows
	// the server's spam_filter setting.
	SpamFilter string `json:"spam_filter,omitempty"`

	MailboxCount int64 `json:"mailbox_count"`
	AliasCount   int64 `json:"alias_count"`
	MessageCount int64 `json:"message_count"`
	UsedBytes    int64 `json:"used_bytes"`
}

// Mailbox is an email account. UsedBytes and MessageCount change in the same
// transaction as the messages they count.
type Mailbox struct {
	ID           int64     `json:"id"`
	DomainID     int64     `json:"domain_id"`
	PartnerID    int64     `json:"partner_id"`
	Email        string    `json:"email"`
	PasswordHash string    `json:"password_hash"`
	QuotaMB      int64     `json:"quota_mb"`
	UsedBytes    int64     `json:"used_bytes"`
	MessageCount int64     `json:"message_count"`
	LastLogin    time.Time `json:"last_login,omitzero"`
	CreatedAt    time.Time `json:"created_at"`
	// PasswordChangedAt lets login caches tell a stale verified password
	// from a current one.
	PasswordChangedAt time.Time `json:"password_changed_at,omitzero"`
	// HasAutoReply says an auto-reply is set for the mailbox (enabled or
	// not), as MailboxByEmail, the look-up of every delivery, read it:
	// the auto-responder looks the setting up only then, instead of one
	// more look-up per delivered message. Other reads leave it false; it
	// is not stored with the mailbox.
	HasAutoReply bool `json:"-"`
	// HasSieve says the mailbox has an active Sieve script, read as
	// HasAutoReply is: delivery reads the script only then.
	HasSieve bool `json:"-"`
	// SieveVersion is the stamp of the active script, read with
	// HasSieve: it changes whenever which script is active or its text
	// changes (SieveScript.Version), so that delivery can keep a parsed
	// script and use it while the stamp is the same, without reading
	// the script. 0 is no stamp (a script stored before stamps, on
	// bbolt): the script must be read.
	SieveVersion int64 `json:"-"`
}

// MailboxEntry is a mailbox as a list shows it: the fields that never
// change once it is created. Mailbox has the rest.
type MailboxEntry struct {
	ID        int64     `json:"id"`
	DomainID  int64     `json:"domain_id"`
	PartnerID int64     `json:"partner_id"`
	Email     string    `json:"email"`
	CreatedAt time.Time `json:"created_at"`
}

// Entry is the mailbox as a list shows it.
func (m Mailbox) Entry() MailboxEntry {
	return MailboxEntry{ID: m.ID, DomainID: m.DomainID, PartnerID: m.PartnerID, Email: m.Email, CreatedAt: m.CreatedAt}
}

// QuotaBytes is the mailbox's storage limit in bytes.
func (m Mailbox) QuotaBytes() int64 { return m.QuotaMB * MB }

// Fits reports whether a message of size bytes (0 or less: not known yet)
// may be added to the mailbox (docs/mail.md, quota): not once the
// mailbox has reached its quota, nor when size would take it past; a zero
// quota admits nothing. Every check of the quota is this rule: the
// protocols' (policy.AcceptAtRCPT, IMAP APPEND) and bbolt's in its
// transactions; PostgreSQL writes it in SQL (pgstore's sqlQuotaTake), in
// the statement that takes the room. Both stores' deliveries decide Full
// on the mailbox rows their transaction holds.
func (m Mailbox) Fits(size int64) bool {
	quota := m.QuotaBytes()
	if m.UsedBytes >= quota {
		return false
	}
	// quota-used > 0 here, so this cannot overflow as used+size could.
	return size <= quota-m.UsedBytes
}

// Full reports whether the mailbox has reached its quota (a zero quota
// is always reached): Deliver writes no more to it, whatever the size
// (Mail.Deliver, concurrent deliveries). It is Fits for a size not known.
func (m Mailbox) Full() bool { return !m.Fits(0) }

// MB is the unit of every *_mb field: 1 MB = 1,048,576 bytes.
const MB = 1 << 20

// Alias forwards one source address (or, for a catch-all, every otherwise
// unmatched address "@domain") to one destination address.
type Alias struct {
	ID          int64     `json:"id"`
	DomainID    int64     `json:"domain_id"`
	PartnerID   int64     `json:"partner_id"`
	Source      string    `json:"source"`
	Destination string    `json:"destination"`
	CreatedAt   time.Time `json:"created_at"`
}

// CatchAll reports whether the alias is a catch-all ("@domain").
func (a Alias) CatchAll() bool { return len(a.Source) > 0 && a.Source[0] == '@' }

// Transfer is one domain's transfer figures for one UTC calendar month.
type Transfer struct {
	Month    string `json:"month"` // YYYY-MM
	InBytes  int64  `json:"in_bytes"`
	OutBytes int64  `json:"out_bytes"`
}

// DomainUsage is what GET /domains/{name}/usage reports.
type DomainUsage struct {
	Domain   Domain
	Transfer Transfer
}

// Page selects a slice of a list. A zero Limit means no limit.
type Page struct {
	Limit  int
	Offset int
}

// DomainLimits changes a domain's count limits; nil fields stay as they are.
type DomainLimits struct {
	MaxMailboxes *int64
	MaxAliases   *int64
}

// NewDomain is what CreateDomain needs; the store assigns ID and CreatedAt.
type NewDomain struct {
	Name         string
	Plan         Plan
	MaxMailboxes int64
	MaxAliases   int64
	// DKIMKeys are stored with the domain, in the same transaction.
	DKIMKeys []DKIMKey
	// VerifyToken is the domain's ownership token (mailauth.NewVerifyToken),
	// made by the caller as the DKIM keys are; empty leaves the domain
	// without one until EnsureVerifyToken.
	VerifyToken string
}

// Month returns the transfer month key (UTC calendar month) of t.
func Month(t time.Time) string { return t.UTC().Format("2006-01") }

// DKIMKey is one of a domain's DKIM signing keys (RFC 6376, RFC 8463).
// Domains get an Ed25519 and an RSA-2048 key when they are created.
type DKIMKey struct {
	Selector  string    `json:"selector"`
	Algorithm string    `json:"algorithm"` // "ed25519" or "rsa"
	Private   []byte    `json:"private"`   // PKCS #8, DER
	CreatedAt time.Time `json:"created_at"`
}

// TransferCapReached reports whether the domain has used its monthly
// transfer cap with the month's counters t (docs/mail.md, transfer cap):
// bytes received for it and sent or forwarded on its behalf, in + out, at
// or past TransferMonthlyMB. As with quotas, a zero cap admits nothing.
// Caps are at most 2^30 MB (2^50 bytes): the product cannot overflow.
func (d Domain) TransferCapReached(t Transfer) bool {
	return t.InBytes+t.OutBytes >= d.TransferMonthlyMB*MB
}

// LimitReached is the rule of the count limits (a domain's mailboxes and
// aliases, a partner's domains): a create is refused when count has
// reached max; a max of 0 (or less) is no limit, unlike a quota or a
// cap. bbolt decides it with this function; PostgreSQL in the statement
// that takes the row's lock and counts (max <= 0 OR count < max), so
// that racing creates on several nodes cannot pass it:
// storetest.RuleCountLimits checks both.
func LimitReached(max, count int64) bool { return max > 0 && count >= max }

// Ended reports whether another partner's verification ended the claim.
func (d Domain) Ended() bool { return !d.ClaimEndedAt.IsZero() }

// LiveClaim picks, among the claims of one name, the one the mail plane
// sees: the verified claim if there is one, else the oldest (lowest id)
// claim that has not ended. false when every claim has ended (or there
// is none): the name is then not hosted. A later claim therefore never
// displaces the claim that holds the name, and a verification displaces
// every other. Both stores keep their live-claim index by this rule.
func LiveClaim(claims []Domain) (Domain, bool) {
	var live Domain
	found := false
	for _, d := range claims {
		switch {
		case d.Verified:
			return d, true
		case d.Ended():
		case !found || d.ID < live.ID:
			live, found = d, true
		}
	}
	return live, found
}

// ReversedName is name with its labels in reverse order ("a.b.example.com"
// gives "com.example.b.a"): the stores index verified domains by it, so
// that the subdomains of a name are one prefix ("com.example.") and a
// domain's parents are exact keys.
func ReversedName(name string) string {
	labels := strings.Split(name, ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".")
}

// ParentNames are the names name is a subdomain of, nearest first
// ("a.b.example.com" gives "b.example.com", "example.com", "com").
func ParentNames(name string) []string {
	var out []string
	for i := strings.IndexByte(name, '.'); i >= 0; i = strings.IndexByte(name, '.') {
		name = name[i+1:]
		out = append(out, name)
	}
	return out
}

// The values of Domain.SpamFilter (and of the spam_filter setting).
const (
	// SpamFilterOff: the domain's mail is not scanned; it all goes to
	// INBOX.
	SpamFilterOff = "off"
	// SpamFilterJunk: what the filter calls spam goes to the recipient's
	// Junk folder, even what it would reject.
	SpamFilterJunk = "junk"
	// SpamFilterReject: what the filter rejects is refused, what it calls
	// junk goes to the Junk folder.
	SpamFilterReject = "reject"
)

// ValidSpamFilter reports whether f is a value of Domain.SpamFilter
// other than "".
func ValidSpamFilter(f string) bool {
	return f == SpamFilterOff || f == SpamFilterJunk || f == SpamFilterReject
}
