package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// apiError is an error that is its own HTTP answer: a status and the
// detail text of the {"detail": ...} body.
type apiError struct {
	status int
	detail string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s", e.status, e.detail) }

func newError(status int, detail string) *apiError { return &apiError{status, detail} }

// unprocessable is a 422 whose detail names the field.
func unprocessable(field, format string, args ...any) *apiError {
	return newError(http.StatusUnprocessableEntity, field+": "+fmt.Sprintf(format, args...))
}

// errSRSLocalPart is the 422 detail, after the field name, for a mailbox
// address or alias source whose local part starts SRS0= or SRS1=: the MX
// takes mail to those only as bounces of forwarded mail (policy.IsSRS),
// so it could never receive any.
const errSRSLocalPart = "local part must not start with SRS0= or SRS1= (reserved for bounces of forwarded mail)"

// Answers fixed by the partner contract (docs/api.md); the texts are
// a contract.
var (
	errNotAuthenticated = newError(http.StatusUnauthorized, "Not authenticated")
	errInvalidKey       = newError(http.StatusUnauthorized, "Invalid API key")
	errNotFound         = newError(http.StatusNotFound, "Not found")
	errMethod           = newError(http.StatusMethodNotAllowed, "Method not allowed")
	errTooLarge         = newError(http.StatusRequestEntityTooLarge, "Request body too large")
	errTooMany          = newError(http.StatusTooManyRequests, "Too many requests")
	errDomainNotFound   = newError(http.StatusNotFound, "Domain not found")
	errMailboxNotFound  = newError(http.StatusNotFound, "Mailbox not found")
	errAliasNotFound    = newError(http.StatusNotFound, "Alias not found")
	errUnknownPlan      = newError(http.StatusUnprocessableEntity, "Unknown plan")
	errInternal         = newError(http.StatusInternalServerError, "Internal server error")
	errUnavailable      = newError(http.StatusServiceUnavailable, "Service unavailable")
	errNoSpace          = newError(http.StatusServiceUnavailable, "Storage full, try again later")
)

// storeErrors maps the store's sentinel errors to their answers; the
// first match wins, so specific not-found errors come before ErrNotFound.
var storeErrors = []struct {
	err error
	ans *apiError
}{
	{mailstore.ErrDomainNotFound, errDomainNotFound},
	{mailstore.ErrMailboxNotFound, errMailboxNotFound},
	{mailstore.ErrAliasNotFound, errAliasNotFound},
	{mailstore.ErrDomainExists, newError(http.StatusBadRequest, "Domain already exists")},
	{mailstore.ErrDomainRelated, newError(http.StatusBadRequest, "Domain is a subdomain or parent domain of a domain another partner has verified")},
	{mailstore.ErrEmailExists, newError(http.StatusBadRequest, "Email already exists")},
	{mailstore.ErrAliasExists, newError(http.StatusBadRequest, "Alias source already exists")},
	{mailstore.ErrMailboxLimit, newError(http.StatusForbidden, "Mailbox quota exceeded for this domain")},
	{mailstore.ErrAliasLimit, newError(http.StatusForbidden, "Alias quota exceeded")},
	{mailstore.ErrDomainLimit, newError(http.StatusForbidden, "Domain quota exceeded for this partner")},
	{mailstore.ErrDomainNotEmpty, newError(http.StatusConflict, "Domain is not empty")},
	{mailstore.ErrWrongDomain, newError(http.StatusUnprocessableEntity, "Address is not in the domain")},
	{mailstore.ErrInvalidArgument, newError(http.StatusUnprocessableEntity, "Invalid argument")},
	{policy.ErrUnknownPlan, errUnknownPlan},
	{mailstore.ErrNotFound, errNotFound},
	// Nothing was stored; the same request succeeds once the operator
	// has freed space.
	{mailstore.ErrNoSpace, errNoSpace},
}

// answer is the HTTP answer to err.
func answer(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	for _, m := range storeErrors {
		if errors.Is(err, m.err) {
			return m.ans
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errUnavailable
	}
	return errInternal
}

// writeError writes err's answer; an unexpected error is logged here,
// once, and answered 500 without its text.
func (a *API) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ans := answer(err)
	if ans.status >= 500 {
		a.log.Error("api error", "method", r.Method, "route", state(r.Context()).pattern, "err", err)
	}
	writeError(w, r, ans)
}

func writeError(w http.ResponseWriter, r *http.Request, ans *apiError) {
	switch ans {
	case errNotAuthenticated:
		w.Header().Set("WWW-Authenticate", "Bearer")
	case errInvalidKey:
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	case errNoSpace:
		w.Header().Set("Retry-After", "60")
	}
	writeJSON(w, ans.status, map[string]string{"detail": ans.detail})
}

// writeJSON writes v as the JSON body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"detail":"Internal server error"}`)
	}
	writeRaw(w, status, body)
}

// writeRaw writes an encoded JSON body with status.
func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// appendJSONString appends s as a JSON string (RFC 8259 section 7).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// message is the body of deletes and of the password update.
func message(text string) map[string]string { return map[string]string{"message": text} }
