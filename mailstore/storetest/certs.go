package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// RunCerts runs the conformance tests of mailstore.Certs against stores
// made by open, which must implement it. Apart from Run, so that a
// store gains Certs without the rest of the suite changing.
func RunCerts(t *testing.T, open Open) {
	ctx := context.Background()
	certs := func(t *testing.T) mailstore.Certs {
		t.Helper()
		st := open(t)
		t.Cleanup(func() { st.Close() })
		c, ok := st.(mailstore.Certs)
		if !ok {
			t.Fatalf("%T does not implement mailstore.Certs", st)
		}
		return c
	}
	t.Run("round trip", func(t *testing.T) {
		c := certs(t)
		if _, err := c.Cert(ctx, "mx.example.com"); !errors.Is(err, mailstore.ErrNotFound) {
			t.Fatalf("Cert(missing) = %v, want ErrNotFound", err)
		}
		blob := []byte("-----BEGIN EC PRIVATE KEY-----\n\x00\xff binary too")
		if err := c.PutCert(ctx, "mx.example.com", blob); err != nil {
			t.Fatal(err)
		}
		blob[0] = 'X' // the store kept its own copy
		got, err := c.Cert(ctx, "mx.example.com")
		if err != nil || !bytes.Equal(got, []byte("-----BEGIN EC PRIVATE KEY-----\n\x00\xff binary too")) {
			t.Fatalf("Cert = %q, %v, want the blob put", got, err)
		}
		if err := c.PutCert(ctx, "mx.example.com", []byte("renewed")); err != nil {
			t.Fatal(err)
		}
		if got, err := c.Cert(ctx, "mx.example.com"); err != nil || string(got) != "renewed" {
			t.Errorf("Cert after a second put = %q, %v, want renewed", got, err)
		}
		if got, err := c.Cert(ctx, "mx.example.com+rsa"); !errors.Is(err, mailstore.ErrNotFound) {
			t.Errorf("Cert(another name) = %q, %v, want ErrNotFound", got, err)
		}
		if err := c.PutCert(ctx, "empty", nil); err != nil {
			t.Fatal(err)
		}
		if got, err := c.Cert(ctx, "empty"); err != nil || len(got) != 0 {
			t.Errorf("Cert(empty blob) = %q, %v, want empty and no error", got, err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		c := certs(t)
		if err := c.DeleteCert(ctx, "never"); err != nil {
			t.Errorf("DeleteCert(missing) = %v, want nil", err)
		}
		if err := c.PutCert(ctx, "acme_account+key", []byte("k")); err != nil {
			t.Fatal(err)
		}
		if err := c.DeleteCert(ctx, "acme_account+key"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Cert(ctx, "acme_account+key"); !errors.Is(err, mailstore.ErrNotFound) {
			t.Errorf("Cert after delete = %v, want ErrNotFound", err)
		}
	})
	t.Run("empty name", func(t *testing.T) {
		c := certs(t)
		if _, err := c.Cert(ctx, ""); !errors.Is(err, mailstore.ErrInvalidArgument) {
			t.Errorf("Cert(\"\") = %v, want ErrInvalidArgument", err)
		}
		if err := c.PutCert(ctx, "", []byte("x")); !errors.Is(err, mailstore.ErrInvalidArgument) {
			t.Errorf("PutCert(\"\") = %v, want ErrInvalidArgument", err)
		}
		if err := c.DeleteCert(ctx, ""); !errors.Is(err, mailstore.ErrInvalidArgument) {
			t.Errorf("DeleteCert(\"\") = %v, want ErrInvalidArgument", err)
		}
	})
}
