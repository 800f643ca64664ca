package metrics

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Path is where Mount serves the metrics.
const Path = "/metrics"

// Mount serves s at GET /metrics (Path) and passes every other request
// to next untouched. A client on a loopback address may scrape freely;
// any other only with "Authorization: Bearer <token>", and not at all
// when token is empty: 403 otherwise. A reverse proxy on the same host
// makes every client loopback, so one that exposes /metrics should
// forward it only to scrapers it trusts.
func Mount(next http.Handler, s *Set, token string) http.Handler {
	metrics := s.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != Path {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if !allowed(r, token) {
			http.Error(w, "forbidden: /metrics is open to loopback addresses, and to others with the metrics_token bearer", http.StatusForbidden)
			return
		}
		metrics.ServeHTTP(w, r)
	})
}

// allowed reports whether r may read the metrics.
func allowed(r *http.Request, token string) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
		return true
	}
	if token == "" {
		return false
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}
