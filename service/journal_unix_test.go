//go:build unix

package service

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestIsJournal: only the stream JOURNAL_STREAM names is the journal.
func TestIsJournal(t *testing.T) {
	dir := t.TempDir()
	journal, err := os.Create(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	defer journal.Close()
	other, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	fi, err := journal.Stat()
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("Stat().Sys() = %T, want *syscall.Stat_t", fi.Sys())
	}
	stream := fmt.Sprintf("%d:%d", st.Dev, st.Ino)
	for _, c := range []struct {
		name, env string
		f         *os.File
		want      bool
	}{
		{"the journal's stream", stream, journal, true},
		{"another file", stream, other, false},
		{"a pipe", stream, w, false},
		{"no JOURNAL_STREAM", "", journal, false},
		{"a malformed JOURNAL_STREAM", "journal", journal, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("JOURNAL_STREAM", c.env)
			if got := IsJournal(c.f); got != c.want {
				t.Errorf("IsJournal = %v, want %v", got, c.want)
			}
		})
	}
}
