package adminapi

import (
	"errors"
	"net/http"

	"github.com/mailhost/mailhost/autoconfig"
)

// The mail clients' endpoints (package autoconfig) on the API listener:
// the public ones without a key, the Apple profile with the partner's.

// clientConfig answers Thunderbird's GET /mail/config-v1.1.xml and
// /.well-known/autoconfig/mail/config-v1.1.xml.
func (a *API) clientConfig(w http.ResponseWriter, r *http.Request) error {
	return clientError(a.clients.Thunderbird(w, r))
}

// autodiscover answers Outlook's POST /autodiscover/autodiscover.xml.
func (a *API) autodiscover(w http.ResponseWriter, r *http.Request) error {
	return clientError(a.clients.Autodiscover(w, r))
}

// clientError maps autoconfig's errors to the API's answers: a domain not
// hosted is the 404 of any unknown domain.
func clientError(err error) error {
	if errors.Is(err, autoconfig.ErrBadRequest) {
		return newError(http.StatusBadRequest, "Bad request: "+err.Error())
	}
	return err
}

// mobileConfig answers GET /users/{email}/mobileconfig: the Apple
// configuration profile of one of the partner's mailboxes, with no
// password in it, for the partner to hand to its customer.
func (a *API) mobileConfig(w http.ResponseWriter, r *http.Request, c call) error {
	email, err := emailParam(r)
	if err != nil {
		return err
	}
	m, err := a.store.Mailbox(r.Context(), c.partnerID, email)
	if err != nil {
		return err
	}
	if !a.clientServers.Complete() {
		return newError(http.StatusNotFound, "Mail client settings are not configured")
	}
	autoconfig.WriteProfile(w, a.clientServers, m.Email)
	return nil
}
