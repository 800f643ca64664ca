package imapwire

// mailhost patch: the FETCH encoder's fast paths against what upstream's
// encoder wrote (see PATCHES.md).

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"
)

// upstreamString is what upstream's Encoder.String wrote for s on the
// server side: quoted in a strings.Builder when valid quoted, else a
// literal.
func upstreamString(s string, quotedUTF8 bool) string {
	valid := len(s) <= 4096
	for i := 0; i < len(s) && valid; i++ {
		switch ch := s[i]; {
		case ch == 0, ch == '\r', ch == '\n':
			valid = false
		case !quotedUTF8 && ch > 0x7f:
			valid = false
		}
	}
	if !valid {
		return "{" + strconv.Itoa(len(s)) + "}\r\n" + s
	}
	var sb strings.Builder
	sb.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			sb.WriteByte('\\')
		}
		sb.WriteByte(s[i])
	}
	sb.WriteByte('"')
	return sb.String()
}

// encode is what f writes through a server-side Encoder.
func encode(t testing.TB, quotedUTF8 bool, f func(enc *Encoder)) string {
	t.Helper()
	var buf bytes.Buffer
	// A small buffer, so that numbers and dates also meet its end.
	bw := bufio.NewWriterSize(&buf, 16)
	enc := NewEncoder(bw, ConnSideServer)
	enc.QuotedUTF8 = quotedUTF8
	f(enc)
	if err := enc.CRLF(); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\r\n")
}

var stringCases = []string{"", "plain", `a "quoted" \ word`, `\`, `"`, "caf\xc3\xa9", "nul\x00", "cr\rlf\n",
	strings.Repeat("x", 4096), strings.Repeat("x", 4097), strings.Repeat(`"`, 2100)}

// TestStringAsUpstream: String, and StringJoin of the pieces, write what
// upstream's String wrote.
func TestStringAsUpstream(t *testing.T) {
	for _, s := range stringCases {
		for _, utf8 := range []bool{false, true} {
			checkString(t, s, utf8)
		}
	}
}

func FuzzStringAsUpstream(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s, false)
	}
	f.Fuzz(checkString)
}

func checkString(t *testing.T, s string, quotedUTF8 bool) {
	want := upstreamString(s, quotedUTF8)
	if got := encode(t, quotedUTF8, func(enc *Encoder) { enc.String(s) }); got != want {
		t.Fatalf("String(%q) = %q, want %q", s, got, want)
	}
	// AppendQuoted: String's bytes, unless String writes a literal.
	enc := NewEncoder(bufio.NewWriter(new(bytes.Buffer)), ConnSideServer)
	enc.QuotedUTF8 = quotedUTF8
	if got, ok := enc.AppendQuoted(nil, s); ok != (want[0] == '"') || ok && string(got) != want {
		t.Fatalf("AppendQuoted(%q) = %q, %v, want %q", s, got, ok, want)
	}
	// The message identifiers of an ENVELOPE, as imapserver joins them.
	parts := strings.Split(s, " ")
	want = upstreamString("<"+strings.Join(parts, "> <")+">", quotedUTF8)
	if got := encode(t, quotedUTF8, func(enc *Encoder) { enc.StringJoin("<", parts, "> <", ">") }); got != want {
		t.Fatalf("StringJoin(%q) = %q, want %q", parts, got, want)
	}
}

// TestNumbersAsUpstream: numbers as strconv formats them.
func TestNumbersAsUpstream(t *testing.T) {
	for _, v := range []int64{0, 7, 99, 100, 4096, 1<<32 - 1, 1<<63 - 1, -1, -12345} {
		if got, want := encode(t, false, func(enc *Encoder) { enc.Number64(v) }), strconv.FormatInt(v, 10); got != want {
			t.Errorf("Number64(%d) = %s", v, got)
		}
		if v >= 0 && v < 1<<32 {
			if got, want := encode(t, false, func(enc *Encoder) { enc.Number(uint32(v)).SP().ModSeq(uint64(v)) }), strconv.FormatInt(v, 10)+" "+strconv.FormatInt(v, 10); got != want {
				t.Errorf("Number, ModSeq(%d) = %s", v, got)
			}
		}
	}
}

var timeCases = []time.Time{
	time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC),
	time.Date(2026, 11, 25, 23, 59, 59, 999, time.FixedZone("", -7*3600)),
	time.Date(2026, 3, 1, 1, 2, 3, 0, time.FixedZone("", 5*3600+45*60)),
	time.Date(2026, 3, 1, 1, 2, 3, 0, time.FixedZone("", -(3*3600+30*60+17))),
	time.Date(2026, 3, 1, 1, 2, 3, 0, time.FixedZone("", 99*3600+59*60)),
	time.Date(2026, 3, 1, 1, 2, 3, 0, time.FixedZone("", 100*3600)),
	time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
	time.Date(999, 12, 31, 23, 59, 59, 0, time.UTC),
	time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(-5, 6, 7, 8, 9, 10, 0, time.UTC),
	{},
}

// TestQuotedTimeAsUpstream: QuotedTime writes what String of t.Format
// wrote, in the layouts it writes itself and another.
func TestQuotedTimeAsUpstream(t *testing.T) {
	for _, tm := range timeCases {
		checkTime(t, tm)
	}
}

func FuzzQuotedTimeAsUpstream(f *testing.F) {
	for _, tm := range timeCases {
		_, off := tm.Zone()
		f.Add(tm.Unix(), off)
	}
	f.Fuzz(func(t *testing.T, sec int64, offset int) {
		checkTime(t, time.Unix(sec, 0).In(time.FixedZone("", offset%(200*3600))))
	})
}

func checkTime(t *testing.T, tm time.Time) {
	for _, layout := range []string{dateTimeLayout, envelopeDateLayout, time.RFC3339} {
		want := upstreamString(tm.Format(layout), false)
		if got := encode(t, false, func(enc *Encoder) { enc.QuotedTime(tm, layout) }); got != want {
			t.Fatalf("QuotedTime(%v, %q) = %s, want %s", tm, layout, got, want)
		}
	}
}
