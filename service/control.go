package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/mailstore"
)

// The control socket lets the command line provision partners and keys
// while the server holds the store: bbolt allows one process per file. It
// is a Unix socket in the data directory, mode 0600, so only the user that
// runs the server (or root) can use it; it speaks JSON over HTTP.

// SocketName is the control socket's file in the data directory.
const SocketName = "control.sock"

// controlHandler serves an Operator on the control socket.
func controlHandler(op Operator) http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any, err error) {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			status := http.StatusInternalServerError
			switch {
			case errors.Is(err, mailstore.ErrNotFound):
				status = http.StatusNotFound
			case errors.Is(err, mailstore.ErrPartnerExists), errors.Is(err, mailstore.ErrInvalidArgument):
				status = http.StatusBadRequest
			}
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("POST /partners", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Name string }
		json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&in)
		v, err := op.CreatePartner(r.Context(), in.Name)
		reply(w, v, err)
	})
	mux.HandleFunc("GET /partners", func(w http.ResponseWriter, r *http.Request) {
		v, err := op.Partners(r.Context())
		reply(w, v, err)
	})
	mux.HandleFunc("POST /partners/{p}/keys", func(w http.ResponseWriter, r *http.Request) {
		v, err := op.CreateKey(r.Context(), r.PathValue("p"))
		reply(w, v, err)
	})
	mux.HandleFunc("GET /partners/{p}/keys", func(w http.ResponseWriter, r *http.Request) {
		v, err := op.Keys(r.Context(), r.PathValue("p"))
		reply(w, v, err)
	})
	mux.HandleFunc("PUT /partners/{p}/limits", func(w http.ResponseWriter, r *http.Request) {
		var l mailstore.PartnerLimits
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&l); err != nil {
			reply(w, nil, fmt.Errorf("limits: %v: %w", err, mailstore.ErrInvalidArgument))
			return
		}
		v, err := op.SetPartnerLimits(r.Context(), r.PathValue("p"), l)
		reply(w, v, err)
	})
	mux.HandleFunc("POST /keys/{id}/revoke", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil {
			reply(w, nil, fmt.Errorf("key id %q: %w", r.PathValue("id"), mailstore.ErrKeyNotFound))
			return
		}
		v, err := op.RevokeKey(r.Context(), id)
		reply(w, v, err)
	})
	mux.HandleFunc("POST /retention/run", func(w http.ResponseWriter, r *http.Request) {
		v, err := op.RunRetention(r.Context())
		reply(w, v, err)
	})
	mux.HandleFunc("GET /queue", func(w http.ResponseWriter, r *http.Request) {
		var p mailstore.Page
		p.Limit, _ = strconv.Atoi(r.URL.Query().Get("limit"))
		p.Offset, _ = strconv.Atoi(r.URL.Query().Get("offset"))
		v, err := op.Queue(r.Context(), p)
		reply(w, v, err)
	})
	mux.HandleFunc("POST /queue/flush", func(w http.ResponseWriter, r *http.Request) {
		v, err := op.FlushQueue(r.Context())
		reply(w, v, err)
	})
	mux.HandleFunc("PUT /mailboxes/{email}/password", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Password string }
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&in); err != nil {
			reply(w, nil, fmt.Errorf("password: %v: %w", err, mailstore.ErrInvalidArgument))
			return
		}
		v, err := op.SetMailboxPassword(r.Context(), r.PathValue("email"), in.Password)
		reply(w, v, err)
	})
	mux.HandleFunc("DELETE /queue/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil {
			reply(w, nil, fmt.Errorf("queue entry %q: %w", r.PathValue("id"), mailstore.ErrOutboundNotFound))
			return
		}
		v, err := op.DeleteQueued(r.Context(), id)
		reply(w, v, err)
	})
	return mux
}

// listenControl opens the control socket, replacing a stale one left by a
// process that died (the caller holds the store's lock, so no live server
// owns it).
func listenControl(dataDir string) (net.Listener, error) {
	path := filepath.Join(dataDir, SocketName)
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return ln, nil
}

// socketOps is the Operator of a running server, reached over its socket.
type socketOps struct {
	client *http.Client
}

// dialControl connects to a running server's control socket, or answers an
// error when none answers.
func dialControl(dataDir string) (*socketOps, error) {
	path := filepath.Join(dataDir, SocketName)
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return nil, err
	}
	c.Close()
	return &socketOps{client: &http.Client{
		Timeout: 10 * time.Minute, // a retention pass may take long
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}},
	}}, nil
}

