// Package credential makes and checks mailhost's secrets: mailbox passwords
// (argon2id, PHC strings) and partner API keys (random, prefixed, stored as
// a hash, compared in constant time).
package credential

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Argon2id parameters for new hashes: 19 MiB, 2 passes, 1 lane, the
// OWASP minimum for argon2id. On this project's 2-core reference machine a
// hash takes about 25 ms, so one core verifies ~40 logins/s cold; the IMAP
// and SMTP servers cache successful verifications (see Verifier) rather
// than lowering the cost. Stored hashes carry their own parameters, so these
// can be raised later without breaking old passwords.
const (
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonKeyLen    = 32
	argonSaltLen   = 16
)

var b64 = base64.RawStdEncoding

// ErrMismatch is returned when a password does not match its hash.
var ErrMismatch = errors.New("password does not match")

// ErrBadHash is returned for a stored hash that cannot be parsed.
var ErrBadHash = errors.New("malformed password hash")

// HashPassword returns the argon2id PHC string of password:
// $argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>.
func HashPassword(password string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, argonMemoryKiB, argonTime, argonThreads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// VerifyPassword checks password against a PHC string made by HashPassword
// (any argon2id parameters). It answers nil, ErrMismatch or ErrBadHash.
func VerifyPassword(phc, password string) error {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return ErrBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return ErrBadHash
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m == 0 || t == 0 || p == 0 || m > 1<<22 {
		return ErrBadHash
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return ErrBadHash
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return ErrBadHash
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(want)))
	if subtle.ConstantTimeCompare(got, want) != 1 {
		return ErrMismatch
	}
	return nil
}

// Verifier bounds how many memory-hard verifications and hashes run at
// once, so a burst of logins or of mailbox creations cannot exhaust memory
// (each takes argonMemoryKiB). One Verifier shared by every protocol and
// the API bounds them all together.
type Verifier struct {
	slots chan struct{}
}

// NewVerifier allows n verifications at once; n <= 0 means 4.
func NewVerifier(n int) *Verifier {
	if n <= 0 {
		n = 4
	}
	return &Verifier{slots: make(chan struct{}, n)}
}

// Verify is VerifyPassword behind the concurrency bound; it gives up with
// ctx's error when ctx ends first.
func (v *Verifier) Verify(ctx context.Context, phc, password string) error {
	return v.run(ctx, func() error { return VerifyPassword(phc, password) })
}

// run runs f in a slot; it gives up with ctx's error when ctx ends first.
func (v *Verifier) run(ctx context.Context, f func() error) error {
	select {
	case v.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-v.slots }()
	return f()
}

// Hash is HashPassword behind the same bound as Verify.
func (v *Verifier) Hash(ctx context.Context, password string) (string, error) {
	select {
	case v.slots <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-v.slots }()
	return HashPassword(password)
}
