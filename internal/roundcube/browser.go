package roundcube

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// browser is one headless Chromium, started as the console's browser test
// starts it (no sandbox: the machines run tests as root).
type Browser struct {
	ctx     context.Context
	cancels []context.CancelFunc
	dataDir string
}

func NewBrowser() (*Browser, error) {
	chrome := ChromiumPath()
	if chrome == "" {
		return nil, fmt.Errorf("no chromium on PATH")
	}
	dir, err := os.MkdirTemp("", "rcbench-chromium-")
	if err != nil {
		return nil, err
	}
	b := &Browser{dataDir: dir}
	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chrome),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1400, 900),
	)
	b.cancels = append(b.cancels, cancel)
	ctx, cancel := chromedp.NewContext(alloc)
	b.cancels = append(b.cancels, cancel)
	if err := chromedp.Do(ctx); err != nil {
		b.Close()
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	b.ctx = ctx
	// Roundcube asks confirm() before some deletions: accept.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	return b, nil
}

func (b *Browser) Close() {
	for i := len(b.cancels) - 1; i >= 0; i-- {
		b.cancels[i]()
	}
	os.RemoveAll(b.dataDir)
}

// tab is a fresh browsing context (its own cookies) of the browser.
type Tab struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func (b *Browser) NewTab() (*Tab, error) {
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		return nil, fmt.Errorf("new tab: %w", err)
	}
	return &Tab{ctx: ctx, cancel: cancel}, nil
}

func (t *Tab) Close() { t.cancel() }

func (t *Tab) Do(timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(t.ctx, timeout)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

func (t *Tab) Eval(expr string, out any) error {
	ctx, cancel := context.WithTimeout(t.ctx, 60*time.Second)
	defer cancel()
	switch p := out.(type) {
	case *string:
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
		*p = v
		return err
	case *float64:
		v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](expr, chromedp.EvalAwaitPromise))
		*p = v
		return err
	case *bool:
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr, chromedp.EvalAwaitPromise))
		*p = v
		return err
	case *[]string:
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](expr, chromedp.EvalAwaitPromise))
		*p = v
		return err
	default:
		_, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](expr, chromedp.EvalAwaitPromise))
		return err
	}
}

// until waits for a JavaScript condition; across a page load, whose
// navigation ends a poll, it polls again in the new page.
func (t *Tab) Until(cond string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		ctx, cancel := context.WithTimeout(t.ctx, left+time.Second)
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond,
			chromedp.WithPollingTimeout(left), chromedp.WithPollingInterval(2*time.Millisecond)))
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || !strings.Contains(err.Error(), "navigated") && !strings.Contains(err.Error(), "context") {
			return fmt.Errorf("waiting for %s: %w", cond, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// login signs in on Roundcube's login page and waits for the message
// list's first page; it returns the time from submitting the form to the
// rows shown.
func (t *Tab) Login(base, user, pass string) (time.Duration, error) {
	if err := t.Do(30*time.Second,
		chromedp.Navigate(base+"/?_task=login"),
		chromedp.WaitVisible(chromedp.ID("rcmloginuser")),
		chromedp.SetValue(chromedp.ID("rcmloginuser"), user),
		chromedp.SetValue(chromedp.ID("rcmloginpwd"), pass),
	); err != nil {
		return 0, fmt.Errorf("login page: %w", err)
	}
	start := time.Now()
	if err := t.Do(5*time.Second, chromedp.Click(chromedp.ID("rcmloginsubmit"))); err != nil {
		return 0, fmt.Errorf("submit login: %w", err)
	}
	if err := t.Until(`window.rcmail && rcmail.env.task == "mail" && rcmail.message_list && rcmail.message_list.rowcount > 0 && !rcmail.busy`, 60*time.Second); err != nil {
		return 0, fmt.Errorf("after login: %w", err)
	}
	return time.Since(start), nil
}

// ajax runs a Roundcube client call that sends one request and waits for
// the response of the named action to be processed (its rows shown); it
// returns the time the page measured from the call to then.
func (t *Tab) Ajax(call string, actions ...string) (time.Duration, error) {
	js := `new Promise((resolve, reject) => {
		const want = ` + jsList(actions) + `;
		const t0 = performance.now();
		const h = function(o) {
			if (o && o.response && want.includes(o.response.action)) {
				rcmail.removeEventListener('responseafter', h);
				resolve(performance.now() - t0);
			}
		};
		rcmail.addEventListener('responseafter', h);
		setTimeout(() => reject(new Error('no response to ' + want.join('/'))), 60000);
		` + call + `;
	})`
	var ms float64
	if err := t.Eval(js, &ms); err != nil {
		return 0, fmt.Errorf("%s: %w", call, err)
	}
	// Let the requests the response starts (unread counts) finish, so the
	// next action's bytes are its own.
	if err := t.Until(`!rcmail.busy`, 30*time.Second); err != nil {
		return 0, err
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

func jsList(ss []string) string {
	s := "["
	for i, v := range ss {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("%q", v)
	}
	return s + "]"
}

// rows are the UIDs of the message list's rows in their order.
func (t *Tab) Rows() ([]string, error) {
	var ids []string
	err := t.Eval(`Array.from(document.querySelectorAll('#messagelist tbody tr')).map(r => r.id.replace(/^rcmrow/, ''))`, &ids)
	return ids, err
}
