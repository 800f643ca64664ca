package imapd

import (
	"bytes"
	"io"
	"strings"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	gomessage "github.com/emersion/go-message"
	"github.com/emersion/go-message/textproto"
)

// This file answers BODYSTRUCTURE, BODY[section] and BINARY[section]
// (RFC 9051 sections 6.4.5 and 7.5.2) from the tree of mimetree.go, with
// what imapserver's ExtractBodyStructure, ExtractBodySection and
// ExtractBinarySection answer for a message within the limits: same
// fields, same bytes. Two differences, both RFC 2046's: the parts of a
// multipart/digest without a Content-Type are described as the
// message/rfc822 parts they are (section 5.1.5), as their sections
// already were; and a part past the limits is application/octet-stream.

// bodyStructure describes e (RFC 9051 section 7.5.2, BODYSTRUCTURE).
func (e *mimePart) bodyStructure(msg []byte) imap.BodyStructure {
	mh := gomessage.Header{Header: e.header}
	if primaryType(e.mediaType) == "multipart" && !e.flat {
		_, sub, _ := strings.Cut(e.mediaType, "/")
		bs := &imap.BodyStructureMultiPart{Subtype: sub}
		for _, c := range e.children {
			bs.Children = append(bs.Children, c.bodyStructure(msg))
		}
		if len(bs.Children) == 0 {
			// A multipart must have a part (RFC 9051 section 9:
			// body-type-mpart), and imapserver panics writing one
			// without: a multipart whose delimiter is not found is
			// described as Dovecot does, with one empty text/plain
			// part.
			bs.Children = []imap.BodyStructure{emptyPart()}
		}
		bs.Extended = &imap.BodyStructureMultiPartExt{
			Params:      e.params,
			Disposition: disposition(e.header),
			Language:    language(mh),
			Location:    mh.Get("Content-Location"),
		}
		return bs
	}
	typ, sub, _ := strings.Cut(e.mediaType, "/")
	params := e.params
	if e.flat {
		typ, sub, params = "application", "octet-stream", nil
	}
	body := msg[e.body:e.end]
	bs := &imap.BodyStructureSinglePart{
		Type:        typ,
		Subtype:     sub,
		Params:      params,
		ID:          mh.Get("Content-Id"),
		Description: mh.Get("Content-Description"),
		Encoding:    mh.Get("Content-Transfer-Encoding"),
		Size:        uint32(len(body)),
	}
	if e.embedded != nil {
		bs.MessageRFC822 = &imap.BodyStructureMessageRFC822{
			Envelope:      imapserver.ExtractEnvelope(e.embedded.header),
			BodyStructure: e.embedded.bodyStructure(msg),
			NumLines:      int64(bytes.Count(body, []byte("\n"))),
		}
	}
	if typ == "text" {
		bs.Text = &imap.BodyStructureText{NumLines: int64(bytes.Count(body, []byte("\n")))}
	}
	bs.Extended = &imap.BodyStructureSinglePartExt{
		Disposition: disposition(e.header),
		Language:    language(mh),
		Location:    mh.Get("Content-Location"),
	}
	return bs
}

// emptyPart is the part of a multipart without one: text/plain, empty.
func emptyPart() imap.BodyStructure {
	return &imap.BodyStructureSinglePart{
		Type:     "text",
		Subtype:  "plain",
		Params:   map[string]string{"charset": "us-ascii"},
		Encoding: "7bit",
		Text:     &imap.BodyStructureText{},
		Extended: &imap.BodyStructureSinglePartExt{},
	}
}

// disposition is h's Content-Disposition (RFC 2183), unfolded as
// contentType unfolds.
func disposition(h textproto.Header) *imap.BodyStructureDisposition {
	disp, params, _ := headerParams(h, "Content-Disposition", "")
	if disp == "" {
		return nil
	}
	return &imap.BodyStructureDisposition{Value: disp, Params: params}
}

func language(h gomessage.Header) []string {
	v := h.Get("Content-Language")
	if v == "" {
		return nil
	}
	l := strings.Split(v, ",")
	for i, lang := range l {
		l[i] = strings.TrimSpace(lang)
	}
	return l
}

// isMultipart reports whether e's parts are in the tree, for finding a
// section and searching: as imapserver and gomessage take it there, only
// for a media type that starts with "multipart/".
func (e *mimePart) isMultipart() bool {
	return strings.HasPrefix(e.mediaType, "multipart/") && !e.flat
}

