package imapd

import (
	"bytes"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
)

// A folder's listing asks the ENVELOPE of every message, and most
// headers are plain: single fields of printable ASCII, no encoded word,
// a message identifier in angle brackets. fastEnvelope reads those
// without go-message's header parser (a map, canonical keys and a copy
// of every field per message) and without its word decoder; anything
// else is left to envelope, which reads every header. The two agree on
// what fastEnvelope accepts (TestFastEnvelope, FuzzFastEnvelope).

// envelopeOf is the ENVELOPE of a header block (a summary, or a message).
func envelopeOf(header []byte) *imap.Envelope {
	return new(envelopeBuf).envelope(header)
}

// envelopeBuf is what a FETCH reuses from one message's ENVELOPE to the
// next (imapserver writes each before the next is made): the envelope,
// the addresses of its lists, its In-Reply-To.
type envelopeBuf struct {
	env       imap.Envelope
	addrs     []imap.Address
	inReplyTo [1]string
}

// envelope is the ENVELOPE of a header block, made in b when
// fastEnvelope takes the header: valid until the next call.
func (b *envelopeBuf) envelope(header []byte) *imap.Envelope {
	if env, ok := b.fast(header); ok {
		return env
	}
	return envelope(header)
}

// envelopeField numbers the fields an ENVELOPE is made of.
type envelopeField int

const (
	envDate envelopeField = iota
	envSubject
	envFrom
	envSender
	envReplyTo
	envTo
	envCc
	envBcc
	envInReplyTo
	envMessageID
	envFields
)

// envelopeFieldOf is the envelopeField of a field name, -1 for another.
func envelopeFieldOf(name []byte) envelopeField {
	switch len(name) {
	case 2:
		switch {
		case bytes.EqualFold(name, []byte("to")):
			return envTo
		case bytes.EqualFold(name, []byte("cc")):
			return envCc
		}
	case 3:
		if bytes.EqualFold(name, []byte("bcc")) {
			return envBcc
		}
	case 4:
		switch {
		case bytes.EqualFold(name, []byte("date")):
			return envDate
		case bytes.EqualFold(name, []byte("from")):
			return envFrom
		}
	case 6:
		if bytes.EqualFold(name, []byte("sender")) {
			return envSender
		}
	case 7:
		if bytes.EqualFold(name, []byte("subject")) {
			return envSubject
		}
	case 8:
		if bytes.EqualFold(name, []byte("reply-to")) {
			return envReplyTo
		}
	case 10:
		if bytes.EqualFold(name, []byte("message-id")) {
			return envMessageID
		}
	case 11:
		if bytes.EqualFold(name, []byte("in-reply-to")) {
			return envInReplyTo
		}
	}
	return -1
}

// fastEnvelope is envelope(header) for the plain headers described
// above; ok is false for any other, whose envelope it does not make.
// It declines a header with: a line not ended by CRLF before the empty
// line; a byte other than printable ASCII, space and tab; a first line
// that continues nothing; a line without a colon, or a field name that
// is not printable ASCII; an ENVELOPE field given twice; "=?" in a field
// it reads (RFC 2047 encoded words are for the word decoder); a
// Message-ID or In-Reply-To other than one plain "<left@right>".
func fastEnvelope(header []byte) (env *imap.Envelope, ok bool) {
	return new(envelopeBuf).fast(header)
}

