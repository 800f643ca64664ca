package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestPolicySettings: dnsbl is a TOML list in the file and
// comma-separated elsewhere; dmarc_enforce and autoreply_interval have
// their defaults.
func TestPolicySettings(t *testing.T) {
	c, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.DMARCEnforce || c.AutoReplyInterval != 7*24*time.Hour || len(c.DNSBL) != 0 {
		t.Errorf("defaults: dmarc_enforce %v, autoreply_interval %v, dnsbl %q", c.DMARCEnforce, c.AutoReplyInterval, c.DNSBL)
	}
	file := filepath.Join(t.TempDir(), "m.toml")
	os.WriteFile(file, []byte("dnsbl = [\"zen.spamhaus.org\", \"BL.SpamCop.net.\"]\ndmarc_enforce = false\nautoreply_interval = \"24h\"\n"), 0o600)
	c, err = load(t, []string{"-config", file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"zen.spamhaus.org", "bl.spamcop.net"}; !slices.Equal(c.DNSBL, want) {
		t.Errorf("dnsbl from the file = %q, want %q", c.DNSBL, want)
	}
	if c.DMARCEnforce || c.AutoReplyInterval != 24*time.Hour {
		t.Errorf("file: dmarc_enforce %v, autoreply_interval %v", c.DMARCEnforce, c.AutoReplyInterval)
	}
	c, err = load(t, nil, map[string]string{"MAILHOST_DNSBL": "a.example, b.example"})
	if err != nil || !slices.Equal(c.DNSBL, []string{"a.example", "b.example"}) {
		t.Errorf("dnsbl from the environment = %q, %v", c.DNSBL, err)
	}
	for _, bad := range []string{"http://x.example", "nodot"} {
		if _, err := load(t, []string{"-dnsbl", bad}, nil); err == nil {
			t.Errorf("-dnsbl %q loaded, want an error", bad)
		}
	}
	if _, err := load(t, []string{"-autoreply-interval", "1s"}, nil); err == nil {
		t.Error("-autoreply-interval 1s loaded, want an error")
	}
}

// TestRecipientDelimiter: "+" by default, empty turns subaddresses off,
// and a character that cannot be in a local part is refused.
func TestRecipientDelimiter(t *testing.T) {
	c, err := load(t, nil, nil)
	if err != nil || c.RecipientDelimiter != "+" {
		t.Errorf("default: %q, %v; want +", c.RecipientDelimiter, err)
	}
	c, err = load(t, nil, map[string]string{"MAILHOST_RECIPIENT_DELIMITER": ""})
	if err != nil || c.RecipientDelimiter != "" {
		t.Errorf("empty: %q, %v; want off", c.RecipientDelimiter, err)
	}
	c, err = load(t, []string{"-recipient-delimiter", "-"}, nil)
	if err != nil || c.RecipientDelimiter != "-" {
		t.Errorf("-: %q, %v", c.RecipientDelimiter, err)
	}
	for _, bad := range []string{"@", "++", " ", ","} {
		if _, err := load(t, []string{"-recipient-delimiter", bad}, nil); err == nil {
			t.Errorf("-recipient-delimiter %q loaded, want an error", bad)
		}
	}
}
