// Package storecopy moves a whole mailhost store between backends (a bbolt
// data directory, a PostgreSQL database) and checks a store's counters:
// the commands `mailhost store copy` and `mailhost store verify`.
//
// A copy streams the source's dump (mailstore.Dumper) into the
// destination's loader (mailstore.Loader), hashing each record as it
// passes, then dumps the destination and compares counts and hashes per
// kind of record: what was written is read back, bodies included, before
// the copy is called a success. Neither backend knows the other; the
// record stream is the only thing they share.
package storecopy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/mailstore/pgstore"
)

// backend is what both stores offer a copy.
type backend interface {
	mailstore.Dumper
	mailstore.Loader
	mailstore.Verifier
	Close() error
}

var (
	_ backend = (*boltstore.Store)(nil)
	_ backend = (*pgstore.Store)(nil)
)

// IsURL reports whether a store argument names a PostgreSQL database
// (a postgres:// or postgresql:// URL) rather than a bbolt data directory.
func IsURL(s string) bool { return pgstore.IsURL(s) }

// Display is how messages name a store: a URL without its password.
func Display(where string) string {
	if !IsURL(where) {
		return where
	}
	u, err := url.Parse(where)
	if err != nil {
		return "(unparsable PostgreSQL URL)"
	}
	return u.Redacted()
}

