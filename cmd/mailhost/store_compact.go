package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/mailstore/pgstore"
	"github.com/mailhost/mailhost/storecopy"
)

// compactStore runs "mailhost store compact" on the bbolt store in where.
func compactStore(ctx context.Context, where string, stdout, stderr io.Writer) int {
	if storecopy.IsURL(where) {
		fmt.Fprintf(stderr, "mailhost store compact: %s is PostgreSQL, which reuses freed space itself; VACUUM FULL gives it back to the file system\n", storecopy.Display(where))
		return 2
	}
	res, err := boltstore.Compact(ctx, where, boltstore.Options{})
	if err != nil {
		if errors.Is(err, mailstore.ErrLocked) {
			err = fmt.Errorf("%s is in use (stop the server first): %w", where, err)
		}
		fmt.Fprintf(stderr, "mailhost store compact: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %s -> %s (%s freed) in %v\n", res.Path, size(res.Before), size(res.After),
		size(res.Before-res.After), res.Took.Round(1e6))
	return 0
}

// storeStats runs "mailhost store stats": a bbolt file's size, free
// pages and buckets, or a PostgreSQL database's table sizes; asJSON
// prints them as JSON.
func storeStats(ctx context.Context, where string, asJSON bool, stdout, stderr io.Writer) int {
	if storecopy.IsURL(where) {
		st, err := pgstore.Open(ctx, where, pgstore.Options{Node: mailstore.LeaseNodeCopied, MaxConns: 2})
		if err != nil {
			fmt.Fprintf(stderr, "mailhost store stats: %s: %v\n", storecopy.Display(where), err)
			return 1
		}
		defer st.Close()
		db, tables, err := st.Sizes(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "mailhost store stats: %v\n", err)
			return 1
		}
		if asJSON {
			return printJSON(stdout, map[string]any{"database_bytes": db, "tables": tables})
		}
		fmt.Fprintf(stdout, "%s: database %s\n", storecopy.Display(where), size(db))
		fmt.Fprintf(stdout, "%-24s %15s %18s\n", "table", "rows (estimate)", "size with indexes")
		for _, t := range tables {
			fmt.Fprintf(stdout, "%-24s %15d %18s\n", t.Name, t.Rows, size(t.Bytes))
		}
		return 0
	}
	st, err := boltstore.StatFile(ctx, where, boltstore.Options{})
	if err != nil {
		if errors.Is(err, mailstore.ErrLocked) {
			err = fmt.Errorf("%s is in use (stop the server first): %w", where, err)
		}
		fmt.Fprintf(stderr, "mailhost store stats: %v\n", err)
		return 1
	}
	if asJSON {
		return printJSON(stdout, st)
	}
	pct := 0.0
	if st.Used > 0 {
		pct = 100 * float64(st.FreeBytes) / float64(st.Used)
	}
	fmt.Fprintf(stdout, "%s: file %s, %s in pages of %d bytes\n", st.Path, size(st.Size), size(st.Used), st.PageSize)
	fmt.Fprintf(stdout, "free: %d pages (%d pending), %s, %.0f%% of the pages: reused by later writes; mailhost store compact gives them back\n",
		st.FreePages, st.PendingPages, size(st.FreeBytes), pct)
	fmt.Fprintf(stdout, "%-20s %12s %12s %12s\n", "bucket", "keys", "in use", "pages")
	for _, b := range st.Buckets {
		fmt.Fprintf(stdout, "%-20s %12d %12s %12s\n", b.Name, b.Keys, size(b.InUse), size(b.Alloc))
	}
	return 0
}

func printJSON(w io.Writer, v any) int {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return 1
	}
	return 0
}

// size is n bytes for a reader: "512 B", "4.0 KiB", "218.3 MiB".
func size(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n)/unit, 0
	for ; (f >= unit || f <= -unit) && i < 4; i++ {
		f /= unit
	}
	return fmt.Sprintf("%.1f %ciB", f, "KMGTP"[i])
}
