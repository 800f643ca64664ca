package adminapi

import (
	"context"
	"slices"
	"sync"
	"testing"
)

// TestOnKeyFirstUse: Config.OnKeyFirstUse is told of each key once, on
// the first request it authenticates, and never of a request that fails
// to authenticate.
func TestOnKeyFirstUse(t *testing.T) {
	var mu sync.Mutex
	var used []int64
	e := newEnv(t, func(c *Config) {
		c.OnKeyFirstUse = func(id int64) {
			mu.Lock()
			defer mu.Unlock()
			used = append(used, id)
		}
	})
	keyID := func(partner int64) int64 {
		ks, err := e.store.APIKeys(context.Background(), partner)
		if err != nil || len(ks) != 1 {
			t.Fatalf("keys of partner %d = %v, %v", partner, ks, err)
		}
		return ks[0].ID
	}
	wrong := e.keyA[:len(e.keyA)-1] + map[bool]string{true: "A", false: "B"}[e.keyA[len(e.keyA)-1] != 'A']
	must(t, "wrong secret", e.raw("GET", "/domains/", wrong, ""), 401)
	must(t, "no key", e.raw("GET", "/domains/", "", ""), 401)
	mu.Lock()
	if len(used) != 0 {
		t.Errorf("after failed authentications OnKeyFirstUse was called for %v, want none", used)
	}
	mu.Unlock()
	for range 3 {
		must(t, "alpha", e.a("GET", "/domains/", ""), 200)
	}
	must(t, "beta", e.b("GET", "/domains/", ""), 200)
	// A request that fails after authenticating still used the key.
	must(t, "beta, unknown domain", e.b("GET", "/domains/nosuch.test", ""), 404)
	mu.Lock()
	defer mu.Unlock()
	if want := []int64{keyID(e.idA), keyID(e.idB)}; !slices.Equal(used, want) {
		t.Errorf("OnKeyFirstUse called for %v, want %v (each key once)", used, want)
	}
}
