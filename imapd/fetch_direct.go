package imapd

import (
	"slices"
	"strconv"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/mailhost/mailhost/mailstore"
)

// Opening a folder (UID FETCH 1:* (UID FLAGS RFC822.SIZE INTERNALDATE
// ENVELOPE)) and resyncing flags (FETCH 1:* (UID FLAGS)) are most of the
// FETCHes clients send, and for them imapserver's encoder was half of the
// server's time (imapd/BENCHMARKS.md): a strings.Builder for every quoted
// string, the write deadline set twice and the output flushed once per
// response, both dates through time.Format. directFetch writes the same
// bytes itself, into a batch that it hands to imapserver's FetchWriter.
// WriteRaw (a hook of the patched copy), which writes it through the
// connection's writer, in order with imapserver's own responses.
//
// directFetch writes only what it can write exactly as imapserver does:
// a message whose summary is not a plain header (fastEnvelopeFields), or
// with a value imapserver would send as a literal or Q-encode, or a flag
// outside the usual characters, goes through imapserver's writer after
// what is batched (TestDirectFetch, FuzzDirectFetch compare the two).

// directFetchable reports whether o asks only for what directFetch writes.
func directFetchable(o *imap.FetchOptions) bool {
	return o.BodyStructure == nil && len(o.BodySection) == 0 && len(o.BinarySection) == 0 &&
		len(o.BinarySectionSize) == 0 && !o.ModSeq && o.ChangedSince == 0
}

// directFetch writes FETCH responses past imapserver's encoder.
type directFetch struct {
	w   *imapserver.FetchWriter
	o   *imap.FetchOptions
	buf []byte
	// addrs is reused for every address list.
	addrs []imap.Address
}

// newDirectFetch is a directFetch for w, or nil when o asks for more than
// it writes.
func (s *session) newDirectFetch(w *imapserver.FetchWriter, o *imap.FetchOptions) *directFetch {
	if s.srv.noDirectFetch.Load() || !directFetchable(o) {
		return nil
	}
	return &directFetch{w: w, o: o}
}

// message writes the response for message seq, m, with header its
// summary (nil when o asks no ENVELOPE).
func (d *directFetch) message(seq uint32, m mailstore.Message, header []byte, flagsChanged bool) error {
	n := len(d.buf)
	if buf, ok := appendFetchResponse(d.buf, seq, m, header, d.o, flagsChanged, &d.addrs); ok {
		d.buf = buf
		if len(d.buf) >= writeBatch {
			return d.flush()
		}
		return nil
	}
	d.buf = d.buf[:n]
	if err := d.flush(); err != nil {
		return err
	}
	return writeMessage(d.w.CreateMessage(seq), m, header, d.o, flagsChanged)
}

// flush writes what is batched.
func (d *directFetch) flush() error {
	if len(d.buf) == 0 {
		return nil
	}
	err := d.w.WriteRaw(d.buf)
	d.buf = d.buf[:0]
	return err
}

// appendFetchResponse appends to buf what writeMessage has imapserver
// write for m, without BODY sections; ok is false when it cannot say
// the same (buf is then to be cut back by the caller).
func appendFetchResponse(buf []byte, seq uint32, m mailstore.Message, header []byte, o *imap.FetchOptions, flagsChanged bool, scratch *[]imap.Address) (_ []byte, ok bool) {
	buf = append(buf, "* "...)
	buf = strconv.AppendUint(buf, uint64(seq), 10)
	buf = append(buf, " FETCH (UID "...)
	buf = strconv.AppendUint(buf, uint64(m.UID), 10)
	if o.Flags || flagsChanged {
		buf = append(buf, " FLAGS ("...)
		for i, f := range m.Flags {
			if !plainFlag(f) {
				return buf, false
			}
			if i > 0 {
				buf = append(buf, ' ')
			}
			buf = append(buf, f...)
		}
		buf = append(buf, ')')
	}
	if o.InternalDate {
		buf = append(buf, " INTERNALDATE "...)
		buf = appendInternalDate(buf, m.ReceivedAt)
	}
	if o.RFC822Size {
		buf = append(buf, " RFC822.SIZE "...)
		buf = strconv.AppendInt(buf, m.Size, 10)
	}
	if o.Envelope {
		buf = append(buf, " ENVELOPE "...)
		if buf, ok = appendEnvelope(buf, header, scratch); !ok {
			return buf, false
		}
	}
	return append(buf, ")\r\n"...), true
}

