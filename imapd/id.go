package imapd

import (
	"log/slog"
	"runtime/debug"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/emersion/go-imap/v2"
)

// This file answers ID (RFC 2971), in any state (commands.go).

// capID is the capability of the ID extension (RFC 2971 section 3).
const capID imap.Cap = "ID"

// Bounds on what is logged of a client's ID: RFC 2971 section 3.3 allows
// 30 pairs, field names of 30 octets and values of 1024; a log line needs
// less, and a client must not be able to flood the log.
const (
	idMaxPairs   = 30
	idMaxKey     = 30
	idMaxValue   = 128
	idMaxLogged  = 4 // ID commands logged per connection
	serverIDName = "mailhost"
)

// id answers ID: the server's identity, name and version (section 3.2),
// and logs the client's, which tells operators which clients their
// customers use. Nothing else depends on it (section 3.1: a server must
// not change its behaviour on a client's ID).
func (s *session) id(p *argParser) ([]byte, error) {
	if !p.sp() {
		return nil, errSyntax
	}
	var attrs []any
	if _, isNil, ok := p.nstring(); !isNil {
		if ok || !p.special('(') {
			return nil, errSyntax
		}
		seen := make(map[string]bool)
		for i := 0; !p.special(')'); i++ {
			if i > 0 && !p.sp() {
				return nil, errSyntax
			}
			key, ok := p.str()
			if !ok || !p.sp() {
				return nil, errSyntax
			}
			value, _, ok := p.nstring()
			if !ok {
				return nil, errSyntax
			}
			k := idKey(key)
			if len(attrs) < idMaxPairs && !seen[k] {
				seen[k] = true
				attrs = append(attrs, slog.String(k, idValue(value)))
			}
		}
	}
	if !p.end() {
		return nil, errSyntax
	}
	if s.idLogged < idMaxLogged {
		s.idLogged++
		s.log.Info("client id", slog.Group("client", attrs...))
	}
	b := []byte("* ID (")
	b = appendString(b, "name")
	b = appendString(append(b, ' '), serverIDName)
	b = appendString(append(b, ' '), "version")
	b = appendString(append(b, ' '), version())
	return append(b, ")\r\n"...), nil
}

// version is mailhost's version as the Go toolchain stamped it into the
// binary (the module version, or one made from the VCS revision), or
// "devel".
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// idKey makes a field name of the client's ID a log key: lower case, at
// most idMaxKey bytes of letters, digits, '-', '_' and '.'.
func idKey(k string) string {
	k = strings.ToLower(k)
	if len(k) > idMaxKey {
		k = k[:idMaxKey]
	}
	b := []byte(k)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

// idValue makes a value of the client's ID fit to log: printable
// characters only (others, and invalid UTF-8, become '?'), at most
// idMaxValue bytes.
func idValue(v string) string {
	var b strings.Builder
	for _, r := range v {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			r = '?'
		}
		if b.Len()+utf8.RuneLen(r) > idMaxValue {
			b.WriteString("...")
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
