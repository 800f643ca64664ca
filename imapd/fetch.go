package imapd

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
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
	idx := v.indices(numSet)

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
		}
	}

	if !needsBody(options) {
		for _, i := range idx {
			m := v.msgs[i]
			if m.gone {
				continue // RFC 2180 section 4.1.2: say nothing of it
			}
			if err := writeMessage(w.CreateMessage(uint32(i+1)), v.withRecent(m.Message), nil, options, seen[m.UID]); err != nil {
				return err
			}
		}
		return nil
	}

	return s.eachBody(v, idx, "fetch", func(i int, body []byte) error {
		m := v.msgs[i]
		// writeMessage is done with body when it returns, as it must be.
		return writeMessage(w.CreateMessage(uint32(i+1)), v.withRecent(m.Message), body, options, seen[m.UID])
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
	err := s.st.Bodies(s.ctx, s.user.ID, v.folder.ID, uids, func(uid uint32, body []byte) error {
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

func needsBody(o *imap.FetchOptions) bool {
	return o.Envelope || o.BodyStructure != nil || len(o.BodySection) > 0 ||
		len(o.BinarySection) > 0 || len(o.BinarySectionSize) > 0
}

func writeMessage(w *imapserver.FetchResponseWriter, m mailstore.Message, body []byte, o *imap.FetchOptions, flagsChanged bool) error {
	w.WriteUID(imap.UID(m.UID))
	if o.Flags || flagsChanged {
		w.WriteFlags(toIMAPFlags(m.Flags))
	}
	if o.InternalDate {
		w.WriteInternalDate(m.ReceivedAt.In(time.UTC))
	}
	if o.RFC822Size {
		w.WriteRFC822Size(m.Size)
	}
	if o.Envelope {
		w.WriteEnvelope(envelope(body))
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

func envelope(body []byte) *imap.Envelope {
	h, err := textproto.ReadHeader(bufio.NewReader(bytes.NewReader(body)))
	if err != nil {
		return &imap.Envelope{}
	}
	env := imapserver.ExtractEnvelope(h)
	setEnvelopeAddresses(env, h)
	return env
}