// fast is fastEnvelope made in b.
func (b *envelopeBuf) fast(header []byte) (*imap.Envelope, bool) {
	s, seen, ok := fastEnvelopeFields(header)
	if !ok {
		return nil, false
	}
	env := &b.env
	*env = imap.Envelope{
		Date:    envelopeDate(s[envDate]),
		Subject: s[envSubject],
	}
	if s[envMessageID] != "" {
		id, ok := plainMsgID(s[envMessageID])
		if !ok {
			return nil, false
		}
		env.MessageID = id
	}
	if s[envInReplyTo] != "" {
		id, ok := plainMsgID(s[envInReplyTo])
		if !ok {
			return nil, false
		}
		b.inReplyTo[0] = id
		env.InReplyTo = b.inReplyTo[:]
	}
	// The usual lists are appended to b.addrs, others parsed apart; the
	// slices of b.addrs are taken once it has stopped growing.
	fields := [...]envelopeField{envFrom, envSender, envReplyTo, envTo, envCc, envBcc}
	var (
		span   [len(fields)][2]int
		parsed [len(fields)][]imap.Address
		isFast [len(fields)]bool
	)
	addrs := b.addrs[:0]
	for k, f := range fields {
		if !seen[f] {
			continue
		}
		start := len(addrs)
		if l, ok := fastAddressListAppend(addrs, s[f]); ok {
			addrs = l
			span[k], isFast[k] = [2]int{start, len(addrs)}, true
		} else {
			parsed[k] = parseAddressList(s[f])
		}
	}
	b.addrs = addrs
	lists := [len(fields)]*[]imap.Address{&env.From, &env.Sender, &env.ReplyTo, &env.To, &env.Cc, &env.Bcc}
	for k := range fields {
		switch {
		case isFast[k] && span[k][0] < span[k][1]:
			*lists[k] = addrs[span[k][0]:span[k][1]:span[k][1]]
		case !isFast[k]:
			*lists[k] = parsed[k]
		}
	}
	if len(env.Sender) == 0 {
		env.Sender = env.From
	}
	if len(env.ReplyTo) == 0 {
		env.ReplyTo = env.From
	}
	return env, true
}

// fastEnvelopeFields is the part of fastEnvelope that reads the header:
// the value of each ENVELOPE field, unfolded, and whether the field is
// there; ok is false for a header that is not plain (see fastEnvelope),
// and for "=?" in a value. The values come from one string of the
// header, not a copy each. A Message-ID or In-Reply-To is as written:
// the caller checks its form (plainMsgID).
func fastEnvelopeFields(header []byte) (s [envFields]string, seen [envFields]bool, ok bool) {
	var (
		// span[f] is where field f's value lies in header, continuation
		// lines (and the CRLFs before them) included.
		span  [envFields][2]int
		cur   = envelopeField(-1)
		first = true
	)
	var folded [envFields]bool
	pos := 0
	for {
		// The line runs to the first byte that is not header text, which
		// must be the CR of a CRLF.
		end := pos
		for end < len(header) && headerText[header[end]] {
			end++
		}
		if end+1 >= len(header) || header[end] != '\r' || header[end+1] != '\n' {
			return s, seen, false
		}
		start := pos
		line := header[start:end]
		pos = end + 2
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			if first {
				return s, seen, false
			}
			if cur >= 0 {
				span[cur][1] = end
				folded[cur] = true
			}
			continue
		}
		first = false
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return s, seen, false
		}
		name := trimRightSpace(line[:colon])
		if len(name) == 0 {
			return s, seen, false
		}
		for _, ch := range name {
			if ch <= ' ' || ch > '~' {
				return s, seen, false
			}
		}
		cur = envelopeFieldOf(name)
		if cur < 0 {
			continue
		}
		if seen[cur] {
			return s, seen, false
		}
		seen[cur] = true
		span[cur] = [2]int{start + colon + 1, end}
	}
	text := string(header[:pos])
	for f := range envFields {
		if !seen[f] {
			continue
		}
		if v := text[span[f][0]:span[f][1]]; folded[f] {
			s[f] = unfold([]byte(v))
		} else {
			s[f] = trimSpace(v)
		}
		if strings.Contains(s[f], "=?") {
			return s, seen, false
		}
	}
	return s, seen, true
}

// headerText is what fastEnvelope reads in a line: printable ASCII,
// space and tab.
var headerText = byteSet(func(ch byte) bool { return ch == '\t' || ch >= ' ' && ch <= '~' })

// byteSet is the set of the bytes in for which in is true.
func byteSet(in func(byte) bool) (set [256]bool) {
	for i := range set {
		set[i] = in(byte(i))
	}
	return set
}

// byteSetOf is the set of the bytes of chars.
func byteSetOf(chars string) [256]bool {
	return byteSet(func(ch byte) bool { return strings.IndexByte(chars, ch) >= 0 })
}

// containsByte is strings.ContainsAny(s, the bytes of set), for a set made
// once rather than at each call.
func containsByte(s string, set *[256]bool) bool {
	for i := 0; i < len(s); i++ {
		if set[s[i]] {
			return true
		}
	}
	return false
}

