package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/smtp"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/internal/dnstest"
	"github.com/mailhost/mailhost/service"
)

// chromium finds the browser; without one the test skips, except in CI,
// where a missing browser is a broken set-up (.ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH; CI must have it (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH: apt-get install chromium to run the console's browser test")
	return ""
}

// startService runs the whole service in-process on loopback ports, as
// service_test.go does, and answers its addresses and the default
// partner's key.
func startService(t *testing.T, env map[string]string) (service.Addrs, string) {
	t.Helper()
	m := map[string]string{
		"MAILHOST_DATA": t.TempDir(), "MAILHOST_HTTP": "127.0.0.1:0", "MAILHOST_SMTP": "127.0.0.1:0",
		"MAILHOST_IMAP": "", "MAILHOST_IMAPS": "", "MAILHOST_MANAGESIEVE": "", "MAILHOST_SUBMISSION": "", "MAILHOST_SUBMISSIONS": "",
		"MAILHOST_HOSTNAME": "mx.test", "MAILHOST_INBOUND_CHECKS": "false",
	}
	for k, v := range env {
		m[k] = v
	}
	cfg, err := config.Register(flag.NewFlagSet("t", flag.ContinueOnError)).Load(func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &bytes.Buffer{}
	ready := make(chan service.Addrs, 1)
	done := make(chan error, 1)
	go func() {
		done <- service.Run(ctx, cfg, service.Options{ShowKey: true,
			Stdout: out, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Ready: func(a service.Addrs) { ready <- a },
		})
	}()
	var addrs service.Addrs
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("Run = %v before ready", err)
	case <-time.After(10 * time.Second):
		t.Fatal("service not ready after 10s")
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
	key := regexp.MustCompile(`mhk_[0-9a-f]{12}_[A-Za-z0-9_-]+`).FindString(out.String())
	if key == "" {
		t.Fatalf("first start printed no key: %q", out.String())
	}
	return addrs, key
}

// browserLog is what the page did, gathered from the DevTools events.
type browserLog struct {
	// mu guards the fields: the events arrive on chromedp's goroutine.
	mu       sync.Mutex
	urls     []string                    // every request's URL
	bytes    map[network.RequestID]int64 // bytes received, by request
	problems []string                    // exceptions, console errors, policy violations
}

func (l *browserLog) listen(ev any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		l.urls = append(l.urls, ev.Request.URL)
	case *network.EventLoadingFinished:
		l.bytes[ev.RequestID] = int64(ev.EncodedDataLength)
	case *runtime.EventExceptionThrown:
		l.problems = append(l.problems, "exception: "+ev.ExceptionDetails.Text+" "+describe(ev.ExceptionDetails.Exception))
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError {
			l.problems = append(l.problems, "console.error")
		}
	case *cdplog.EventEntryAdded:
		// A refused key is a 401 the browser logs as a failed load: that
		// one is expected. Everything else at error level (a policy
		// violation above all) is a fault of the console.
		if ev.Entry.Level == cdplog.EntryLevelError && ev.Entry.Source != cdplog.EntrySourceNetwork {
			l.problems = append(l.problems, fmt.Sprintf("%s: %s", ev.Entry.Source, ev.Entry.Text))
		}
	}
}

func describe(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	return o.Description
}

// received is the sum of the bytes of the requests finished so far, and
// how many there were.
func (l *browserLog) received() (total int64, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.bytes {
		total += b
	}
	return total, len(l.bytes)
}

