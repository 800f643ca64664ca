package config

import (
	"strings"
	"testing"
)

func TestACMESettings(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string // part of the error; "" for none
	}{
		{"off by default", nil, ""},
		{"with https", map[string]string{"MAILHOST_ACME": "true", "MAILHOST_HTTPS": ":443"}, ""},
		{"with acme_http", map[string]string{"MAILHOST_ACME": "true", "MAILHOST_ACME_HTTP": ":80"}, ""},
		{"no challenge listener", map[string]string{"MAILHOST_ACME": "true"}, "needs https"},
		{"and tls_cert", map[string]string{"MAILHOST_ACME": "true", "MAILHOST_HTTPS": ":443", "MAILHOST_TLS_CERT": "c", "MAILHOST_TLS_KEY": "k"}, "exclude each other"},
		{"acme_http alone", map[string]string{"MAILHOST_ACME_HTTP": ":80"}, "acme is not"},
		{"plain directory", map[string]string{"MAILHOST_ACME_DIRECTORY": "http://ca/dir"}, "https://"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(t, nil, tt.env)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Load = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Load = %v, want an error with %q", err, tt.want)
			case tt.want == "" && c.ACMEDirectory != "https://acme-v02.api.letsencrypt.org/directory":
				t.Errorf("ACMEDirectory = %q, want Let's Encrypt's", c.ACMEDirectory)
			}
		})
	}
}