// trimSpace is strings.Trim(v, " \t").
func trimSpace(v string) string {
	i, j := 0, len(v)
	for i < j && (v[i] == ' ' || v[i] == '\t') {
		i++
	}
	for j > i && (v[j-1] == ' ' || v[j-1] == '\t') {
		j--
	}
	return v[i:j]
}

// trimRightSpace is bytes.TrimRight(v, " \t").
func trimRightSpace(v []byte) []byte {
	j := len(v)
	for j > 0 && (v[j-1] == ' ' || v[j-1] == '\t') {
		j--
	}
	return v[:j]
}

// unfold is a field's value as go-message's textproto reads it: each line
// trimmed of spaces and tabs, the non-empty ones joined by one space.
func unfold(v []byte) string {
	if bytes.IndexByte(v, '\n') < 0 {
		return string(bytes.Trim(v, " \t"))
	}
	var b strings.Builder
	for _, l := range bytes.Split(v, []byte("\r\n")) {
		l = bytes.Trim(l, " \t")
		if len(l) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.Write(l)
	}
	return b.String()
}

// plainMsgID is the identifier of a msg-id written "<left@right>" with
// atext and dots on both sides (RFC 5322 section 3.6.4), nothing around
// it; ok is false for any other form, for go-message's parser.
func plainMsgID(v string) (string, bool) {
	if len(v) < 5 || v[0] != '<' || v[len(v)-1] != '>' {
		return "", false
	}
	id := v[1 : len(v)-1]
	at := strings.IndexByte(id, '@')
	if at <= 0 || at == len(id)-1 || strings.IndexByte(id[at+1:], '@') >= 0 {
		return "", false
	}
	if !dotAtomText(id[:at]) || !dotAtomText(id[at+1:]) {
		return "", false
	}
	return id, true
}

// dotAtomText reports whether s is dot-atom-text (RFC 5322 section
// 3.2.3): atext, dots between.
func dotAtomText(s string) bool {
	if s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '.':
			if s[i-1] == '.' {
				return false
			}
		case !atext[s[i]]:
			return false
		}
	}
	return true
}

