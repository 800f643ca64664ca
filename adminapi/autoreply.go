package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mailhost/mailhost/mailstore"
)

// autoReplyStore is the part of mailstore.AutoReplies the auto-reply
// routes use.
type autoReplyStore interface {
	AutoReply(ctx context.Context, mailboxID int64) (mailstore.AutoReply, error)
	SetAutoReply(ctx context.Context, a mailstore.AutoReply) error
	DeleteAutoReply(ctx context.Context, mailboxID int64) error
}

// Limits of an auto-reply's text.
const (
	maxAutoReplySubject = 998 - len("Subject: ") // RFC 5322 section 2.1.1, before encoding
	maxAutoReplyBody    = 64 << 10
)

// autoReplyJSON is the Auto-reply resource; start and end are null when
// unbounded.
type autoReplyJSON struct {
	Email   string  `json:"email"`
	Enabled bool    `json:"enabled"`
	Subject string  `json:"subject"`
	Body    string  `json:"body"`
	Start   *string `json:"start"`
	End     *string `json:"end"`
}

func autoReplyOf(email string, a mailstore.AutoReply) autoReplyJSON {
	out := autoReplyJSON{Email: email, Enabled: a.Enabled, Subject: a.Subject, Body: a.Body}
	if !a.Start.IsZero() {
		s := timestamp(a.Start)
		out.Start = &s
	}
	if !a.End.IsZero() {
		s := timestamp(a.End)
		out.End = &s
	}
	return out
}

// autoReplyTarget finds the partner's mailbox of the request and the
// store's auto-replies.
func (a *API) autoReplyTarget(r *http.Request, c call) (mailstore.Mailbox, autoReplyStore, error) {
	email, err := emailParam(r)
	if err != nil {
		return mailstore.Mailbox{}, nil, err
	}
	m, err := a.store.Mailbox(r.Context(), c.partnerID, email)
	if err != nil {
		return mailstore.Mailbox{}, nil, err
	}
	return m, a.store, nil
}

// getAutoReply answers GET /users/{email}/autoreply: a mailbox that never
// had one answers a disabled, empty one.
func (a *API) getAutoReply(w http.ResponseWriter, r *http.Request, c call) error {
	m, st, err := a.autoReplyTarget(r, c)
	if err != nil {
		return err
	}
	ar, err := st.AutoReply(r.Context(), m.ID)
	if err != nil && !errors.Is(err, mailstore.ErrNotFound) {
		return err
	}
	writeJSON(w, http.StatusOK, autoReplyOf(m.Email, ar))
	return nil
}

// setAutoReply answers PUT /users/{email}/autoreply: enabled, subject and
// body are required; start and end are optional (absent or null:
// unbounded), UTC, and end must be after start. Safe to repeat.
func (a *API) setAutoReply(w http.ResponseWriter, r *http.Request, c call) error {
	m, st, err := a.autoReplyTarget(r, c)
	if err != nil {
		return err
	}
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	ar := mailstore.AutoReply{MailboxID: m.ID}
	if !b.has("enabled") {
		return unprocessable("enabled", "field required")
	}
	if err := json.Unmarshal(b["enabled"], &ar.Enabled); err != nil {
		return unprocessable("enabled", "must be true or false")
	}
	if ar.Subject, err = b.str("subject"); err != nil {
		return err
	}
	if ar.Subject = strings.TrimSpace(ar.Subject); ar.Subject == "" || len(ar.Subject) > maxAutoReplySubject {
		return unprocessable("subject", "must be 1 to %d bytes", maxAutoReplySubject)
	}
	if strings.ContainsFunc(ar.Subject, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		// A line break would start a header field of the sender's choice.
		return unprocessable("subject", "must not contain control characters")
	}
	if ar.Body, err = b.str("body"); err != nil {
		return err
	}
	if len(ar.Body) > maxAutoReplyBody || !utf8.ValidString(ar.Body) || strings.ContainsRune(ar.Body, 0) {
		return unprocessable("body", "must be valid UTF-8 text of at most %d bytes, without NUL", maxAutoReplyBody)
	}
	for _, f := range []struct {
		name string
		to   *time.Time
	}{{"start", &ar.Start}, {"end", &ar.End}} {
		if !b.has(f.name) {
			continue
		}
		var s string
		if err := json.Unmarshal(b[f.name], &s); err != nil {
			return unprocessable(f.name, "must be a date-time string such as 2026-12-20T17:00:00 (UTC)")
		}
		t, err := parseUTC(s)
		if err != nil {
			return unprocessable(f.name, "must be a date-time such as 2026-12-20T17:00:00 (UTC), or with Z or an offset")
		}
		*f.to = t
	}
	if !ar.Start.IsZero() && !ar.End.IsZero() && !ar.End.After(ar.Start) {
		return unprocessable("end", "must be after start")
	}
	if err := st.SetAutoReply(r.Context(), ar); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, autoReplyOf(m.Email, ar))
	return nil
}

// parseUTC reads the API's date-time form (UTC, no offset), or RFC 3339
// with Z or an offset, converted to UTC.
func parseUTC(s string) (time.Time, error) {
	if t, err := time.Parse(timeLayout, s); err == nil {
		return t.UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC().Truncate(time.Second), nil
}

// deleteAutoReply answers DELETE /users/{email}/autoreply: the auto-reply
// and the memory of whom it answered are removed. Safe to repeat.
func (a *API) deleteAutoReply(w http.ResponseWriter, r *http.Request, c call) error {
	m, st, err := a.autoReplyTarget(r, c)
	if err != nil {
		return err
	}
	if err := st.DeleteAutoReply(r.Context(), m.ID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, message("Auto-reply deleted"))
	return nil
}
