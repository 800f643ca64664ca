// Package signbench measures one DKIM signature's public-key operation
// with Go's crypto (what mailhost pays per message and key), for the
// context of bench/outbound-compare.sh:
//
//	go test -bench . ./bench/signbench
//
// Compare `openssl speed -seconds 2 rsa2048 ed25519` (OpenDKIM's side).
package signbench

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"testing"
)

func BenchmarkRSA2048Sign(b *testing.B) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	h := sha256.Sum256([]byte("header hash"))
	for b.Loop() {
		if _, err := rsa.SignPKCS1v15(nil, k, crypto.SHA256, h[:]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEd25519Sign(b *testing.B) {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	h := sha256.Sum256([]byte("header hash"))
	for b.Loop() {
		ed25519.Sign(k, h[:])
	}
}
