package adminapi

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// memList is a list of ids in ascending order that a test can change
// between fetchList's calls.
type memList struct {
	mu    sync.Mutex
	ids   []int64
	calls int
	// onCall runs (under mu) before answering call number n.
	onCall func(n int, l *memList)
}

func (m *memList) fetch(p mailstore.Page) ([]int64, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.onCall != nil {
		m.onCall(m.calls, m)
	}
	out := []int64{}
	for i, id := range m.ids {
		if i >= p.Offset && (p.Limit == 0 || len(out) < p.Limit) {
			out = append(out, id)
		}
	}
	return out, len(m.ids), nil
}

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func TestFetchList(t *testing.T) {
	self := func(id int64) int64 { return id }
	tests := []struct {
		name   string
		n      int64
		page   mailstore.Page
		onCall func(n int, l *memList)
		want   []int64
	}{
		{"small, one call", 10, mailstore.Page{}, nil, seq(1, 11)},
		{"large, halves", 5000, mailstore.Page{}, nil, seq(1, 5001)},
		{"large page", 5000, mailstore.Page{Offset: 100, Limit: 4000}, nil, seq(101, 4101)},
		{"small page of a large list", 5000, mailstore.Page{Offset: 10, Limit: 5}, nil, seq(11, 16)},
		{"offset past the end", 5000, mailstore.Page{Offset: 6000}, nil, []int64{}},
		{"append between the halves", 5000, mailstore.Page{}, func(n int, l *memList) {
			if n == 3 { // the later of the two halves
				l.ids = append(l.ids, 5001)
			}
		}, nil}, // either snapshot is right; checked below
		{"delete at the front between the halves", 5000, mailstore.Page{}, func(n int, l *memList) {
			if n == 3 { // the later of the two halves
				l.ids = l.ids[1:]
			}
		}, seq(2, 5001)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &memList{ids: seq(1, tt.n+1), onCall: tt.onCall}
			got, total, err := fetchList(l.fetch, self, tt.page)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == nil {
				// Any consistent snapshot: 1..5000 or 1..5001.
				if !slices.Equal(got, seq(1, 5001)) && !slices.Equal(got, seq(1, 5002)) || total != len(got) {
					t.Fatalf("fetchList() = %d items (total %d), not a snapshot", len(got), total)
				}
				return
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("fetchList(%+v) = %d items [%v..], want %d items", tt.page, len(got), got[:min(3, len(got))], len(tt.want))
			}
			if tt.name == "delete at the front between the halves" && l.calls != 4 {
				t.Errorf("fetchList() made %d calls, want 4 (a probe, two halves, one refetch)", l.calls)
			}
			if total != len(l.ids) {
				t.Errorf("fetchList() total = %d, want %d", total, len(l.ids))
			}
		})
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"alice@example.com", `a"b\c@x.example`, "ü@bücher.example", "tab\there", "\x00\x1f", ""} {
		want, _ := json.Marshal(s)
		got := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil || back != s {
			t.Errorf("appendJSONString(%q) = %s (encoding/json: %s), decodes to %q, %v", s, got, want, back, err)
		}
	}
}
