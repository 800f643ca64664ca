package service

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-smtp"
	"github.com/mailhost/mailhost/internal/dnstest"
	"github.com/mailhost/mailhost/internal/roundcube"
)

// TestRoundcubeSieve is the ManageSieve session as Roundcube's managesieve
// plugin (Debian's roundcube-plugins) drives it: a person logs in to
// Roundcube in headless Chromium, makes a filter "mail from X goes to
// folder Y" and a vacation reply through the plugin's forms, which store
// the script over ManageSieve; then mail from X delivered over SMTP is in
// Y over IMAP, and its sender gets one vacation reply at the relay, sent
// with the null envelope sender (RFC 5230 section 5.1, RFC 3834).
func TestRoundcubeSieve(t *testing.T) {
	if m := roundcube.Missing(); m != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("missing %s; CI must have it (apt-get install roundcube roundcube-plugins roundcube-sqlite3 php-cli chromium)", m)
		}
		t.Skipf("missing %s: apt-get install roundcube roundcube-plugins roundcube-sqlite3 php-cli chromium to run Roundcube's managesieve plugin against mailhost", m)
	}
	relay := startSink(t)
	dns := dnstest.Start(t)
	addrs, out, stop := startServer(t, t.TempDir(), "MAILHOST_RELAY", relay.addr, "MAILHOST_DNS", dns.Addr, "MAILHOST_ALLOW_INSECURE_AUTH", "true")
	defer stop()
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	if code, body := call(t, "POST", api+"/domains/", key, `{"name":"example.com"}`); code != 201 {
		t.Fatalf("POST domain = %d %s", code, body)
	}
	const user, pass = "erin@example.com", "password123"
	if code, body := call(t, "POST", api+"/users/", key, `{"domain_name":"example.com","email":"`+user+`","password":"`+pass+`"}`); code != 201 {
		t.Fatalf("POST user = %d %s", code, body)
	}
	verifyDomain(t, dns, api, key, "example.com", "mx.test")

	// Folder Y exists before the filter names it: the plugin offers the
	// folders Roundcube lists over IMAP.
	const folder = "Receipts"
	imapDo := func(f func(c *imapclient.Client) error) {
		t.Helper()
		c, err := imapclient.DialInsecure(addrs.IMAP, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Login(user, pass).Wait(); err != nil {
			t.Fatal(err)
		}
		if err := f(c); err != nil {
			t.Fatal(err)
		}
	}
	imapDo(func(c *imapclient.Client) error {
		if err := c.Create(folder, nil).Wait(); err != nil {
			return err
		}
		// Roundcube lists the subscribed folders.
		return c.Subscribe(folder).Wait()
	})

	send := func(from, subject string) {
		t.Helper()
		c, err := smtp.Dial(addrs.SMTP)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		msg := "From: " + from + "\r\nTo: " + user + "\r\nSubject: " + subject + "\r\nMessage-ID: <" + subject + "@sender.test>\r\n\r\nbody\r\n"
		if err := c.SendMail(from, []string{user}, strings.NewReader(msg)); err != nil {
			t.Fatalf("send from %s: %v", from, err)
		}
	}
	// A message before any filter: Roundcube's first page is not empty.
	send("w@other.test", "welcome")

	dir := t.TempDir()
	rc, err := roundcube.Start(roundcube.Options{Dir: dir, IMAP: addrs.IMAP, ManageSieve: addrs.ManageSieve, Debug: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Stop()
	logs := func() string {
		var b strings.Builder
		for _, f := range []string{"errors.log", "sieve.log"} {
			if data, err := os.ReadFile(filepath.Join(dir, "logs", f)); err == nil {
				s := string(data)
				if len(s) > 6000 {
					s = s[len(s)-6000:]
				}
				fmt.Fprintf(&b, "\n--- %s ---\n%s", f, s)
			}
		}
		return b.String()
	}
	br, err := roundcube.NewBrowser()
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	tb, err := br.NewTab()
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	if _, err := tb.Login(rc.URL, user, pass); err != nil {
		t.Fatalf("log in to Roundcube: %v%s", err, logs())
	}

	// The filter: Settings, Filters, Create; the form opens in the
	// filter frame.
	step := func(name string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v%s", name, err, logs())
		}
	}
	step("open Filters", tb.Do(30*time.Second, chromedp.Navigate(rc.URL+"/?_task=settings&_action=plugin.managesieve")))
	step("Filters page", tb.Until(`window.rcmail && rcmail.env.action == "plugin.managesieve" && rcmail.commands["plugin.managesieve-add"]`, 20*time.Second))
	step("Create", tb.Eval(`rcmail.command("plugin.managesieve-add")`, nil))
	const frame = `document.getElementById("filter-box").contentWindow`
	step("filter form", tb.Until(frame+`.document.querySelector('[name="_name"]') && `+frame+`.rcmail && `+frame+`.rcmail.commands["plugin.managesieve-save"]`, 20*time.Second))
	fill := `(() => {
		const w = ` + frame + `, d = w.document;
		const set = (sel, v) => { const e = d.querySelector(sel); if (!e) throw new Error("no " + sel); e.value = v; e.dispatchEvent(new Event("change", {bubbles: true})); };
		set('[name="_name"]', "From X to Y");
		// "all of the following rules", not "all messages".
		const join = d.querySelector('input[name="_join"][value="allof"]');
		if (join) { join.click(); } else { set('[name="_join"]', "allof"); }
		if (w.rule_join_radio) w.rule_join_radio("allof");
		set('[name="_header[0]"]', "from");
		set('[name="_rule_op[0]"]', "contains");
		// A list field: the textarea and the widget's inputs in front of it.
		d.querySelectorAll('[name^="_rule_target[0]"], [data-name^="_rule_target"] input, .multi-input input').forEach(e => { e.value = "x@sender.test"; e.dispatchEvent(new Event("change", {bubbles: true})); });
		set('[name="_action_type[0]"]', "fileinto");
		const box = d.querySelector('[name="_action_mailbox[0]"]');
		const opt = box && Array.from(box.options).find(o => o.value == "` + folder + `" || o.textContent.trim() == "` + folder + `");
		if (!opt) throw new Error("no folder ` + folder + ` among " + (box ? Array.from(box.options).map(o => o.value + "/" + o.textContent).join(", ") : "(no select)"));
		set('[name="_action_mailbox[0]"]', opt.value);
		w.rcmail.command("plugin.managesieve-save");
		return "";
	})()`
	step("fill and save the filter", tb.Eval(fill, nil))
	if err := tb.Until(`Array.from(document.querySelectorAll("#filterslist tbody tr")).some(r => r.textContent.includes("From X to Y"))`, 20*time.Second); err != nil {
		var why string
		tb.Eval(`(() => { const d = `+frame+`.document; return Array.from(d.querySelectorAll(".is-invalid, .error, .invalid-feedback")).map(e => (e.name || e.className) + "=" + (e.value || e.textContent)).join("; ") + " | " + Array.from(document.querySelectorAll("#messagestack div")).map(e => e.textContent).join("; ") })()`, &why)
		t.Fatalf("filter not listed after saving: %v; form says: %s%s", err, why, logs())
	}

	// The vacation: its own page.
	step("open Vacation", tb.Do(30*time.Second, chromedp.Navigate(rc.URL+"/?_task=settings&_action=plugin.managesieve-vacation")))
	step("vacation form", tb.Until(`window.rcmail && document.querySelector('[name="vacation_reason"]') && rcmail.commands["plugin.managesieve-save"]`, 20*time.Second))
	vacation := `new Promise((resolve, reject) => {
		const set = (sel, v) => { const e = document.querySelector(sel); if (!e) throw new Error("no " + sel); e.value = v; e.dispatchEvent(new Event("change", {bubbles: true})); };
		set('[name="vacation_subject"]', "Away until Monday");
		set('[name="vacation_reason"]', "I am away until Monday and will answer then.");
		set('[name="vacation_status"]', "on");
		const h = function(o) {
			if (o && o.response && o.response.action == "plugin.managesieve-vacation") {
				rcmail.removeEventListener("responseafter", h);
				resolve("");
			}
		};
		rcmail.addEventListener("responseafter", h);
		setTimeout(() => reject(new Error("no response to the vacation's save")), 20000);
		rcmail.command("plugin.managesieve-save");
	})`
	step("fill and save the vacation", tb.Eval(vacation, nil))
	var msgs string
	step("vacation messages", tb.Eval(`Array.from(document.querySelectorAll("#messagestack div")).map(e => e.className + ": " + e.textContent).join("; ")`, &msgs))
	if strings.Contains(msgs, "error") {
		t.Fatalf("saving the vacation: %s%s", msgs, logs())
	}

	// Deliver: one message from X, one from someone else.
	send("x@sender.test", "receipt-1")
	send("z@other.test", "hello-1")
	counts := map[string]uint32{}
	imapDo(func(c *imapclient.Client) error {
		for _, f := range []string{"INBOX", folder} {
			data, err := c.Status(f, &imap.StatusOptions{NumMessages: true}).Wait()
			if err != nil {
				return fmt.Errorf("STATUS %s: %w", f, err)
			}
			counts[f] = *data.NumMessages
		}
		return nil
	})
	if counts[folder] != 1 || counts["INBOX"] != 2 {
		t.Errorf("%s holds %d, INBOX %d; want 1 (from X) and 2 (the first, and from Z)%s", folder, counts[folder], counts["INBOX"], logs())
	}
	reply := relay.wait(t, "x@sender.test")
	if reply.From != "" {
		t.Errorf("vacation reply's envelope sender %q, want <> (RFC 5230 section 5.1)", reply.From)
	}
	data := string(reply.Data)
	for _, want := range []string{"Subject: Away until Monday", "Auto-Submitted: auto-replied", "I am away until Monday", "In-Reply-To: <receipt-1@sender.test>"} {
		if !strings.Contains(data, want) {
			t.Errorf("vacation reply lacks %q:\n%s", want, data)
		}
	}
	// Z's message is in INBOX and got its own reply too (vacation is not
	// limited to X); a second message from X within :days gets none.
	relay.wait(t, "z@other.test")
	send("x@sender.test", "receipt-2")
	time.Sleep(300 * time.Millisecond)
	if n := relay.count("x@sender.test"); n != 1 {
		t.Errorf("%d vacation replies to x@sender.test after two messages, want 1", n)
	}
}
