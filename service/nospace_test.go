package service

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/mailstore/storetest"
)

// TestFullDiskAnswers runs the server on a small tmpfs and fills it: a
// delivery answers 452 4.3.1, an APPEND NO [UNAVAILABLE], an API write
// 503, all temporary; once space is freed each works again, and what
// was acknowledged before is there.
func TestFullDiskAnswers(t *testing.T) {
	dir := storetest.SmallFS(t, 16<<20)
	addrs, out, _ := startServer(t, dir, "MAILHOST_ALLOW_INSECURE_AUTH", "true")
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	if code, body := call(t, "POST", api+"/domains/", key, `{"name":"example.com","max_aliases":100000}`); code != 201 {
		t.Fatalf("POST /domains/ = %d %s", code, body)
	}
	if code, body := call(t, "POST", api+"/users/", key, `{"domain_name":"example.com","email":"a@example.com","password":"password123"}`); code != 201 {
		t.Fatalf("POST /users/ = %d %s", code, body)
	}
	big := func(i int) string {
		return fmt.Sprintf("From: b@elsewhere.test\r\nTo: a@example.com\r\nSubject: %d\r\n\r\n%s", i, strings.Repeat(fmt.Sprintf("line of message %d\r\n", i), 15000))
	}
	if err := deliverPlain(addrs.SMTP, big(1)); err != nil {
		t.Fatalf("SMTP delivery with space left: %v", err)
	}
	c, err := imapclient.DialInsecure(addrs.IMAP, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login("a@example.com", "password123").Wait(); err != nil {
		t.Fatal(err)
	}
	appendMsg := func(msg string) error {
		cmd := c.Append("INBOX", int64(len(msg)), nil)
		if _, err := cmd.Write([]byte(msg)); err != nil {
			return err
		}
		if err := cmd.Close(); err != nil {
			return err
		}
		_, err := cmd.Wait()
		return err
	}

	filler := filepath.Join(dir, "filler")
	storetest.FillFS(t, filler)

	err = deliverPlain(addrs.SMTP, big(2))
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != 452 || se.EnhancedCode != (smtp.EnhancedCode{4, 3, 1}) {
		t.Errorf("SMTP delivery on a full disk = %v, want 452 4.3.1", err)
	}
	err = appendMsg(big(3))
	var ie *imap.Error
	if !errors.As(err, &ie) || ie.Type != imap.StatusResponseTypeNo || ie.Code != imap.ResponseCodeUnavailable {
		t.Errorf("APPEND on a full disk = %v, want NO [UNAVAILABLE]", err)
	}
	// Small API writes fit the file's free pages for a while; they run
	// out.
	var code int
	var body string
	for i := 0; i < 5000; i++ {
		code, body = call(t, "POST", api+"/aliases/", key, fmt.Sprintf(`{"domain_name":"example.com","source":"full%d-%s@example.com","destination":"a@example.com"}`, i, strings.Repeat("x", 40)))
		if code != 201 {
			break
		}
	}
	if code != 503 || !strings.Contains(body, "Storage full") {
		t.Errorf("POST /aliases/ on a full disk = %d %s, want 503", code, body)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := deliverPlain(addrs.SMTP, big(4)); err != nil {
		t.Errorf("SMTP delivery once space is freed: %v", err)
	}
	if err := appendMsg(big(5)); err != nil {
		t.Errorf("APPEND once space is freed: %v", err)
	}
	if code, body := call(t, "POST", api+"/aliases/", key, `{"domain_name":"example.com","source":"after@example.com","destination":"a@example.com"}`); code != 201 {
		t.Errorf("POST /aliases/ once space is freed = %d %s", code, body)
	}
	sel, err := c.Select("INBOX", nil).Wait()
	if err != nil || sel.NumMessages != 3 {
		t.Errorf("SELECT INBOX = %+v, %v; want the 3 messages acknowledged", sel, err)
	}
}
