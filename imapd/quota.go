package imapd

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/emersion/go-imap/v2"
)

// This file answers the QUOTA extension (RFC 9208), commands of the
// session (commands.go) that imapserver hands over.
//
// An account has one quota root, named "" (RFC 9208 section 3.2 lets the
// server name its roots; "" is what many servers use for a single
// per-user root), that holds every folder. Its one resource is STORAGE
// (section 5.1), in units of 1024 octets: the usage is the account's
// UsedBytes, the figure GET /users/{email}/usage reports as
// storage_used_bytes, rounded up to whole KiB (as Dovecot does, so that a
// mailbox with any mail never shows 0, and one at its limit in bytes
// shows at least its limit); the limit is quota_mb of GET
// /users/{email}/quota times 1024, exact. MESSAGE is not reported: a
// QUOTA response gives a limit with each usage (section 4.4.2), and
// accounts have no message limit. SETQUOTA is refused: quotas are the
// partner's to set, through the API (section 4.1.3 allows a NO).

// Capabilities of the QUOTA extension the session adds once logged in
// (RFC 9208 section 3.1). QUOTASET (SETQUOTA) is not offered.
const (
	capQuota        imap.Cap = "QUOTA"
	capQuotaStorage imap.Cap = "QUOTA=RES-STORAGE"
)

// quotaRoot is the name of an account's one quota root.
const quotaRoot = ""

var (
	errNoQuotaRoot = no(imap.ResponseCodeNonExistent, "No such quota root")
	errSetQuota    = no(imap.ResponseCodeNoPerm, "Quotas are set by the account provider")
	errBadMailbox  = &imap.Error{Type: imap.StatusResponseTypeBad, Code: imap.ResponseCodeClientBug, Text: "Invalid mailbox name"}
)

// getQuotaRoot answers GETQUOTAROOT (RFC 9208 section 4.3): the folder's
// root, "", and the root's QUOTA.
func (s *session) getQuotaRoot(p *argParser) ([]byte, error) {
	if !p.sp() {
		return nil, errSyntax
	}
	raw, ok := p.astring()
	if !ok || !p.end() {
		return nil, errSyntax
	}
	if s.user == nil {
		return nil, errNotLoggedIn
	}
	name, err := mailboxName(raw)
	if err != nil {
		return nil, errBadMailbox
	}
	if _, err := s.st.Folder(s.ctx, s.user.ID, name); err != nil {
		return nil, err
	}
	b := appendAString([]byte("* QUOTAROOT "), raw) // as the client named it
	b = appendString(append(b, ' '), quotaRoot)
	b = append(b, "\r\n"...)
	return s.appendQuota(b)
}

// getQuota answers GETQUOTA (RFC 9208 section 4.2).
func (s *session) getQuota(p *argParser) ([]byte, error) {
	if !p.sp() {
		return nil, errSyntax
	}
	root, ok := p.astring()
	if !ok || !p.end() {
		return nil, errSyntax
	}
	if s.user == nil {
		return nil, errNotLoggedIn
	}
	if root != quotaRoot {
		return nil, errNoQuotaRoot
	}
	return s.appendQuota(nil)
}

// setQuota refuses SETQUOTA (RFC 9208 section 4.1.3) once logged in; its
// arguments are not looked at.
func (s *session) setQuota(*argParser) error {
	if s.user == nil {
		return errNotLoggedIn
	}
	return errSetQuota
}

// appendQuota appends the QUOTA response of the account's root, with the
// figures read now: another session or a delivery may have changed them.
func (s *session) appendQuota(b []byte) ([]byte, error) {
	mb, err := s.account()
	if err != nil {
		return b, err
	}
	used, limit := storageKiB(mb.UsedBytes, mb.QuotaMB)
	b = appendString(append(b, "* QUOTA "...), quotaRoot)
	return fmt.Appendf(b, " (STORAGE %d %d)\r\n", used, limit), nil
}

// storageKiB converts the account's figures to the units of STORAGE
// (RFC 9208 section 5.1): used bytes rounded up to whole KiB, the limit
// in MB (mailstore.MB) as KiB.
func storageKiB(usedBytes, quotaMB int64) (used, limit int64) {
	return (max(usedBytes, 0) + 1023) / 1024, quotaMB * 1024
}

// mailboxName decodes a mailbox name as imapserver does: INBOX in any
// case, otherwise modified UTF-7 (RFC 3501 section 5.1.3); a name with
// 8-bit characters is taken as UTF-8 (RFC 9051 section 5.1).
func mailboxName(raw string) (string, error) {
	if strings.EqualFold(raw, "INBOX") {
		return "INBOX", nil
	}
	var b strings.Builder
	for i := 0; i < len(raw); {
		ch := raw[i]
		switch {
		case ch >= 0x80:
			if !utf8.ValidString(raw) {
				return "", errors.New("invalid UTF-8")
			}
			return raw, nil
		case ch < 0x20 || ch == 0x7f:
			return "", errors.New("control character")
		case ch != '&':
			b.WriteByte(ch)
			i++
			continue
		}
		end := strings.IndexByte(raw[i:], '-')
		if end < 0 {
			return "", errors.New("unterminated base64")
		}
		enc := raw[i+1 : i+end]
		i += end + 1
		if enc == "" {
			b.WriteByte('&')
			continue
		}
		bin, err := base64.RawStdEncoding.DecodeString(strings.ReplaceAll(enc, ",", "/"))
		if err != nil || len(bin)%2 != 0 {
			return "", errors.New("invalid base64")
		}
		u := make([]uint16, len(bin)/2)
		for k := range u {
			u[k] = uint16(bin[2*k])<<8 | uint16(bin[2*k+1])
		}
		b.WriteString(string(utf16.Decode(u)))
	}
	return b.String(), nil
}
