package imapd

import (
	"slices"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/mailhost/mailhost/mailstore"
)

func TestStoreFlags(t *testing.T) {
	tests := []struct {
		name string
		in   []imap.Flag
		want []string
	}{
		{"none", nil, []string{}},
		{"system flags take their canonical case", []imap.Flag{`\seen`, `\FLAGGED`}, []string{`\Seen`, `\Flagged`}},
		{"keywords kept as given", []imap.Flag{"$Label1", "Work"}, []string{"$Label1", "Work"}},
		{"duplicates in any case dropped", []imap.Flag{`\Seen`, `\SEEN`, "work", "Work"}, []string{`\Seen`, "work"}},
		{"recent and unknown system flags dropped", []imap.Flag{`\Recent`, `\Bogus`, `\Deleted`}, []string{`\Deleted`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := storeFlags(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("storeFlags(%v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func testView(uids ...uint32) *view {
	v := &view{}
	for _, u := range uids {
		v.msgs = append(v.msgs, viewMsg{Message: mailstore.Message{UID: u}})
		v.maxUID = u
	}
	return v
}

func TestViewIndices(t *testing.T) {
	v := testView(3, 7, 8, 20)
	v.searchRes = imap.UIDSetNum(7, 20)
	tests := []struct {
		name string
		set  imap.NumSet
		want []int
	}{
		{"seq", imap.SeqSetNum(1, 3), []int{0, 2}},
		{"seq range", imap.SeqSet{{Start: 2, Stop: 3}}, []int{1, 2}},
		{"seq star", imap.SeqSet{{Start: 3, Stop: 0}}, []int{2, 3}},
		{"seq reversed", imap.SeqSet{{Start: 0, Stop: 3}}, []int{2, 3}},
		{"seq beyond", imap.SeqSetNum(9), nil},
		{"uid", imap.UIDSetNum(7, 9, 20), []int{1, 3}},
		{"uid range", imap.UIDSet{{Start: 4, Stop: 8}}, []int{1, 2}},
		{"uid star above the largest", imap.UIDSet{{Start: 30, Stop: 0}}, []int{3}},
		{"saved result", imap.SearchRes(), []int{1, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := v.indices(tt.set); !slices.Equal(got, tt.want) {
				t.Errorf("indices(%v) = %v, want %v", tt.set, got, tt.want)
			}
		})
	}
}

func TestViewRemove(t *testing.T) {
	v := testView(3, 7, 8, 20)
	if got, want := v.remove([]uint32{3, 8, 99}), []uint32{3, 1}; !slices.Equal(got, want) {
		t.Errorf("remove = %v, want sequence numbers %v, highest first", got, want)
	}
	if got, want := v.uids([]int{0, 1}), []uint32{7, 20}; !slices.Equal(got, want) {
		t.Errorf("uids after remove = %v, want %v", got, want)
	}
}

func TestMatchDate(t *testing.T) {
	day := func(d, h int, loc *time.Location) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, loc) }
	tests := []struct {
		name          string
		t             time.Time
		since, before time.Time
		want          bool
	}{
		{"no bounds", day(5, 12, time.UTC), time.Time{}, time.Time{}, true},
		{"since the same day", day(5, 0, time.UTC), day(5, 0, time.UTC), time.Time{}, true},
		{"since the next day", day(5, 23, time.UTC), day(6, 0, time.UTC), time.Time{}, false},
		{"before the same day", day(5, 1, time.UTC), time.Time{}, day(5, 0, time.UTC), false},
		{"before the next day", day(5, 23, time.UTC), time.Time{}, day(6, 0, time.UTC), true},
		{"zone of the message ignored", day(5, 23, time.FixedZone("x", -5*3600)), day(5, 0, time.UTC), day(6, 0, time.UTC), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := matchDate(tt.t, tt.since, tt.before); got != tt.want {
				t.Errorf("matchDate(%v, %v, %v) = %v, want %v", tt.t, tt.since, tt.before, got, tt.want)
			}
		})
	}
}
