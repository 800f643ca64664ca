package imapd

import (
	"mime"
	"strings"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-message/charset"
	"github.com/emersion/go-message/textproto"
)

// Address lists as IMAP needs them, which imapserver.ExtractEnvelope and
// go-message's parser do not give: groups kept with their markers
// (RFC 3501 section 7.4.2: a group start is an address with NIL host and
// the group name as mailbox, its end one with NIL mailbox and host), and
// comments anywhere inside an address ignored (RFC 5322 section 3.2.2:
// CFWS may appear between any two tokens, so "<user (c)@ (c) host>" is
// user@host), but for one: an address without a display name takes the
// last comment within or after it as its name, as Dovecot and most
// clients read the old form "user@host (Real Name)" (RFC 822 section
// 6.1's mailbox, where the comment was the only place for a name).
// Malformed entries are skipped, never fatal.

// addrToken is one lexical token of an address header.
type addrToken struct {
	// kind is 'a' (atom), 'q' (quoted string, unquoted in text), 'd'
	// (domain literal, with its brackets), 'c' (comment: its text
	// without the outer parentheses, quoted pairs unquoted) or the
	// special character itself: < > @ , ; : .
	kind byte
	text string
}

// lexAddresses splits an address header into tokens, dropping
// whitespace.
func lexAddresses(s string) []addrToken {
	var out []addrToken
	for i := 0; i < len(s); {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n':
			i++
		case ch == '(':
			// Nested comments stay in the text, parentheses and all.
			var b strings.Builder
			depth := 0
			for ; i < len(s); i++ {
				if s[i] == '\\' {
					if i++; i < len(s) {
						b.WriteByte(s[i])
					}
					continue
				}
				if s[i] == '(' {
					depth++
				} else if s[i] == ')' {
					depth--
					if depth == 0 {
						i++
						break
					}
				}
				if depth > 1 || s[i] != '(' {
					b.WriteByte(s[i])
				}
			}
			out = append(out, addrToken{'c', b.String()})
		case ch == '"':
			var b strings.Builder
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
			}
			i++
			out = append(out, addrToken{'q', b.String()})
		case ch == '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				end = len(s) - i - 1
			}
			out = append(out, addrToken{'d', s[i : i+end+1]})
			i += end + 1
		case strings.IndexByte("<>@,;:.", ch) >= 0:
			out = append(out, addrToken{ch, string(ch)})
			i++
		default:
			j := i
			for j < len(s) && strings.IndexByte(" \t\r\n()\"[<>@,;:.\\]", s[j]) < 0 {
				j++
			}
			if j == i {
				j++ // a stray special such as "\" or "]": skipped
			} else {
				out = append(out, addrToken{'a', s[i:j]})
			}
			i = j
		}
	}
	return out
}

// addrParser reads an address list from tokens.
type addrParser struct {
	toks []addrToken
	pos  int
	// comment is the text of the last comment peek passed.
	comment string
}

// peek is the kind of the next token that is not a comment, 0 at the
// end; it passes the comments before it.
func (p *addrParser) peek() byte {
	for p.pos < len(p.toks) && p.toks[p.pos].kind == 'c' {
		p.comment = p.toks[p.pos].text
		p.pos++
	}
	if p.pos < len(p.toks) {
		return p.toks[p.pos].kind
	}
	return 0
}

// phrase reads words (and the dots of obs-phrase) as a display name,
// decoding RFC 2047 encoded words.
func (p *addrParser) phrase() string {
	var words []string
	for k := p.peek(); k == 'a' || k == 'q' || k == '.'; k = p.peek() {
		words = append(words, p.toks[p.pos].text)
		p.pos++
	}
	return decodeWords(strings.Join(words, " "))
}

// decodeWords decodes the RFC 2047 encoded words of a display name or
// comment (RFC 2047 section 5 allows them in both).
func decodeWords(name string) string {
	if !strings.Contains(name, "=?") {
		return name // no encoded word (DecodeHeader would answer it as is)
	}
	if dec, err := (&mime.WordDecoder{CharsetReader: charset.Reader}).DecodeHeader(name); err == nil {
		name = dec
	}
	return name
}

// addrSpec reads local-part "@" domain, with obs-local-part (words joined
// by dots) and obs-domain; ok is false without both parts. It leaves in
// p.comment the last comment within or right after the address (those
// before it are left out), "" if none.
func (p *addrParser) addrSpec() (mailbox, host string, ok bool) {
	p.peek()
	p.comment = ""
	var local strings.Builder
	for k := p.peek(); k == 'a' || k == 'q' || k == '.'; k = p.peek() {
		local.WriteString(p.toks[p.pos].text)
		p.pos++
	}
	if p.peek() != '@' {
		return "", "", false
	}
	p.pos++
	var dom strings.Builder
	for k := p.peek(); k == 'a' || k == 'd' || k == '.'; k = p.peek() {
		dom.WriteString(p.toks[p.pos].text)
		p.pos++
	}
	if local.Len() == 0 || dom.Len() == 0 {
		return "", "", false
	}
	return local.String(), dom.String(), true
}

