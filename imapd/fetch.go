package imapd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	netmail "net/mail"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	gomessage "github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"

	"github.com/mailhost/mailhost/mailstore"
)

// Fetch answers FETCH and UID FETCH. Reading a body section without PEEK
// sets \Seen (RFC 9051 section 6.4.5) unless the folder was EXAMINEd; the
// new flags are then sent along.
func (s *session) Fetch(w *imapserver.FetchWriter, numSet imap.NumSet, options *imap.FetchOptions) error {
	v := s.sel
	if v == nil {
		return errNoSelection
	}
	if err := v.checkSeqSet(numSet); err != nil {
		return err
	}
	idx := v.indices(numSet)
	if options.ChangedSince > 0 || options.Vanished {
		var err error
		if idx, err = s.changedSince(w, v, numSet, idx, options); err != nil {
			return err
		}
	}

	seen := map[uint32]bool{}
	if !v.readOnly && marksSeen(options) {
		var uids []uint32
		for _, i := range idx {
			if m := v.msgs[i]; !m.gone && !hasFlag(m.Flags, imap.FlagSeen) {
				uids = append(uids, m.UID)
			}
		}
		if len(uids) > 0 {
			changed, err := s.st.SetFlags(s.ctx, s.user.ID, v.folder.ID, uids, mailstore.FlagsAdd, []string{string(imap.FlagSeen)})
			if err != nil && !errors.Is(err, mailstore.ErrMessageNotFound) {
				return s.fail("fetch: set seen", err)
			}
			v.update(changed)
			for _, m := range changed {
				seen[m.UID] = true
			}
			if condStore, _ := s.modes(); condStore && len(changed) > 0 {
				// RFC 7162 section 3.1: a FETCH that sets \Seen reports MODSEQ.
				o := *options
				o.ModSeq = true
				options = &o
			}
		}
	}

	// One buffer for the flags and the envelope of every response.
	buf := new(fetchBuf)
	if !needsBody(options) {
		for _, i := range idx {
			m := v.msgs[i]
			if m.gone {
				continue // RFC 2180 section 4.1.2: say nothing of it
			}
			if err := writeMessage(w.CreateMessage(uint32(i+1)), v.withRecent(m.Message), nil, options, seen[m.UID], buf); err != nil {
				return err
			}
		}
		return nil
	}

	if inSummaryFetch(options) {
		// ENVELOPE and the header fields a client lists a folder with
		// are answered from the stored summaries (mailstore.HeaderSummary):
		// no body is read. The summary is a header block with every
		// field envelope reads, and every line of the fields it keeps.
		return s.eachSummary(v, idx, "fetch", func(i int, header []byte) error {
			m := v.msgs[i]
			return writeMessage(w.CreateMessage(uint32(i+1)), v.withRecent(m.Message), header, options, seen[m.UID], buf)
		})
	}

	return s.eachBody(v, idx, "fetch", func(i int, body []byte) error {
		m := v.msgs[i]
		if err := unknownCTE(body, options); err != nil {
			return err
		}
		// writeMessage is done with body when it returns, as it must be.
		return writeMessage(w.CreateMessage(uint32(i+1)), v.withRecent(m.Message), body, options, seen[m.UID], buf)
	})
}

// eachBody calls fn with the index in v.msgs and the body of each message
// of idx (ascending indices of v.msgs), reading the bodies in batches
// (mailstore.Mail.Bodies): body is valid only during fn. Gone messages are
// left out, and so are those the store no longer has (expunged meanwhile:
// the next refresh reports them; RFC 2180 section 4.1.2). An error from fn
// comes back as is; one from the store is logged and answered through
// s.fail with op.
func (s *session) eachBody(v *view, idx []int, op string, fn func(i int, body []byte) error) error {
	if c, ok := s.st.(cachedBodies); ok {
		if done, err := eachCached(c.CachedBody, v, idx, fn); done {
			return err
		}
	}
	return s.eachRead(s.st.Bodies, v, idx, op, fn)
}

// cachedBodies and cachedSummaries are what a store may offer beside
// Store: the bodies, and their summaries, it keeps in memory by body id
// (mailstore.Message.BlobID), as pgstore keeps those its node stored or
// read last. A body never changes and its id is never reused, so what is
// kept is the message's.
type cachedBodies interface {
	CachedBody(blobID int64) ([]byte, bool)
}

type cachedSummaries interface {
	CachedSummary(blobID int64) ([]byte, bool)
}

