package adminapi

import (
	"context"
	"errors"
	"math"
	"net/http"

	"github.com/mailhost/mailhost/mailauth"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// domainJSON is the Domain resource; the partner id is never shown.
type domainJSON struct {
	ID                int64  `json:"id"`
	Name              string `json:"name"`
	Plan              string `json:"plan"`
	MaxMailboxes      int64  `json:"max_mailboxes"`
	MaxAliases        int64  `json:"max_aliases"`
	QuotaMB           int64  `json:"quota_mb"`
	RetentionDays     int64  `json:"retention_days"`
	TransferMonthlyMB int64  `json:"transfer_monthly_mb"`
	Suspended         bool   `json:"suspended"`
	// Verified: the domain's DNS proves it is hosted here (POST
	// /domains/{domain_name}/verify); until then mail to it from other
	// partners' mailboxes leaves as for a domain hosted elsewhere.
	Verified  bool   `json:"verified"`
	CreatedAt string `json:"created_at"`
	// ClaimEndedAt, only on a claim another partner's verification of
	// the name ended (docs/security.md): its mailboxes and aliases get
	// no mail and cannot log in.
	ClaimEndedAt string `json:"claim_ended_at,omitempty"`
}

func toDomain(d mailstore.Domain) domainJSON {
	out := domainJSON{
		ID: d.ID, Name: d.Name, Plan: d.Plan,
		MaxMailboxes: d.MaxMailboxes, MaxAliases: d.MaxAliases,
		QuotaMB: d.QuotaMB, RetentionDays: d.RetentionDays, TransferMonthlyMB: d.TransferMonthlyMB,
		Suspended: d.Suspended, Verified: d.Verified, CreatedAt: timestamp(d.CreatedAt),
	}
	if d.Ended() {
		out.ClaimEndedAt = timestamp(d.ClaimEndedAt)
	}
	return out
}

// Count limits of a domain: 0 means unlimited.
const maxCountLimit = math.MaxInt32

// domainParam is the {domain_name} of the path, normalised; a name that
// cannot be a domain is answered as an unknown one.
func domainParam(r *http.Request) (string, error) {
	name, err := policy.NormalizeDomain(r.PathValue("domain_name"))
	if err != nil {
		return "", errDomainNotFound
	}
	return name, nil
}

// createDomain answers POST /domains/.
func (a *API) createDomain(w http.ResponseWriter, r *http.Request, c call) error {
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	raw, err := b.str("name")
	if err != nil {
		return err
	}
	name, err := policy.NormalizeDomain(raw)
	if err != nil {
		return unprocessable("name", "invalid domain name")
	}
	// Named for the audit whichever check refuses the create.
	setObject(r, name)
	if policy.ReservedDomain(name, a.hostname) {
		return unprocessable("name", "%s is reserved for the server's own host name", name)
	}
	planName := "starter"
	if b.has("plan") {
		if planName, err = b.str("plan"); err != nil {
			return err
		}
	}
	plan, err := a.plans.Get(planName)
	if err != nil {
		return err
	}
	nd := mailstore.NewDomain{Name: name, Plan: plan, MaxMailboxes: a.maxMbx, MaxAliases: a.maxAls,
		VerifyToken: mailauth.NewVerifyToken()}
	if b.has("max_mailboxes") {
		if nd.MaxMailboxes, err = b.int("max_mailboxes", 0, maxCountLimit); err != nil {
			return err
		}
	}
	if b.has("max_aliases") {
		if nd.MaxAliases, err = b.int("max_aliases", 0, maxCountLimit); err != nil {
			return err
		}
	}
	// A name already taken (the partner's own claim, or another
	// partner's verified one) is answered before the keys are made:
	// billing systems repeat creations, and a key costs up to 200 ms of
	// CPU. CreateDomain checks again in its transaction.
	if err := a.nameFree(r.Context(), c.partnerID, name); err != nil {
		return err
	}
	now := a.now()
	if nd.DKIMKeys, err = a.dkimKeys(r.Context(), now); err != nil {
		return err
	}
	d, err := a.store.CreateDomain(r.Context(), c.partnerID, nd, now)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toDomain(d))
	return nil
}