// angleAddr reads "<" [obs-route] addr-spec ">" from after the "<".
func (p *addrParser) angleAddr() (mailbox, host string, ok bool) {
	// obs-route: "@a,@b:" before the address, dropped.
	if p.peek() == '@' {
		for p.peek() != ':' && p.peek() != '>' && p.peek() != 0 {
			p.pos++
		}
		if p.peek() == ':' {
			p.pos++
		}
	}
	mailbox, host, ok = p.addrSpec()
	for p.peek() != '>' && p.peek() != 0 {
		p.pos++
		ok = false
	}
	if p.peek() == '>' {
		p.pos++
	}
	return mailbox, host, ok
}

// mailbox reads one name-addr or addr-spec; ok is false for a malformed
// one, whose tokens up to the next separator are skipped.
func (p *addrParser) mailbox() (imap.Address, bool) {
	start := p.pos
	name := p.phrase()
	switch p.peek() {
	case '<':
		p.pos++
		mb, host, ok := p.angleAddr()
		return imap.Address{Name: name, Mailbox: mb, Host: host}, ok
	case '@':
		p.pos = start
		mb, host, ok := p.addrSpec()
		return imap.Address{Name: decodeWords(p.comment), Mailbox: mb, Host: host}, ok
	}
	return imap.Address{}, false
}

// skip passes the rest of a malformed entry, up to a separator.
func (p *addrParser) skip(inGroup bool) {
	for k := p.peek(); k != 0 && k != ',' && !(inGroup && k == ';'); k = p.peek() {
		p.pos++
	}
}

// parseAddressList reads an address-list (RFC 5322 section 3.4, with the
// obsolete forms of section 4.4: empty entries, routes, dotted phrases).
func parseAddressList(s string) []imap.Address {
	p := &addrParser{toks: lexAddresses(s)}
	var out []imap.Address
	for p.peek() != 0 {
		if p.peek() == ',' {
			p.pos++
			continue
		}
		start := p.pos
		name := p.phrase()
		if p.peek() == ':' && name != "" {
			p.pos++
			out = append(out, imap.Address{Mailbox: name})
			for k := p.peek(); k != 0 && k != ';'; k = p.peek() {
				if k == ',' {
					p.pos++
					continue
				}
				if a, ok := p.mailbox(); ok {
					out = append(out, a)
				} else {
					p.skip(true)
				}
			}
			if p.peek() == ';' {
				p.pos++
			}
			out = append(out, imap.Address{})
			continue
		}
		p.pos = start
		if a, ok := p.mailbox(); ok {
			out = append(out, a)
		} else {
			p.skip(false)
		}
	}
	return out
}

// headerAddresses parses the fields k of h into one list.
func headerAddresses(h textproto.Header, k string) []imap.Address {
	var out []imap.Address
	for _, v := range h.Values(k) {
		out = append(out, parseAddressList(v)...)
	}
	return out
}

// setEnvelopeAddresses replaces the address lists of env with those of
// parseAddressList. An absent or empty Sender or Reply-To is the From
// list (RFC 3501 section 7.4.2).
func setEnvelopeAddresses(env *imap.Envelope, h textproto.Header) {
	env.From = headerAddresses(h, "From")
	env.Sender = headerAddresses(h, "Sender")
	env.ReplyTo = headerAddresses(h, "Reply-To")
	env.To = headerAddresses(h, "To")
	env.Cc = headerAddresses(h, "Cc")
	env.Bcc = headerAddresses(h, "Bcc")
	if len(env.Sender) == 0 {
		env.Sender = env.From
	}
	if len(env.ReplyTo) == 0 {
		env.ReplyTo = env.From
	}
}

// addressText is how an address header reads for SEARCH FROM, TO, CC and
// BCC: each address as "Name <mailbox@host>", groups by name, without
// the comments and folding of the raw field, so that a search for
// user@host finds "<user (comment)@ (comment) host>".
func addressText(value string) string {
	return addressListText(parseAddressList(value))
}

// isAddressField reports whether SEARCH compares field k as addresses.
func isAddressField(k string) bool {
	switch strings.ToLower(k) {
	case "from", "to", "cc", "bcc", "sender", "reply-to":
		return true
	}
	return false
}