// open is the message a message/rfc822 part holds, or e itself.
func (e *mimePart) open() *mimePart {
	if e.embedded != nil {
		return e.embedded
	}
	return e
}

// find is the part that path names (RFC 9051 section 6.4.5: part 1 of a
// message that is not multipart is its body), or nil. Part numbers
// within a message/rfc822 part number the parts of the message it holds.
func (e *mimePart) find(path []int) *mimePart {
	if !e.isMultipart() && len(path) > 0 && path[0] == 1 {
		path = path[1:]
	}
	cur := e
	for _, num := range path {
		cur = cur.open()
		if !cur.isMultipart() {
			if num != 1 {
				return nil
			}
			continue
		}
		if num < 1 || num > len(cur.children) {
			return nil
		}
		cur = cur.children[num-1]
	}
	return cur
}

// section is BODY[section]<partial> of msg, whose tree is root.
func (root *mimePart) section(msg []byte, item *imap.FetchItemBodySection) []byte {
	e := root.find(item.Part)
	if e == nil {
		return nil
	}
	if len(item.Part) > 0 {
		switch item.Specifier {
		case imap.PartSpecifierHeader, imap.PartSpecifierText:
			// HEADER and TEXT of a part are those of the message a
			// message/rfc822 part holds (RFC 9051 section 6.4.5); any
			// other part holds none, so they are empty, as Dovecot
			// answers (MIME is the part's own header).
			if e.embedded == nil {
				return partial(nil, item.Partial)
			}
			e = e.open()
		}
	}
	var b []byte
	switch item.Specifier {
	case imap.PartSpecifierNone:
		if len(item.Part) == 0 {
			b = append(appendHeader(nil, e.header, item), msg[e.body:e.end]...)
		} else {
			b = msg[e.body:e.end]
		}
	case imap.PartSpecifierText:
		b = msg[e.body:e.end]
	default: // HEADER, HEADER.FIELDS (.NOT), MIME
		b = appendHeader(nil, e.header, item)
	}
	return partial(b, item.Partial)
}

// appendHeader appends h as textproto.WriteHeader writes it, with only the
// fields item.HeaderFields names, or without those item.HeaderFieldsNot
// names (field names compared without regard to case). One pass over the
// fields: textproto's Del shifts the fields after the one it removes, so
// filtering a header of n fields through it costs n squared.
func appendHeader(b []byte, h textproto.Header, item *imap.FetchItemBodySection) []byte {
	var keep, drop map[string]bool
	if len(item.HeaderFields) > 0 {
		keep = make(map[string]bool, len(item.HeaderFields))
		for _, k := range item.HeaderFields {
			keep[strings.ToLower(k)] = true
		}
	}
	if len(item.HeaderFieldsNot) > 0 {
		drop = make(map[string]bool, len(item.HeaderFieldsNot))
		for _, k := range item.HeaderFieldsNot {
			drop[strings.ToLower(k)] = true
		}
	}
	for f := h.Fields(); f.Next(); {
		if keep != nil || drop != nil {
			k := strings.ToLower(f.Key())
			if keep != nil && !keep[k] || drop[k] {
				continue
			}
		}
		raw, err := f.Raw()
		if err != nil {
			continue
		}
		b = append(b, raw...)
	}
	return append(b, '\r', '\n')
}

// binary is BINARY[section]<partial> of msg (RFC 3516): the part's body
// without its content transfer encoding, after its header for the whole
// message; nil for an encoding it does not know.
func (root *mimePart) binary(msg []byte, part []int, p *imap.SectionPartial) []byte {
	e := root.find(part)
	if e == nil {
		return nil
	}
	ent, err := gomessage.New(gomessage.Header{Header: e.header}, bytes.NewReader(msg[e.body:e.end]))
	if err != nil && !gomessage.IsUnknownCharset(err) {
		return nil
	}
	var buf bytes.Buffer
	if len(part) == 0 {
		buf.Write(appendHeader(nil, e.header, &imap.FetchItemBodySection{}))
	}
	if _, err := io.Copy(&buf, ent.Body); err != nil {
		return nil
	}
	return partial(buf.Bytes(), p)
}

func partial(b []byte, p *imap.SectionPartial) []byte {
	if p == nil {
		return b
	}
	if p.Offset > int64(len(b)) {
		return nil
	}
	end := p.Offset + p.Size
	if p.Size < 0 || end > int64(len(b)) {
		end = int64(len(b))
	}
	return b[p.Offset:end]
}
