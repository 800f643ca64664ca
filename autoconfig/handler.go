package autoconfig

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// Domains is what the handler asks of the store: whether a domain is
// hosted here, whoever its partner.
type Domains interface {
	DomainByName(ctx context.Context, name string) (mailstore.Domain, error)
}

// Config is what New needs. Domains is required.
type Config struct {
	Servers Servers
	Domains Domains
	// Logger receives store failures; nil means slog.Default().
	Logger *slog.Logger
}

// Handler answers the public requests of mail clients; it implements
// http.Handler for a listener of its own, and its methods serve the same
// requests on the API's listener (adminapi's route table names them).
type Handler struct {
	servers Servers
	domains Domains
	log     *slog.Logger
	mux     *http.ServeMux
}

// Paths of the public endpoints. Outlook writes the Autodiscover path in
// either case.
const (
	PathThunderbird      = "/mail/config-v1.1.xml"
	PathWellKnown        = "/.well-known/autoconfig/mail/config-v1.1.xml"
	PathAutodiscover     = "/autodiscover/autodiscover.xml"
	PathAutodiscoverCaps = "/Autodiscover/Autodiscover.xml"
)

// Errors the handlers answer with; ErrNotHosted also wraps
// mailstore.ErrDomainNotFound, so that adminapi answers it as its 404.
var (
	ErrNotHosted  = fmt.Errorf("domain not hosted here: %w", mailstore.ErrDomainNotFound)
	ErrBadRequest = errors.New("bad request")
)

// maxRequest bounds an Autodiscover request body: the real ones are
// about 400 bytes.
const maxRequest = 16 << 10

// New returns the handler for cfg.
func New(cfg Config) *Handler {
	h := &Handler{servers: cfg.Servers, domains: cfg.Domains, log: cfg.Logger}
	if h.log == nil {
		h.log = slog.Default()
	}
	h.mux = http.NewServeMux()
	for _, p := range []string{PathThunderbird, PathWellKnown} {
		h.mux.HandleFunc("GET "+p, h.adapt(h.Thunderbird))
	}
	for _, p := range []string{PathAutodiscover, PathAutodiscoverCaps} {
		h.mux.HandleFunc("POST "+p, h.adapt(h.Autodiscover))
	}
	return h
}

// ServeHTTP serves the public endpoints, and 404 for everything else.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// adapt answers a handler's error in plain text.
func (h *Handler) adapt(fn func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := fn(w, r)
		switch {
		case err == nil:
		case errors.Is(err, ErrNotHosted):
			http.Error(w, "not found", http.StatusNotFound)
		case errors.Is(err, ErrBadRequest):
			http.Error(w, err.Error(), http.StatusBadRequest)
		default:
			h.log.Error("autoconfig", "path", r.URL.Path, "err", err)
			http.Error(w, "internal server error", http.StatusInternalServerError)
		}
	}
}

// Thunderbird answers GET /mail/config-v1.1.xml and
// /.well-known/autoconfig/mail/config-v1.1.xml. The domain is that of the
// emailaddress parameter, which Thunderbird sends, else that of the Host
// header (autoconfig.<domain>, or <domain> itself for the well-known
// path). Only a hosted domain is answered, and the answer does not depend
// on the local part: nothing tells whether an address exists.
func (h *Handler) Thunderbird(w http.ResponseWriter, r *http.Request) error {
	var domain string
	if q := r.URL.Query(); q.Has("emailaddress") {
		addr, err := policy.NormalizeAddress(q.Get("emailaddress"))
		if err != nil {
			return fmt.Errorf("emailaddress: %w", ErrBadRequest)
		}
		domain = policy.DomainOf(addr)
	} else {
		domain = hostDomain(r.Host)
	}
	d, err := h.hosted(r.Context(), domain)
	if err != nil {
		return err
	}
	writeXML(w, "application/xml", Thunderbird(h.servers, d.Name))
	return nil
}

// Autodiscover answers Outlook's POST /autodiscover/autodiscover.xml:
// the settings for the address of the request, if its domain is hosted.
func (h *Handler) Autodiscover(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequest+1))
	if err != nil {
		return fmt.Errorf("read autodiscover request: %w", ErrBadRequest)
	}
	if len(body) > maxRequest {
		return fmt.Errorf("request over %d bytes: %w", maxRequest, ErrBadRequest)
	}
	var req AutodiscoverRequest
	if err := xml.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("autodiscover request: %w", ErrBadRequest)
	}
	addr, err := policy.NormalizeAddress(strings.TrimSpace(req.Request.EMailAddress))
	if err != nil {
		return fmt.Errorf("EMailAddress: %w", ErrBadRequest)
	}
	if _, err := h.hosted(r.Context(), policy.DomainOf(addr)); err != nil {
		return err
	}
	if !req.Acceptable() {
		// A schema we cannot answer (ActiveSync's): as if not here, so
		// the client tries its next method.
		return ErrNotHosted
	}
	writeXML(w, "text/xml; charset=utf-8", Autodiscover(h.servers, addr))
	return nil
}

// hosted answers the domain if it is hosted here and clients can be
// configured at all, else ErrNotHosted.
func (h *Handler) hosted(ctx context.Context, name string) (mailstore.Domain, error) {
	if !h.servers.Complete() {
		return mailstore.Domain{}, ErrNotHosted
	}
	name, err := policy.NormalizeDomain(name)
	if err != nil {
		return mailstore.Domain{}, ErrNotHosted
	}
	d, err := h.domains.DomainByName(ctx, name)
	if errors.Is(err, mailstore.ErrDomainNotFound) {
		return mailstore.Domain{}, ErrNotHosted
	}
	if err != nil {
		return mailstore.Domain{}, fmt.Errorf("look up domain %s: %w", name, err)
	}
	return d, nil
}

// hostDomain is the mail domain a Host header names: without its port,
// and without the "autoconfig." label Thunderbird puts first.
func hostDomain(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return strings.TrimPrefix(host, "autoconfig.")
}

func writeXML(w http.ResponseWriter, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// WriteProfile writes the MobileConfig profile of email as a download,
// named after its domain (ASCII, unlike the local part may be).
func WriteProfile(w http.ResponseWriter, s Servers, email string) {
	w.Header().Set("Content-Disposition", `attachment; filename="mail-`+policy.DomainOf(email)+`.mobileconfig"`)
	writeXML(w, "application/x-apple-aspen-config", MobileConfig(s, email))
}