// eachCached is eachBody (or eachSummary) from what get keeps, when it
// keeps that of every message of idx, and reports whether it was: a
// client that reads one message at a time (FETCH n BODY.PEEK[]), or lists
// a folder it listed before, then costs no round trip to a database. A
// message another session expunged meanwhile, which this session still
// holds, is answered, as RFC 2180 section 4.1.1 allows, where the store
// would leave it out.
func eachCached(get func(blobID int64) ([]byte, bool), v *view, idx []int, fn func(i int, b []byte) error) (bool, error) {
	kept := make([][]byte, len(idx))
	for k, i := range idx {
		m := v.msgs[i]
		if m.gone {
			continue
		}
		if m.BlobID == 0 {
			return false, nil
		}
		b, ok := get(m.BlobID)
		if !ok {
			return false, nil
		}
		kept[k] = b
	}
	for k, i := range idx {
		if v.msgs[i].gone {
			continue
		}
		if err := fn(i, kept[k]); err != nil {
			return true, err
		}
	}
	return true, nil
}

// eachSummary is eachBody with the messages' summaries
// (mailstore.Mail.Summaries) in place of their bodies.
func (s *session) eachSummary(v *view, idx []int, op string, fn func(i int, header []byte) error) error {
	if c, ok := s.st.(cachedSummaries); ok {
		if done, err := eachCached(c.CachedSummary, v, idx, fn); done {
			return err
		}
	}
	return s.eachRead(s.st.Summaries, v, idx, op, fn)
}

// eachRead is eachBody and eachSummary, reading with read.
func (s *session) eachRead(read func(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uid uint32, b []byte) error) error,
	v *view, idx []int, op string, fn func(i int, b []byte) error) error {
	live := make([]int, 0, len(idx))
	uids := make([]uint32, 0, len(idx))
	for _, i := range idx {
		if m := v.msgs[i]; !m.gone {
			live = append(live, i)
			uids = append(uids, m.UID)
		}
	}
	// uids are ascending and unique, so Bodies answers a subsequence of
	// them and one pass over live pairs each body with its message.
	next := 0
	var fnErr error
	err := read(s.ctx, s.user.ID, v.folder.ID, uids, func(uid uint32, body []byte) error {
		for uids[next] != uid {
			next++
		}
		i := live[next]
		next++
		fnErr = fn(i, body)
		return fnErr
	})
	switch {
	case fnErr != nil:
		return fnErr
	case err != nil:
		return s.fail(op, err)
	}
	return nil
}

// inSummaryFetch reports whether a FETCH that reads the message asks
// nothing its summary lacks: ENVELOPE, and BODY[HEADER.FIELDS (...)] of
// fields the summary keeps (mailstore.SummaryField), which are the same
// lines in the summary as in the message, in the same order. (Of a
// message whose header has a malformed line, the message's own
// HEADER.FIELDS stop at that line, as imapserver's parser does, and the
// summary, which leaves such lines out, goes on: as for ENVELOPE.)
func inSummaryFetch(o *imap.FetchOptions) bool {
	if o.BodyStructure != nil || len(o.BinarySection) > 0 || len(o.BinarySectionSize) > 0 || o.Preview != nil {
		return false
	}
	for _, bs := range o.BodySection {
		if len(bs.Part) > 0 || bs.Specifier != imap.PartSpecifierHeader || len(bs.HeaderFields) == 0 || len(bs.HeaderFieldsNot) > 0 {
			return false
		}
		for _, k := range bs.HeaderFields {
			if !mailstore.SummaryField(k) {
				return false
			}
		}
	}
	return true
}

func marksSeen(o *imap.FetchOptions) bool {
	for _, bs := range o.BodySection {
		if !bs.Peek {
			return true
		}
	}
	for _, bs := range o.BinarySection {
		if !bs.Peek {
			return true
		}
	}
	return false
}

// needsBody reports whether a FETCH reads anything of the message beyond
// its record: a summary at least.
func needsBody(o *imap.FetchOptions) bool {
	return o.Envelope || needsWholeBody(o)
}

// needsWholeBody reports whether a FETCH asks for any of the message's
// content beyond ENVELOPE (inSummaryFetch says which of those its
// summary answers).
func needsWholeBody(o *imap.FetchOptions) bool {
	return o.BodyStructure != nil || len(o.BodySection) > 0 || o.Preview != nil ||
		len(o.BinarySection) > 0 || len(o.BinarySectionSize) > 0
}

// fetchBuf is what writeMessage reuses from one response to the next,
// imapserver having written the previous one: a folder listing then
// allocates nothing per message for its flags and most envelopes.
type fetchBuf struct {
	envelopeBuf
	flags []imap.Flag
}

