package adminapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
	"github.com/mailhost/mailhost/sieve"
)

// defaultSieveName names the script PUT /users/{email}/sieve stores when
// the mailbox has no active one.
const defaultSieveName = "mailhost"

// sieveJSON is the Sieve script resource.
type sieveJSON struct {
	Script string `json:"script"`
}

// sieveTarget finds the partner's mailbox of the request and the store's
// scripts.
func (a *API) sieveTarget(r *http.Request, c call) (mailstore.Mailbox, mailstore.SieveScripts, error) {
	email, err := emailParam(r)
	if err != nil {
		return mailstore.Mailbox{}, nil, err
	}
	m, err := a.store.Mailbox(r.Context(), c.partnerID, email)
	if err != nil {
		return mailstore.Mailbox{}, nil, err
	}
	return m, a.store, nil
}

var errSieveNotFound = newError(http.StatusNotFound, "Sieve script not found")

// getSieve answers GET /users/{email}/sieve: the active script, the one
// delivery runs, whether set here or over ManageSieve.
func (a *API) getSieve(w http.ResponseWriter, r *http.Request, c call) error {
	m, st, err := a.sieveTarget(r, c)
	if err != nil {
		return err
	}
	sc, err := st.ActiveSieveScript(r.Context(), m.ID)
	if errors.Is(err, mailstore.ErrNotFound) {
		return errSieveNotFound
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sieveJSON{Script: sc.Script})
	return nil
}

// setSieve answers PUT /users/{email}/sieve: the script must parse with
// the extensions offered; it replaces the active script under its name
// (a ManageSieve client's script keeps its name), or becomes the active
// script "mailhost". Safe to repeat.
func (a *API) setSieve(w http.ResponseWriter, r *http.Request, c call) error {
	m, st, err := a.sieveTarget(r, c)
	if err != nil {
		return err
	}
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	text, err := b.str("script")
	if err != nil {
		return err
	}
	if _, err := sieve.Parse([]byte(text), policy.SieveOptions); err != nil {
		// The parser's errors name the line, column and fault.
		return unprocessable("script", "%v", err)
	}
	name := defaultSieveName
	cur, err := st.ActiveSieveScript(r.Context(), m.ID)
	switch {
	case err == nil:
		name = cur.Name
	case !errors.Is(err, mailstore.ErrNotFound):
		return err
	}
	err = st.PutSieveScript(r.Context(), mailstore.SieveScript{MailboxID: m.ID, Name: name, Script: text, Active: true})
	if errors.Is(err, mailstore.ErrSieveLimit) {
		// Sizes were checked by Parse: the mailbox has as many scripts
		// as it may keep, stored over ManageSieve.
		return unprocessable("script", "the mailbox already has %d Sieve scripts; delete one over ManageSieve", mailstore.MaxSieveScripts)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sieveJSON{Script: text})
	return nil
}

// deleteSieve answers DELETE /users/{email}/sieve: the active script is
// deactivated and deleted, and delivery runs no filter. The mailbox's
// inactive scripts (kept over ManageSieve) stay. Safe to repeat: 204
// also when no script is active.
func (a *API) deleteSieve(w http.ResponseWriter, r *http.Request, c call) error {
	m, st, err := a.sieveTarget(r, c)
	if err != nil {
		return err
	}
	if err := deleteActiveSieve(r.Context(), st, m.ID); err != nil {
		return err
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// deleteActiveSieve deactivates the active script and deletes it. Should
// a ManageSieve client activate it again in between, the two crossed and
// the answer is 409; the script stays, active.
func deleteActiveSieve(ctx context.Context, st mailstore.SieveScripts, mailboxID int64) error {
	cur, err := st.ActiveSieveScript(ctx, mailboxID)
	if errors.Is(err, mailstore.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := st.SetActiveSieveScript(ctx, mailboxID, ""); err != nil {
		return err
	}
	err = st.DeleteSieveScript(ctx, mailboxID, cur.Name)
	switch {
	case errors.Is(err, mailstore.ErrSieveActive):
		return newError(http.StatusConflict, "Sieve script was activated again meanwhile; try again")
	case errors.Is(err, mailstore.ErrNotFound):
		return nil
	}
	return err
}
