// Package dnstest is a stub DNS server for tests: it answers TXT, MX and
// A/AAAA queries from tables over UDP on a loopback port, so that code under test
// uses a real *net.Resolver (the `dns` setting) end to end, as in
// production.
//
// A name in no table is NXDOMAIN; a name in a table but without records of
// the type asked is an empty NOERROR answer (both are "not found" to Go's
// resolver); a name marked with Fail is SERVFAIL (a temporary error).
package dnstest

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Server is a running stub; its methods may be called from any goroutine,
// also while queries are answered.
type Server struct {
	// Addr is the server's host:port, the value of the `dns` setting.
	Addr string

	conn net.PacketConn

	// mu guards the tables.
	mu   sync.Mutex
	txt  map[string][]string
	mx   map[string][]*net.MX
	ip   map[string][]net.IP
	fail map[string]bool
}

// Start runs a stub on 127.0.0.1 until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("dnstest: listen: %v", err)
	}
	s := &Server{
		Addr: conn.LocalAddr().String(), conn: conn,
		txt: map[string][]string{}, mx: map[string][]*net.MX{}, ip: map[string][]net.IP{}, fail: map[string]bool{},
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.serve()
	}()
	t.Cleanup(func() {
		conn.Close()
		<-done
	})
	return s
}

func key(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) }

// SetTXT replaces name's TXT records; none removes them (and the name, if
// it has no MX either).
func (s *Server) SetTXT(name string, values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(values) == 0 {
		delete(s.txt, key(name))
		return
	}
	s.txt[key(name)] = values
}

// SetMX replaces name's MX records (host names, priorities 10, 20, ...);
// none removes them.
func (s *Server) SetMX(name string, hosts ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(hosts) == 0 {
		delete(s.mx, key(name))
		return
	}
	var mx []*net.MX
	for i, h := range hosts {
		mx = append(mx, &net.MX{Host: h, Pref: uint16(10 * (i + 1))})
	}
	s.mx[key(name)] = mx
}

// SetIP replaces name's address records (A for IPv4, AAAA for IPv6), as
// a DNS blocklist answers for a listed address; none removes them.
func (s *Server) SetIP(name string, ips ...net.IP) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(ips) == 0 {
		delete(s.ip, key(name))
		return
	}
	s.ip[key(name)] = ips
}

// Fail makes every query for name answer SERVFAIL (fail true) or
// answer from the tables again (false).
func (s *Server) Fail(name string, fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[key(name)] = fail
}

// Resolver is a *net.Resolver that asks only this server, as the service
// makes one for its `dns` setting.
func (s *Server) Resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			d := net.Dialer{Timeout: 5 * time.Second}
			return d.DialContext(ctx, "udp", s.Addr)
		},
	}
}

func (s *Server) serve() {
	buf := make([]byte, 512)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		if out, ok := s.answer(buf[:n]); ok {
			s.conn.WriteTo(out, from)
		}
	}
}

// answer builds the reply to one query; ok is false for a packet that is
// not one (it is dropped, as a server would).
func (s *Server) answer(query []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	name := key(q.Name.String())

	s.mu.Lock()
	fail, txt, mx, ips := s.fail[name], s.txt[name], s.mx[name], s.ip[name]
	_, hasTXT := s.txt[name]
	_, hasMX := s.mx[name]
	_, hasIP := s.ip[name]
	s.mu.Unlock()

	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	switch {
	case fail:
		rh.RCode = dnsmessage.RCodeServerFailure
	case !hasTXT && !hasMX && !hasIP:
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, false
	}
	if err := b.Question(q); err != nil {
		return nil, false
	}
	if err := b.StartAnswers(); err != nil {
		return nil, false
	}
	if rh.RCode == dnsmessage.RCodeSuccess {
		rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
		switch q.Type {
		case dnsmessage.TypeTXT:
			for _, v := range txt {
				if err := b.TXTResource(rr, dnsmessage.TXTResource{TXT: split(v)}); err != nil {
					return nil, false
				}
			}
		case dnsmessage.TypeA:
			for _, ip := range ips {
				if v4 := ip.To4(); v4 != nil {
					if err := b.AResource(rr, dnsmessage.AResource{A: [4]byte(v4)}); err != nil {
						return nil, false
					}
				}
			}
		case dnsmessage.TypeAAAA:
			for _, ip := range ips {
				if ip.To4() == nil && len(ip) == net.IPv6len {
					if err := b.AAAAResource(rr, dnsmessage.AAAAResource{AAAA: [16]byte(ip)}); err != nil {
						return nil, false
					}
				}
			}
		case dnsmessage.TypeMX:
			for _, m := range mx {
				host, err := dnsmessage.NewName(strings.TrimSuffix(m.Host, ".") + ".")
				if err != nil {
					return nil, false
				}
				if err := b.MXResource(rr, dnsmessage.MXResource{Pref: m.Pref, MX: host}); err != nil {
					return nil, false
				}
			}
		}
	}
	out, err := b.Finish()
	return out, err == nil
}

// split cuts a TXT value into character-strings of at most 255 bytes
// (RFC 1035 section 3.3.14); resolvers join them again.
func split(v string) []string {
	var out []string
	for len(v) > 255 {
		out = append(out, v[:255])
		v = v[255:]
	}
	return append(out, v)
}
