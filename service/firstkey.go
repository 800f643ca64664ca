package service

import (
	"fmt"
	"io"
	"path/filepath"
)

// KeyFileName is the file in the data directory that receives the default
// partner's API key at first start, mode 0600: readable by the user the
// server runs as, and root. The key is printed on stdout too, as
// decisions.md has it ("prints its API key once"), except when stdout is
// systemd's journal (IsJournal), which would keep it for months: there
// the notice names the file instead.
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
		fmt.Fprintf(stdout, "Created partner %q (id %d). Its API key, shown only this once:\n\n    %s\n\nUse it as: Authorization: Bearer <key>\n(It is also in %s, mode 0600: delete that file once the key is kept elsewhere.)\n\n", name, id, key, path)
		return
	}
	fmt.Fprintf(stdout, "Created partner %q (id %d). Its API key is in %s (mode 0600, not printed: stdout is systemd's journal).\nRead it (as root or the server's user), keep it elsewhere, then delete the file.\n\n", name, id, path)
}
