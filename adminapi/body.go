package adminapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mailhost/mailhost/policy"
)

// maxBody is the largest request body accepted (docs/api.md): 1 MiB.
const maxBody = 1 << 20

// body is a request's JSON object, read field by field so that each
// failure names its field. Unknown fields are ignored.
type body map[string]json.RawMessage

// readBody reads the request's JSON object: 413 over maxBody, 422 for
// anything that is not one JSON object.
func readBody(w http.ResponseWriter, r *http.Request) (body, error) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, errTooLarge
	}
	if err != nil {
		return nil, unprocessable("body", "could not be read")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var b body
	if err := dec.Decode(&b); err != nil || b == nil {
		return nil, unprocessable("body", "must be a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, unprocessable("body", "must be a single JSON object")
	}
	return b, nil
}

// has reports whether the field is present and not null.
func (b body) has(field string) bool {
	v, ok := b[field]
	return ok && string(v) != "null"
}

// str reads a required string field.
func (b body) str(field string) (string, error) {
	if !b.has(field) {
		return "", unprocessable(field, "field required")
	}
	var s string
	if err := json.Unmarshal(b[field], &s); err != nil {
		return "", unprocessable(field, "must be a string")
	}
	return s, nil
}

// int reads a required integer field in [lo, hi]. A JSON number with a
// fraction or exponent, a string or a boolean is refused, not converted.
func (b body) int(field string, lo, hi int64) (int64, error) {
	if !b.has(field) {
		return 0, unprocessable(field, "field required")
	}
	raw := strings.TrimSpace(string(b[field]))
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		if !integerLiteral(raw) {
			// A string ("100" too), a fraction, an exponent, a boolean.
			return 0, unprocessable(field, "must be an integer")
		}
		// An integer literal too large for int64.
		return 0, unprocessable(field, "must be between %d and %d", lo, hi)
	}
	if n < lo || n > hi {
		return 0, unprocessable(field, "must be between %d and %d", lo, hi)
	}
	return n, nil
}

// integerLiteral reports whether s is a JSON integer: an optional minus
// and digits only.
func integerLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// password reads a password field: 8 to 1024 characters.
func (b body) password(field string) (string, error) {
	p, err := b.str(field)
	if err != nil {
		return "", err
	}
	if n := utf8.RuneCountInString(p); n < policy.MinPasswordLen || n > policy.MaxPasswordLen || !utf8.ValidString(p) {
		return "", unprocessable(field, "must be %d to %d characters", policy.MinPasswordLen, policy.MaxPasswordLen)
	}
	if strings.ContainsRune(p, 0) {
		// SASL PLAIN (RFC 4616) separates its fields with NUL, so no
		// client could ever log in with such a password.
		return "", unprocessable(field, "must not contain the NUL character (U+0000)")
	}
	return p, nil
}

// timestamp is the API's date-time form: UTC, no offset, no fraction.
func timestamp(t time.Time) string { return t.UTC().Format(timeLayout) }

const timeLayout = "2006-01-02T15:04:05"

// queryValue is the value of the query parameter name, "" when absent.
// Unlike url.Values, which drops a pair it cannot decode (a bad %-escape,
// a ";"), it answers 422 for such a value, or keeps it whole so that it
// fails its own check: a filter or a page the client sent must not
// quietly turn into "everything".
func queryValue(r *http.Request, name string) (string, error) {
	for _, pair := range strings.Split(r.URL.RawQuery, "&") {
		k, v, _ := strings.Cut(pair, "=")
		if key, err := url.QueryUnescape(k); err != nil || key != name {
			continue
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			return "", unprocessable(name, "could not be decoded")
		}
		return val, nil
	}
	return "", nil
}

// queryInt reads an optional non-negative integer query parameter.
func queryInt(r *http.Request, name string) (int64, bool, error) {
	v, err := queryValue(r, name)
	if err != nil || v == "" {
		return 0, false, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false, unprocessable(name, "must be a non-negative integer")
	}
	return n, true, nil
}

// maxPage caps limit and offset so that they fit an int anywhere.
const maxPage = 1 << 31

// page reads limit and offset.
func page(r *http.Request) (lim, off int, err error) {
	var n [2]int64
	for i, name := range []string{"limit", "offset"} {
		v, _, err := queryInt(r, name)
		if err != nil {
			return 0, 0, err
		}
		if v > maxPage {
			return 0, 0, unprocessable(name, "must be at most %d", maxPage)
		}
		n[i] = v
	}
	return int(n[0]), int(n[1]), nil
}

// writeList writes a list with its total in X-Total-Count.
func writeList(w http.ResponseWriter, total int, v any) {
	w.Header().Set("X-Total-Count", fmt.Sprint(total))
	writeJSON(w, http.StatusOK, v)
}
