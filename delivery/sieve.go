package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
	"github.com/mailhost/mailhost/sieve"
)

// SieveStore is where a mailbox's active script is read, and the
// folders of fileinto (RFC 5228 section 4.1, RFC 5490 :create and
// mailboxexists) are looked up and made; both stores satisfy it.
type SieveStore interface {
	ActiveSieveScript(ctx context.Context, mailboxID int64) (mailstore.SieveScript, error)
	Folder(ctx context.Context, mailboxID int64, name string) (mailstore.Folder, error)
	CreateFolder(ctx context.Context, mailboxID int64, name string) (mailstore.Folder, error)
}

// VacationResponder answers a script's vacation action (RFC 5230);
// *autoreply.Responder is one, the same that answers the partner API's
// auto-replies, with the same once-per-sender memory.
type VacationResponder interface {
	// Vacation is called once the message is stored, for the mailbox
	// whose script asked. It decides (sieve.ShouldRespond, the :days
	// interval), queues the reply itself, and never fails the delivery.
	Vacation(ctx context.Context, mb mailstore.Mailbox, env sieve.Envelope, msg []byte, v sieve.Vacation) bool
}

// SieveConfig configures a Sieve.
type SieveConfig struct {
	// Store is required.
	Store SieveStore
	// Vacation answers vacation actions. nil: they do nothing.
	Vacation VacationResponder
	// Delimiter is the subaddress separator :detail and :user split at
	// ("" means "+").
	Delimiter string
	// Logger: one line per script that failed or refused. nil: discard.
	Logger *slog.Logger
	// Hostname names this server in rejection DSNs (Reporting-MTA,
	// MAILER-DAEMON@). "": "localhost".
	Hostname string
	// OnQueued, when not nil, is called after a rejection DSN was
	// queued, to wake the outbound workers; it must not block.
	OnQueued func()
	// MaxCachedBytes bounds the text of the parsed scripts kept in
	// memory (their parsed form is a few times as much); 0 means
	// DefaultMaxCachedBytes. Over it the cache starts again empty.
	MaxCachedBytes int
}

// DefaultMaxCachedBytes is SieveConfig.MaxCachedBytes's default: some
// 4,000 scripts of 4 KB.
const DefaultMaxCachedBytes = 16 << 20

// Sieve runs the local recipients' active Sieve scripts at Commit: see
// the package comment of sieve and docs/mail.md, "Sieve at delivery".
// Only mailboxes whose look-up said they have an active script
// (Mailbox.HasSieve) are considered; parsed scripts are kept per
// mailbox with the stamp of the stored script (Mailbox.SieveVersion,
// which the look-up reads anyway), so that a delivery to a mailbox with
// a script costs its run: no read of the script, no parse. Safe for
// concurrent use.
type Sieve struct {
	cfg    SieveConfig
	log    *slog.Logger
	mu     sync.Mutex
	cache  map[int64]parsedScript
	cached int // bytes of text in cache
}

type parsedScript struct {
	text    string
	version int64 // the stored script's stamp (SieveScript.Version)
	script  *sieve.Script
	err     error
}

