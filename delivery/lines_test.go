package delivery

import "testing"

func TestNormalizeLineEnds(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", ""},
		{"clean", "a\r\nb\r\n", "a\r\nb\r\n"},
		{"no line end", "abc", "abc"},
		{"bare LF", "a\nb\n", "a\r\nb\r\n"},
		{"bare CR", "a\rb\r", "a\r\nb\r\n"},
		{"CR dot CR", "x\r.\rMAIL FROM:<a@b>\r\n", "x\r\n.\r\nMAIL FROM:<a@b>\r\n"},
		{"LF dot LF", "x\n.\nRCPT TO:<c@d>\r\n", "x\r\n.\r\nRCPT TO:<c@d>\r\n"},
		{"LF dot CRLF", "x\n.\r\n", "x\r\n.\r\n"},
		{"CR CR LF", "a\r\r\nb", "a\r\n\r\nb"},
		{"LF CR", "a\n\rb", "a\r\n\r\nb"},
		{"trailing CR", "a\r", "a\r\n"},
		{"leading LF", "\na", "\r\na"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(NormalizeLineEnds([]byte(tc.in))); got != tc.want {
				t.Errorf("NormalizeLineEnds(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	clean := []byte("a\r\nb\r\n")
	if got := NormalizeLineEnds(clean); &got[0] != &clean[0] {
		t.Errorf("NormalizeLineEnds copied a clean message")
	}
}

func FuzzNormalizeLineEnds(f *testing.F) {
	for _, s := range []string{"", "a\r\n", "\r.\r", "\n.\n", "\r\r\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := NormalizeLineEnds(in)
		for i, c := range out {
			if c == '\r' && (i+1 == len(out) || out[i+1] != '\n') || c == '\n' && (i == 0 || out[i-1] != '\r') {
				t.Fatalf("NormalizeLineEnds(%q) = %q: bare CR or LF at %d", in, out, i)
			}
		}
		if again := NormalizeLineEnds(out); string(again) != string(out) {
			t.Fatalf("NormalizeLineEnds not idempotent on %q: %q then %q", in, out, again)
		}
	})
}
