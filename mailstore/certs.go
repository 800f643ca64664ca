package mailstore

import "context"

// Certs keeps the ACME client's named blobs (autocert's cache): the
// account key, each certificate with its private key, and the HTTP-01
// challenge tokens. A shared store shares them, so that a certificate
// one node obtained serves every node, and a challenge one node started
// is answered by whichever node the CA reaches. The blobs hold private
// keys: whoever reads the store can read them, as it can read the mail.
//
// An empty name is ErrInvalidArgument.
type Certs interface {
	// Cert answers the blob stored under name, or ErrNotFound.
	Cert(ctx context.Context, name string) ([]byte, error)
	// PutCert stores data under name, replacing any blob there.
	PutCert(ctx context.Context, name string, data []byte) error
	// DeleteCert removes the blob under name; a name with none is no
	// error.
	DeleteCert(ctx context.Context, name string) error
}