// nameFree answers mailstore.ErrDomainExists when the partner claims
// name already or another partner has verified it (the verified claim
// is the live one); another partner's unverified claim is no obstacle.
func (a *API) nameFree(ctx context.Context, partnerID int64, name string) error {
	if _, err := a.store.Domain(ctx, partnerID, name); err == nil {
		return mailstore.ErrDomainExists
	} else if !errors.Is(err, mailstore.ErrNotFound) {
		return err
	}
	if live, err := a.store.DomainByName(ctx, name); err == nil && live.Verified && live.PartnerID != partnerID {
		return mailstore.ErrDomainExists
	} else if err != nil && !errors.Is(err, mailstore.ErrNotFound) {
		return err
	}
	return nil
}

// listDomains answers GET /domains/.
func (a *API) listDomains(w http.ResponseWriter, r *http.Request, c call) error {
	lim, off, err := page(r)
	if err != nil {
		return err
	}
	ds, total, err := a.store.Domains(r.Context(), c.partnerID, mailstore.Page{Limit: lim, Offset: off})
	if err != nil {
		return err
	}
	out := make([]domainJSON, 0, len(ds))
	for _, d := range ds {
		out = append(out, toDomain(d))
	}
	writeList(w, total, out)
	return nil
}

// getDomain answers GET /domains/{domain_name}.
func (a *API) getDomain(w http.ResponseWriter, r *http.Request, c call) error {
	name, err := domainParam(r)
	if err != nil {
		return err
	}
	d, err := a.store.Domain(r.Context(), c.partnerID, name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toDomain(d))
	return nil
}

// deleteDomain answers DELETE /domains/{domain_name}[?force=true]: 409
// while the domain has mailboxes or aliases, unless forced.
func (a *API) deleteDomain(w http.ResponseWriter, r *http.Request, c call) error {
	name, err := domainParam(r)
	if err != nil {
		return err
	}
	f, err := queryValue(r, "force")
	if err != nil {
		return err
	}
	var force bool
	switch f {
	case "", "false", "0":
	case "true", "1":
		force = true
	default:
		return unprocessable("force", "must be true or false")
	}
	if err := a.store.DeleteDomain(r.Context(), c.partnerID, name, force); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, message("Domain deleted"))
	return nil
}

// setPlan answers PUT /domains/{domain_name}/plan: the plan's three limits
// apply to the domain and every mailbox of it, in one transaction.
func (a *API) setPlan(w http.ResponseWriter, r *http.Request, c call) error {
	name, err := domainParam(r)
	if err != nil {
		return err
	}
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	planName, err := b.str("plan")
	if err != nil {
		return err
	}
	plan, err := a.plans.Get(planName)
	if err != nil {
		return err
	}
	d, err := a.store.ApplyPlan(r.Context(), c.partnerID, name, plan)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toDomain(d))
	return nil
}

// setLimits answers PUT /domains/{domain_name}/limits; a field left out
// keeps its value, but one of them is required.
func (a *API) setLimits(w http.ResponseWriter, r *http.Request, c call) error {
	name, err := domainParam(r)
	if err != nil {
		return err
	}
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	var l mailstore.DomainLimits
	for _, f := range []struct {
		name string
		dst  **int64
	}{{"max_mailboxes", &l.MaxMailboxes}, {"max_aliases", &l.MaxAliases}} {
		if !b.has(f.name) {
			continue
		}
		n, err := b.int(f.name, 0, maxCountLimit)
		if err != nil {
			return err
		}
		*f.dst = &n
	}
	if l.MaxMailboxes == nil && l.MaxAliases == nil {
		return unprocessable("max_mailboxes", "field required (or max_aliases)")
	}
	d, err := a.store.SetDomainLimits(r.Context(), c.partnerID, name, l)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toDomain(d))
	return nil
}

// suspend answers POST /domains/{domain_name}/suspend; repeating it is
// harmless.
func (a *API) suspend(w http.ResponseWriter, r *http.Request, c call) error {
	return a.setSuspended(w, r, c, true)
}

// resume answers POST /domains/{domain_name}/resume.
func (a *API) resume(w http.ResponseWriter, r *http.Request, c call) error {
	return a.setSuspended(w, r, c, false)
}

func (a *API) setSuspended(w http.ResponseWriter, r *http.Request, c call, suspended bool) error {
	name, err := domainParam(r)
	if err != nil {
		return err
	}
	d, err := a.store.SetSuspended(r.Context(), c.partnerID, name, suspended)
	if err != nil {
		return err
	}
	if !suspended && a.onResume != nil {
		a.onResume(r.Context(), d)
	}
	writeJSON(w, http.StatusOK, toDomain(d))
	return nil
}

// retentionJSON is the Domain retention resource.
type retentionJSON struct {
	Name          string `json:"name"`
	RetentionDays int64  `json:"retention_days"`
}

