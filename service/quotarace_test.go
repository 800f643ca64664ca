package service

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-smtp"
)

// TestQuotaConcurrentDATA: MX sessions that all passed RCPT while a 1 MB
// mailbox was empty, then send their DATA at once, take it past its
// quota by one message at most (docs/security.md, "Quota under
// concurrent deliveries"): the 250s are what fits below the quota and
// one more, the others 452 4.2.2, and GET /users/{email}/usage and IMAP
// STATUS count what the 250s stored.
func TestQuotaConcurrentDATA(t *testing.T) {
	addrs, out, _ := startServer(t, t.TempDir(), "MAILHOST_ALLOW_INSECURE_AUTH", "true")
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	if code, body := call(t, "POST", api+"/domains/", key, `{"name":"example.com"}`); code != 201 {
		t.Fatalf("POST /domains/ = %d %s", code, body)
	}
	if code, body := call(t, "POST", api+"/users/", key, `{"domain_name":"example.com","email":"a@example.com","password":"password123"}`); code != 201 {
		t.Fatalf("POST /users/ = %d %s", code, body)
	}
	if code, body := call(t, "PUT", api+"/users/a@example.com/quota", key, `{"quota_mb":1}`); code != 200 {
		t.Fatalf("PUT quota = %d %s", code, body)
	}

	// 400 KB each: two fit below 1 MB, the third takes the mailbox past.
	const sessions, lines = 10, 400 * 1024 / 80
	const most = 3
	clients := make([]*smtp.Client, sessions)
	for i := range clients {
		c, err := smtp.Dial(addrs.SMTP)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.Mail(fmt.Sprintf("s%d@elsewhere.test", i), nil); err != nil {
			t.Fatalf("session %d: MAIL: %v", i, err)
		}
		if err := c.Rcpt("a@example.com", nil); err != nil {
			t.Fatalf("session %d: RCPT while the mailbox is empty: %v", i, err)
		}
		clients[i] = c
	}
	codes := make([]string, sessions)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			msg := fmt.Sprintf("From: s%d@elsewhere.test\r\nTo: a@example.com\r\nSubject: %d\r\n\r\n%s", i, i,
				strings.Repeat(strings.Repeat("x", 78)+"\r\n", lines))
			w, err := c.Data()
			if err == nil {
				if _, err = w.Write([]byte(msg)); err == nil {
					err = w.Close()
				}
			}
			var se *smtp.SMTPError
			switch {
			case err == nil:
				codes[i] = "250"
			case errors.As(err, &se):
				codes[i] = fmt.Sprintf("%d %d.%d.%d", se.Code, se.EnhancedCode[0], se.EnhancedCode[1], se.EnhancedCode[2])
			default:
				codes[i] = err.Error()
			}
		})
	}
	wg.Wait()
	accepted := 0
	for i, code := range codes {
		switch code {
		case "250":
			accepted++
		case "452 4.2.2":
		default:
			t.Errorf("session %d: DATA = %s, want 250 or 452 4.2.2", i, code)
		}
	}
	if accepted < 1 || accepted > most {
		t.Errorf("%d concurrent DATA of 400 KB into 1 MB: %d answered 250, want 1 to %d (one message past the quota at most): %v",
			sessions, accepted, most, codes)
	}

	var usage struct {
		StorageUsedBytes int64 `json:"storage_used_bytes"`
		MessageCount     int64 `json:"message_count"`
	}
	code, body := call(t, "GET", api+"/users/a@example.com/usage", key, "")
	if code != 200 || json.Unmarshal([]byte(body), &usage) != nil {
		t.Fatalf("GET usage = %d %s", code, body)
	}
	if usage.MessageCount != int64(accepted) || usage.StorageUsedBytes < int64(accepted)*400*1024 || usage.StorageUsedBytes >= int64(accepted+1)*400*1024 {
		t.Errorf("usage = %+v after %d messages of 400 KB accepted", usage, accepted)
	}

	c, err := imapclient.DialInsecure(addrs.IMAP, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login("a@example.com", "password123").Wait(); err != nil {
		t.Fatal(err)
	}
	st, err := c.Status("INBOX", &imap.StatusOptions{NumMessages: true, Size: true}).Wait()
	if err != nil {
		t.Fatalf("STATUS: %v", err)
	}
	if st.NumMessages == nil || *st.NumMessages != uint32(accepted) || st.Size == nil || *st.Size != usage.StorageUsedBytes {
		t.Errorf("STATUS INBOX = %+v, want %d messages of %d bytes (the 250s, as the API counts them)", st, accepted, usage.StorageUsedBytes)
	}
}
