package adminapi

import (
	"hash/fnv"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mailhost/mailhost/credential"
)

// call is what an authenticated handler knows of its caller.
type call struct {
	// partnerID scopes every store call of the request.
	partnerID int64
	// keyPrefix is the key's listing prefix (the audit log's).
	keyPrefix string
}

// apiFunc is an authenticated handler: it writes its success itself and
// returns any failure for the adapter to answer.
type apiFunc func(w http.ResponseWriter, r *http.Request, c call) error

// authed adapts an apiFunc: it authenticates the key, applies the key's
// rate limit, and answers the handler's error.
func (a *API) authed(fn apiFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st := state(r.Context())
		st.pattern = r.Pattern
		c, keyID, err := a.authenticate(r)
		if err != nil {
			if err == errInvalidKey && !a.failureAllowed(w, r) {
				writeError(w, r, errTooMany)
				return
			}
			a.writeError(w, r, err)
			return
		}
		st.partnerID, st.keyPrefix = c.partnerID, c.keyPrefix
		defer noteObject(r, st)
		if a.onKeyFirstUse != nil {
			if _, seen := a.keysUsed.LoadOrStore(keyID, struct{}{}); !seen {
				a.onKeyFirstUse(keyID)
			}
		}
		if ok, wait := a.limiter.Take(keyID, a.now()); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
			writeError(w, r, errTooMany)
			return
		}
		if err := fn(w, r, c); err != nil {
			a.writeError(w, r, err)
		}
	}
}

// failureAllowed takes one of the client address's failed-authentication
// tokens (failureBurst at once, failureRate a second after that) and, when
// there is none left, sets Retry-After and answers false: a client that
// keeps sending wrong keys is answered 429 instead of 401. A 256-bit
// secret cannot be guessed anyway; this bounds the work (each wrong key
// is a store lookup), and the log lines, such a client costs. A request
// with no key tries no secret and costs no lookup: it is always answered
// 401, as the contract has it. Right keys are never held back by it.
func (a *API) failureAllowed(w http.ResponseWriter, r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	h := fnv.New64a()
	h.Write([]byte(host))
	ok, wait := a.failures.Take(int64(h.Sum64()), a.now())
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
	}
	return ok
}

// Failed authentications allowed per client address: a burst well above
// what a client's set-up or a contract check sends, then one a second.
const (
	failureBurst = 100
	failureRate  = 1 // a second
)

// open adapts a handler that needs no key (health, the OpenAPI document).
func (a *API) open(fn func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		state(r.Context()).pattern = r.Pattern
		if err := fn(w, r); err != nil {
			a.writeError(w, r, err)
		}
	}
}

// authenticate checks "Authorization: Bearer <key>" (RFC 6750 section
// 2.1): the key's lookup part finds the stored record, its secret's hash
// is compared in constant time, and a revoked key is refused.
func (a *API) authenticate(r *http.Request) (call, int64, error) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return call{}, 0, errNotAuthenticated
	}
	lookup, hash, err := credential.ParseAPIKey(token)
	if err != nil {
		return call{}, 0, errInvalidKey
	}
	k, err := a.store.APIKeyByLookup(r.Context(), lookup)
	if err != nil {
		if answer(err) == errNotFound {
			return call{}, 0, errInvalidKey
		}
		return call{}, 0, err
	}
	if !credential.MatchHash(k.SecretHash, hash) || k.Revoked {
		return call{}, 0, errInvalidKey
	}
	return call{partnerID: k.PartnerID, keyPrefix: k.Prefix}, k.ID, nil
}

// retryAfter is a Limiter's wait as Retry-After says it: whole seconds,
// at least one.
func retryAfter(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}