// plainFlag reports whether f is a flag of letters, digits and "$-_.",
// with an optional leading backslash: imapwire writes such a flag as it
// is (and refuses some others, which imapserver's writer is left to do).
func plainFlag(f string) bool {
	if f == "" {
		return false
	}
	for i := 0; i < len(f); i++ {
		switch ch := f[i]; {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9',
			ch == '$', ch == '-', ch == '_', ch == '.':
		case ch == '\\' && i == 0 && len(f) > 1:
		default:
			return false
		}
	}
	return true
}

// internalDateLayout is imapserver's INTERNALDATE (internal.DateTimeLayout).
const internalDateLayout = "_2-Jan-2006 15:04:05 -0700"

// appendInternalDate appends the INTERNALDATE of t (in UTC, as
// writeMessage gives it) as a quoted string, as time.Format writes it
// with internalDateLayout, without its parse of the layout.
func appendInternalDate(buf []byte, t time.Time) []byte {
	t = t.In(time.UTC)
	year, month, day := t.Date()
	if year < 1000 || year > 9999 {
		buf = append(buf, '"')
		buf = t.AppendFormat(buf, internalDateLayout)
		return append(buf, '"')
	}
	hour, min, sec := t.Clock()
	buf = append(buf, '"')
	if day < 10 {
		buf = append(buf, ' ', byte('0'+day))
	} else {
		buf = append(buf, byte('0'+day/10), byte('0'+day%10))
	}
	buf = append(buf, '-')
	buf = append(buf, month.String()[:3]...)
	buf = append(buf, '-')
	buf = append(buf, byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), ' ')
	buf = append(buf, byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+min/10), byte('0'+min%10), ':',
		byte('0'+sec/10), byte('0'+sec%10))
	return append(buf, " +0000\""...)
}

// envelopeDateLayout is imapserver's layout for an ENVELOPE's date.
const envelopeDateLayout = "Mon, 02 Jan 2006 15:04:05 -0700"

// appendEnvelope appends the ENVELOPE of a plain header, as imapserver
// writes fastEnvelope(header); ok is false when fastEnvelope declines
// the header or imapserver would write one of its strings otherwise than
// quoted as it is.
// scratch is a slice for the address lists to reuse.
func appendEnvelope(buf, header []byte, scratch *[]imap.Address) (_ []byte, ok bool) {
	s, seen, ok := fastEnvelopeFields(header)
	if !ok {
		return buf, false
	}
	buf = append(buf, '(')
	buf = appendEnvelopeDate(buf, s[envDate])
	buf = append(buf, ' ')
	if buf, ok = appendNString(buf, s[envSubject]); !ok {
		return buf, false
	}
	// Sender and Reply-To default to From: its bytes are written again.
	var from []byte
	for _, f := range [...]envelopeField{envFrom, envSender, envReplyTo, envTo, envCc, envBcc} {
		buf = append(buf, ' ')
		var l []imap.Address
		if seen[f] {
			if l, ok = fastAddressListAppend((*scratch)[:0], s[f]); ok {
				*scratch = l
			} else {
				l = parseAddressList(s[f])
			}
		}
		if len(l) == 0 && (f == envSender || f == envReplyTo) {
			buf = append(buf, from...)
			continue
		}
		start := len(buf)
		if buf, ok = appendAddressList(buf, l); !ok {
			return buf, false
		}
		if f == envFrom {
			from = buf[start:len(buf):len(buf)]
		}
	}
	// Both are written "<" + id + ">": the value itself, once plainMsgID
	// has found it to be one identifier of that form and nothing else.
	for _, f := range [...]envelopeField{envInReplyTo, envMessageID} {
		buf = append(buf, ' ')
		v := s[f]
		if v == "" {
			buf = append(buf, "NIL"...)
			continue
		}
		if _, ok := plainMsgID(v); !ok {
			return buf, false
		}
		if buf, ok = appendNString(buf, v); !ok {
			return buf, false
		}
	}
	return append(buf, ')'), true
}

