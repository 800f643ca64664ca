package policy

import "testing"

func TestHostnameProblem(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"mx.example.net", true},
		{"mx.example.net.", true},
		{"MX.Example.NET", true},
		{"vm", false},
		{"", false},
		{"localhost", false},
		{"a.localhost", false},
		{"localhost.localdomain", false},
		{"bad_name.example", false},
		{"1.2.3.4", false},
	} {
		got := HostnameProblem(c.name)
		if (got == "") != c.ok {
			t.Errorf("HostnameProblem(%q) = %q, want ok=%v", c.name, got, c.ok)
		}
	}
}
