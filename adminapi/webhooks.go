package adminapi

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/mailhost/mailhost/internal/publicip"
	"github.com/mailhost/mailhost/mailstore"
)

var errWebhookNotFound = newError(http.StatusNotFound, "Webhook not found")

// webhookJSON is a webhook as the API shows it; Secret only in the
// answer to its creation.
type webhookJSON struct {
	ID        int64    `json:"id"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	CreatedAt string   `json:"created_at"`
	Secret    string   `json:"secret,omitempty"`
}

func toWebhook(w mailstore.Webhook) webhookJSON {
	return webhookJSON{ID: w.ID, URL: w.URL, Events: w.Events, CreatedAt: timestamp(w.CreatedAt)}
}

// maxWebhooks bounds a partner's webhooks: each event is one POST to
// each of them.
const maxWebhooks = 20

// createWebhook answers POST /webhooks/.
func (a *API) createWebhook(w http.ResponseWriter, r *http.Request, c call) error {
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	raw, err := b.str("url")
	if err != nil {
		return err
	}
	u, err := a.webhookURL(raw)
	if err != nil {
		return err
	}
	var events []string
	if !b.has("events") || json.Unmarshal(b["events"], &events) != nil || len(events) == 0 {
		return unprocessable("events", "must be a non-empty array of event types")
	}
	var uniq []string
	for _, e := range events {
		if !slices.Contains(mailstore.EventTypes, e) {
			return unprocessable("events", "unknown event type %q (one of %s)", e, strings.Join(mailstore.EventTypes, ", "))
		}
		if !slices.Contains(uniq, e) {
			uniq = append(uniq, e)
		}
	}
	if _, n, err := a.store.Webhooks(r.Context(), c.partnerID, mailstore.Page{Limit: 1}); err != nil {
		return err
	} else if n >= maxWebhooks {
		return newError(http.StatusForbidden, "Webhook quota exceeded")
	}
	secret, err := newWebhookSecret()
	if err != nil {
		return err
	}
	hook, err := a.store.CreateWebhook(r.Context(), c.partnerID, mailstore.Webhook{URL: u, Events: uniq, Secret: secret}, a.now())
	if err != nil {
		return err
	}
	setObject(r, strconv.FormatInt(hook.ID, 10))
	out := toWebhook(hook)
	out.Secret = hook.Secret
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// newWebhookSecret is 32 random bytes, URL-safe base64, with a prefix
// that says what it is.
func newWebhookSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// webhookURL checks a webhook's URL: http or https, a host, no user
// information, at most 2,000 characters; and, unless private targets
// are allowed, no loopback, private or link-local address literal and no
// "localhost" (the delivery's dialer checks the addresses a name
// resolves to as well, SSRF).
func (a *API) webhookURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || len(raw) > 2000 || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" || u.User != nil || u.Fragment != "" {
		return "", unprocessable("url", "must be an http:// or https:// URL with a host")
	}
	if !a.allowPrivateHooks {
		host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
		if host == "localhost" || strings.HasSuffix(host, ".localhost") {
			return "", unprocessable("url", "must not point to a loopback or private address")
		}
		if ip, err := netip.ParseAddr(host); err == nil && !publicip.Is(ip) {
			return "", unprocessable("url", "must not point to a loopback or private address")
		}
	}
	return u.String(), nil
}

// listWebhooks answers GET /webhooks/.
func (a *API) listWebhooks(w http.ResponseWriter, r *http.Request, c call) error {
	lim, off, err := page(r)
	if err != nil {
		return err
	}
	hooks, total, err := a.store.Webhooks(r.Context(), c.partnerID, mailstore.Page{Limit: lim, Offset: off})
	if err != nil {
		return err
	}
	out := make([]webhookJSON, 0, len(hooks))
	for _, h := range hooks {
		out = append(out, toWebhook(h))
	}
	writeList(w, total, out)
	return nil
}

// deleteWebhook answers DELETE /webhooks/{id}.
func (a *API) deleteWebhook(w http.ResponseWriter, r *http.Request, c call) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return errWebhookNotFound
	}
	if err := a.store.DeleteWebhook(r.Context(), c.partnerID, id); err != nil {
		if answer(err) == errNotFound {
			return errWebhookNotFound
		}
		return err
	}
	writeJSON(w, http.StatusOK, message("Webhook deleted"))
	return nil
}
