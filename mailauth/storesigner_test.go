package mailauth

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// keyTable is a KeyStore of fixed answers.
type keyTable map[int64][]mailstore.DKIMKey

func (k keyTable) DKIMKeys(ctx context.Context, id int64) ([]mailstore.DKIMKey, error) {
	ks, ok := k[id]
	if !ok {
		return nil, mailstore.ErrDomainNotFound
	}
	return ks, nil
}

func TestStoreSigner(t *testing.T) {
	s := StoreSigner{Store: keyTable{1: keys(t), 2: {}}}
	msg := []byte(testMsg)

	signed, err := s.Sign(t.Context(), mailstore.Domain{ID: 1, Name: "example.org"}, msg)
	if err != nil {
		t.Fatalf("Sign(with keys) = %v", err)
	}
	vs := verify(t, "example.org", keys(t), signed)
	if len(vs) != 2 || vs[0].Err != nil || vs[1].Err != nil {
		t.Errorf("Sign(with keys) does not verify: %+v", vs)
	}

	same, err := s.Sign(t.Context(), mailstore.Domain{ID: 2, Name: "old.example"}, msg)
	if err != nil || !bytes.Equal(same, msg) {
		t.Errorf("Sign(no keys) = %q, %v; want the message unchanged", same, err)
	}

	if _, err := s.Sign(t.Context(), mailstore.Domain{ID: 3, Name: "gone.example"}, msg); !errors.Is(err, mailstore.ErrDomainNotFound) {
		t.Errorf("Sign(unknown domain) = %v, want ErrDomainNotFound", err)
	}
}
