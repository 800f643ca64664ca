package mailauth

import (
	"bufio"
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/mailhost/mailhost/mailstore"
)

// DKIM key algorithms, as in mailstore.DKIMKey.Algorithm and the k= tag of
// the key record.
const (
	AlgEd25519 = "ed25519" // RFC 8463
	AlgRSA     = "rsa"     // RFC 6376, RFC 8301
)

// rsaBits is the RSA key size: RFC 8301 section 3.2 asks for at least
// 1024 and recommends 2048; 2048 still fits one DNS TXT record.
const rsaBits = 2048

// ErrNoKeys answers a signing call given no DKIM key.
var ErrNoKeys = errors.New("no DKIM keys")

// GenerateDKIMKeys makes a domain's DKIM keys: an Ed25519 key (RFC 8463)
// and an RSA-2048 key, in that order, each PKCS #8 DER in Private.
//
// Selectors are "ed" and "rsa" followed by the UTC date of now as YYYYMMDD
// (for example "ed20261122" and "rsa20261122"): distinct from each other,
// stable once made, and dated so that a rotation on a later day publishes
// new names beside the old ones. Both keys sign every message: receivers
// that do not know Ed25519 (still many) verify the RSA signature and ignore
// the other (RFC 8463 section 2).
//
// RSA generation takes tens to hundreds of milliseconds.
func GenerateDKIMKeys(now time.Time) ([]mailstore.DKIMKey, error) {
	day := now.UTC().Format("20060102")
	created := now.UTC().Truncate(time.Second)

	_, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate ed25519 key: %w", err)
	}
	edDER, err := x509.MarshalPKCS8PrivateKey(edPriv)
	if err != nil {
		return nil, fmt.Errorf("encode ed25519 key: %w", err)
	}
	rsaPriv, err := rsa.GenerateKey(rand.Reader, rsaBits)
	if err != nil {
		return nil, fmt.Errorf("generate rsa key: %w", err)
	}
	rsaDER, err := x509.MarshalPKCS8PrivateKey(rsaPriv)
	if err != nil {
		return nil, fmt.Errorf("encode rsa key: %w", err)
	}
	return []mailstore.DKIMKey{
		{Selector: "ed" + day, Algorithm: AlgEd25519, Private: edDER, CreatedAt: created},
		{Selector: "rsa" + day, Algorithm: AlgRSA, Private: rsaDER, CreatedAt: created},
	}, nil
}

// privateKey decodes a key's PKCS #8 DER and checks it is of its
// Algorithm.
func privateKey(k mailstore.DKIMKey) (crypto.Signer, error) {
	key, err := x509.ParsePKCS8PrivateKey(k.Private)
	if err != nil {
		return nil, fmt.Errorf("dkim key %s: %w", k.Selector, err)
	}
	switch key := key.(type) {
	case ed25519.PrivateKey:
		if k.Algorithm == AlgEd25519 {
			return key, nil
		}
	case *rsa.PrivateKey:
		if k.Algorithm == AlgRSA {
			return key, nil
		}
	}
	return nil, fmt.Errorf("dkim key %s: a %T is not algorithm %q", k.Selector, key, k.Algorithm)
}

// PublicKeyRecord is the text of a key's DNS TXT record (RFC 6376 section
// 3.6.1): "v=DKIM1; k=ed25519; p=<raw 32-byte key>" (RFC 8463 section 4)
// or "v=DKIM1; k=rsa; p=<SubjectPublicKeyInfo DER>", in base64.
func PublicKeyRecord(k mailstore.DKIMKey) (string, error) {
	priv, err := privateKey(k)
	if err != nil {
		return "", err
	}
	var p []byte
	switch pub := priv.Public().(type) {
	case ed25519.PublicKey:
		p = pub
	default:
		if p, err = x509.MarshalPKIXPublicKey(pub); err != nil {
			return "", fmt.Errorf("dkim key %s: %w", k.Selector, err)
		}
	}
	return "v=DKIM1; k=" + k.Algorithm + "; p=" + base64.StdEncoding.EncodeToString(p), nil
}

// DefaultSignedHeaders are the header fields a zero Signer signs when the
// message has them (RFC 6376 section 5.4.1): the originator and
// destination fields, the subject and identity of the message, the thread
// fields and the MIME fields that say how to read the body.
var DefaultSignedHeaders = []string{
	"From", "Sender", "Reply-To", "To", "Cc", "Subject", "Date", "Message-ID",
	"In-Reply-To", "References",
	"MIME-Version", "Content-Type", "Content-Transfer-Encoding",
	"Content-Disposition", "Content-ID", "Content-Language",
	"List-Unsubscribe", "List-Unsubscribe-Post",
}

// singleInstance are the fields RFC 5322 section 3.6 (and RFC 2045 for
// MIME) allows once per message. The Signer lists each once more than the
// message has it (RFC 6376 section 8.15, "oversigning"), so that a second
// From or Subject added on the way breaks the signature instead of being
// shown to the reader.
var singleInstance = map[string]bool{
	"from": true, "sender": true, "reply-to": true, "to": true, "cc": true,
	"subject": true, "date": true, "message-id": true, "in-reply-to": true,
	"references": true, "mime-version": true, "content-type": true,
	"content-transfer-encoding": true,
}

