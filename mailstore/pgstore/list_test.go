package pgstore

import (
	"context"
	"slices"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// TestMailboxPagesFar: a page at an offset from deferredOffset on, read
// by its ids first, holds the same mailboxes in the same order as the
// pages before it would continue to, for the partner's list and the
// domain's, up to the end of the list.
func TestMailboxPagesFar(t *testing.T) {
	ctx := context.Background()
	n := deferredOffset + 30
	s, ids := mailFixture(t, n)
	var partnerID, domainID int64
	if err := s.pool.QueryRow(ctx, `SELECT partner_id, domain_id FROM mailboxes WHERE id = $1`, ids[0]).Scan(&partnerID, &domainID); err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(ids))
	for _, scope := range []struct {
		name     string
		domainID int64
	}{{"partner", 0}, {"domain", domainID}} {
		for _, offset := range []int{0, deferredOffset - 10, deferredOffset - 1, deferredOffset, n - 7, n} {
			got, total, err := s.Mailboxes(ctx, partnerID, scope.domainID, mailstore.Page{Limit: 20, Offset: offset})
			if err != nil {
				t.Fatalf("%s list at %d: %v", scope.name, offset, err)
			}
			if total != n {
				t.Errorf("%s list at %d: total %d, want %d", scope.name, offset, total, n)
			}
			var gotIDs []int64
			for _, e := range got {
				if e.PartnerID != partnerID || e.DomainID != domainID || e.Email == "" {
					t.Errorf("%s list at %d: entry %+v", scope.name, offset, e)
				}
				gotIDs = append(gotIDs, e.ID)
			}
			end := min(offset+20, n)
			if !slices.Equal(gotIDs, want[offset:end]) {
				t.Errorf("%s list at %d = %v, want %v", scope.name, offset, gotIDs, want[offset:end])
			}
		}
	}
}