// NewSieve makes a Sieve; nothing can fail.
func NewSieve(cfg SieveConfig) *Sieve {
	s := &Sieve{cfg: cfg, log: cfg.Logger, cache: map[int64]parsedScript{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.cfg.MaxCachedBytes <= 0 {
		s.cfg.MaxCachedBytes = DefaultMaxCachedBytes
	}
	return s
}

// RedirectHeader marks a message a script redirected, with the address of
// the mailbox whose script did: a message that comes back to that mailbox
// with its mark is kept, not redirected again, so that two scripts
// redirecting to each other do not loop.
const RedirectHeader = "X-Mailhost-Sieve-Redirect"

// maxRedirects is the most redirects of one message, over all of its
// recipients' scripts.
const maxRedirects = sieve.DefaultMaxRedirects

// ErrSieveReject: the recipient's script rejected the message (reject,
// ereject; RFC 5429), refused at the end of DATA when it is the
// transaction's only recipient.
var ErrSieveReject = &Refusal{"message rejected by the recipient's filter", false}

// SieveRejectError is ErrSieveReject with the script's reason.
type SieveRejectError struct {
	Mailbox string
	Reason  string
}

func (e *SieveRejectError) Error() string {
	return fmt.Sprintf("%s: rejected by its sieve script: %s", e.Mailbox, e.Reason)
}
func (e *SieveRejectError) Unwrap() error { return ErrSieveReject }

// script answers the mailbox's parsed active script, nil when none, and
// the error of a stored script that does not parse (parseErr); err is a
// failed read. mb is as the recipient's look-up read it: while its
// SieveVersion is the stamp of the script in the cache, the cache
// answers and the store is not read. Otherwise (a new stamp, or none,
// for a script stored before stamps) the script is read, and parsed
// again only when its text changed.
func (s *Sieve) script(ctx context.Context, mb mailstore.Mailbox) (sc *sieve.Script, parseErr, err error) {
	id := mb.ID
	s.mu.Lock()
	p, ok := s.cache[id]
	s.mu.Unlock()
	if ok && mb.SieveVersion != 0 && p.version == mb.SieveVersion {
		return p.script, p.err, nil
	}
	stored, err := s.cfg.Store.ActiveSieveScript(ctx, id)
	if errors.Is(err, mailstore.ErrNotFound) {
		s.mu.Lock()
		s.cached -= len(s.cache[id].text)
		delete(s.cache, id)
		s.mu.Unlock()
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("active sieve script of mailbox %d: %w", id, err)
	}
	if !ok || p.text != stored.Script {
		p.text = stored.Script
		p.script, p.err = sieve.Parse([]byte(stored.Script), policy.SieveOptions)
	}
	// The stamp read with the text, which may be newer than mb's (a
	// recipient look-up answered from a cache): the next delivery with
	// mb's stamp reads again, and finds the same text.
	p.version = stored.Version
	s.mu.Lock()
	s.cached -= len(s.cache[id].text)
	delete(s.cache, id)
	if s.cached+len(p.text) > s.cfg.MaxCachedBytes {
		clear(s.cache)
		s.cached = 0
	}
	if len(p.text) <= s.cfg.MaxCachedBytes {
		s.cache[id] = p
		s.cached += len(p.text)
	}
	s.mu.Unlock()
	return p.script, p.err, nil
}

// sieveOutcome is what the scripts decided for a message.
type sieveOutcome struct {
	// discarded are the mailboxes that store nothing.
	discarded []int64
	// junk are mailboxes whose script filed into "Junk" (the folder
	// with special use \Junk, as the spam filter's).
	junk []int64
	// places are the copies filed elsewhere or with flags.
	places    []mailstore.Placement
	redirects []queued
	marks     []string // RedirectHeader values to add
	vacations []vacation
	reject    *SieveRejectError
	// rejected are the rejections answered with a DSN (their mailboxes
	// are in discarded too).
	rejected []rejection
}

type vacation struct {
	mb  mailstore.Mailbox
	env sieve.Envelope
	v   sieve.Vacation
}

// runSieve runs each local recipient's active script once on body.
func (t *Transaction) runSieve(ctx context.Context, body []byte) (sieveOutcome, error) {
	var out sieveOutcome
	s := t.a.cfg.Sieve
	if s == nil || len(t.mailboxes) == 0 {
		return out, nil
	}
	var msg *sieve.RawMessage
	marked := func(email string) bool {
		for _, v := range msg.Header(RedirectHeader) {
			if strings.EqualFold(strings.TrimSpace(v), email) {
				return true
			}
		}
		return false
	}
	for _, mb := range t.mailboxes {
		if !mb.HasSieve {
			// As the recipient's look-up read it: most mailboxes have
			// no script, and they cost no read more.
			continue
		}
		sc, parseErr, err := s.script(ctx, mb)
		if err != nil {
			// The store could not be read: the message waits (a
			// temporary refusal) rather than be filed against the
			// user's wishes.
			return out, err
		}
		if parseErr != nil {
			s.log.Warn("sieve script does not parse: message kept", "mailbox", mb.Email, "err", parseErr)
			continue
		}
		if sc == nil {
			continue
		}
		if msg == nil {
			msg = sieve.NewMessage(body)
		}
		env := sieve.Envelope{From: t.from, To: t.recipientOf(mb.ID), AuthUser: t.user.Email}
		res, err := sc.Run(ctx, msg, env, sieve.RunOptions{SubaddressSeparator: s.cfg.Delimiter, Mailboxes: folders{s.cfg.Store, mb.ID}})
		if err != nil {
			s.log.Warn("sieve script failed: message kept", "mailbox", mb.Email, "err", err)
			continue
		}
		t.applySieve(ctx, &out, mb, env, res, marked(mb.Email))
	}
	return out, nil
}

// folders answers mailboxexists (RFC 5490) with a mailbox's folders.
type folders struct {
	st SieveStore
	id int64
}

func (f folders) MailboxExists(ctx context.Context, name string) (bool, error) {
	_, err := f.st.Folder(ctx, f.id, name)
	if errors.Is(err, mailstore.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// applySieve records what res asks for mailbox mb: one copy at most,
// where the first action that stores it says (keep, fileinto), with that
// action's flags; none when nothing stores it (discard, or a redirect or
// vacation without keep).
func (t *Transaction) applySieve(ctx context.Context, out *sieveOutcome, mb mailstore.Mailbox, env sieve.Envelope, res sieve.Result, redirected bool) {
	s := t.a.cfg.Sieve
	var (
		stored bool
		pl     = mailstore.Placement{MailboxID: mb.ID}
		junk   bool
	)
	keep := func(flags []string) {
		if !stored {
			stored, pl.Flags = true, flags
		}
	}
	for _, a := range res.Actions {
		switch a := a.(type) {
		case sieve.Keep:
			keep(a.Flags)
		case sieve.FileInto:
			if stored {
				s.log.Info("sieve fileinto: one copy per mailbox, already filed", "mailbox", mb.Email, "folder", a.Folder)
				continue
			}
			keep(a.Flags)
			switch {
			case strings.EqualFold(a.Folder, "Junk"):
				junk = true
			case strings.EqualFold(a.Folder, "INBOX"):
				// The script's INBOX, not the spam filter's Junk.
				pl.Folder = "INBOX"
			default:
				pl.Folder = s.fileInto(ctx, mb, a)
			}
		case sieve.Redirect:
			switch {
			case redirected:
				s.log.Info("sieve redirect: message already redirected by this mailbox, kept", "mailbox", mb.Email, "to", a.Address)
				keep(res.Flags)
			case len(out.redirects) >= maxRedirects:
				s.log.Warn("sieve redirect: over the limit of redirects, kept", "mailbox", mb.Email, "to", a.Address)
				keep(res.Flags)
			default:
				q, ok := t.sieveRedirect(mb, a.Address)
				if !ok {
					keep(res.Flags)
					continue
				}
				out.redirects = append(out.redirects, q)
				if !slices.Contains(out.marks, mb.Email) {
					out.marks = append(out.marks, mb.Email)
				}
			}
		case sieve.Reject:
			if len(t.rcpts) == 1 && len(t.mailboxes) == 1 && t.Remote() == 0 && t.mode != Forward {
				out.reject = &SieveRejectError{Mailbox: mb.Email, Reason: a.Reason}
				return
			}
			// Other recipients take the message, or the sender had its
			// 250 (the queue): a rejection DSN instead (RFC 5429
			// section 2.1.2). None to the null sender, and none for a
			// message the spam filter judged junk for this mailbox: its
			// sender is likely forged, and a DSN would be backscatter;
			// that copy is kept in Junk rather than lost.
			if t.from == "" || slices.Contains(t.junk, mb.ID) {
				s.log.Info("sieve reject: no DSN for a null sender or junk, message kept", "mailbox", mb.Email, "from", t.from, "reason", a.Reason)
				keep(res.Flags)
				continue
			}
			out.rejected = append(out.rejected, rejection{mailbox: mb.Email, rcpt: env.To, reason: a.Reason})
			out.discarded = append(out.discarded, mb.ID)
			return
		case sieve.Vacation:
			out.vacations = append(out.vacations, vacation{mb, env, a})
		}
	}
	if res.ImplicitKeep {
		keep(res.Flags)
	}
	if !stored {
		// Where a user's mail went is the first question when it is
		// missed: a line for every copy not stored.
		s.log.Info("sieve: no copy stored", "mailbox", mb.Email, "from", t.from, "redirects", len(out.redirects))
		out.discarded = append(out.discarded, mb.ID)
		return
	}
	if junk {
		out.junk = append(out.junk, mb.ID)
	}
	if pl.Folder != "" || len(pl.Flags) > 0 {
		out.places = append(out.places, pl)
	}
}

// fileInto is the folder a fileinto other than INBOX and Junk stores
// into: a.Folder when the mailbox has it or :create made it, else INBOX
// (RFC 5228 section 4.1: a folder that does not exist is an error the
// implementation may answer with a keep; RFC 5490 section 3.2).
func (s *Sieve) fileInto(ctx context.Context, mb mailstore.Mailbox, a sieve.FileInto) string {
	_, err := s.cfg.Store.Folder(ctx, mb.ID, a.Folder)
	if err == nil {
		return a.Folder
	}
	if errors.Is(err, mailstore.ErrNotFound) && a.Create {
		_, err = s.cfg.Store.CreateFolder(ctx, mb.ID, a.Folder)
		if err == nil || errors.Is(err, mailstore.ErrFolderExists) {
			return a.Folder
		}
	}
	s.log.Info("sieve fileinto: no such folder, message in INBOX", "mailbox", mb.Email, "folder", a.Folder, "create", a.Create, "err", err)
	return "INBOX"
}

// sieveRedirect is the queue entry of a redirect by mb's script: a
// forward of mb's domain (its transfer cap, its SRS address), as an
// alias to a remote address is.
func (t *Transaction) sieveRedirect(mb mailstore.Mailbox, to string) (queued, bool) {
	log := t.a.cfg.Sieve.log
	addr, err := policy.NormalizeAddress(to)
	if err != nil || addr == mb.Email {
		log.Info("sieve redirect: bad address, kept", "mailbox", mb.Email, "to", to)
		return queued{}, false
	}
	dom := policy.DomainOf(mb.Email)
	from := t.from
	if from != "" && t.a.cfg.SRS != nil {
		if from, err = t.a.cfg.SRS.Forward(t.from, dom); err != nil {
			log.Warn("sieve redirect: SRS failed, kept", "mailbox", mb.Email, "err", err)
			return queued{}, false
		}
	}
	// The null sender stays null (RFC 5321 section 4.5.5), and the
	// forward is still the domain's, counted in its transfer.
	return queued{kind: mailstore.KindForward, domainID: mb.DomainID, from: from, to: addr}, true
}

// recipientOf is the accepted recipient address that led to mailbox id,
// as the sender wrote it (its subaddress detail too).
func (t *Transaction) recipientOf(id int64) string {
	for _, r := range t.rcpts {
		if slices.Contains(r.MailboxIDs, id) {
			return r.Address
		}
	}
	return ""
}

// vacations hands the scripts' vacation actions of the mailboxes that
// took the message to the responder.
func (s *Sieve) vacations(ctx context.Context, out sieveOutcome, body []byte, delivered []int64) {
	if s.cfg.Vacation == nil {
		return
	}
	for _, v := range out.vacations {
		if slices.Contains(delivered, v.mb.ID) || slices.Contains(out.discarded, v.mb.ID) {
			s.cfg.Vacation.Vacation(ctx, v.mb, v.env, body, v.v)
		}
	}
}

// markRedirected prepends RedirectHeader for each mailbox that
// redirected.
func markRedirected(body []byte, marks []string) []byte {
	if len(marks) == 0 {
		return body
	}
	var b bytes.Buffer
	for _, m := range marks {
		fmt.Fprintf(&b, "%s: %s\r\n", RedirectHeader, m)
	}
	b.Write(body)
	return b.Bytes()
}
