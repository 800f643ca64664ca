package service

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-smtp"
)

// TestIMAPQuotaMatchesAPI: after mail is delivered over SMTP, IMAP's
// GETQUOTAROOT reports the figures of GET /users/{email}/usage and /quota
// (RFC 9208 STORAGE in KiB: used bytes rounded up, quota_mb times 1024).
func TestIMAPQuotaMatchesAPI(t *testing.T) {
	addrs, out, _ := startServer(t, t.TempDir(), "MAILHOST_ALLOW_INSECURE_AUTH", "true")
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	if code, body := call(t, "POST", api+"/domains/", key, `{"name":"example.com"}`); code != 201 {
		t.Fatalf("POST /domains/ = %d %s", code, body)
	}
	if code, body := call(t, "POST", api+"/users/", key, `{"domain_name":"example.com","email":"a@example.com","password":"password123"}`); code != 201 {
		t.Fatalf("POST /users/ = %d %s", code, body)
	}
	if code, body := call(t, "PUT", api+"/users/a@example.com/quota", key, `{"quota_mb":7}`); code != 200 {
		t.Fatalf("PUT quota = %d %s", code, body)
	}
	for i := range 3 {
		msg := fmt.Sprintf("From: b@elsewhere.test\r\nTo: a@example.com\r\nSubject: %d\r\n\r\n%s", i, strings.Repeat("some text\r\n", 100*(i+1)))
		if err := deliverPlain(addrs.SMTP, msg); err != nil {
			t.Fatalf("SMTP delivery: %v", err)
		}
	}

	var usage struct {
		StorageUsedBytes int64 `json:"storage_used_bytes"`
	}
	var quota struct {
		QuotaMB int64 `json:"quota_mb"`
	}
	for _, get := range []struct {
		path string
		into any
	}{{"/users/a@example.com/usage", &usage}, {"/users/a@example.com/quota", &quota}} {
		code, body := call(t, "GET", api+get.path, key, "")
		if code != 200 || json.Unmarshal([]byte(body), get.into) != nil {
			t.Fatalf("GET %s = %d %s", get.path, code, body)
		}
	}
	if usage.StorageUsedBytes == 0 || quota.QuotaMB != 7 {
		t.Fatalf("API usage %+v, quota %+v", usage, quota)
	}

	c, err := imapclient.DialInsecure(addrs.IMAP, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login("a@example.com", "password123").Wait(); err != nil {
		t.Fatal(err)
	}
	data, err := c.GetQuotaRoot("INBOX").Wait()
	if err != nil {
		t.Fatalf("GETQUOTAROOT: %v", err)
	}
	want := imapclient.QuotaResourceData{Usage: (usage.StorageUsedBytes + 1023) / 1024, Limit: quota.QuotaMB * 1024}
	if len(data) != 1 || data[0].Resources[imap.QuotaResourceStorage] != want {
		t.Errorf("GETQUOTAROOT INBOX = %+v, want STORAGE %+v (API: %d bytes used, quota %d MB)", data, want, usage.StorageUsedBytes, quota.QuotaMB)
	}
}

// deliverPlain sends msg to a@example.com over SMTP without STARTTLS (the
// test server's certificate is self-signed).
func deliverPlain(addr, msg string) error {
	c, err := smtp.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Mail("b@elsewhere.test", nil); err != nil {
		return err
	}
	if err := c.Rcpt("a@example.com", nil); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte(msg)); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}
