package credential

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// APIKeyPrefix starts every API key, so that keys are recognisable in
// configuration files and secret scanners.
const APIKeyPrefix = "mhk_"

// An API key reads mhk_<lookup>_<secret>: lookup is 12 hex characters that
// find the stored record without a scan; secret is 32 random bytes
// (base64url), of which only a SHA-256 is stored. A fast hash is right
// here: the secret has 256 bits of entropy, so there is nothing to
// brute-force, unlike a password.
const (
	lookupBytes = 6
	secretBytes = 32
)

// ErrMalformedKey is returned by ParseAPIKey for a string that is not a key.
var ErrMalformedKey = errors.New("malformed API key")

// NewAPIKey returns a fresh key: the full text to show once, its lookup
// part, the listing prefix and the hash to store.
func NewAPIKey() (key, lookup, prefix string, hash []byte, err error) {
	lb := make([]byte, lookupBytes)
	sb := make([]byte, secretBytes)
	if _, err := rand.Read(lb); err != nil {
		return "", "", "", nil, fmt.Errorf("new API key: %w", err)
	}
	if _, err := rand.Read(sb); err != nil {
		return "", "", "", nil, fmt.Errorf("new API key: %w", err)
	}
	lookup = hex.EncodeToString(lb)
	secret := base64.RawURLEncoding.EncodeToString(sb)
	h := sha256.Sum256([]byte(secret))
	return APIKeyPrefix + lookup + "_" + secret, lookup, APIKeyPrefix + lookup, h[:], nil
}

// ParseAPIKey splits a key into its lookup and the SHA-256 of its secret.
func ParseAPIKey(key string) (lookup string, hash []byte, err error) {
	rest, ok := strings.CutPrefix(key, APIKeyPrefix)
	if !ok || len(rest) < 2*lookupBytes+2 || rest[2*lookupBytes] != '_' {
		return "", nil, ErrMalformedKey
	}
	lookup, secret := rest[:2*lookupBytes], rest[2*lookupBytes+1:]
	if _, err := hex.DecodeString(lookup); err != nil || len(secret) > 128 {
		return "", nil, ErrMalformedKey
	}
	h := sha256.Sum256([]byte(secret))
	return lookup, h[:], nil
}

// MatchHash compares two key hashes in constant time.
func MatchHash(stored, presented []byte) bool {
	return subtle.ConstantTimeCompare(stored, presented) == 1
}
