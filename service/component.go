package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"

	"github.com/mailhost/mailhost/managesieve"
)

// component is one part of the running service: the store, a listener's
// server, a background worker. Run starts the components in order and
// stops them in reverse, so that each one starts after, and stops before,
// the parts it uses: the listeners stop before the queue they feed, the
// store closes last.
type component interface {
	// Name is the component's name in logs and errors.
	Name() string
	// Start makes the component ready and returns; what it runs goes on
	// in goroutines of its own until Stop. A Start that fails leaves
	// nothing running or open.
	Start(ctx context.Context) error
	// Stop stops what Start began, within ctx, and waits for it. It is
	// called once, and only after a Start that succeeded.
	Stop(ctx context.Context) error
}

// startAll starts cs in order. When one fails, those already started
// are stopped in reverse, within stopTimeout, and the error names the one
// that failed.
func startAll(ctx context.Context, cs []component, log *slog.Logger) error {
	for i, c := range cs {
		if err := c.Start(ctx); err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
			defer cancel()
			stopAll(sctx, cs[:i], log)
			return fmt.Errorf("start %s: %w", c.Name(), err)
		}
	}
	return nil
}

// stopAll stops cs in reverse order, each within ctx; a failure is
// logged and the others are stopped all the same.
func stopAll(ctx context.Context, cs []component, log *slog.Logger) {
	for i := len(cs) - 1; i >= 0; i-- {
		if err := cs[i].Stop(ctx); err != nil {
			log.Warn("stop", "component", cs[i].Name(), "err", err)
		}
	}
}

// step is a component that makes parts the later components use (the
// store, the TLS configuration, the first start's partner) and, if it
// has a stop, releases them.
type step struct {
	name  string
	start func(ctx context.Context) error
	// stop, if set, undoes start.
	stop func(ctx context.Context) error
}

func (s step) Name() string                    { return s.name }
func (s step) Start(ctx context.Context) error { return s.start(ctx) }

func (s step) Stop(ctx context.Context) error {
	if s.stop == nil {
		return nil
	}
	return s.stop(ctx)
}

// worker is a component that runs a loop in the background until Stop
// cancels its context.
type worker struct {
	name string
	// start, if set, runs first, in Start: an error fails the start.
	start func(ctx context.Context) error
	// run is the loop, which returns once ctx ends.
	run    func(ctx context.Context)
	cancel context.CancelFunc
	done   chan struct{}
}

func (w *worker) Name() string { return w.name }

func (w *worker) Start(ctx context.Context) error {
	if w.start != nil {
		if err := w.start(ctx); err != nil {
			return err
		}
	}
	// The loop lives until Stop, not until Run's context ends: the
	// workers stop in their turn, after the listeners that feed them.
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.cancel, w.done = cancel, make(chan struct{})
	go func() {
		defer close(w.done)
		w.run(rctx)
	}()
	return nil
}

// Stop cancels the loop and waits for it however long it takes: the
// loops return promptly once cancelled, and the store, which stops after
// them, must not close under one. ctx, which the listeners before may
// have used up, is not what bounds it.
func (w *worker) Stop(context.Context) error {
	w.cancel()
	<-w.done
	return nil
}

// endpoint is one address a listening component serves; an empty addr
// is a listener turned off.
type endpoint struct {
	name string
	addr string
	// listen binds addr; nil: TCP.
	listen func() (net.Listener, error)
	// bound, if set, receives the address bound, in Run's Addrs.
	bound *string
	serve func(net.Listener) error
}

func (e endpoint) bind() (net.Listener, error) {
	if e.listen != nil {
		return e.listen()
	}
	ln, err := net.Listen("tcp", e.addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", e.addr, err)
	}
	return ln, nil
}

// listening is a component serving endpoints until Stop: an HTTP server,
// SMTP, IMAP, ManageSieve. Start builds the server (make) from the parts
// started before it, then binds every address before serving any, so
// that an address already taken leaves nothing open.
type listening struct {
	name string
	p    *parts
	// make builds the server: its endpoints, and its graceful stop.
	make func() ([]endpoint, func(context.Context) error)

	shutdown func(context.Context) error
	lns      []net.Listener
	wg       sync.WaitGroup
}

func (l *listening) Name() string { return l.name }

func (l *listening) Start(context.Context) error {
	eps, shutdown := l.make()
	var on []endpoint
	for _, e := range eps {
		if e.addr == "" {
			continue
		}
		ln, err := e.bind()
		if err != nil {
			for _, ln := range l.lns {
				ln.Close()
			}
			l.lns = nil
			return err
		}
		l.lns = append(l.lns, ln)
		on = append(on, e)
	}
	l.shutdown = shutdown
	for i, e := range on {
		ln := l.lns[i]
		if e.bound != nil {
			*e.bound = ln.Addr().String()
		}
		l.serve(e.name, func() error { return e.serve(ln) })
		l.p.log.Info("listening", "service", e.name, "addr", ln.Addr().String())
	}
	return nil
}

// serve runs fn until the server is shut down; another end of it is a
// failure, which Run answers by shutting down.
func (l *listening) serve(name string, fn func() error) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		err := fn()
		if err == nil || errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) || errors.Is(err, managesieve.ErrServerClosed) {
			return
		}
		l.p.failed(fmt.Errorf("%s: %w", name, err))
	}()
}

func (l *listening) Stop(ctx context.Context) error {
	err := l.shutdown(ctx)
	// A Serve that had not yet taken its listener when the shutdown
	// came would otherwise wait on it.
	for _, ln := range l.lns {
		ln.Close()
	}
	l.wg.Wait()
	return err
}
