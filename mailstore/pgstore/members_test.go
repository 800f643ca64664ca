package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/mailhost/mailhost/internal/pgtest"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/pgstore"
)

// Two nodes on one database see each other while both beat, and one
// alone once the other's heartbeat is older than the ttl.
func TestHeartbeat(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	a, err := pgstore.Open(ctx, url, pgstore.Options{Node: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := pgstore.Open(ctx, url, pgstore.Options{Node: "b"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var m mailstore.Members = a
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ttl := 30 * time.Second
	steps := []struct {
		name string
		st   mailstore.Members
		node string
		at   time.Time
		want int
	}{
		{"a alone", m, "a", now, 1},
		{"b joins", b, "b", now.Add(time.Second), 2},
		{"a sees b", m, "a", now.Add(10 * time.Second), 2},
		{"b gone quiet", m, "a", now.Add(40 * time.Second), 1},
	}
	for _, s := range steps {
		got, err := s.st.Heartbeat(ctx, s.node, s.at, ttl)
		if err != nil {
			t.Fatalf("%s: Heartbeat = %v", s.name, err)
		}
		if got != s.want {
			t.Errorf("%s: Heartbeat(%s) = %d, want %d", s.name, s.node, got, s.want)
		}
	}
}
