package policy

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

func TestMaySendAs(t *testing.T) {
	// bob (1) and carol (2) in a.test, dave (3) in b.test.
	dir := func() *directory {
		return newDirectory("a.test", "b.test").
			mailbox("bob@a.test").mailbox("carol@a.test").mailbox("dave@b.test").
			alias("info@a.test", "bob@a.test").
			alias("sales@a.test", "info@a.test").
			alias("team@b.test", "bob@a.test").
			alias("help@a.test", "carol@a.test").
			alias("out@a.test", "someone@remote.test").
			alias("x@a.test", "nobody@b.test").
			alias("loop@a.test", "loop@a.test").
			alias("@a.test", "bob@a.test").
			alias("@b.test", "dave@b.test")
	}
	bob := mailstore.Mailbox{ID: 1, Email: "bob@a.test"}
	dave := mailstore.Mailbox{ID: 3, Email: "dave@b.test"}
	for _, tc := range []struct {
		name string
		user mailstore.Mailbox
		addr string
		err  error // nil: allowed
	}{
		{"own address", bob, "bob@a.test", nil},
		{"alias source", bob, "info@a.test", nil},
		{"alias chain", bob, "sales@a.test", nil},
		{"alias in another hosted domain", bob, "team@b.test", nil},
		{"alias through another domain's catch-all", dave, "x@a.test", nil},
		{"another user of the domain", bob, "carol@a.test", ErrNotOwner},
		{"another user's alias", bob, "help@a.test", ErrNotOwner},
		{"a user of another domain", bob, "dave@b.test", ErrNotOwner},
		{"a remote address", bob, "someone@remote.test", ErrNotOwner},
		{"an alias to a remote address", bob, "out@a.test", ErrNotOwner},
		{"only the catch-all takes it", bob, "ceo@a.test", ErrNotOwner},
		{"the catch-all source itself", bob, "@a.test", ErrNotOwner},
		{"a looping alias", bob, "loop@a.test", ErrNotOwner},
		{"a domain not hosted", bob, "bob@elsewhere.test", ErrNotOwner},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := MaySendAs(context.Background(), dir(), tc.user, tc.addr)
			if tc.err == nil && err != nil || tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("MaySendAs(%s, %q) = %v, want %v", tc.user.Email, tc.addr, err, tc.err)
			}
		})
	}
	t.Run("lookup failure is not a refusal", func(t *testing.T) {
		d := dir()
		d.fail = errTestStore
		err := MaySendAs(context.Background(), d, bob, "info@a.test")
		if !errors.Is(err, errTestStore) || errors.Is(err, ErrNotOwner) {
			t.Errorf("MaySendAs with a failing store = %v, want the store's error only", err)
		}
	})
}

func TestTransferCapReached(t *testing.T) {
	const mb = mailstore.MB
	for _, tc := range []struct {
		name    string
		capMB   int64
		in, out int64
		want    bool
	}{
		{"nothing used", 1, 0, 0, false},
		{"one byte left", 1, mb - 1, 0, false},
		{"exactly used, inbound", 1, mb, 0, true},
		{"exactly used, outbound", 1, 0, mb, true},
		{"in and out together", 10, 5 * mb, 5 * mb, true},
		{"in and out under", 10, 5 * mb, 5*mb - 1, false},
		{"past the cap (lowered)", 1, 3 * mb, 3 * mb, true},
		{"zero cap admits nothing", 0, 0, 0, true},
		{"largest cap, one byte left", 1 << 30, 1<<50 - 1, 0, false},
		{"huge counters do not overflow the sum", 1 << 30, math.MaxInt64 / 2, math.MaxInt64 / 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mailstore.Domain{TransferMonthlyMB: tc.capMB}
			tr := mailstore.Transfer{InBytes: tc.in, OutBytes: tc.out}
			if got := TransferCapReached(d, tr); got != tc.want {
				t.Errorf("TransferCapReached(cap %d MB, in %d, out %d) = %v, want %v", tc.capMB, tc.in, tc.out, got, tc.want)
			}
		})
	}
}
