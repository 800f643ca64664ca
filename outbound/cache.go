package outbound

import (
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
)

// clientSession is an SMTP client session and what reusing it needs to
// know.
// Between transactions it is greeted, and TLS'd and logged in when that
// applied, with no transaction open: ready for MAIL.
type clientSession struct {
	c *smtp.Client
	// nc is the connection under c, the TLS one when isTLS, with its
	// replies bounded (replyLimitConn); closing it cuts off a command
	// under way.
	nc    net.Conn
	isTLS bool
	// key is the server: its address and the name it was reached by.
	key string
	// uses counts the transactions it has begun.
	uses int
	// timer says QUIT once the session has waited idle too long; set
	// while it is in the cache.
	timer *time.Timer
}

// sessionKey names a server for the cache. The host name is part of it:
// a session is reused only for the name whose TLS server name it checked
// (when Config.TLS verifies) and that the attempt's log and bounces name.
// MX hosts shared by many domains are still shared, as they go by one
// name. verified sessions, opened with a certificate checked for host
// (an MTA-STS "enforce" destination, or RelayVerifyTLS), are kept apart
// from opportunistic ones: a session that may be in plain text or with
// an unchecked certificate must never carry mail that requires better,
// and keeping the two apart costs only a second idle session to an MX
// host that both kinds of domains share.
func sessionKey(addr, host string, verified bool) string {
	if verified {
		return addr + " " + host + " verified"
	}
	return addr + " " + host
}

// cacheQuitTimeout bounds the wait for the reply to the QUIT of a session
// that leaves the cache: no message waits on it.
const cacheQuitTimeout = time.Second

// sessionCache keeps idle SMTP sessions by server for the next message,
// as Postfix's connection cache does: most recently used first, so that
// with a lull the extra sessions expire; each for at most idle, and at
// most perServer of them per server (the sessions allowed at once to one
// destination, PerRelay or PerDestination: for the relay, more could
// never be in use together). A session that has carried maxUses
// transactions is not kept.
//
// There is no bound on the idle sessions in all, as there is none in
// Postfix: they are sessions to the servers used within the last idle
// interval, at most perServer each. A bound of Workers was tried: in the
// benchmark's MX run (16 servers, 8 workers) the sessions of half the
// servers were then refused and QUIT after every message, and the drain
// was visibly slower (one noisy run each, 1,900-2,700 against about
// 3,450 messages a second).
//
// Each idle session has a timer rather than one sweeper goroutine: the
// timer says QUIT at the moment the session expires, and there is no
// goroutine to stop while the cache is idle.
type sessionCache struct {
	idle      time.Duration
	maxUses   int
	perServer int
	log       *slog.Logger

	// mu guards the fields below.
	mu sync.Mutex
	// isOpen: Run is running; a closed cache keeps nothing.
	isOpen bool
	// byKey are the idle sessions by server, most recently used last.
	byKey map[string][]*clientSession
	// expiring counts the QUITs of expired sessions under way; close
	// waits for them. Add is called with mu held and isOpen set, so never
	// after close has begun to wait.
	expiring sync.WaitGroup
}

func (sc *sessionCache) open() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.isOpen = true
}

// get takes the most recently used idle session to a server, or answers
// nil. The session may have been closed by the server meanwhile.
func (sc *sessionCache) get(key string) *clientSession {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	l := sc.byKey[key]
	if len(l) == 0 {
		return nil
	}
	cn := l[len(l)-1]
	l[len(l)-1] = nil
	if len(l) == 1 {
		delete(sc.byKey, key)
	} else {
		sc.byKey[key] = l[:len(l)-1]
	}
	// A timer that fired already finds cn gone and leaves it alone.
	cn.timer.Stop()
	cn.timer = nil
	return cn
}

// put keeps a session that is ready for MAIL, and answers whether it
// did; the caller says QUIT to one it did not keep.
func (sc *sessionCache) put(cn *clientSession) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !sc.isOpen || cn.uses >= sc.maxUses || len(sc.byKey[cn.key]) >= sc.perServer {
		return false
	}
	if sc.byKey == nil {
		sc.byKey = map[string][]*clientSession{}
	}
	// Armed with mu held: should it fire at once, expire waits for mu and
	// finds cn in place.
	cn.timer = time.AfterFunc(sc.idle, func() { sc.expire(cn) })
	sc.byKey[cn.key] = append(sc.byKey[cn.key], cn)
	return true
}

// expire says QUIT to a session that waited idle too long, unless get or
// close took it first.
func (sc *sessionCache) expire(cn *clientSession) {
	sc.mu.Lock()
	l := sc.byKey[cn.key]
	i := slices.Index(l, cn)
	if i < 0 || !sc.isOpen {
		sc.mu.Unlock()
		return
	}
	if l = slices.Delete(l, i, i+1); len(l) == 0 {
		delete(sc.byKey, cn.key)
	} else {
		sc.byKey[cn.key] = l
	}
	sc.expiring.Add(1)
	sc.mu.Unlock()
	defer sc.expiring.Done()
	sc.log.Debug("idle session closed", "server", cn.key, "uses", cn.uses)
	hangUp(cn, cacheQuitTimeout)
}

// close says QUIT to every idle session, at once, and keeps no more until
// open; it returns when they and the expiries under way are done.
func (sc *sessionCache) close() {
	sc.mu.Lock()
	sc.isOpen = false
	var all []*clientSession
	for _, l := range sc.byKey {
		for _, cn := range l {
			cn.timer.Stop()
			all = append(all, cn)
		}
	}
	clear(sc.byKey)
	sc.mu.Unlock()
	var wg sync.WaitGroup
	for _, cn := range all {
		wg.Go(func() { hangUp(cn, cacheQuitTimeout) })
	}
	wg.Wait()
	sc.expiring.Wait()
}

// hangUp says QUIT, waiting at most d for the reply, and closes the
// connection whatever the answer.
func hangUp(cn *clientSession, d time.Duration) {
	cn.c.CommandTimeout = d
	cn.c.Quit()
	cn.c.Close()
}
