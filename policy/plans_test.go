package policy

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

func TestDefaultPlans(t *testing.T) {
	// The partner contract: 1 GB = 1024 MB.
	want := []mailstore.Plan{
		{Name: "starter", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 5 * 1024},
		{Name: "business", QuotaMB: 2 * 1024, RetentionDays: 60, TransferMonthlyMB: 10 * 1024},
		{Name: "enterprise", QuotaMB: 5 * 1024, RetentionDays: 90, TransferMonthlyMB: 50 * 1024},
	}
	if got := DefaultPlans(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("DefaultPlans() = %+v, want %+v", got, want)
	}
	// Callers may change what they get without changing the defaults.
	DefaultPlans()[0].QuotaMB = 1
	if got := DefaultPlans()[0].QuotaMB; got != 1024 {
		t.Errorf("DefaultPlans()[0].QuotaMB after a caller's change = %d, want 1024", got)
	}
}

func TestPlansGet(t *testing.T) {
	extra := []mailstore.Plan{
		{Name: "Unlimited", QuotaMB: MaxQuotaMB, RetentionDays: MaxRetentionDays, TransferMonthlyMB: MaxTransferMB},
		{Name: "BUSINESS", QuotaMB: 3000, RetentionDays: 61, TransferMonthlyMB: 12000},
	}
	ps := NewPlans(extra)
	for _, tc := range []struct {
		name, in string
		want     mailstore.Plan
		err      error
	}{
		{"starter", "starter", mailstore.Plan{Name: "starter", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 5120}, nil},
		{"title case", "Starter", mailstore.Plan{Name: "starter", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 5120}, nil},
		{"upper case", "ENTERPRISE", mailstore.Plan{Name: "enterprise", QuotaMB: 5120, RetentionDays: 90, TransferMonthlyMB: 51200}, nil},
		{"extra plan", "unlimited", mailstore.Plan{Name: "unlimited", QuotaMB: MaxQuotaMB, RetentionDays: MaxRetentionDays, TransferMonthlyMB: MaxTransferMB}, nil},
		{"extra plan mixed case", "UnLimited", mailstore.Plan{Name: "unlimited", QuotaMB: MaxQuotaMB, RetentionDays: MaxRetentionDays, TransferMonthlyMB: MaxTransferMB}, nil},
		{"extra replaces default", "business", mailstore.Plan{Name: "business", QuotaMB: 3000, RetentionDays: 61, TransferMonthlyMB: 12000}, nil},
		{"unknown", "gold", mailstore.Plan{}, ErrUnknownPlan},
		{"empty", "", mailstore.Plan{}, ErrUnknownPlan},
		{"padded", " starter", mailstore.Plan{}, ErrUnknownPlan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ps.Get(tc.in)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("Get(%q) = %v, want %v", tc.in, err, tc.err)
			}
			if got != tc.want {
				t.Errorf("Get(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
	// Without extras the defaults stand.
	if got, err := NewPlans(nil).Get("Business"); err != nil || got.QuotaMB != 2048 {
		t.Errorf("NewPlans(nil).Get(Business) = %+v, %v, want the default business plan", got, err)
	}
}

func TestPlansAll(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []mailstore.Plan
		want  []string
	}{
		{"defaults", nil, []string{"starter", "business", "enterprise"}},
		{"extras sorted after defaults", []mailstore.Plan{{Name: "Zeta"}, {Name: "alpha"}, {Name: "mid"}},
			[]string{"starter", "business", "enterprise", "alpha", "mid", "zeta"}},
		{"replaced default keeps its place", []mailstore.Plan{{Name: "extra"}, {Name: "Starter", QuotaMB: 1}},
			[]string{"starter", "business", "enterprise", "extra"}},
		{"repeated extra once", []mailstore.Plan{{Name: "b"}, {Name: "B", QuotaMB: 9}, {Name: "a"}},
			[]string{"starter", "business", "enterprise", "a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := NewPlans(tc.extra)
			all := ps.All()
			var got []string
			for _, p := range all {
				got = append(got, p.Name)
				if q, err := ps.Get(p.Name); err != nil || q != p {
					t.Errorf("Get(%q) = %+v, %v, want %+v as listed", p.Name, q, err, p)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("All() names = %v, want %v", got, tc.want)
			}
			// All does not reorder the set it came from.
			if again := ps.All(); fmt.Sprint(again) != fmt.Sprint(all) {
				t.Errorf("All() again = %v, want %v", again, all)
			}
		})
	}
	if got := NewPlans([]mailstore.Plan{{Name: "Starter", QuotaMB: 1}}).All()[0]; got.QuotaMB != 1 {
		t.Errorf("All()[0] with a replaced starter = %+v, want quota 1", got)
	}
}