func appendAddressList(buf []byte, l []imap.Address) (_ []byte, ok bool) {
	if len(l) == 0 {
		return append(buf, "NIL"...), true
	}
	buf = append(buf, '(')
	for i, a := range l {
		if i > 0 {
			buf = append(buf, ' ')
		}
		buf = append(buf, '(')
		if buf, ok = appendNString(buf, a.Name); !ok {
			return buf, false
		}
		buf = append(buf, " NIL "...)
		if buf, ok = appendNString(buf, a.Mailbox); !ok {
			return buf, false
		}
		buf = append(buf, ' ')
		if buf, ok = appendNString(buf, a.Host); !ok {
			return buf, false
		}
		buf = append(buf, ')')
	}
	return append(buf, ')'), true
}

// appendNString appends s as imapserver writes a subject, a display
// name, a mailbox or a host: NIL when empty, else quoted; ok is false
// when it would write it otherwise (Q-encoded, or as a literal).
func appendNString(buf []byte, s string) (_ []byte, ok bool) {
	if s == "" {
		return append(buf, "NIL"...), true
	}
	// mime.QEncoding.Encode leaves s as it is exactly when it is printable
	// ASCII and tabs, which imapwire quotes if it is at most 4,096 bytes.
	if len(s) > 4096 {
		return buf, false
	}
	escapes := 0
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case (ch < ' ' && ch != '\t') || ch > '~':
			return buf, false
		case ch == '"' || ch == '\\':
			escapes++
		}
	}
	buf = append(buf, '"')
	if escapes == 0 {
		buf = append(buf, s...)
	} else {
		for i := 0; i < len(s); i++ {
			if ch := s[i]; ch == '"' || ch == '\\' {
				buf = append(buf, '\\')
			}
			buf = append(buf, s[i])
		}
	}
	return append(buf, '"'), true
}

// appendEnvelopeDate appends the date of an ENVELOPE as imapserver writes
// envelopeDate(v): NIL for none, else quoted in envelopeDateLayout. A
// date of the form most mail has, "Mon, 2 Jan 2006 15:04:05 -0700" with
// single spaces, is read and written here, without time.Parse and
// time.Format, which were a sixth of a folder open; any other goes
// through them.
func appendEnvelopeDate(buf []byte, v string) []byte {
	if b, ok := appendPlainDate(buf, v); ok {
		return b
	}
	t := envelopeDate(v)
	if t.IsZero() {
		return append(buf, "NIL"...)
	}
	buf = append(buf, '"')
	buf = t.AppendFormat(buf, envelopeDateLayout)
	return append(buf, '"')
}

// appendPlainDate is appendEnvelopeDate for a date of the usual form;
// ok is false for any other, or one time.Parse refuses or that could
// read otherwise than here.
func appendPlainDate(buf []byte, v string) (_ []byte, ok bool) {
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
		return buf, false
	}
	if a[3] != ',' || a[4] != ' ' || a[7] != ' ' || a[11] != ' ' || a[16] != ' ' ||
		a[19] != ':' || a[22] != ':' || a[25] != ' ' || (a[26] != '+' && a[26] != '-') {
		return buf, false
	}
	if !slices.Contains(shortDays[:], string(a[:3])) {
		return buf, false
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
	month := slices.Index(shortMonths[:], string(a[8:11])) + 1
	day, year := num(a[5:7]), num(a[12:16])
	hour, min, sec := num(a[17:19]), num(a[20:22]), num(a[23:25])
	zh, zm := num(a[27:29]), num(a[29:31])
	if month == 0 || day < 1 || year < 0 || hour < 0 || hour > 23 || min < 0 || min > 59 ||
		sec < 0 || sec > 59 || zh < 0 || zh > 23 || zm < 0 || zm > 59 {
		return buf, false
	}
	t := time.Date(year, time.Month(month), day, hour, min, sec, 0, time.UTC)
	if t.Day() != day {
		return buf, false // beyond the month's end: time.Parse refuses it
	}
	offset := zh*60 + zm
	if a[26] == '-' {
		offset = -offset
	}
	if t.Add(-time.Duration(offset) * time.Minute).IsZero() {
		return append(buf, "NIL"...), true
	}
	buf = append(buf, '"')
	buf = append(buf, shortDays[t.Weekday()]...)
	buf = append(buf, ", "...)
	buf = append(buf, a[5:26]...) // "02 Jan 2006 15:04:05 ", as Format writes it
	sign := byte('+')
	if offset < 0 {
		sign = '-' // and "-0000" is written "+0000", as Format does
	}
	return append(buf, sign, a[27], a[28], a[29], a[30], '"'), true
}

var (
	shortDays   = [...]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
	shortMonths = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
)
