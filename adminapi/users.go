package adminapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// mailboxJSON is the Mailbox resource; the password hash is never shown.
type mailboxJSON struct {
	ID        int64  `json:"id"`
	DomainID  int64  `json:"domain_id"`
	Email     string `json:"email"`
	CreatedAt string `json:"created_at"`
}

func toMailbox(m mailstore.Mailbox) mailboxJSON {
	return mailboxJSON{ID: m.ID, DomainID: m.DomainID, Email: m.Email, CreatedAt: timestamp(m.CreatedAt)}
}

// quotaJSON is the Mailbox quota resource.
type quotaJSON struct {
	Email   string `json:"email"`
	QuotaMB int64  `json:"quota_mb"`
}

// emailParam is the {email} of the path, normalised; an address that
// cannot be one is answered as an unknown mailbox.
func emailParam(r *http.Request) (string, error) {
	email, err := policy.NormalizeAddress(r.PathValue("email"))
	if err != nil {
		return "", errMailboxNotFound
	}
	return email, nil
}

// hash is credential.HashPassword behind the bound on concurrent
// memory-hard work that the API shares with the mail logins.
func (a *API) hash(ctx context.Context, password string) (string, error) {
	return a.passwords.Hash(ctx, password)
}

// addressFree answers mailstore.ErrEmailExists when email is a mailbox
// or an alias source in the partner's claim of its domain, as far as two
// look-ups tell (an alias of a claim that is not live is not seen here):
// it spares the hash of a password for a create the store would refuse.
// Another partner's claim of the name has addresses of its own.
func (a *API) addressFree(ctx context.Context, partnerID int64, email string) error {
	_, err := a.store.Mailbox(ctx, partnerID, email)
	if err == nil {
		return mailstore.ErrEmailExists
	}
	if !errors.Is(err, mailstore.ErrNotFound) {
		return err
	}
	al, err := a.store.AliasBySource(ctx, email)
	if err == nil && al.PartnerID == partnerID {
		return mailstore.ErrEmailExists
	}
	if !errors.Is(err, mailstore.ErrNotFound) {
		return err
	}
	return nil
}

// createMailbox answers POST /users/.
func (a *API) createMailbox(w http.ResponseWriter, r *http.Request, c call) error {
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	rawDomain, err := b.str("domain_name")
	if err != nil {
		return err
	}
	rawEmail, err := b.str("email")
	if err != nil {
		return err
	}
	// Read before the password is checked, so that the audit names the
	// address whichever check refuses the create.
	email, emailErr := policy.NormalizeAddress(rawEmail)
	if emailErr == nil {
		setObject(r, email)
	}
	password, err := b.password("password")
	if err != nil {
		return err
	}
	domain, err := policy.NormalizeDomain(rawDomain)
	if err != nil {
		// No domain of the partner can have that name.
		return errDomainNotFound
	}
	if emailErr != nil {
		return unprocessable("email", "invalid email address")
	}
	// An unknown domain_name is 404 whatever the email (the contract's
	// condition names domain_name alone), and is answered, as a taken
	// address is, before an argon2id hash is spent; the store checks both
	// again in its transaction.
	if _, err := a.store.Domain(r.Context(), c.partnerID, domain); err != nil {
		return err
	}
	if policy.DomainOf(email) != domain {
		return unprocessable("email", "must be an address of domain_name")
	}
	if policy.IsSRS(email) {
		return unprocessable("email", errSRSLocalPart)
	}
	if err := a.addressFree(r.Context(), c.partnerID, email); err != nil {
		return err
	}
	h, err := a.hash(r.Context(), password)
	if err != nil {
		return err
	}
	m, err := a.store.CreateMailbox(r.Context(), c.partnerID, domain, email, h, a.now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toMailbox(m))
	return nil
}

// domainIDQuery reads the optional domain_id filter of a list; 0 means
// all. An id that no domain can have (0 or below) is an unknown domain.
func domainIDQuery(r *http.Request) (int64, error) {
	v, err := queryValue(r, "domain_id")
	if err != nil || v == "" {
		return 0, err
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, unprocessable("domain_id", "must be an integer")
	}
	if id <= 0 {
		return 0, errDomainNotFound
	}
	return id, nil
}

