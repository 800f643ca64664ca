// Package spam is mailhost's client of rspamd (https://rspamd.com): the
// scan of a message with its envelope (the normal worker's /checkv2), and
// the learning of a message as spam or ham (the controller's /learnspam
// and /learnham). It decides nothing: package delivery turns a Result into
// where the mail goes, the protocols into replies.
//
// Every request has a deadline (Config.Timeout) and every answer a size
// limit (maxAnswer); an error means rspamd could not be asked or did not
// answer, and the caller chooses to fail open or not.
package spam

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"time"
)

// Action is rspamd's verdict on a message (the "action" of /checkv2).
type Action string

// rspamd's actions, mildest first.
const (
	NoAction       Action = "no action"
	Greylist       Action = "greylist"
	AddHeader      Action = "add header"
	RewriteSubject Action = "rewrite subject"
	SoftReject     Action = "soft reject"
	Reject         Action = "reject"
)

// DefaultTimeout bounds one request when Config.Timeout is 0.
const DefaultTimeout = 5 * time.Second

// maxAnswer bounds the body of an answer read from rspamd: a verdict with
// every symbol of the stock rules is a few kilobytes.
const maxAnswer = 1 << 20

// ErrUnavailable wraps every failure to get an answer: rspamd down, slow
// (past the timeout), or answering something that is not a verdict.
var ErrUnavailable = errors.New("rspamd unavailable")

// Config configures a Client.
type Config struct {
	// URL is the normal worker, e.g. "http://127.0.0.1:11333". Required
	// for Check.
	URL string
	// ControllerURL is the controller worker, e.g.
	// "http://127.0.0.1:11334". "": Learn answers an error.
	ControllerURL string
	// Password is the controller's password (its "password" setting),
	// sent in the Password header. "": none (the controller then accepts
	// only its secure_ip).
	Password string
	// Timeout bounds each request, connection to last byte. 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// Transport carries the requests. nil: a transport of its own, with
	// no proxy (rspamd runs beside mailhost; a proxy from the
	// environment would only be in the way).
	Transport http.RoundTripper
}

// Client asks rspamd. Its methods may be called from any goroutine.
type Client struct {
	cfg  Config
	http *http.Client
}

// New makes a Client from cfg. It fails when a URL is not an absolute
// http or https URL.
func New(cfg Config) (*Client, error) {
	for _, u := range []string{cfg.URL, cfg.ControllerURL} {
		if u == "" {
			continue
		}
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return nil, fmt.Errorf("rspamd URL %q: want http://host:port", u)
		}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	tr := cfg.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		t.ResponseHeaderTimeout = cfg.Timeout
		tr = t
	}
	return &Client{cfg: cfg, http: &http.Client{Transport: tr, Timeout: cfg.Timeout}}, nil
}

// Envelope is what the SMTP conversation knew of a message, sent to
// rspamd with it (its HTTP headers of the same names).
type Envelope struct {
	// IP is the client's address; zero for none.
	IP netip.Addr
	// Helo is what the client said in EHLO or HELO.
	Helo string
	// From is the envelope sender, "" for the null one.
	From string
	// Rcpts are the envelope recipients.
	Rcpts []string
	// User is the authenticated user (submission), "" for the MX: rspamd
	// then applies its rules for outgoing mail.
	User string
	// Hostname is the client's host name as this server knows it
	// (reverse DNS); "": rspamd looks it up itself.
	Hostname string
	// QueueID names the message in both servers' logs.
	QueueID string
}

// Header is a header field rspamd asks to add.
type Header struct {
	Name, Value string
}

// Result is rspamd's verdict.
type Result struct {
	Action   Action
	Score    float64
	Required float64 // the score of the reject action
	// Symbols are the rules that matched, by name, sorted.
	Symbols []string
	// Headers are the fields rspamd's milter_headers module asks to add
	// (none unless it is configured to).
	Headers []Header
	// Message is rspamd's text for the SMTP reply, "" for none.
	Message string
}

// checkAnswer is the part of /checkv2's answer that Result keeps.
type checkAnswer struct {
	Action        string                     `json:"action"`
	Score         float64                    `json:"score"`
	RequiredScore float64                    `json:"required_score"`
	Symbols       map[string]json.RawMessage `json:"symbols"`
	Messages      struct {
		SMTP string `json:"smtp_message"`
	} `json:"messages"`
	Milter struct {
		AddHeaders map[string]json.RawMessage `json:"add_headers"`
	} `json:"milter"`
}

