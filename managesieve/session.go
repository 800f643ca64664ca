package managesieve

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mailhost/mailhost/sieve"
)

// maxAuthFailures closes the connection after that many failed logins.
const maxAuthFailures = 3

type session struct {
	srv  *Server
	conn net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
	tls  bool
	user string
	// ctx ends when the session does, so store calls stop with it.
	ctx       context.Context
	cancel    context.CancelFunc
	authFails int
}

func newSession(s *Server, c net.Conn) *session {
	ctx, cancel := context.WithCancel(context.Background())
	_, isTLS := c.(*tls.Conn)
	return &session{srv: s, conn: c, br: bufio.NewReader(c), bw: bufio.NewWriter(c), tls: isTLS, ctx: ctx, cancel: cancel}
}

// ip is the client's address, for the Authenticator's throttling.
func (s *session) ip() netip.Addr {
	if ta, ok := s.conn.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// reply is one response: OK, NO or BYE, an optional response code and
// an optional human-readable text (RFC 5804 section 1.3).
type reply struct {
	status string
	code   string
	text   string
}

func ok(text string) reply { return reply{status: "OK", text: text} }
func no(code, text string) reply {
	return reply{status: "NO", code: code, text: text}
}

func (s *session) write(lines ...string) error {
	s.conn.SetWriteDeadline(time.Now().Add(s.srv.cfg.WriteTimeout))
	for _, l := range lines {
		s.bw.WriteString(l)
		s.bw.WriteString("\r\n")
	}
	return s.bw.Flush()
}

func (s *session) send(r reply) error {
	line := r.status
	if r.code != "" {
		line += " (" + r.code + ")"
	}
	if r.text != "" {
		line += " " + quote(r.text)
	}
	return s.write(line)
}

func (s *session) serve() {
	defer s.cancel()
	defer s.conn.Close()
	if err := s.capabilities(); err != nil {
		return
	}
	for {
		timeout := s.srv.cfg.IdleTimeout
		if s.user == "" {
			timeout = min(timeout, 5*time.Minute)
		}
		s.conn.SetReadDeadline(time.Now().Add(timeout))
		toks, err := readCommand(s.br, int64(s.srv.cfg.Parse.MaxSize))
		var bad *errBadSyntax
		var line *errLine
		switch {
		case err == nil:
		case errors.Is(err, errTooLarge):
			if s.send(no("QUOTA/MAXSIZE", fmt.Sprintf("script larger than %d octets", s.srv.cfg.Parse.MaxSize))) != nil {
				return
			}
			continue
		case errors.As(err, &bad):
			if s.send(no("", bad.msg)) != nil {
				return
			}
			continue
		case errors.As(err, &line):
			s.send(reply{status: "BYE", text: line.msg})
			return
		default:
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				s.send(reply{status: "BYE", text: "idle for too long"})
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.srv.log.Info("managesieve read", "remote", s.conn.RemoteAddr().String(), "err", err)
			}
			return
		}
		if len(toks) == 0 {
			continue
		}
		if toks[0].kind != tAtom {
			if s.send(no("", "a command starts with its name")) != nil {
				return
			}
			continue
		}
		name := strings.ToUpper(toks[0].s)
		r, end := s.command(name, toks[1:])
		s.srv.cfg.Metrics.Command(name, result(r, end))
		if r.status != "" {
			if err := s.send(r); err != nil {
				return
			}
		}
		if end {
			return
		}
	}
}

// result is a command's result for Metrics.Command: its reply's status,
// or, for one that answered itself (CAPABILITY, STARTTLS), "ok", or
// "bye" when the connection ends.
func result(r reply, end bool) string {
	switch {
	case r.status != "":
		return strings.ToLower(r.status)
	case end:
		return "bye"
	}
	return "ok"
}