// atext: atext of RFC 5322 section 3.2.3.
var atext = byteSet(func(ch byte) bool {
	switch {
	case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-/=?^_`{|}~", ch) >= 0
})

// fastAddressList is parseAddressList(s) for the usual lists: entries
// separated by commas, each "local@host", or "<local@host>" after a
// display name of plain words or one quoted string without escapes; ok
// is false for anything else (comments, groups, routes, escapes, encoded
// words, whitespace inside an address, bytes other than printable ASCII,
// space and tab), for parseAddressList.
func fastAddressList(s string) (out []imap.Address, ok bool) {
	return fastAddressListAppend(nil, s)
}

// fastAddressListAppend is fastAddressList appending to out, which it
// answers cut to its length when ok is false.
func fastAddressListAppend(out []imap.Address, s string) (_ []imap.Address, ok bool) {
	for i := 0; i < len(s); i++ {
		if !headerText[s[i]] {
			return nil, false
		}
	}
	for len(s) > 0 {
		// The entry runs to the next comma outside a quoted string.
		end, inQuote := len(s), false
		for i := 0; i < len(s); i++ {
			switch s[i] {
			case '"':
				inQuote = !inQuote
			case ',':
				if !inQuote {
					end = i
					i = len(s)
				}
			}
		}
		if inQuote {
			return nil, false
		}
		entry := trimSpace(s[:end])
		if end < len(s) {
			s = s[end+1:]
		} else {
			s = ""
		}
		if entry == "" {
			continue // an empty entry (RFC 5322 section 4.4)
		}
		var a imap.Address
		spec := entry
		if lt := strings.IndexByte(entry, '<'); lt >= 0 {
			if entry[len(entry)-1] != '>' {
				return nil, false
			}
			spec = entry[lt+1 : len(entry)-1]
			name := strings.TrimRight(entry[:lt], " \t")
			switch {
			case len(name) >= 2 && name[0] == '"' && name[len(name)-1] == '"':
				a.Name = name[1 : len(name)-1]
				if containsByte(a.Name, &quoteOrBackslash) {
					return nil, false
				}
			case containsByte(name, &nameSpecials):
				return nil, false
			case strings.Contains(name, "  ") || strings.IndexByte(name, '\t') >= 0:
				a.Name = strings.Join(strings.Fields(name), " ")
			default:
				a.Name = strings.TrimLeft(name, " ") // words already one space apart
			}
		}
		at := strings.IndexByte(spec, '@')
		if at <= 0 || at == len(spec)-1 || containsByte(spec, &specSpecials) || strings.IndexByte(spec[at+1:], '@') >= 0 {
			return nil, false
		}
		if spec[0] == '.' {
			return nil, false
		}
		a.Mailbox, a.Host = spec[:at], spec[at+1:]
		out = append(out, a)
	}
	return out, true
}

// The bytes fastAddressList declines in a quoted display name, in a
// display name of words, and in an address.
var (
	quoteOrBackslash = byteSetOf("\"\\")
	nameSpecials     = byteSetOf("()<>@,;:\\\".[]")
	specSpecials     = byteSetOf(" \t()<>,;:\\\"[]")
)

// parsePlainDate is time.Parse(rfc5322Date, v) for a date of the form
// most mail has, "Mon, 2 Jan 2006 15:04:05 -0700" with single spaces and
// a day of one or two digits, without time.Parse's reading of the
// layout (a tenth of a folder listing); ok is false for any other form,
// and for any value time.Parse might read otherwise than here.
func parsePlainDate(v string) (_ time.Time, ok bool) {
	// "Mon, 02 Jan 2006 15:04:05 -0700", 31 bytes, in a; a day of one
	// digit is given its 0.
	var a [31]byte
	switch len(v) {
	case 31:
		copy(a[:], v)
	case 30:
		copy(a[:5], v)
		a[5] = '0'
		copy(a[6:], v[5:])
	default:
		return time.Time{}, false
	}
	if a[3] != ',' || a[4] != ' ' || a[7] != ' ' || a[11] != ' ' || a[16] != ' ' ||
		a[19] != ':' || a[22] != ':' || a[25] != ' ' || (a[26] != '+' && a[26] != '-') {
		return time.Time{}, false
	}
	switch string(a[:3]) {
	case "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun":
	default:
		return time.Time{}, false
	}
	var month time.Month
	switch string(a[8:11]) {
	case "Jan":
		month = time.January
	case "Feb":
		month = time.February
	case "Mar":
		month = time.March
	case "Apr":
		month = time.April
	case "May":
		month = time.May
	case "Jun":
		month = time.June
	case "Jul":
		month = time.July
	case "Aug":
		month = time.August
	case "Sep":
		month = time.September
	case "Oct":
		month = time.October
	case "Nov":
		month = time.November
	case "Dec":
		month = time.December
	default:
		return time.Time{}, false
	}
	num := func(s []byte) int {
		n := 0
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return -1
			}
			n = n*10 + int(s[i]-'0')
		}
		return n
	}
	day, year := num(a[5:7]), num(a[12:16])
	hour, min, sec := num(a[17:19]), num(a[20:22]), num(a[23:25])
	zh, zm := num(a[27:29]), num(a[29:31])
	if day < 1 || day > daysIn(month, year) || year < 0 || hour < 0 || hour > 23 || min < 0 || min > 59 ||
		sec < 0 || sec > 59 || zh < 0 || zh > 23 || zm < 0 || zm > 59 {
		// A day beyond the month's end included: time.Parse refuses it.
		return time.Time{}, false
	}
	offset := (zh*60 + zm) * 60
	if a[26] == '-' {
		offset = -offset
	}
	t := time.Date(year, month, day, hour, min, sec, 0, time.UTC).Add(-time.Duration(offset) * time.Second)
	// As time.Parse: the local zone when it had that offset then, else a
	// zone of the offset without a name.
	if _, local := t.In(time.Local).Zone(); local == offset {
		return t.In(time.Local), true
	}
	return t.In(time.FixedZone("", offset)), true
}

// daysIn is the number of days of month in year (of the proleptic
// Gregorian calendar, as package time counts).
func daysIn(month time.Month, year int) int {
	switch month {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}