// Check has rspamd scan msg, the whole message as received, sent with
// env. The error wraps ErrUnavailable when no verdict came.
func (c *Client) Check(ctx context.Context, env Envelope, msg []byte) (Result, error) {
	if c.cfg.URL == "" {
		return Result{}, fmt.Errorf("check: no rspamd_url: %w", ErrUnavailable)
	}
	h := http.Header{}
	if env.IP.IsValid() {
		h.Set("IP", env.IP.String())
	}
	set := func(k, v string) {
		if v != "" && !strings.ContainsAny(v, "\r\n") {
			h.Set(k, v)
		}
	}
	set("Helo", env.Helo)
	set("Hostname", env.Hostname)
	set("From", env.From)
	set("User", env.User)
	set("Queue-Id", env.QueueID)
	for _, r := range env.Rcpts {
		if !strings.ContainsAny(r, "\r\n") {
			h.Add("Rcpt", r)
		}
	}
	var a checkAnswer
	if err := c.post(ctx, c.cfg.URL+"/checkv2", h, msg, &a); err != nil {
		return Result{}, fmt.Errorf("check: %w", err)
	}
	r := Result{Action: Action(a.Action), Score: a.Score, Required: a.RequiredScore, Message: a.Messages.SMTP}
	switch r.Action {
	case NoAction, Greylist, AddHeader, RewriteSubject, SoftReject, Reject:
	default:
		return Result{}, fmt.Errorf("check: action %q: %w", a.Action, ErrUnavailable)
	}
	for s := range a.Symbols {
		r.Symbols = append(r.Symbols, s)
	}
	sort.Strings(r.Symbols)
	for name, raw := range a.Milter.AddHeaders {
		r.Headers = append(r.Headers, milterHeaders(name, raw)...)
	}
	sort.SliceStable(r.Headers, func(i, j int) bool { return r.Headers[i].Name < r.Headers[j].Name })
	return r, nil
}

// milterHeaders decodes one add_headers entry: a string, an object
// {"value": ..., "order": ...}, or a list of either.
func milterHeaders(name string, raw json.RawMessage) []Header {
	if !validFieldName(name) {
		return nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		list = []json.RawMessage{raw}
	}
	var out []Header
	for _, item := range list {
		var v string
		if json.Unmarshal(item, &v) != nil {
			var o struct {
				Value string `json:"value"`
			}
			if json.Unmarshal(item, &o) != nil {
				continue
			}
			v = o.Value
		}
		out = append(out, Header{Name: name, Value: v})
	}
	return out
}

// validFieldName: printable ASCII but ":" (RFC 5322 section 2.2).
func validFieldName(s string) bool {
	if s == "" || len(s) > 76 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' || s[i] == ':' {
			return false
		}
	}
	return true
}

// Learn teaches rspamd's statistics msg as spam (true) or ham (false),
// through the controller. A message rspamd has learnt the same way
// already is not an error.
func (c *Client) Learn(ctx context.Context, isSpam bool, msg []byte) error {
	if c.cfg.ControllerURL == "" {
		return fmt.Errorf("learn: no rspamd_controller_url: %w", ErrUnavailable)
	}
	path := "/learnham"
	if isSpam {
		path = "/learnspam"
	}
	h := http.Header{}
	if c.cfg.Password != "" {
		h.Set("Password", c.cfg.Password)
	}
	var a struct {
		Success bool   `json:"success"`
		Error   string `json:"error"`
	}
	err := c.post(ctx, c.cfg.ControllerURL+path, h, msg, &a)
	var se *StatusError
	if errors.As(err, &se) && se.Code == http.StatusAlreadyReported {
		return nil // 208: learnt before
	}
	if err != nil {
		return fmt.Errorf("learn: %w", err)
	}
	if !a.Success {
		return fmt.Errorf("learn: %s: %w", a.Error, ErrUnavailable)
	}
	return nil
}

// Stat is part of the controller's /stat.
type Stat struct {
	Scanned int64 `json:"scanned"`
	Learned int64 `json:"learned"`
}

// Stat reads the controller's counters.
func (c *Client) Stat(ctx context.Context) (Stat, error) {
	if c.cfg.ControllerURL == "" {
		return Stat{}, fmt.Errorf("stat: no rspamd_controller_url: %w", ErrUnavailable)
	}
	h := http.Header{}
	if c.cfg.Password != "" {
		h.Set("Password", c.cfg.Password)
	}
	var st Stat
	if err := c.do(ctx, http.MethodGet, c.cfg.ControllerURL+"/stat", h, nil, &st); err != nil {
		return Stat{}, fmt.Errorf("stat: %w", err)
	}
	return st, nil
}

// StatusError is an answer other than 200.
type StatusError struct {
	Code int
	Text string // rspamd's "error", if any
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Code, e.Text) }

func (c *Client) post(ctx context.Context, u string, h http.Header, body []byte, into any) error {
	return c.do(ctx, http.MethodPost, u, h, body, into)
}

// do makes one request within Config.Timeout and decodes a 200 answer of
// at most maxAnswer bytes into into.
func (c *Client) do(ctx context.Context, method, u string, h http.Header, body []byte, into any) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return fmt.Errorf("%w: read answer: %w", ErrUnavailable, err)
	}
	if len(data) > maxAnswer {
		return fmt.Errorf("%w: answer over %d bytes", ErrUnavailable, maxAnswer)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(data, &e)
		return fmt.Errorf("%w: %w", ErrUnavailable, &StatusError{Code: resp.StatusCode, Text: e.Error})
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("%w: decode answer: %w", ErrUnavailable, err)
	}
	return nil
}