// writeMessage writes the FETCH response of m, body being its message or
// its summary (nil when o asks for neither).
func writeMessage(w *imapserver.FetchResponseWriter, m mailstore.Message, body []byte, o *imap.FetchOptions, flagsChanged bool, buf *fetchBuf) error {
	w.WriteUID(imap.UID(m.UID))
	if o.Flags || flagsChanged {
		buf.flags = buf.flags[:0]
		for _, f := range m.Flags {
			buf.flags = append(buf.flags, imap.Flag(f))
		}
		w.WriteFlags(buf.flags)
	}
	if o.ModSeq {
		w.WriteModSeq(imapModSeq(m.ModSeq))
	}
	if o.InternalDate {
		w.WriteInternalDate(m.ReceivedAt.In(time.UTC))
	}
	if o.RFC822Size {
		w.WriteRFC822Size(m.Size)
	}
	if o.Envelope {
		w.WriteEnvelope(buf.envelope(body))
	}
	// The MIME structure is parsed once, for what needs it (mimetree.go).
	var tree *mimePart
	mime := func() *mimePart {
		if tree == nil {
			tree = parseMIME(body)
		}
		return tree
	}
	if o.BodyStructure != nil {
		w.WriteBodyStructure(mime().bodyStructure(body))
	}
	if o.EmailID {
		w.WriteEmailID(emailObjectID(m.BlobID))
	}
	if o.ThreadID {
		w.WriteThreadID("")
	}
	if o.Preview != nil {
		w.WritePreview(preview(mime(), body), true)
	}
	var err error
	for _, bs := range o.BodySection {
		b := bodySection(body, bs, mime)
		if err = writeLiteral(w.WriteBodySection(bs, int64(len(b))), b); err != nil {
			break
		}
	}
	for _, bs := range o.BinarySection {
		if err != nil {
			break
		}
		b := binarySection(body, bs.Part, bs.Partial, mime)
		err = writeLiteral(w.WriteBinarySection(bs, int64(len(b))), b)
	}
	for _, bs := range o.BinarySectionSize {
		if err != nil {
			break
		}
		w.WriteBinarySectionSize(bs, uint32(len(binarySection(body, bs.Part, nil, mime))))
	}
	// Close even after an error: the writer holds the connection's
	// response lock until then.
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// bodySection is BODY[section]<partial>. The whole message is sent as
// stored, byte for byte, so that its size is RFC822.SIZE.
func bodySection(body []byte, bs *imap.FetchItemBodySection, mime func() *mimePart) []byte {
	if len(bs.Part) > 0 {
		return mime().section(body, bs)
	}
	if b, ok := fastHeaderFields(body, bs); ok {
		return partial(b, bs.Partial)
	}
	if bs.Specifier != imap.PartSpecifierNone {
		// HEADER, TEXT: the message's own header is all it takes.
		return parseTop(body).section(body, bs)
	}
	if p := bs.Partial; p != nil {
		if p.Offset >= int64(len(body)) {
			return nil
		}
		body = body[p.Offset:]
		if p.Size >= 0 && p.Size < int64(len(body)) {
			body = body[:p.Size]
		}
	}
	return body
}

// binarySection is BINARY[part]<partial>.
func binarySection(body []byte, part []int, p *imap.SectionPartial, mime func() *mimePart) []byte {
	if len(part) == 0 {
		return parseTop(body).binary(body, part, p)
	}
	return mime().binary(body, part, p)
}

func writeLiteral(wc io.WriteCloser, b []byte) error {
	_, err := wc.Write(b)
	if cerr := wc.Close(); err == nil {
		err = cerr
	}
	return err
}

// envelope is the ENVELOPE of a message (RFC 9051 section 7.5.2), from
// its header: what imapserver.ExtractEnvelope answers, with the address
// lists of address.go, each address field parsed once (ExtractEnvelope
// parses them with net/mail, for nothing), and the usual Date parsed
// without net/mail's trial of layouts (envelopeDate).
func envelope(body []byte) *imap.Envelope {
	h, err := textproto.ReadHeader(bufio.NewReader(bytes.NewReader(body)))
	if err != nil {
		return &imap.Envelope{}
	}
	mh := mail.Header{Header: gomessage.Header{Header: h}}
	subject, _ := mh.Subject()
	inReplyTo, _ := mh.MsgIDList("In-Reply-To")
	messageID, _ := mh.MessageID()
	env := &imap.Envelope{
		Date:      envelopeDate(h.Get("Date")),
		Subject:   subject,
		InReplyTo: inReplyTo,
		MessageID: messageID,
	}
	setEnvelopeAddresses(env, h)
	return env
}

// rfc5322Date is the date-time of RFC 5322 section 3.3 as nearly every
// message writes it.
const rfc5322Date = "Mon, 2 Jan 2006 15:04:05 -0700"

// envelopeDate is the time of a Date field, as net/mail.ParseDate reads
// it (the zero time when it cannot): a value in the usual form is parsed
// at once, any other by ParseDate, which tries some thirty layouts.
func envelopeDate(v string) time.Time {
	if v == "" {
		return time.Time{}
	}
	if t, ok := parsePlainDate(strings.TrimSpace(v)); ok {
		return t
	}
	if t, err := time.Parse(rfc5322Date, strings.TrimSpace(v)); err == nil {
		return t
	}
	t, _ := netmail.ParseDate(v)
	return t
}
