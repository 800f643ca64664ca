package mailauth

import (
	"crypto"
	"crypto/sha256"
	"sync"

	"github.com/mailhost/mailhost/mailstore"
)

// KeyCache keeps DKIM keys parsed, so that signing each message does not
// decode its domain's PKCS #8 keys again (for RSA that also redoes the CRT
// precomputation: about 5% of the CPU of a submission, measured). It is
// safe for concurrent use; the zero value is not, use NewKeyCache.
type KeyCache struct {
	max int
	// mu guards keys, which maps the SHA-256 of a key's DER to the key.
	mu   sync.Mutex
	keys map[[32]byte]crypto.Signer
}

// DefaultKeyCacheSize bounds a KeyCache: two keys a domain for 2,048
// busy domains, a few MB of RSA keys.
const DefaultKeyCacheSize = 4096

// NewKeyCache keeps at most max parsed keys; max <= 0 means
// DefaultKeyCacheSize. When full it starts afresh: keys are cheap to parse
// again, and the busy ones come back at once.
func NewKeyCache(max int) *KeyCache {
	if max <= 0 {
		max = DefaultKeyCacheSize
	}
	return &KeyCache{max: max, keys: map[[32]byte]crypto.Signer{}}
}

// key answers k parsed, from the cache when it is there. Keys are
// immutable, so the cache is keyed by their content and needs no
// invalidation when a domain's keys change.
func (c *KeyCache) key(k mailstore.DKIMKey) (crypto.Signer, error) {
	if c == nil {
		return privateKey(k)
	}
	id := sha256.Sum256(append([]byte(k.Algorithm+"\x00"), k.Private...))
	c.mu.Lock()
	priv, ok := c.keys[id]
	c.mu.Unlock()
	if ok {
		return priv, nil
	}
	priv, err := privateKey(k)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.keys) >= c.max {
		clear(c.keys)
	}
	c.keys[id] = priv
	c.mu.Unlock()
	return priv, nil
}

// Len is the number of parsed keys held.
func (c *KeyCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.keys)
}