// open opens a store. A source (mustExist) bbolt directory must hold a
// store already: opening would otherwise make an empty one, and copy
// nothing without a word.
func open(ctx context.Context, where string, mustExist bool) (backend, error) {
	if IsURL(where) {
		s, err := pgstore.Open(ctx, where, pgstore.Options{Node: mailstore.LeaseNodeCopied, MaxConns: 4})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Display(where), err)
		}
		return s, nil
	}
	if mustExist {
		if _, err := os.Stat(filepath.Join(where, boltstore.FileName)); err != nil {
			return nil, fmt.Errorf("%s: no store there: %w", where, err)
		}
	}
	s, err := boltstore.Open(ctx, where, boltstore.Options{})
	if errors.Is(err, mailstore.ErrLocked) {
		return nil, fmt.Errorf("%s is in use (stop the server first): %w", where, err)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Options tune Copy.
type Options struct {
	// Progress receives a line every Every messages and bodies (and one
	// per phase); nil means no progress.
	Progress io.Writer
	// Every is how many messages (or bodies) between progress lines;
	// zero means 10,000.
	Every int64
}

// Report is what a copy did.
type Report struct {
	Source, Destination Summary
	Elapsed             time.Duration
}

// String is the one line `mailhost store copy` ends with.
func (r Report) String() string {
	var parts []string
	for _, k := range mailstore.Kinds() {
		if k == mailstore.KindSequence {
			continue
		}
		parts = append(parts, fmt.Sprintf("%d %s", r.Source.Counts[k], k))
	}
	return fmt.Sprintf("copied %s (%s of bodies) in %s; counts and checksums match",
		strings.Join(parts, ", "), bytesText(r.Source.BodyBytes), r.Elapsed.Round(time.Millisecond))
}

// ErrMismatch answers a copy whose destination does not read back as
// the source.
var ErrMismatch = errors.New("destination does not match the source")

// Copy copies the store at from into the empty store at to (each a bbolt
// data directory or a PostgreSQL URL), then dumps the destination and
// compares it with what was copied. A bbolt store must not be in use.
func Copy(ctx context.Context, from, to string, opt Options) (Report, error) {
	start := time.Now()
	if !IsURL(from) && !IsURL(to) && filepath.Clean(from) == filepath.Clean(to) || IsURL(from) && from == to {
		return Report{}, errors.New("source and destination are the same store")
	}
	src, err := open(ctx, from, true)
	if err != nil {
		return Report{}, fmt.Errorf("source: %w", err)
	}
	defer src.Close()
	dst, err := open(ctx, to, false)
	if err != nil {
		return Report{}, fmt.Errorf("destination: %w", err)
	}
	defer dst.Close()

	p := progress{w: opt.Progress, every: opt.Every, start: start}
	if p.every <= 0 {
		p.every = 10000
	}
	in := newDigester()
	err = dst.Load(ctx, func(put func(mailstore.Record) error) error {
		return src.Dump(ctx, func(r mailstore.Record) error {
			in.add(r)
			p.saw(r, "copied")
			return put(r)
		})
	})
	if errors.Is(err, mailstore.ErrNotEmpty) {
		return Report{}, fmt.Errorf("destination %s: %w (copy only into an empty store)", Display(to), err)
	}
	if err != nil {
		return Report{}, fmt.Errorf("copy %s to %s: %w (the destination may be partly written: empty it before trying again)", Display(from), Display(to), err)
	}
	p.line("copied; reading the destination back to compare")
	out := newDigester()
	p.reset()
	if err := dst.Dump(ctx, func(r mailstore.Record) error {
		out.add(r)
		p.saw(r, "compared")
		return nil
	}); err != nil {
		return Report{}, fmt.Errorf("read back %s: %w", Display(to), err)
	}
	rep := Report{Source: in.summary(), Destination: out.summary(), Elapsed: time.Since(start)}
	if diffs := compare(rep.Source, rep.Destination); len(diffs) > 0 {
		return rep, fmt.Errorf("%w: %s", ErrMismatch, strings.Join(diffs, "; "))
	}
	return rep, nil
}

// compare lists how the destination differs from the source.
func compare(src, dst Summary) []string {
	var out []string
	for _, k := range mailstore.Kinds() {
		if k == mailstore.KindSequence {
			continue
		}
		if src.Counts[k] != dst.Counts[k] {
			out = append(out, fmt.Sprintf("%s: %d in the source, %d in the destination", k, src.Counts[k], dst.Counts[k]))
		} else if src.Sums[k] != dst.Sums[k] {
			out = append(out, fmt.Sprintf("%s: checksums differ", k))
		}
	}
	// A destination's sequence may be ahead (bbolt's folder sequence
	// also passes the source's UIDVALIDITY), never behind.
	for name, v := range src.Sequences {
		if dst.Sequences[name] < v {
			out = append(out, fmt.Sprintf("sequence %s: %d in the source, %d in the destination", name, v, dst.Sequences[name]))
		}
	}
	return out
}

// Verify recomputes the counters of the store at where and answers the
// drift it finds.
func Verify(ctx context.Context, where string) ([]mailstore.Drift, error) {
	s, err := open(ctx, where, true)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Verify(ctx)
}

// progress writes a line every so many messages or bodies.
type progress struct {
	w        io.Writer
	every    int64
	start    time.Time
	messages int64
	blobs    int64
	bytes    int64
	kind     mailstore.Kind
}

func (p *progress) reset() { p.messages, p.blobs, p.bytes, p.kind = 0, 0, 0, 0 }

func (p *progress) line(msg string) {
	if p.w != nil {
		fmt.Fprintf(p.w, "store copy: %s (%s)\n", msg, time.Since(p.start).Round(time.Second))
	}
}

func (p *progress) saw(r mailstore.Record, verb string) {
	if p.w == nil {
		return
	}
	k := mailstore.KindOf(r)
	if k != p.kind && (k == mailstore.KindBlob || k == mailstore.KindMessage || k == mailstore.KindOutbound) {
		p.line(fmt.Sprintf("%s %d bodies, %d messages; now %s", verb, p.blobs, p.messages, k))
	}
	p.kind = k
	switch r := r.(type) {
	case mailstore.BlobRecord:
		p.blobs++
		p.bytes += int64(len(r.Body))
		if p.blobs%p.every == 0 {
			p.line(fmt.Sprintf("%s %d bodies (%s)", verb, p.blobs, bytesText(p.bytes)))
		}
	case mailstore.MessageRecord:
		p.messages++
		if p.messages%p.every == 0 {
			p.line(fmt.Sprintf("%s %d messages", verb, p.messages))
		}
	}
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
