package imapd

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
)

// mimeSeeds are messages whose structure mimetree.go must see as
// imapserver does: the seed corpus of FuzzMIMEStructure too.
var mimeSeeds = []string{
	msgPlain,
	msgMultipart,
	msgLarge,
	crlf(`Subject: forwarded
Content-Type: multipart/mixed; boundary=outer

preamble
--outer
Content-Type: multipart/alternative; boundary="inner"

--inner
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: quoted-printable

caf=C3=A9
--inner
Content-Type: text/html

<p>caf&eacute;</p>
--inner--
--outer
Content-Type: message/rfc822
Content-Disposition: attachment; filename="fwd.eml"

From: Erin <erin@example.org>
To: alice@example.com
Subject: the original
Content-Type: multipart/mixed; boundary=x

--x
Content-Type: text/plain

inside
--x
Content-Type: image/png
Content-Transfer-Encoding: base64
Content-Language: en, fr
Content-Location: http://example.org/a.png
Content-Id: <img1@example.org>
Content-Description: a picture

iVBORw0KGgo=
--x--
--outer--
epilogue
`),
	// Bare LF line ends, a part with no header, junk after a boundary.
	"Content-Type: multipart/mixed; boundary=b\n\n--b\n\nno header\n--b\nContent-Type: text/plain\n\ntwo\n--b   \nthree\n--b junk\nafter\n",
	// No close delimiter; an empty part at the start; a boundary that
	// is a prefix of another.
	crlf("Content-Type: multipart/mixed; boundary=a\n\n--a\n--a\nContent-Type: multipart/related; boundary=ab\n\n--ab\n\nx\n--ab--\n--a\n\nlast, unterminated\n"),
	// A header without a body, and a multipart without a boundary.
	"Subject: only a header\r\n",
	"Content-Type: multipart/mixed\r\n\r\n--\r\nx\r\n",
	// message/rfc822 holding message/rfc822.
	crlf("Content-Type: message/rfc822\n\nSubject: one\nContent-Type: message/rfc822\n\nSubject: two\n\ninnermost\n"),
	nestedMultipart(5, "needle"),
}

// mimeSections are the sections compared on every message.
func mimeSections() []*imap.FetchItemBodySection {
	var items []*imap.FetchItemBodySection
	paths := [][]int{nil, {1}, {2}, {3}, {1, 1}, {1, 2}, {2, 1}, {2, 2}, {2, 1, 1}, {2, 1, 2}, {1, 1, 1, 1}, {4, 1}}
	for _, p := range paths {
		for _, spec := range []imap.PartSpecifier{imap.PartSpecifierNone, imap.PartSpecifierHeader, imap.PartSpecifierText, imap.PartSpecifierMIME} {
			if spec == imap.PartSpecifierMIME && len(p) == 0 {
				continue
			}
			items = append(items, &imap.FetchItemBodySection{Part: p, Specifier: spec})
		}
		items = append(items,
			&imap.FetchItemBodySection{Part: p, Specifier: imap.PartSpecifierHeader, HeaderFields: []string{"subject", "Content-Type"}},
			&imap.FetchItemBodySection{Part: p, Specifier: imap.PartSpecifierHeader, HeaderFieldsNot: []string{"SUBJECT", "x-none"}},
			&imap.FetchItemBodySection{Part: p, Partial: &imap.SectionPartial{Offset: 3, Size: 10}},
		)
	}
	return items
}

// compareWithImapserver reports where the tree's answers differ from
// imapserver's for msg.
func compareWithImapserver(t *testing.T, msg []byte) {
	t.Helper()
	p := &mimeParser{msg: msg}
	tree := p.message(0, len(msg), 0)
	// imapserver's answers for these are its quirks, not a description
	// of the message (see mimeParser).
	if p.malformed || p.unterminated || tree.flat {
		return
	}
	want := imapserver.ExtractBodyStructure(bytes.NewReader(msg))
	fillEmptyMultiparts(want)
	if got := tree.bodyStructure(msg); !reflect.DeepEqual(got, want) {
		t.Errorf("BODYSTRUCTURE of %q:\n got %s\nwant %s", msg, dumpBS(got), dumpBS(want))
	}
	for _, item := range mimeSections() {
		want := imapserver.ExtractBodySection(bytes.NewReader(msg), item)
		got := bodySection(msg, item, func() *mimePart { return tree })
		if len(item.Part) == 0 && item.Specifier == imap.PartSpecifierNone {
			// BODY[] is the message as stored, where imapserver
			// writes its header again.
			got = tree.section(msg, item)
		}
		if len(item.Part) > 0 && (item.Specifier == imap.PartSpecifierHeader || item.Specifier == imap.PartSpecifierText) {
			if e := tree.find(item.Part); e != nil && e.embedded == nil {
				// HEADER and TEXT of a part that holds no message are
				// empty, as Dovecot answers; imapserver gives the
				// part's own header or body (see mimePart.section).
				want = nil
			}
		}
		if !bytes.Equal(got, want) {
			t.Errorf("BODY[%v %v fields %v not %v]<%v> of %q = %q, want %q", item.Part, item.Specifier, item.HeaderFields, item.HeaderFieldsNot, item.Partial, msg, got, want)
		}
		bin := &imap.FetchItemBinarySection{Part: item.Part, Partial: item.Partial}
		if got, want := binarySection(msg, item.Part, item.Partial, func() *mimePart { return tree }), imapserver.ExtractBinarySection(bytes.NewReader(msg), bin); !bytes.Equal(got, want) {
			t.Errorf("BINARY[%v]<%v> of %q = %q, want %q", item.Part, item.Partial, msg, got, want)
		}
	}
}

