package mailauth

import (
	"context"
	"fmt"

	"github.com/mailhost/mailhost/mailstore"
)

// KeyStore is where StoreSigner finds a domain's keys;
// mailstore.Store has it.
type KeyStore interface {
	DKIMKeys(ctx context.Context, domainID int64) ([]mailstore.DKIMKey, error)
}

// StoreSigner signs mail of a hosted domain with the keys the store holds
// for it: what smtpd (submission) and the outbound queue need.
type StoreSigner struct {
	Store KeyStore
	// Signer signs; its zero value signs DefaultSignedHeaders.
	Signer Signer
}

// Sign returns msg signed by d's keys (d= is d.Name), or msg unchanged
// when d has no key (a domain created before keys existed, until its
// keys are made). An error of the store is returned: mail is not sent
// unsigned because a lookup failed.
func (s StoreSigner) Sign(ctx context.Context, d mailstore.Domain, msg []byte) ([]byte, error) {
	keys, err := s.Store.DKIMKeys(ctx, d.ID)
	if err != nil {
		return nil, fmt.Errorf("dkim keys of %s: %w", d.Name, err)
	}
	if len(keys) == 0 {
		return msg, nil
	}
	return s.Signer.Sign(d.Name, keys, msg)
}
