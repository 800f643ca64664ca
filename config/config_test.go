package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func load(t *testing.T, args []string, env map[string]string) (*Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f := Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return f.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
}

func TestDefaults(t *testing.T) {
	c, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != "./data" || c.HTTP != "127.0.0.1:8080" || c.SMTP != "127.0.0.1:2525" || c.RetentionTime != "03:00" {
		t.Errorf("defaults = %+v", c)
	}
	if c.MaxMessageBytes != 50<<20 || c.AllowInsecureAuth {
		t.Errorf("defaults = %+v", c)
	}
}

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "m.toml")
	os.WriteFile(file, []byte(`
data = "/from/file"
http = "127.0.0.1:1"
smtp = "127.0.0.1:2"
allow_insecure_auth = true
max_message_bytes = 2048
[[plans]]
name = "Gold"
quota_mb = 3
retention_days = 4
transfer_monthly_mb = 5
`), 0o600)
	env := map[string]string{ConfigEnv: file, "MAILHOST_HTTP": "127.0.0.1:3", "MAILHOST_SMTP": "127.0.0.1:4", "MAILHOST_IMAP": ""}
	c, err := load(t, []string{"-smtp", "127.0.0.1:5"}, env)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, got, want string }{
		{"file only", c.DataDir, "/from/file"},
		{"env beats file", c.HTTP, "127.0.0.1:3"},
		{"flag beats env", c.SMTP, "127.0.0.1:5"},
		{"empty env turns off", c.IMAP, ""},
		{"default stays", c.Submission, "127.0.0.1:2587"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	if !c.AllowInsecureAuth || c.MaxMessageBytes != 2048 {
		t.Errorf("file values not applied: %+v", c)
	}
	if len(c.Plans) != 1 || c.Plans[0].Name != "Gold" || c.Plans[0].TransferMonthlyMB != 5 {
		t.Errorf("plans = %+v", c.Plans)
	}
}

func TestBadValues(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"bad bool env", nil, map[string]string{"MAILHOST_ALLOW_INSECURE_AUTH": "maybe"}, "MAILHOST_ALLOW_INSECURE_AUTH"},
		{"bad time flag", []string{"-retention-time", "25:99"}, nil, "-retention-time"},
		{"bad int", []string{"-max-message-bytes", "x"}, nil, "-max-message-bytes"},
		{"cert without key", []string{"-tls-cert", "a.pem"}, nil, "tls_key"},
		{"relay user without password", []string{"-relay", "relay.test:587", "-relay-username", "u"}, nil, "relay_password"},
		{"relay login without relay", nil, map[string]string{"MAILHOST_RELAY_USERNAME": "u", "MAILHOST_RELAY_PASSWORD": "p"}, "relay is not"},
		{"memory under the message size", []string{"-message-memory-mb", "10", "-max-message-bytes", "20000000"}, nil, "message_memory_mb"},
		{"negative delay warning", []string{"-queue-delay-warning", "-1h"}, nil, "-queue-delay-warning"},
		{"relay TLS without relay", []string{"-relay-verify-tls", "true"}, nil, "relay is not"},
		{"missing file", nil, map[string]string{ConfigEnv: "/nonexistent.toml"}, "nonexistent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, tt.args, tt.env)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load = %v, want an error naming %q", err, tt.want)
			}
		})
	}
}

func TestUnknownFileKey(t *testing.T) {
	file := filepath.Join(t.TempDir(), "m.toml")
	os.WriteFile(file, []byte("smpt = \"x\"\n"), 0o600)
	if _, err := load(t, []string{"-config", file}, nil); err == nil || !strings.Contains(err.Error(), "smpt") {
		t.Errorf("Load = %v, want unknown setting smpt", err)
	}
}

// TestDocumented keeps config.example.toml and docs/configuration.md
// true: every setting's key and environment variable appears in both, and
// the reference gives each its flag and default.
func TestDocumented(t *testing.T) {
	example, err := os.ReadFile("../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Settings {
		if !strings.Contains(string(example), "# "+s.Key+" = ") || !strings.Contains(string(example), s.Env) {
			t.Errorf("config.example.toml lacks %s / %s", s.Key, s.Env)
		}
		if !strings.Contains(string(readme), s.Env) || !strings.Contains(string(readme), "`-"+s.Flag()+"`") {
			t.Errorf("docs/configuration.md lacks %s or -%s", s.Env, s.Flag())
		}
		def := s.Default
		if def == "" {
			def = "(empty)"
		}
		if !strings.Contains(string(readme), "| `"+s.Key+"` | `"+s.Env+"` | `-"+s.Flag()+"` | `"+def+"` |") &&
			!(s.Default == "" && strings.Contains(string(readme), "| `"+s.Key+"` | `"+s.Env+"` | `-"+s.Flag()+"` | `\"\"` |")) {
			t.Errorf("docs/configuration.md: the row of %s does not give its default %q", s.Key, s.Default)
		}
	}
	// The example file itself must load.
	if _, err := load(t, []string{"-config", "../config.example.toml"}, nil); err != nil {
		t.Errorf("loading config.example.toml: %v", err)
	}
}