// fillEmptyMultiparts gives each multipart of bs without parts the one
// empty part bodyStructure gives it, where imapserver gives none (and
// then panics writing it).
func fillEmptyMultiparts(bs imap.BodyStructure) {
	switch bs := bs.(type) {
	case *imap.BodyStructureMultiPart:
		if len(bs.Children) == 0 {
			bs.Children = []imap.BodyStructure{emptyPart()}
		}
		for _, c := range bs.Children {
			fillEmptyMultiparts(c)
		}
	case *imap.BodyStructureSinglePart:
		if bs.MessageRFC822 != nil {
			fillEmptyMultiparts(bs.MessageRFC822.BodyStructure)
		}
	}
}

func dumpBS(bs imap.BodyStructure) string {
	switch bs := bs.(type) {
	case *imap.BodyStructureMultiPart:
		var b strings.Builder
		fmt.Fprintf(&b, "(multipart/%s %+v [", bs.Subtype, *bs.Extended)
		for _, c := range bs.Children {
			b.WriteString(dumpBS(c))
		}
		return b.String() + "])"
	case *imap.BodyStructureSinglePart:
		s := fmt.Sprintf("(%s/%s %v id=%q desc=%q enc=%q size=%d text=%v ext=%+v", bs.Type, bs.Subtype, bs.Params, bs.ID, bs.Description, bs.Encoding, bs.Size, bs.Text, *bs.Extended)
		if m := bs.MessageRFC822; m != nil {
			s += fmt.Sprintf(" msg lines=%d env=%+v %s", m.NumLines, *m.Envelope, dumpBS(m.BodyStructure))
		}
		return s + ")"
	}
	return fmt.Sprintf("%#v", bs)
}

// TestMIMETreeAsImapserver: within the limits, BODYSTRUCTURE, BODY[...]
// and BINARY[...] are what imapserver's Extract functions answer.
func TestMIMETreeAsImapserver(t *testing.T) {
	for i, m := range mimeSeeds {
		t.Run(fmt.Sprint(i), func(t *testing.T) { compareWithImapserver(t, []byte(m)) })
	}
}

// FuzzMIMEStructure: the tree never panics, describes any message in time
// linear in its size, and within the limits answers as imapserver does.
func FuzzMIMEStructure(f *testing.F) {
	for _, m := range mimeSeeds {
		f.Add([]byte(m))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		if len(msg) > 64<<10 {
			t.Skip("imapserver's own cost grows too fast to compare")
		}
		start := time.Now()
		tree := parseMIME(msg)
		tree.bodyStructure(msg)
		matchBody(tree, msg, "needle")
		if took := time.Since(start); took > time.Second {
			t.Fatalf("parse of %d bytes took %v", len(msg), took)
		}
		if comparable(msg) {
			compareWithImapserver(t, msg)
		}
	})
}

// comparable reports whether imapserver's answer for msg is the one to
// expect: no line too long for its 4096-byte buffers, no
// multipart/digest (described per RFC 2046 here), no folding that
// go-message's unfolding changes (a line break and the white space
// around it are one space there, and only the line break is removed
// here, as RFC 5322 section 2.2.3 says), within the limits.
func comparable(msg []byte) bool {
	prev := []byte(nil)
	for line := range bytes.Lines(msg) {
		if len(line) >= 4000 {
			return false
		}
		if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
			body := bytes.TrimRight(prev, "\r\n")
			if line[0] == '\t' || len(line) > 1 && (line[1] == ' ' || line[1] == '\t' || line[1] == '\r' || line[1] == '\n') ||
				len(body) > 0 && (body[len(body)-1] == ' ' || body[len(body)-1] == '\t') {
				return false
			}
		}
		prev = line
	}
	if bytes.Contains(bytes.ToLower(msg), []byte("digest")) {
		return false
	}
	return bytes.Count(msg, []byte("--")) < maxMIMEDepth
}
