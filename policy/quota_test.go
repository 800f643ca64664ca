package policy

import (
	"math"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

func TestAcceptAtRCPT(t *testing.T) {
	const mb = mailstore.MB
	for _, tc := range []struct {
		name      string
		quotaMB   int64
		used      int64
		announced int64
		want      bool
	}{
		{"empty mailbox, no SIZE", 1, 0, 0, true},
		{"empty mailbox, SIZE fits", 1, 0, 1000, true},
		{"SIZE fills it exactly", 1, 0, mb, true},
		{"SIZE one byte too many", 1, 0, mb + 1, false},
		{"partly used, SIZE fits", 10, 9 * mb, mb, true},
		{"partly used, SIZE does not fit", 10, 9 * mb, mb + 1, false},
		{"one byte left, no SIZE", 1, mb - 1, 0, true},
		{"one byte left, SIZE 1", 1, mb - 1, 1, true},
		{"one byte left, SIZE 2", 1, mb - 1, 2, false},
		{"at quota, no SIZE", 1, mb, 0, false},
		{"at quota, SIZE 1", 1, mb, 1, false},
		{"over quota (quota lowered), no SIZE", 1, 5 * mb, 0, false},
		{"negative SIZE counts as none", 1, 0, -5, true},
		{"huge SIZE does not overflow", 1, 1, math.MaxInt64, false},
		{"zero quota accepts nothing", 0, 0, 0, false},
		{"largest quota", 1 << 20, 0, math.MaxUint32, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mailstore.Mailbox{QuotaMB: tc.quotaMB, UsedBytes: tc.used}
			if got := AcceptAtRCPT(m, tc.announced); got != tc.want {
				t.Errorf("AcceptAtRCPT(quota %d MB, used %d, SIZE=%d) = %v, want %v", tc.quotaMB, tc.used, tc.announced, got, tc.want)
			}
		})
	}
}