// command runs one command; end closes the connection after the reply.
func (s *session) command(name string, args []token) (r reply, end bool) {
	switch name {
	case "CAPABILITY":
		if len(args) != 0 {
			return no("", "CAPABILITY takes no arguments"), false
		}
		if s.capabilities() != nil {
			return reply{}, true
		}
		return reply{}, false
	case "LOGOUT":
		return ok("Logout completed"), true
	case "NOOP":
		if len(args) > 1 || len(args) == 1 && args[0].kind != tString {
			return no("", "NOOP takes one string at most"), false
		}
		if len(args) == 1 {
			return reply{status: "OK", code: "TAG " + quote(args[0].s), text: "Done"}, false
		}
		return ok("Done"), false
	case "STARTTLS":
		return s.startTLS()
	case "AUTHENTICATE":
		return s.authenticate(args)
	case "UNAUTHENTICATE":
		// RFC 5804 section 2.14.1: back to the state after STARTTLS,
		// for another login on the same connection.
		if len(args) != 0 {
			return no("", "UNAUTHENTICATE takes no arguments"), false
		}
		if s.user == "" {
			return no("", "not logged in"), false
		}
		s.user = ""
		return ok("Unauthenticate completed"), false
	}
	known := map[string]bool{"HAVESPACE": true, "PUTSCRIPT": true, "LISTSCRIPTS": true, "SETACTIVE": true,
		"GETSCRIPT": true, "DELETESCRIPT": true, "RENAMESCRIPT": true, "CHECKSCRIPT": true}
	if !known[name] {
		return no("", "unknown command "+strconv.Quote(name)), false
	}
	if s.user == "" {
		return no("", "log in first"), false
	}
	want := map[string]int{"HAVESPACE": 2, "PUTSCRIPT": 2, "LISTSCRIPTS": 0, "SETACTIVE": 1,
		"GETSCRIPT": 1, "DELETESCRIPT": 1, "RENAMESCRIPT": 2, "CHECKSCRIPT": 1}[name]
	if len(args) != want {
		return no("", fmt.Sprintf("%s takes %d arguments", name, want)), false
	}
	for i, a := range args {
		if a.kind != tString && !(name == "HAVESPACE" && i == 1) {
			return no("", fmt.Sprintf("%s: argument %d must be a string", name, i+1)), false
		}
	}
	ctx, user, st := s.ctx, s.user, s.srv.cfg.Store
	switch name {
	case "LISTSCRIPTS":
		list, err := st.ListScripts(ctx, user)
		if err != nil {
			return s.storeErr(name, err), false
		}
		lines := make([]string, 0, len(list))
		for _, sc := range list {
			l := quote(sc.Name)
			if sc.Active {
				l += " ACTIVE"
			}
			lines = append(lines, l)
		}
		if s.write(lines...) != nil {
			return reply{}, true
		}
		return ok("Listscripts completed"), false
	case "GETSCRIPT":
		content, err := st.GetScript(ctx, user, args[0].s)
		if err != nil {
			return s.storeErr(name, err), false
		}
		if s.write("{"+strconv.Itoa(len(content))+"}", string(content)) != nil {
			return reply{}, true
		}
		return ok("Getscript completed"), false
	case "HAVESPACE":
		size, err := strconv.ParseInt(args[1].s, 10, 64)
		if args[1].kind != tAtom || err != nil || size < 0 {
			return no("", "HAVESPACE: the size must be a number"), false
		}
		if r, bad := checkName(args[0].s); bad {
			return r, false
		}
		if size > int64(s.srv.cfg.Parse.MaxSize) {
			return no("QUOTA/MAXSIZE", fmt.Sprintf("scripts are at most %d octets", s.srv.cfg.Parse.MaxSize)), false
		}
		if err := st.HaveSpace(ctx, user, args[0].s, size); err != nil {
			return s.storeErr(name, err), false
		}
		return ok("Putscript would succeed"), false
	case "PUTSCRIPT", "CHECKSCRIPT":
		content := args[len(args)-1].s
		if name == "PUTSCRIPT" {
			if r, bad := checkName(args[0].s); bad {
				return r, false
			}
		}
		if _, err := sieve.Parse([]byte(content), s.srv.cfg.Parse); err != nil {
			if errors.Is(err, sieve.ErrLimit) && len(content) > s.srv.cfg.Parse.MaxSize {
				return no("QUOTA/MAXSIZE", err.Error()), false
			}
			return no("", err.Error()), false
		}
		if name == "CHECKSCRIPT" {
			return ok("Script is valid"), false
		}
		if err := st.PutScript(ctx, user, args[0].s, []byte(content)); err != nil {
			return s.storeErr(name, err), false
		}
		return ok("Putscript completed"), false
	case "SETACTIVE":
		if args[0].s != "" {
			if r, bad := checkName(args[0].s); bad {
				return r, false
			}
		}
		if err := st.SetActive(ctx, user, args[0].s); err != nil {
			return s.storeErr(name, err), false
		}
		return ok("Setactive completed"), false
	case "DELETESCRIPT":
		if err := st.DeleteScript(ctx, user, args[0].s); err != nil {
			return s.storeErr(name, err), false
		}
		return ok("Deletescript completed"), false
	case "RENAMESCRIPT":
		if r, bad := checkName(args[1].s); bad {
			return r, false
		}
		if err := st.RenameScript(ctx, user, args[0].s, args[1].s); err != nil {
			return s.storeErr(name, err), false
		}
		return ok("Renamescript completed"), false
	}
	return no("", "unknown command"), false
}

