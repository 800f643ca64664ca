package boltstore

import (
	"slices"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// FuzzMessageRecord: a record decodes to what was encoded, and no input
// makes the decoder panic.
func FuzzMessageRecord(f *testing.F) {
	f.Add(int64(1), int64(4096), int64(1795000000), `\Seen`, "Work", []byte{1, 2, 3})
	f.Add(int64(1<<62), int64(0), int64(-5), "", `\Deleted`, []byte{msgRecordV1})
	f.Fuzz(func(t *testing.T, blob, size, unix int64, f1, f2 string, junk []byte) {
		if blob < 0 || size < 0 {
			return
		}
		m := mailstore.Message{FolderID: 7, UID: 9, BlobID: blob, Size: size, ReceivedAt: time.Unix(unix, 0).UTC(), Flags: []string{f1, f2}}
		got, err := decodeMessage(msgKey(7, 9), encodeMessage(m))
		if err != nil {
			t.Fatalf("decodeMessage(encodeMessage(%+v)) = %v", m, err)
		}
		if got.FolderID != m.FolderID || got.UID != m.UID || got.BlobID != m.BlobID || got.Size != m.Size ||
			!got.ReceivedAt.Equal(m.ReceivedAt) || !slices.Equal(got.Flags, m.Flags) {
			t.Errorf("round trip = %+v, want %+v", got, m)
		}
		decodeMessage(msgKey(1, 1), junk) // must not panic
	})
}

func TestApplyFlags(t *testing.T) {
	tests := []struct {
		name    string
		cur     []string
		op      mailstore.FlagOp
		flags   []string
		want    []string
		changed bool
	}{
		{"add new", []string{`\Seen`}, mailstore.FlagsAdd, []string{"Work"}, []string{`\Seen`, "Work"}, true},
		{"add present other case", []string{"Work"}, mailstore.FlagsAdd, []string{"work"}, []string{"Work"}, false},
		{"remove", []string{`\Seen`, "Work"}, mailstore.FlagsRemove, []string{"WORK"}, []string{`\Seen`}, true},
		{"remove absent", []string{`\Seen`}, mailstore.FlagsRemove, []string{"Work"}, []string{`\Seen`}, false},
		{"replace same set", []string{"a", "b"}, mailstore.FlagsReplace, []string{"b", "a"}, []string{"a", "b"}, false},
		{"replace with none", []string{"a"}, mailstore.FlagsReplace, nil, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := mailstore.ApplyFlags(tt.cur, tt.op, mailstore.NormFlags(tt.flags))
			if !slices.Equal(got, tt.want) || changed != tt.changed {
				t.Errorf("applyFlags(%q, %v, %q) = %q, %v; want %q, %v", tt.cur, tt.op, tt.flags, got, changed, tt.want, tt.changed)
			}
		})
	}
}
