package mailauth

import (
	"bytes"
	"sync"
	"testing"
)

// TestKeyCache: signatures made with cached keys verify, keys are parsed
// once, concurrent signers share the cache, and a full cache starts afresh.
func TestKeyCache(t *testing.T) {
	ks := keys(t)
	c := NewKeyCache(0)
	s := Signer{Keys: c}
	var wg sync.WaitGroup
	signed := make([][]byte, 8)
	errs := make([]error, 8)
	for i := range signed {
		wg.Go(func() { signed[i], errs[i] = s.Sign("example.org", ks, []byte(testMsg)) })
	}
	wg.Wait()
	for i := range signed {
		if errs[i] != nil {
			t.Fatalf("Sign() = %v", errs[i])
		}
		for _, v := range verify(t, "example.org", ks, signed[i]) {
			if v.Err != nil {
				t.Errorf("signature with a cached key (%s): %v", v.Domain, v.Err)
			}
		}
	}
	if c.Len() != len(ks) {
		t.Errorf("cache holds %d keys after signing with %d, want %d", c.Len(), len(ks), len(ks))
	}

	small := NewKeyCache(1)
	for range 3 {
		if _, err := (Signer{Keys: small}).Sign("example.org", ks, []byte(testMsg)); err != nil {
			t.Fatalf("Sign() with a full cache = %v", err)
		}
	}
	if small.Len() > 1 {
		t.Errorf("cache of 1 holds %d keys", small.Len())
	}
	if !bytes.Contains(signed[0], []byte("d=example.org")) {
		t.Errorf("signature lacks d=example.org:\n%s", signed[0])
	}
}

func BenchmarkSign(b *testing.B) {
	ks := keys(b)
	for _, bc := range []struct {
		name string
		s    Signer
	}{{"parse each time", Signer{}}, {"cached keys", Signer{Keys: NewKeyCache(0)}}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := bc.s.Sign("example.org", ks, []byte(testMsg)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
