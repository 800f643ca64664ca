package service

// mailhost backup FILE: a consistent copy of the bbolt store, made while
// the server runs (streamed over the control socket from one read
// transaction) or, with the server stopped, from the file itself. The
// CLI writes FILE.tmp, syncs it, checks that bbolt opens it, then
// renames it to FILE, so FILE is either the whole copy or absent.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/mailstore"
)

// backuper is what the backup route needs of the store.
type backuper interface {
	Backup(ctx context.Context, w io.Writer) (int64, error)
}

// withBackup adds "GET /backup" to the control socket's handler when the
// store can make one (bbolt).
//
// This capability stays a check at run time: only the bbolt store has
// it, since a copy of a PostgreSQL database is pg_dump's (see
// docs/operations.md), so it is no role both stores implement.
func withBackup(control http.Handler, st any) http.Handler {
	b, ok := st.(backuper)
	if !ok {
		return control
	}
	mux := http.NewServeMux()
	mux.Handle("/", control)
	mux.HandleFunc("GET /backup", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		// The size is known only at the end, so the body is chunked: a
		// copy cut short lacks the last chunk, which the CLI's read
		// reports as an error.
		if _, err := b.Backup(r.Context(), w); err != nil {
			// The status is sent already; breaking the connection
			// tells the CLI the copy is not whole.
			panic(http.ErrAbortHandler)
		}
	})
	return mux
}

// BackupResult says what a backup wrote.
type BackupResult struct {
	File    string
	Bytes   int64
	Elapsed time.Duration
	// Live is set when the running server made the copy.
	Live bool
}

// Backup copies the configured bbolt store to file: through the running
// server's control socket, or from the file when no server runs.
func Backup(ctx context.Context, cfg *config.Config, file string) (BackupResult, error) {
	res := BackupResult{File: file}
	if cfg.Store != "" {
		return res, errors.New("backup: the store is PostgreSQL: use its own tools (pg_dump, or pg_basebackup with WAL archiving); see docs/operations.md")
	}
	start := time.Now()
	tmp := file + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(tmp) // a no-op once renamed
	n, live, err := backupTo(ctx, cfg.DataDir, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	if err := checkBoltFile(tmp); err != nil {
		return res, fmt.Errorf("backup: the copy does not open: %w", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	if d, err := os.Open(filepath.Dir(file)); err == nil {
		d.Sync()
		d.Close()
	}
	res.Bytes, res.Live, res.Elapsed = n, live, time.Since(start)
	return res, nil
}

// backupTo streams the store in dataDir to w: from the server when one
// answers on the control socket, else from the file opened here.
func backupTo(ctx context.Context, dataDir string, w io.Writer) (int64, bool, error) {
	for attempt := 0; ; attempt++ {
		if op, err := dialControl(dataDir); err == nil {
			n, err := op.backup(ctx, w)
			return n, true, err
		}
		st, err := openBolt(ctx, dataDir, time.Second, 0)
		if errors.Is(err, mailstore.ErrLocked) && attempt < 5 {
			// A server is starting and has not opened its socket yet.
			time.Sleep(500 * time.Millisecond)
			continue
		}
		if err != nil {
			return 0, false, err
		}
		defer st.Close()
		n, err := st.Backup(ctx, w)
		return n, false, err
	}
}

func (o *socketOps) backup(ctx context.Context, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://control/backup", nil)
	if err != nil {
		return 0, err
	}
	// No overall timeout: a copy of many GB takes minutes.
	client := &http.Client{Transport: o.client.Transport}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("control socket: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("control socket: backup answered %s (a server older than this CLI?)", strconv.Quote(resp.Status))
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("control socket: copy cut short after %d bytes: %w", n, err)
	}
	return n, nil
}

// checkBoltFile opens a copy read-only: bbolt checks its meta pages
// (magic, version, checksum).
func checkBoltFile(path string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return err
	}
	return db.Close()
}
