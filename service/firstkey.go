package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/mailstore"
)

// KeyFileName is the file in the data directory that receives the default
// partner's API key at first start, mode 0600: readable by the user the
// server runs as, and root. The key is printed on stdout too, as
// the partner contract has it ("prints its API key once"), except when stdout is
// systemd's journal (IsJournal), which would keep it for months: there
// the notice names the file instead. The file is deleted once the key
// has been used (keyFileWatch): a key that works has been kept
// elsewhere, and a secret left in the data directory would end up in
// its backups and copies.
const KeyFileName = "initial-api-key"

// writeKeyFile writes the first-start key to DATA/initial-api-key,
// synced, and answers its path. A file left by an earlier store in the
// same directory is replaced: the key it held belonged to a store that
// is gone.
func writeKeyFile(dataDir, key string) (string, error) {
	path := filepath.Join(dataDir, KeyFileName)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	// writeSynced makes the temporary file with the mode, so the key is
	// never readable by others, not even for a moment.
	if err := writeSynced(path, []byte(key+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write the first key to %s: %w", path, err)
	}
	return path, nil
}

// printFirstKey tells stdout about the default partner: with the key
// when show is set, else only where the key file is (stdout is the
// journal).
func printFirstKey(stdout io.Writer, show bool, name string, id int64, key, path string) {
	if show {
		fmt.Fprintf(stdout, "Created partner %q (id %d). Its API key, shown only this once:\n\n    %s\n\nUse it as: Authorization: Bearer <key>\n(It is also in %s, mode 0600: it is deleted after the key's first successful use.)\n\n", name, id, key, path)
		return
	}
	fmt.Fprintf(stdout, "Created partner %q (id %d). Its API key is in %s (mode 0600, not printed: stdout is systemd's journal).\nRead it (as root or the server's user) and keep it elsewhere: the file is deleted after the key's first successful use.\n\n", name, id, path)
}

// keyFileWatch deletes DATA/initial-api-key once its key has been used:
// its Used is adminapi's Config.OnKeyFirstUse.
type keyFileWatch struct {
	path  string
	keyID int64
	log   *slog.Logger
	once  sync.Once
}

// watchKeyFile answers the watch of the key file in dataDir, or nil
// when there is none, or it holds no key of this store (a file the
// operator edited, or left by an earlier store), which is left alone.
// It is read at every start, so that a file a restart found still there
// goes once its key is used.
func watchKeyFile(ctx context.Context, st mailstore.Store, dataDir string, log *slog.Logger) (*keyFileWatch, error) {
	path := filepath.Join(dataDir, KeyFileName)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the first key's file: %w", err)
	}
	lookup, _, err := credential.ParseAPIKey(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, nil
	}
	k, err := st.APIKeyByLookup(ctx, lookup)
	if errors.Is(err, mailstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the first key's file: %w", err)
	}
	return &keyFileWatch{path: path, keyID: k.ID, log: log}, nil
}

// Used deletes the file the first time keyID is its key's.
func (w *keyFileWatch) Used(keyID int64) {
	if keyID != w.keyID {
		return
	}
	w.once.Do(func() {
		err := os.Remove(w.path)
		switch {
		case err == nil:
			w.log.Info("deleted the first start's API key file: its key has been used", "path", w.path, "key_id", keyID)
		case !errors.Is(err, fs.ErrNotExist):
			w.log.Warn("could not delete the first start's API key file; delete it by hand", "path", w.path, "err", err)
		}
	})
}

// firstStart creates the partner "default" on an empty store and hands
// its key out once (the partner contract): into DATA/initial-api-key, and on
// stdout when show is set.
func firstStart(ctx context.Context, st mailstore.Store, ops Operator, stdout io.Writer, show bool, dataDir string, log *slog.Logger) error {
	ps, err := st.Partners(ctx)
	if err != nil {
		return err
	}
	if len(ps) > 0 {
		return nil
	}
	k, err := ops.CreatePartner(ctx, "default")
	if errors.Is(err, mailstore.ErrPartnerExists) {
		// Another node sharing the database made it first and printed
		// its key: the key is shown once, by one node.
		log.Info("default partner made by another node")
		return nil
	}
	if err != nil {
		return fmt.Errorf("create default partner: %w", err)
	}
	path, err := writeKeyFile(dataDir, k.APIKey)
	if err != nil {
		return err
	}
	printFirstKey(stdout, show, k.Name, k.ID, k.APIKey, path)
	log.Info("created default partner", "partner_id", k.ID, "key_prefix", k.KeyPrefix)
	return nil
}