// getRetention answers GET /domains/{domain_name}/retention.
func (a *API) getRetention(w http.ResponseWriter, r *http.Request, c call) error {
	name, err := domainParam(r)
	if err != nil {
		return err
	}
	d, err := a.store.Domain(r.Context(), c.partnerID, name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, retentionJSON{d.Name, d.RetentionDays})
	return nil
}

// setRetention answers PUT /domains/{domain_name}/retention with the same
// object as the GET.
func (a *API) setRetention(w http.ResponseWriter, r *http.Request, c call) error {
	name, err := domainParam(r)
	if err != nil {
		return err
	}
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	days, err := b.int("retention_days", policy.MinRetentionDays, policy.MaxRetentionDays)
	if err != nil {
		return err
	}
	d, err := a.store.SetRetention(r.Context(), c.partnerID, name, days)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, retentionJSON{d.Name, d.RetentionDays})
	return nil
}

// transferJSON is the Domain transfer cap resource.
type transferJSON struct {
	Name              string `json:"name"`
	TransferMonthlyMB int64  `json:"transfer_monthly_mb"`
}

// getTransfer answers GET /domains/{domain_name}/transfer.
func (a *API) getTransfer(w http.ResponseWriter, r *http.Request, c call) error {
	name, err := domainParam(r)
	if err != nil {
		return err
	}
	d, err := a.store.Domain(r.Context(), c.partnerID, name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, transferJSON{d.Name, d.TransferMonthlyMB})
	return nil
}

// setTransfer answers PUT /domains/{domain_name}/transfer with the same
// object as the GET.
func (a *API) setTransfer(w http.ResponseWriter, r *http.Request, c call) error {
	name, err := domainParam(r)
	if err != nil {
		return err
	}
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	mb, err := b.int("transfer_monthly_mb", policy.MinTransferMB, policy.MaxTransferMB)
	if err != nil {
		return err
	}
	d, err := a.store.SetTransferCap(r.Context(), c.partnerID, name, mb)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, transferJSON{d.Name, d.TransferMonthlyMB})
	return nil
}

// domainUsageJSON is what GET /domains/{domain_name}/usage reports.
type domainUsageJSON struct {
	Name               string  `json:"name"`
	Month              string  `json:"month"`
	MailboxCount       int64   `json:"mailbox_count"`
	AliasCount         int64   `json:"alias_count"`
	MessageCount       int64   `json:"message_count"`
	StorageUsedBytes   int64   `json:"storage_used_bytes"`
	StorageUsedMB      float64 `json:"storage_used_mb"`
	TransferInBytes    int64   `json:"transfer_in_bytes"`
	TransferOutBytes   int64   `json:"transfer_out_bytes"`
	TransferTotalBytes int64   `json:"transfer_total_bytes"`
	TransferInMB       float64 `json:"transfer_in_mb"`
	TransferOutMB      float64 `json:"transfer_out_mb"`
	TransferTotalMB    float64 `json:"transfer_total_mb"`
	TransferMonthlyMB  int64   `json:"transfer_monthly_mb"`
}

// mb converts bytes to MB (1,048,576 bytes), to two decimals.
func mb(bytes int64) float64 {
	return math.Round(float64(bytes)/mailstore.MB*100) / 100
}

// domainUsage answers GET /domains/{domain_name}/usage for the current
// UTC calendar month.
func (a *API) domainUsage(w http.ResponseWriter, r *http.Request, c call) error {
	name, err := domainParam(r)
	if err != nil {
		return err
	}
	u, err := a.store.DomainUsage(r.Context(), c.partnerID, name, mailstore.Month(a.now()))
	if err != nil {
		return err
	}
	d, t := u.Domain, u.Transfer
	total := t.InBytes + t.OutBytes
	writeJSON(w, http.StatusOK, domainUsageJSON{
		Name: d.Name, Month: t.Month,
		MailboxCount: d.MailboxCount, AliasCount: d.AliasCount, MessageCount: d.MessageCount,
		StorageUsedBytes: d.UsedBytes, StorageUsedMB: mb(d.UsedBytes),
		TransferInBytes: t.InBytes, TransferOutBytes: t.OutBytes, TransferTotalBytes: total,
		TransferInMB: mb(t.InBytes), TransferOutMB: mb(t.OutBytes), TransferTotalMB: mb(total),
		TransferMonthlyMB: d.TransferMonthlyMB,
	})
	return nil
}
