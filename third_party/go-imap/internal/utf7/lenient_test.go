package utf7

import "testing"

// mailhost patch: see PATCHES.md.
func TestDecodeLenient(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"INBOX", "INBOX"},
		{"a&-b", "a&b"},
		{"a&b", "a&b"},
		{"&", "&"},
		{"&&-", "&&"},
		{"Entw&APw-rfe", "Entwürfe"},
		{"x&APw-&y", "xü&y"},
		{"!#$&'+,-.0123456789:;<=>?@^_`|}~", "!#$&'+,-.0123456789:;<=>?@^_`|}~"},
		{"&AGE-", "&AGE-"}, // "a" encoded: not a valid sequence, so literal
		{"Tom & Jerry*", "Tom & Jerry*"},
	} {
		got, err := DecodeLenient(c.in)
		if err != nil || got != c.want {
			t.Errorf("DecodeLenient(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"a\x01b", "\xff"} {
		if _, err := DecodeLenient(in); err == nil {
			t.Errorf("DecodeLenient(%q): no error, want one (not a name)", in)
		}
	}
}