// storeErr answers a store error with its response code; others are
// logged and answered TRYLATER.
func (s *session) storeErr(cmd string, err error) reply {
	switch {
	case errors.Is(err, ErrNotFound):
		return no("NONEXISTENT", "there is no script by that name")
	case errors.Is(err, ErrExists):
		return no("ALREADYEXISTS", "a script by that name exists")
	case errors.Is(err, ErrActive):
		return no("ACTIVE", "the active script cannot be deleted")
	case errors.Is(err, ErrQuotaSize):
		return no("QUOTA/MAXSIZE", "the script is too large")
	case errors.Is(err, ErrQuotaScripts):
		return no("QUOTA/MAXSCRIPTS", "too many scripts")
	case errors.Is(err, ErrBadName):
		return no("", "bad script name")
	}
	s.srv.log.Error("managesieve store", "command", cmd, "user", s.user, "err", err)
	return no("TRYLATER", "temporary failure, try again later")
}

// checkName refuses names RFC 5804 section 1.6 excludes: empty, not
// UTF-8, with control characters or line separators, or over 512 octets.
func checkName(n string) (reply, bool) {
	if n == "" || len(n) > 512 || !utf8.ValidString(n) {
		return no("", "bad script name"), true
	}
	for _, r := range n {
		if r < 0x20 || r >= 0x7f && r <= 0x9f || r == 0x2028 || r == 0x2029 {
			return no("", "bad script name"), true
		}
	}
	return reply{}, false
}

// capabilities writes the capability list and OK (RFC 5804 section 1.7).
func (s *session) capabilities() error {
	cfg := s.srv.cfg
	exts := sieve.Extensions
	if cfg.Parse.Extensions != nil {
		exts = nil
		for _, e := range cfg.Parse.Extensions {
			if sieve.Supported(e) {
				exts = append(exts, e)
			}
		}
	}
	lines := []string{
		quote("IMPLEMENTATION") + " " + quote(cfg.Implementation),
		quote("SIEVE") + " " + quote(strings.Join(exts, " ")),
	}
	if s.user == "" {
		if s.tls || cfg.AllowInsecureAuth {
			lines = append(lines, quote("SASL")+" "+quote("PLAIN"))
		} else {
			lines = append(lines, quote("SASL")+" "+quote(""))
		}
		if !s.tls && cfg.TLS != nil {
			lines = append(lines, quote("STARTTLS"))
		}
	}
	lines = append(lines,
		quote("MAXREDIRECTS")+" "+quote(strconv.Itoa(cfg.MaxRedirects)),
		quote("UNAUTHENTICATE"),
		quote("VERSION")+" "+quote("1.0"),
		"OK",
	)
	return s.write(lines...)
}

