package imapserver

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/internal/imapwire"
)

// TestWriteItemBodySectionFieldNames: header field names go out as atoms
// when they are atoms, quoted (or literal) otherwise.
func TestWriteItemBodySectionFieldNames(t *testing.T) {
	for _, tc := range []struct {
		section imap.FetchItemBodySection
		want    string
	}{
		{imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{"DATE", "FROM", "X-Priority"}},
			`BODY[HEADER.FIELDS (DATE FROM X-Priority)]`},
		{imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, HeaderFieldsNot: []string{"Subject"}},
			`BODY[HEADER.FIELDS.NOT (Subject)]`},
		// Not atoms: a space, a parenthesis, a quote, ']' and 8-bit.
		{imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{"a b", "x(", `q"`, "y]", "\xc3\xa9"}},
			`BODY[HEADER.FIELDS ("a b" "x(" "q\"" "y]" {2}` + "\r\n\xc3\xa9)]"},
	} {
		var buf bytes.Buffer
		bw := bufio.NewWriter(&buf)
		enc := imapwire.NewEncoder(bw, imapwire.ConnSideServer)
		writeItemBodySection(enc, &tc.section)
		bw.Flush()
		if got := buf.String(); got != tc.want {
			t.Errorf("writeItemBodySection = %q, want %q", got, tc.want)
		}
	}
}