// listMailboxes answers GET /users/[?domain_id=].
func (a *API) listMailboxes(w http.ResponseWriter, r *http.Request, c call) error {
	domainID, err := domainIDQuery(r)
	if err != nil {
		return err
	}
	lim, off, err := page(r)
	if err != nil {
		return err
	}
	// One call, not fetchList's two halves: the store lists mailboxes
	// from their index alone (about 0.3 µs an item), so splitting would
	// save little and cost a probe.
	ms, total, err := a.store.Mailboxes(r.Context(), c.partnerID, domainID, mailstore.Page{Limit: lim, Offset: off})
	if err != nil {
		return err
	}
	// Appended by hand: a domain's list can be 10,000 long, and
	// encoding/json's reflection would cost a fifth of the call.
	buf := make([]byte, 0, 96*len(ms)+2)
	buf = append(buf, '[')
	for i, m := range ms {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"id":`...)
		buf = strconv.AppendInt(buf, m.ID, 10)
		buf = append(buf, `,"domain_id":`...)
		buf = strconv.AppendInt(buf, m.DomainID, 10)
		buf = append(buf, `,"email":`...)
		buf = appendJSONString(buf, m.Email)
		buf = append(buf, `,"created_at":"`...)
		buf = m.CreatedAt.UTC().AppendFormat(buf, timeLayout)
		buf = append(buf, `"}`...)
	}
	buf = append(buf, ']')
	w.Header().Set("X-Total-Count", strconv.Itoa(total))
	writeRaw(w, http.StatusOK, buf)
	return nil
}

// setPassword answers PUT /users/{email}.
func (a *API) setPassword(w http.ResponseWriter, r *http.Request, c call) error {
	email, err := emailParam(r)
	if err != nil {
		return err
	}
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	password, err := b.password("password")
	if err != nil {
		return err
	}
	if _, err := a.store.Mailbox(r.Context(), c.partnerID, email); err != nil {
		return err
	}
	h, err := a.hash(r.Context(), password)
	if err != nil {
		return err
	}
	if _, err := a.store.SetPassword(r.Context(), c.partnerID, email, h, a.now()); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, message("Password updated"))
	return nil
}

// deleteMailbox answers DELETE /users/{email}: the mailbox and its
// messages go at once.
func (a *API) deleteMailbox(w http.ResponseWriter, r *http.Request, c call) error {
	email, err := emailParam(r)
	if err != nil {
		return err
	}
	if err := a.store.DeleteMailbox(r.Context(), c.partnerID, email); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, message("Mailbox deleted"))
	return nil
}

// getQuota answers GET /users/{email}/quota.
func (a *API) getQuota(w http.ResponseWriter, r *http.Request, c call) error {
	email, err := emailParam(r)
	if err != nil {
		return err
	}
	m, err := a.store.Mailbox(r.Context(), c.partnerID, email)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, quotaJSON{m.Email, m.QuotaMB})
	return nil
}

// setQuota answers PUT /users/{email}/quota. Lowering it below what the
// mailbox uses deletes nothing.
func (a *API) setQuota(w http.ResponseWriter, r *http.Request, c call) error {
	email, err := emailParam(r)
	if err != nil {
		return err
	}
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	q, err := b.int("quota_mb", policy.MinQuotaMB, policy.MaxQuotaMB)
	if err != nil {
		return err
	}
	m, err := a.store.SetQuota(r.Context(), c.partnerID, email, q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, quotaJSON{m.Email, m.QuotaMB})
	return nil
}

// mailboxUsageJSON is what GET /users/{email}/usage reports; last_login
// is null until the first login.
type mailboxUsageJSON struct {
	Email            string  `json:"email"`
	StorageUsedBytes int64   `json:"storage_used_bytes"`
	StorageUsedMB    float64 `json:"storage_used_mb"`
	MessageCount     int64   `json:"message_count"`
	QuotaMB          int64   `json:"quota_mb"`
	LastLogin        *string `json:"last_login"`
}

// mailboxUsage answers GET /users/{email}/usage.
func (a *API) mailboxUsage(w http.ResponseWriter, r *http.Request, c call) error {
	email, err := emailParam(r)
	if err != nil {
		return err
	}
	m, err := a.store.Mailbox(r.Context(), c.partnerID, email)
	if err != nil {
		return err
	}
	u := mailboxUsageJSON{
		Email: m.Email, StorageUsedBytes: m.UsedBytes, StorageUsedMB: mb(m.UsedBytes),
		MessageCount: m.MessageCount, QuotaMB: m.QuotaMB,
	}
	if !m.LastLogin.IsZero() {
		s := timestamp(m.LastLogin)
		u.LastLogin = &s
	}
	writeJSON(w, http.StatusOK, u)
	return nil
}
