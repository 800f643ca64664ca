package service

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAutoconfigListeners: the mail clients' set-up answers on listeners
// of its own, in plain HTTP and over TLS, with the configured host name
// and client ports (not the bound ones), and nothing of the API is there.
func TestAutoconfigListeners(t *testing.T) {
	addrs, out, _ := startServer(t, t.TempDir(),
		"MAILHOST_AUTOCONFIG_HTTP", "127.0.0.1:0", "MAILHOST_AUTOCONFIG_HTTPS", "127.0.0.1:0",
		"MAILHOST_CLIENT_IMAPS_PORT", "10993", "MAILHOST_CLIENT_IMAP_PORT", "0")
	key := keyRE.FindString(out.String())
	if code, body := call(t, "POST", "http://"+addrs.HTTP+"/domains/", key, `{"name":"example.com"}`); code != 201 {
		t.Fatalf("create domain = %d %s", code, body)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(url, host string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		req.Host = host
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, base := range []string{"http://" + addrs.AutoconfigHTTP, "https://" + addrs.AutoconfigHTTPS} {
		code, body := get(base+"/mail/config-v1.1.xml?emailaddress=a%40example.com", "autoconfig.example.com")
		if code != 200 || !strings.Contains(body, "<hostname>mx.test</hostname>") || !strings.Contains(body, "<port>10993</port>") ||
			strings.Contains(body, "<port>143</port>") || !strings.Contains(body, "<port>587</port>") {
			t.Errorf("%s: Thunderbird config = %d %s", base, code, body)
		}
		if code, body := get(base+"/mail/config-v1.1.xml", "autoconfig.example.org"); code != 404 {
			t.Errorf("%s: domain not hosted = %d %s, want 404", base, code, body)
		}
		if code, body := get(base+"/healthz", ""); code != 404 {
			t.Errorf("%s: /healthz = %d %s, want 404 (no API here)", base, code, body)
		}
	}
}