func (o *socketOps) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://control"+path, body)
	if err != nil {
		return err
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&e)
		base := errors.New("server error")
		switch resp.StatusCode {
		case http.StatusNotFound:
			base = mailstore.ErrNotFound
		case http.StatusBadRequest:
			base = mailstore.ErrInvalidArgument
		}
		return remoteError{msg: e.Error, base: base}
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// remoteError is the server's error text as the CLI prints it, which
// already names the kind of failure ("outbound entry not found"), and the
// store error it stands for, for errors.Is.
type remoteError struct {
	msg  string
	base error
}

func (e remoteError) Error() string { return e.msg }
func (e remoteError) Unwrap() error { return e.base }

func (o *socketOps) CreatePartner(ctx context.Context, name string) (v NewKey, err error) {
	return v, o.call(ctx, "POST", "/partners", map[string]string{"name": name}, &v)
}

func (o *socketOps) Partners(ctx context.Context) (v []PartnerInfo, err error) {
	return v, o.call(ctx, "GET", "/partners", nil, &v)
}

func (o *socketOps) CreateKey(ctx context.Context, partner string) (v NewKey, err error) {
	return v, o.call(ctx, "POST", "/partners/"+url.PathEscape(partner)+"/keys", nil, &v)
}

func (o *socketOps) Keys(ctx context.Context, partner string) (v []KeyInfo, err error) {
	return v, o.call(ctx, "GET", "/partners/"+url.PathEscape(partner)+"/keys", nil, &v)
}

func (o *socketOps) SetPartnerLimits(ctx context.Context, partner string, l mailstore.PartnerLimits) (v PartnerInfo, err error) {
	return v, o.call(ctx, "PUT", "/partners/"+url.PathEscape(partner)+"/limits", l, &v)
}

func (o *socketOps) RevokeKey(ctx context.Context, keyID int64) (v KeyInfo, err error) {
	return v, o.call(ctx, "POST", "/keys/"+strconv.FormatInt(keyID, 10)+"/revoke", nil, &v)
}

func (o *socketOps) RunRetention(ctx context.Context) (v []Purged, err error) {
	return v, o.call(ctx, "POST", "/retention/run", nil, &v)
}

func (o *socketOps) Queue(ctx context.Context, p mailstore.Page) (v QueueList, err error) {
	q := url.Values{}
	q.Set("limit", strconv.Itoa(p.Limit))
	q.Set("offset", strconv.Itoa(p.Offset))
	return v, o.call(ctx, "GET", "/queue?"+q.Encode(), nil, &v)
}

func (o *socketOps) FlushQueue(ctx context.Context) (v Flushed, err error) {
	return v, o.call(ctx, "POST", "/queue/flush", nil, &v)
}

func (o *socketOps) SetMailboxPassword(ctx context.Context, email, password string) (v MailboxInfo, err error) {
	return v, o.call(ctx, "PUT", "/mailboxes/"+url.PathEscape(email)+"/password", map[string]string{"password": password}, &v)
}

func (o *socketOps) DeleteQueued(ctx context.Context, id int64) (v mailstore.Outbound, err error) {
	return v, o.call(ctx, "DELETE", "/queue/"+strconv.FormatInt(id, 10), nil, &v)
}

// WithOperator runs fn with the Operator for the configured store: with
// PostgreSQL, the database itself; with bbolt, the running server's, over
// its control socket, or else the store opened directly for the duration
// of fn.
func WithOperator(ctx context.Context, cfg *config.Config, fn func(Operator) error) error {
	if cfg.Store != "" {
		// A shared database needs no server between the CLI and the
		// store: every node reads what the CLI writes.
		st, err := openStore(ctx, cfg, 0)
		if err != nil {
			return err
		}
		defer st.Close()
		return fn(NewStoreOperator(st, nil))
	}
	dataDir := cfg.DataDir
	for attempt := 0; ; attempt++ {
		if op, err := dialControl(dataDir); err == nil {
			return fn(op)
		}
		st, err := openBolt(ctx, dataDir, time.Second, 0)
		if errors.Is(err, mailstore.ErrLocked) && attempt < 5 {
			// A server is starting and has not opened its socket yet.
			time.Sleep(500 * time.Millisecond)
			continue
		}
		if err != nil {
			return err
		}
		defer st.Close()
		return fn(NewStoreOperator(st, nil))
	}
}