// Signer adds DKIM signatures, relaxed/relaxed (RFC 6376 section 3.4),
// SHA-256, one per key. The zero Signer is ready to use.
type Signer struct {
	// Headers are the header fields signed when present; nil means
	// DefaultSignedHeaders. From is always signed.
	Headers []string
	// Keys keeps keys parsed between messages; nil parses them for each.
	Keys *KeyCache
}

// Sign returns msg with one DKIM-Signature header field per key prepended,
// in the order of keys, signed for domain (d=). ErrNoKeys if keys is empty.
func (s Signer) Sign(domain string, keys []mailstore.DKIMKey, msg []byte) ([]byte, error) {
	sigs, err := s.Signatures(domain, keys, bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(sigs)+len(msg))
	return append(append(out, sigs...), msg...), nil
}

// Signatures reads a message from r and returns the DKIM-Signature header
// fields to prepend to it, each ending in CRLF. It reads the header, then
// streams the body through every key's signer at once, so a large message
// need not be in memory: the caller writes the result and then the
// message again (from the store, say).
func (s Signer) Signatures(domain string, keys []mailstore.DKIMKey, r io.Reader) (string, error) {
	if len(keys) == 0 {
		return "", ErrNoKeys
	}
	br := bufio.NewReader(r)
	head, err := readHead(br)
	if err != nil {
		return "", fmt.Errorf("dkim sign: %w", err)
	}
	fields := s.signedFields(head)

	signers := make([]*dkim.Signer, 0, len(keys))
	defer func() {
		for _, ds := range signers {
			ds.Close()
		}
	}()
	writers := make([]io.Writer, 0, len(keys))
	for _, k := range keys {
		priv, err := s.Keys.key(k)
		if err != nil {
			return "", fmt.Errorf("dkim sign: %w", err)
		}
		ds, err := dkim.NewSigner(&dkim.SignOptions{
			Domain:                 domain,
			Selector:               k.Selector,
			Signer:                 priv,
			Hash:                   crypto.SHA256,
			HeaderCanonicalization: dkim.CanonicalizationRelaxed,
			BodyCanonicalization:   dkim.CanonicalizationRelaxed,
			HeaderKeys:             fields,
		})
		if err != nil {
			return "", fmt.Errorf("dkim sign with %s: %w", k.Selector, err)
		}
		signers = append(signers, ds)
		writers = append(writers, ds)
	}
	w := io.MultiWriter(writers...)
	if _, err := w.Write(head); err != nil {
		return "", fmt.Errorf("dkim sign: %w", err)
	}
	if _, err := io.Copy(w, br); err != nil {
		return "", fmt.Errorf("dkim sign: %w", err)
	}
	var out strings.Builder
	for i, ds := range signers {
		if err := ds.Close(); err != nil {
			return "", fmt.Errorf("dkim sign with %s: %w", keys[i].Selector, err)
		}
		out.WriteString(ds.Signature())
	}
	return out.String(), nil
}

// maxHead bounds the header section read before signing.
const maxHead = 1 << 20

// readHead reads the header section up to and including the empty line
// that ends it.
func readHead(br *bufio.Reader) ([]byte, error) {
	var head []byte
	lineStart := true
	for {
		frag, err := br.ReadSlice('\n')
		head = append(head, frag...)
		if len(head) > maxHead {
			return nil, errors.New("header section over 1 MiB")
		}
		switch {
		case err == bufio.ErrBufferFull:
			lineStart = false
		case err == io.EOF:
			return nil, errors.New("message has no end of header")
		case err != nil:
			return nil, err
		case lineStart && len(bytes.TrimRight(frag, "\r\n")) == 0:
			return head, nil
		default:
			lineStart = true
		}
	}
}

// signedFields is the h= list for a message header: each wanted field as
// many times as the message has it, once more for single-instance fields,
// and From always.
func (s Signer) signedFields(head []byte) []string {
	count := map[string]int{}
	for _, line := range bytes.Split(head, []byte("\n")) {
		if len(line) == 0 || line[0] == ' ' || line[0] == '\t' {
			continue
		}
		if name, _, ok := bytes.Cut(line, []byte(":")); ok {
			count[strings.ToLower(strings.TrimSpace(string(name)))]++
		}
	}
	want := s.Headers
	if want == nil {
		want = DefaultSignedHeaders
	}
	var fields []string
	seen := map[string]bool{}
	for _, f := range append([]string{"From"}, want...) {
		lf := strings.ToLower(f)
		if seen[lf] {
			continue
		}
		seen[lf] = true
		n := count[lf]
		if n == 0 && lf != "from" {
			continue
		}
		if singleInstance[lf] {
			n++
		}
		for range n {
			fields = append(fields, f)
		}
	}
	return fields
}
