package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMountAccess: /metrics is open to loopback, to other addresses only
// with the bearer token (403 otherwise), and every other path goes to
// the handler underneath.
func TestMountAccess(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	for _, tc := range []struct {
		name, remote, path, method, token, auth string
		want                                    int
	}{
		{"loopback v4", "127.0.0.1:5000", "/metrics", "GET", "", "", 200},
		{"loopback v6", "[::1]:5000", "/metrics", "GET", "", "", 200},
		{"loopback mapped", "[::ffff:127.0.0.1]:5000", "/metrics", "GET", "", "", 200},
		{"remote, no token set", "192.0.2.7:5000", "/metrics", "GET", "", "", 403},
		{"remote, no token set, one sent", "192.0.2.7:5000", "/metrics", "GET", "", "Bearer ", 403},
		{"remote without token", "192.0.2.7:5000", "/metrics", "GET", "s3cret", "", 403},
		{"remote with a wrong token", "192.0.2.7:5000", "/metrics", "GET", "s3cret", "Bearer s3cre", 403},
		{"remote with the token, not as bearer", "192.0.2.7:5000", "/metrics", "GET", "s3cret", "s3cret", 403},
		{"remote with the token", "192.0.2.7:5000", "/metrics", "GET", "s3cret", "Bearer s3cret", 200},
		{"remote v6 with the token", "[2001:db8::1]:5000", "/metrics", "GET", "s3cret", "Bearer s3cret", 200},
		{"post", "127.0.0.1:5000", "/metrics", "POST", "", "", 405},
		{"other path", "192.0.2.7:5000", "/domains/", "GET", "s3cret", "", 418},
		{"sub path", "192.0.2.7:5000", "/metrics/x", "GET", "s3cret", "", 418},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Mount(next, New(), tc.token)
			r := httptest.NewRequest(tc.method, tc.path, nil)
			r.RemoteAddr = tc.remote
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("%s %s from %s = %d, want %d", tc.method, tc.path, tc.remote, w.Code, tc.want)
			}
			if tc.want == 200 && !strings.Contains(w.Body.String(), "go_goroutines ") {
				t.Errorf("GET /metrics: no go_goroutines in\n%s", w.Body.String())
			}
		})
	}
}