func (s *session) startTLS() (reply, bool) {
	if s.tls || s.srv.cfg.TLS == nil || s.user != "" {
		return no("", "STARTTLS is not available"), false
	}
	if s.br.Buffered() > 0 {
		// Commands sent before the handshake would be taken as if
		// protected by it.
		return reply{status: "BYE", text: "data after STARTTLS"}, true
	}
	if s.send(ok("Begin TLS negotiation now")) != nil {
		return reply{}, true
	}
	tc := tls.Server(s.conn, s.srv.cfg.TLS)
	hctx, cancel := context.WithTimeout(s.ctx, s.srv.cfg.WriteTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		s.srv.log.Info("managesieve tls handshake", "remote", s.conn.RemoteAddr().String(), "err", err)
		return reply{}, true
	}
	s.conn, s.tls = tc, true
	// Shutdown closes the TCP connection under tc, which ends tc too.
	s.br, s.bw = bufio.NewReader(tc), bufio.NewWriter(tc)
	// RFC 5804 section 2.2: the capabilities again, as now offered.
	if s.capabilities() != nil {
		return reply{}, true
	}
	return reply{}, false
}

// authenticate runs SASL PLAIN (RFC 4616), the initial response given
// or asked for (RFC 5804 section 2.1).
func (s *session) authenticate(args []token) (reply, bool) {
	if s.user != "" {
		return no("", "already logged in"), false
	}
	if !s.tls && !s.srv.cfg.AllowInsecureAuth {
		s.srv.cfg.Metrics.Login("refused")
		return no("ENCRYPT-NEEDED", "use STARTTLS first"), false
	}
	if len(args) < 1 || len(args) > 2 || args[0].kind != tString {
		return no("", "AUTHENTICATE takes a mechanism and an initial response"), false
	}
	if !strings.EqualFold(args[0].s, "PLAIN") {
		return no("", "unsupported mechanism"), false
	}
	var resp string
	if len(args) == 2 {
		if args[1].kind != tString {
			return no("", "the initial response must be a string"), false
		}
		resp = args[1].s
	} else {
		if s.write(quote("")) != nil {
			return reply{}, true
		}
		toks, err := readCommand(s.br, 4096)
		if err != nil || len(toks) != 1 || toks[0].kind != tString {
			return no("", "bad SASL response"), err != nil
		}
		if toks[0].s == "*" {
			return no("", "authentication cancelled"), false
		}
		resp = toks[0].s
	}
	raw, err := base64.StdEncoding.DecodeString(resp)
	if err != nil {
		return no("", "bad base64"), false
	}
	parts := bytes.Split(raw, []byte{0})
	if len(parts) != 3 {
		return no("", "bad PLAIN message"), false
	}
	authz, authc, pass := string(parts[0]), string(parts[1]), string(parts[2])
	if authz != "" && authz != authc {
		return no("", "authorization as another user is not supported"), false
	}
	user, err := s.srv.cfg.Auth.Authenticate(s.ctx, authc, pass, s.ip())
	if err != nil {
		if errors.Is(err, ErrThrottled) {
			s.srv.cfg.Metrics.Login("throttled")
			s.authFails++
			s.srv.log.Info("managesieve login throttled", "remote", s.conn.RemoteAddr().String(), "user", authc)
			return no("TRYLATER", "too many failed logins, try again later"), s.authFails >= maxAuthFailures
		}
		if !errors.Is(err, ErrAuth) {
			s.srv.cfg.Metrics.Login("error")
			s.srv.log.Error("managesieve authenticate", "err", err)
			return no("TRYLATER", "temporary failure, try again later"), false
		}
		s.srv.cfg.Metrics.Login("invalid")
		s.srv.log.Info("managesieve login failed", "remote", s.conn.RemoteAddr().String(), "user", authc)
		s.authFails++
		if s.authFails >= maxAuthFailures {
			return reply{status: "BYE", text: "too many failed logins"}, true
		}
		return no("", "authentication failed"), false
	}
	s.srv.cfg.Metrics.Login("success")
	s.user = user
	return ok("Logged in"), false
}