// TestBrowser drives the console in headless Chromium against the whole
// service: sign in (a wrong key first), create a domain and a mailbox,
// receive a message, change the quota and see the bar, edit the Sieve
// filter (a parse error shown), set and remove an auto-reply, add a
// catch-all, check ownership against a stub DNS (refused, then found
// once the MX is published), set the spam filter, suspend and resume,
// look at the usage chart, add a webhook (its secret shown once) and
// delete it, see that in the audit log, sign out. Along the way: the key is in sessionStorage and
// in no URL, no cookie is set, every request stays on the origin, the
// page throws nothing and breaks no policy, and the first visit stays in
// the size budget. With MAILHOST_CONSOLE_SCREENSHOTS=dir it saves
// screenshots of the main pages there (the README's come from
// MAILHOST_CONSOLE_SCREENSHOTS=../docs/console).
func TestBrowser(t *testing.T) {
	chrome := chromium(t)
	dns := dnstest.Start(t)
	addrs, key := startService(t, map[string]string{"MAILHOST_DNS": dns.Addr})
	base := "http://" + addrs.HTTP
	shots := os.Getenv("MAILHOST_CONSOLE_SCREENSHOTS")

	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chrome),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 800),
	)
	defer cancel()
	bctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	// The first action starts the browser, bound to the context it gets:
	// start it without the deadline, which then bounds the steps only.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()

	bl := &browserLog{bytes: map[network.RequestID]int64{}}
	if err := chromedp.Listen(ctx, bl.listen); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	// confirm() before suspending and deleting: accept.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()

	do := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	// until waits for a JavaScript condition to hold.
	until := func(step, cond string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Fatalf("%s: waiting for %s: %v", step, cond, err)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}
	shot := func(name string) {
		t.Helper()
		if shots == "" {
			return
		}
		// The pictures are of the pages, not of the last message.
		eval(`(() => { const t = document.getElementById("toast"); t.style.transition = "none"; t.className = ""; return ""; })()`)
		// The viewport only, not the full page: the DNS page's keys make
		// a picture of a quarter megabyte.
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const alice = `li[data-email="alice@example.com"]`

	// First visit: the sign-in page, and what it cost.
	do("open the console", chromedp.Navigate(base+"/console/"), chromedp.WaitVisible(chromedp.ID("key")))
	until("first load complete", `document.readyState === "complete"`)
	total, n := bl.received()
	t.Logf("first load: %d bytes in %d requests", total, n)
	if total > 200<<10 {
		t.Errorf("first load = %d bytes, want at most 200 KB", total)
	}
	shot("signin")

	do("sign in with a wrong key",
		chromedp.SendKeys(chromedp.ID("key"), "mhk_000000000000_notakey"),
		chromedp.Click(chromedp.ID("signin-button")))
	until("refused", `document.getElementById("signin-error").textContent.includes("not accepted")`)
	if got := eval(`String(sessionStorage.getItem("mailhost.apiKey"))`); got != "null" {
		t.Errorf("after a refused key, sessionStorage holds %q", got)
	}

	do("sign in",
		chromedp.Evaluate[chromedp.Void](`document.getElementById("key").value = ""`),
		// Pasted rather than typed, as a partner would: 60 key events
		// take a second.
		chromedp.SetValue(chromedp.ID("key"), key),
		chromedp.Click(chromedp.ID("signin-button")),
		chromedp.WaitVisible(chromedp.ID("create-domain")))
	if got := eval(`sessionStorage.getItem("mailhost.apiKey")`); got != key {
		t.Errorf("sessionStorage key = %q, want the key", got)
	}

	do("create a domain",
		chromedp.SendKeys(chromedp.ID("new-domain"), "example.com"),
		chromedp.SetValue(chromedp.CSS("#create-domain select"), "business"),
		chromedp.Click(chromedp.CSS("#create-domain button[type=submit]")),
		chromedp.WaitVisible(chromedp.ID("plan-form")))
	if h1 := eval(`document.querySelector("#view h1").textContent`); !strings.Contains(h1, "example.com") {
		t.Errorf("domain page title = %q", h1)
	}
	if plan := eval(`document.querySelector("#plan-form select").value`); plan != "business" {
		t.Errorf("plan = %q, want business", plan)
	}
	shot("domain")

	do("create a mailbox",
		chromedp.Click(chromedp.CSS(`a[href="#/domains/example.com/mailboxes"]`)),
		chromedp.WaitVisible(chromedp.ID("create-mailbox")),
		chromedp.SendKeys(chromedp.ID("new-local"), "alice"),
		chromedp.SendKeys(chromedp.ID("new-password"), "correct horse battery"),
		chromedp.Click(chromedp.CSS("#create-mailbox button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS(alice)))

	// A 300 KB message, so that a 1 MB quota shows a bar about a third
	// full; then a reload, which keeps the session (sessionStorage).
	deliver(t, addrs.SMTP, "alice@example.com", 300<<10)
	do("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(alice)))

	do("set the quota",
		chromedp.SetValue(chromedp.CSS(alice+" input.quota"), "1"),
		chromedp.Click(chromedp.CSS(alice+" .quota-form button")))
	until("the bar shows the new quota", `document.querySelector('`+alice+` .figures').textContent.includes("of 1 MB")`)
	pct, _ := strconv.Atoi(eval(`document.querySelector('` + alice + ` [role=progressbar]').getAttribute("aria-valuenow")`))
	width := eval(`getComputedStyle(document.querySelector('` + alice + ` .bar .fill')).width`)
	if pct < 20 || pct > 40 || width == "0px" {
		t.Errorf("usage bar: aria-valuenow %d, width %s; want about 30%% of 1 MB", pct, width)
	}
	if code, body := apiGet(t, base+"/users/alice@example.com/quota", key); code != 200 || !strings.Contains(body, `"quota_mb":1`) {
		t.Errorf("GET quota = %d %s, want quota_mb 1", code, body)
	}
	shot("mailboxes")

	// The Sieve filter: none at first; a script that does not parse is
	// refused with the API's line and column; a good one is saved.
	do("open the Sieve filter", chromedp.Click(chromedp.CSS(alice+" details.sieve summary")))
	until("no filter yet", `document.querySelector('`+alice+` details.sieve .note').textContent.startsWith("No filter")`)
	do("save a bad filter",
		chromedp.SetValue(chromedp.CSS(alice+" textarea.sieve-script"), "require \"fileinto\";\n  filein \"Lists\";"),
		chromedp.Click(chromedp.CSS(alice+" .sieve-form button[type=submit]")))
	until("parse error shown", `document.querySelector('`+alice+` .sieve-form .error').textContent !== ""`)
	if txt := eval(`document.querySelector('` + alice + ` .sieve-form .error').textContent`); txt != `script: line 2, column 3: unknown command "filein" (422)` {
		t.Errorf("bad filter error = %q, want the API's detail", txt)
	}
	const filter = "require \"fileinto\";\nif header :contains \"subject\" \"[list]\" { fileinto \"Lists\"; }\n"
	do("save a filter",
		chromedp.SetValue(chromedp.CSS(alice+" textarea.sieve-script"), filter),
		chromedp.Click(chromedp.CSS(alice+" .sieve-form button[type=submit]")))
	until("saved", `document.getElementById("toast").textContent.includes("Sieve filter of alice@example.com saved")`)
	if code, body := apiGet(t, base+"/users/alice@example.com/sieve", key); code != 200 || !strings.Contains(body, `[list]`) {
		t.Errorf("GET sieve = %d %s, want the filter saved in the console", code, body)
	}
	// The page is drawn again after the save, its filter closed.
	until("redrawn", `!document.querySelector('`+alice+` details.sieve').open`)
	do("open the Sieve filter again", chromedp.Click(chromedp.CSS(alice+" details.sieve summary")))
	until("the filter loaded", `document.querySelector('`+alice+` textarea.sieve-script').value.includes("[list]")`)
	do("remove the filter", chromedp.Click(chromedp.CSS(alice+" .sieve-buttons button.danger")))
	until("removed", `document.getElementById("toast").textContent.includes("Sieve filter of alice@example.com removed")`)
	until("redrawn after the removal", `!document.querySelector('`+alice+` details.sieve').open`)
	if code, body := apiGet(t, base+"/users/alice@example.com/sieve", key); code != 404 {
		t.Errorf("GET sieve after removal = %d %s, want 404", code, body)
	}

	// An auto-reply from alice's row: saved, shown again as saved, read
	// back through the API, removed. The start is an hour ago, to the
	// minute (a browser leaves zero seconds out of the value), the end a
	// week on, with seconds.
	now := time.Now().UTC().Truncate(time.Minute)
	start, end := now.Add(-time.Hour).Format("2006-01-02T15:04"), now.Add(7*24*time.Hour+30*time.Second).Format("2006-01-02T15:04:05")
	do("auto-reply page",
		chromedp.Click(chromedp.CSS(alice+" a.autoreply-link")),
		chromedp.WaitVisible(chromedp.ID("autoreply-form")))
	if got := eval(`document.getElementById("ar-state").textContent`); got != "No auto-reply is set." {
		t.Errorf("auto-reply state before = %q", got)
	}
	do("set the auto-reply",
		chromedp.Click(chromedp.ID("ar-enabled")),
		chromedp.SendKeys(chromedp.ID("ar-subject"), "Away until Monday"),
		chromedp.SetValue(chromedp.ID("ar-body"), "Back on Monday.\nAlice"),
		chromedp.SetValue(chromedp.ID("ar-start"), start),
		chromedp.SetValue(chromedp.ID("ar-end"), end),
		chromedp.Click(chromedp.CSS("#autoreply-form button[type=submit]")))
	until("auto-reply on", `document.getElementById("ar-state").textContent.startsWith("On: replying now, until ")`)
	if got := eval(`document.getElementById("ar-end").value`); got != end {
		t.Errorf("end shown after saving = %q, want %q", got, end)
	}
	var ar struct {
		Enabled       bool
		Subject, Body string
		Start, End    *string
	}
	if code, body := apiGet(t, base+"/users/alice@example.com/autoreply", key); code != 200 || json.Unmarshal([]byte(body), &ar) != nil ||
		!ar.Enabled || ar.Subject != "Away until Monday" || ar.Body != "Back on Monday.\nAlice" ||
		ar.Start == nil || *ar.Start != start+":00" || ar.End == nil || *ar.End != end {
		t.Errorf("GET autoreply = %d %s, want it on, with the subject, text, start %s:00 and end %s", code, body, start, end)
	}
	shot("autoreply")
	do("remove the auto-reply", chromedp.Click(chromedp.ID("ar-remove")))
	until("auto-reply removed", `document.getElementById("ar-state").textContent === "No auto-reply is set." && !document.getElementById("ar-remove")`)
	if code, body := apiGet(t, base+"/users/alice@example.com/autoreply", key); code != 200 || !strings.Contains(body, `"enabled":false,"subject":""`) {
		t.Errorf("GET autoreply after removing = %d %s, want a disabled, empty one", code, body)
	}

	do("add a catch-all",
		chromedp.Click(chromedp.CSS(`a[href="#/domains/example.com/aliases"]`)),
		chromedp.WaitVisible(chromedp.ID("create-alias")),
		chromedp.Click(chromedp.ID("alias-catchall")),
		chromedp.SendKeys(chromedp.ID("alias-dest"), "alice@example.com"),
		chromedp.Click(chromedp.CSS("#create-alias button[type=submit]")),
		chromedp.WaitVisible(chromedp.ID("aliases")))
	until("catch-all listed", `document.getElementById("aliases").textContent.includes("@example.comcatch-all")`)

	do("check ownership before publishing",
		chromedp.Click(chromedp.CSS(`a[href="#/domains/example.com/dns"]`)),
		chromedp.WaitVisible(chromedp.ID("dns")),
		chromedp.Click(chromedp.ID("verify")))
	until("not verified", `document.getElementById("verify-result").className === "error"`)
	if txt := eval(`document.getElementById("verify-result").textContent`); !strings.HasPrefix(txt, "Domain not verified: expected") {
		t.Errorf("failed check says %q, want the API's detail", txt)
	}
	// The customer points the MX here; the next check finds it.
	dns.SetMX("example.com", "mx.test")
	do("check ownership", chromedp.Click(chromedp.ID("verify")))
	until("verified", `document.getElementById("verify-result").className === "ok"`)
	until("badge", `document.querySelector("#view h1").textContent.includes("verified") && !document.querySelector("#view h1").textContent.includes("not verified")`)
	shot("dns")

	// The spam filter: the server's default at first, then the domain's
	// own, then the default again, each read back through the API.
	do("settings", chromedp.Click(chromedp.CSS(`a[href="#/domains/example.com"]`)), chromedp.WaitVisible(chromedp.ID("spam-form")))
	if got := eval(`document.getElementById("spam-state").textContent`); got != "In force: junk, the server's default." {
		t.Errorf("spam filter state = %q, want the server's default, junk", got)
	}
	do("set the spam filter",
		chromedp.SetValue(chromedp.ID("spam-filter"), "reject"),
		chromedp.Click(chromedp.CSS("#spam-form button[type=submit]")))
	until("spam filter set", `document.getElementById("spam-state").textContent === "In force: reject, this domain's own setting."`)
	if code, body := apiGet(t, base+"/domains/example.com/spam", key); code != 200 || !strings.Contains(body, `"filter":"reject","default":false`) {
		t.Errorf("GET spam = %d %s, want reject, the domain's own", code, body)
	}
	if shots != "" {
		eval(`(() => { document.getElementById("spam-form").scrollIntoView({ block: "center" }); return ""; })()`)
		shot("spam")
	}
	do("spam filter back to the default",
		chromedp.SetValue(chromedp.ID("spam-filter"), ""),
		chromedp.Click(chromedp.CSS("#spam-form button[type=submit]")))
	until("spam filter default", `document.getElementById("spam-state").textContent === "In force: junk, the server's default."`)
	if code, body := apiGet(t, base+"/domains/example.com/spam", key); code != 200 || !strings.Contains(body, `"filter":"junk","default":true`) {
		t.Errorf("GET spam = %d %s, want junk, the server's default", code, body)
	}

	do("suspend",
		chromedp.WaitVisible(chromedp.ID("suspend")),
		chromedp.Click(chromedp.ID("suspend")),
		chromedp.WaitVisible(chromedp.ID("resume")))
	if h1 := eval(`document.querySelector("#view h1").textContent`); !strings.Contains(h1, "suspended") {
		t.Errorf("suspended domain's title = %q", h1)
	}
	do("resume", chromedp.Click(chromedp.ID("resume")), chromedp.WaitVisible(chromedp.ID("suspend")))

	do("domain usage",
		chromedp.Click(chromedp.CSS(`a[href="#/domains/example.com/usage"]`)),
		chromedp.WaitVisible(chromedp.CSS("svg.chart")))
	if txt := eval(`document.querySelector("svg.chart").textContent`); !strings.Contains(txt, "Received") || !strings.Contains(txt, "cap 10,240 MB") {
		t.Errorf("transfer chart text = %q", txt)
	}
	shot("usage")
	do("all usage", chromedp.Click(chromedp.CSS(`a[data-nav="usage"]`)), chromedp.WaitVisible(chromedp.ID("usage")))

	// Webhooks: none chosen is refused in the page; the secret is shown
	// with the new webhook and never again; deleting empties the list.
	do("webhooks page", chromedp.Click(chromedp.CSS(`a[data-nav="webhooks"]`)), chromedp.WaitVisible(chromedp.ID("create-webhook")))
	do("add a webhook without events",
		chromedp.SendKeys(chromedp.ID("hook-url"), "https://hooks.example.net/mailhost"),
		chromedp.Click(chromedp.CSS("#create-webhook button[type=submit]")))
	until("no event refused", `document.querySelector("#create-webhook .error").textContent.includes("at least one event")`)
	do("add a webhook",
		chromedp.Click(chromedp.CSS(`#create-webhook input[value="domain.suspended"]`)),
		chromedp.Click(chromedp.CSS(`#create-webhook input[value="message.bounced"]`)),
		chromedp.Click(chromedp.CSS("#create-webhook button[type=submit]")),
		chromedp.WaitVisible(chromedp.ID("webhook-secret")))
	secret := eval(`document.getElementById("webhook-secret-value").textContent`)
	if !strings.HasPrefix(secret, "whsec_") || !strings.Contains(eval(`document.getElementById("webhook-secret").textContent`), "Shown only now") {
		t.Errorf("secret shown = %q, want whsec_… with the note that it is shown only now", secret)
	}
	if got := eval(`document.querySelector("#webhooks tbody").textContent`); !strings.Contains(got, "https://hooks.example.net/mailhost") ||
		!strings.Contains(got, "domain.suspended") || !strings.Contains(got, "message.bounced") {
		t.Errorf("webhook row = %q", got)
	}
	if code, body := apiGet(t, base+"/webhooks/", key); code != 200 || !strings.Contains(body, `"events":["domain.suspended","message.bounced"]`) || strings.Contains(body, secret) {
		t.Errorf("GET /webhooks/ = %d %s, want the webhook without its secret", code, body)
	}
	shot("webhooks")
	do("webhooks again", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("webhooks")))
	if got := eval(`String(document.getElementById("webhook-secret"))`); got != "null" {
		t.Error("the secret is shown again after a reload")
	}
	do("delete the webhook", chromedp.Click(chromedp.CSS("#webhooks button.danger")))
	until("webhook deleted", `!document.getElementById("webhooks") && document.getElementById("create-webhook") !== null`)
	if code, body := apiGet(t, base+"/webhooks/", key); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Errorf("GET /webhooks/ after the delete = %d %s, want []", code, body)
	}

	// The audit log: the delete just made is its newest entry; the filter
	// narrows the page shown.
	do("audit log", chromedp.Click(chromedp.CSS(`a[data-nav="audit"]`)), chromedp.WaitVisible(chromedp.ID("audit")))
	if got := eval(`document.querySelector("#audit tbody tr").textContent`); !strings.Contains(got, "DELETE/webhooks/{id}1200") {
		t.Errorf("newest audit entry = %q, want the webhook's DELETE", got)
	}
	do("filter the audit log", chromedp.SendKeys(chromedp.ID("audit-filter"), "aliases"))
	until("filtered", `document.getElementById("audit-shown").textContent.startsWith("1 of the ")`)
	if got := eval(`[...document.querySelectorAll("#audit tbody tr")].filter((r) => !r.hidden).map((r) => r.textContent).join("|")`); !strings.Contains(got, "POST/aliases/@example.com201") {
		t.Errorf("filtered audit rows = %q, want the catch-all's POST", got)
	}
	eval(`(() => { const f = document.getElementById("audit-filter"); f.value = ""; f.dispatchEvent(new Event("input")); return ""; })()`)
	shot("audit")

	do("domain list", chromedp.Click(chromedp.CSS(`a[data-nav="domains"]`)), chromedp.WaitVisible(chromedp.ID("domains")))
	shot("domains")

	do("sign out", chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("key")))
	if got := eval(`String(sessionStorage.getItem("mailhost.apiKey"))`); got != "null" {
		t.Errorf("after sign-out, sessionStorage holds %q", got)
	}
	do("a page after sign-out", chromedp.Navigate(base+"/console/#/domains/example.com"), chromedp.WaitVisible(chromedp.ID("key")))
	if eval(`String(document.getElementById("view").childElementCount)`) != "0" {
		t.Error("after sign-out, a domain page still shows")
	}

	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cookies.Cookies) > 0 {
		t.Errorf("cookies set: %v", cookies.Cookies)
	}
	bl.mu.Lock()
	for _, u := range bl.urls {
		if strings.Contains(u, key) || strings.Contains(u, key[len(key)-20:]) {
			t.Errorf("the key is in the URL %s", u)
		}
		// Chromium draws the date fields' calendar icon from a data: URL
		// of its own: no network. The page's own images are held to
		// 'self' by the policy, whose violations are problems below.
		if !strings.HasPrefix(u, base+"/") && !strings.HasPrefix(u, "data:image/svg+xml;") {
			t.Errorf("request to another origin: %s", u)
		}
	}
	for _, p := range bl.problems {
		t.Errorf("page: %s", p)
	}
	bl.mu.Unlock()

	// The policy is in force: an HTML string is refused.
	if got := eval(`(() => { try { document.body.innerHTML = "<b>x</b>"; return "allowed"; } catch (e) { return e.name; } })()`); got != "TypeError" {
		t.Errorf("innerHTML assignment: %s, want a TypeError from the Trusted Types policy", got)
	}
}

// deliver sends a message of about size bytes to rcpt through the MX.
func deliver(t *testing.T, addr, rcpt string, size int) {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	line := strings.Repeat("x", 76) + "\r\n"
	msg := "From: bob@remote.test\r\nTo: " + rcpt + "\r\nSubject: big\r\nMessage-ID: <1@remote.test>\r\nDate: Mon, 2 Nov 2026 10:00:00 +0000\r\n\r\n" +
		strings.Repeat(line, size/len(line))
	steps := []func() error{
		func() error { return c.Hello("remote.test") },
		func() error { return c.Mail("bob@remote.test") },
		func() error { return c.Rcpt(rcpt) },
		func() error {
			w, err := c.Data()
			if err != nil {
				return err
			}
			if _, err := io.WriteString(w, msg); err != nil {
				return err
			}
			return w.Close()
		},
		c.Quit,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("deliver to %s: %v", rcpt, err)
		}
	}
}

func apiGet(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
