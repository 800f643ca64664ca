package adminapi

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mailhost/mailhost/credential"
)

// call is what an authenticated handler knows of its caller.
type call struct {
	// partnerID scopes every store call of the request.
	partnerID int64
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
			a.writeError(w, r, err)
			return
		}
		st.partnerID = c.partnerID
		if wait, ok := a.limiter.take(keyID, a.now()); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(wait))
			writeError(w, r, errTooMany)
			return
		}
		if err := fn(w, r, c); err != nil {
			a.writeError(w, r, err)
		}
	}
}

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
	return call{partnerID: k.PartnerID}, k.ID, nil
}

// limiter is a token bucket per API key, in memory: each key may send
// burst requests at once and rate per second after that.
type limiter struct {
	rate  float64
	burst float64
	// mu guards buckets.
	mu      sync.Mutex
	buckets map[int64]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(rate float64, burst int) *limiter {
	return &limiter{rate: rate, burst: float64(burst), buckets: map[int64]*bucket{}}
}

// take spends one token of key's bucket; when there is none it answers
// false and the whole seconds until there will be one.
func (l *limiter) take(key int64, now time.Time) (retryAfter int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, found := l.buckets[key]
	if !found {
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	if d := now.Sub(b.last).Seconds(); d > 0 {
		b.tokens = math.Min(l.burst, b.tokens+d*l.rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	return max(1, int(math.Ceil((1-b.tokens)/l.rate))), false
}
