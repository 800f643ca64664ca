package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/emersion/go-smtp"
)

// sinkCommand runs "mailhost sink": an SMTP server that accepts every
// message and prints it with its envelope, for trying outbound mail on
// one machine (start mailhost with MAILHOST_RELAY=<its address>). It
// relays nothing and keeps nothing; it refuses to listen beyond
// loopback unless told to, since it accepts mail from anyone.
func sinkCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mailhost sink", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:2626", "address to listen on")
	public := fs.Bool("public", false, "allow an address other than loopback")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "mailhost sink: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if !*public && !loopbackAddr(*listen) {
		fmt.Fprintf(stderr, "mailhost sink: %s is not a loopback address; the sink accepts mail from anyone (-public to allow)\n", *listen)
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "mailhost sink: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stderr, "mailhost sink: listening on %s; each message is printed here\n", ln.Addr())
	if err := serveSink(ctx, ln, stdout); err != nil {
		fmt.Fprintf(stderr, "mailhost sink: %v\n", err)
		return 1
	}
	return 0
}

func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveSink serves ln until ctx ends, printing each message to out.
func serveSink(ctx context.Context, ln net.Listener, out io.Writer) error {
	b := &sinkBackend{out: out}
	srv := smtp.NewServer(b)
	srv.Domain = "sink.localhost"
	srv.MaxMessageBytes = 32 << 20
	srv.MaxRecipients = 100
	srv.ReadTimeout = time.Minute
	srv.WriteTimeout = time.Minute
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
		return nil
	}
}

type sinkBackend struct {
	// mu keeps one message's lines together when sessions end at once.
	mu  sync.Mutex
	out io.Writer
}

func (b *sinkBackend) NewSession(*smtp.Conn) (smtp.Session, error) {
	return &sinkSession{b: b}, nil
}

type sinkSession struct {
	b     *sinkBackend
	from  string
	rcpts []string
}

func (s *sinkSession) Mail(from string, _ *smtp.MailOptions) error {
	s.from = from
	return nil
}

func (s *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.rcpts = append(s.rcpts, to)
	return nil
}

func (s *sinkSession) Data(r io.Reader) error {
	body, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	fmt.Fprintf(s.b.out, "MAIL FROM:<%s> RCPT TO:<%s>\n%s\n", s.from, strings.Join(s.rcpts, ">,<"),
		strings.ReplaceAll(string(body), "\r\n", "\n"))
	return nil
}

func (s *sinkSession) Reset() { s.from, s.rcpts = "", nil }

func (s *sinkSession) Logout() error { return nil }
