package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// ctlPartnerLimits: a partner's domain limit, set, kept and enforced by
// CreateDomain.
func ctlPartnerLimits(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	b := c.partner("b")
	if a.MaxDomains != 0 {
		t.Errorf("CreatePartner().MaxDomains = %d, want 0 (no limit)", a.MaxDomains)
	}
	n := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name    string
		partner int64
		l       mailstore.PartnerLimits
		want    int64 // MaxDomains after
		err     error
	}{
		{"set", a.ID, mailstore.PartnerLimits{MaxDomains: n(2)}, 2, nil},
		{"repeat", a.ID, mailstore.PartnerLimits{MaxDomains: n(2)}, 2, nil},
		{"nil keeps", a.ID, mailstore.PartnerLimits{}, 2, nil},
		{"negative", a.ID, mailstore.PartnerLimits{MaxDomains: n(-1)}, 2, mailstore.ErrInvalidArgument},
		{"unknown partner", 9999, mailstore.PartnerLimits{MaxDomains: n(1)}, 2, mailstore.ErrPartnerNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := c.s.SetPartnerLimits(c.ctx, tc.partner, tc.l)
			if !ctlIs(err, tc.err) {
				t.Fatalf("SetPartnerLimits(%d, %+v) = %v, want %v", tc.partner, tc.l, err, tc.err)
			}
			if err == nil && (p.MaxDomains != tc.want || p.ID != a.ID || p.Name != "a") {
				t.Errorf("SetPartnerLimits() = %+v, want partner a with max domains %d", p, tc.want)
			}
			if got, err := c.s.PartnerByName(c.ctx, "a"); err != nil || got.MaxDomains != tc.want || !got.CreatedAt.Equal(a.CreatedAt) {
				t.Errorf("PartnerByName(a) = %+v, %v; want max domains %d, created at %v", got, err, tc.want, a.CreatedAt)
			}
		})
	}

	create := func(pid int64, name string) error {
		_, err := c.s.CreateDomain(c.ctx, pid, mailstore.NewDomain{Name: name, Plan: ctlStarter}, ctlNow)
		return err
	}
	steps := []struct {
		name string
		do   func() error
		err  error
	}{
		{"first", func() error { return create(a.ID, "a1.example") }, nil},
		{"second", func() error { return create(a.ID, "a2.example") }, nil},
		{"third is over the limit", func() error { return create(a.ID, "a3.example") }, mailstore.ErrDomainLimit},
		{"a name taken is still ErrDomainExists", func() error { return create(a.ID, "a1.example") }, mailstore.ErrDomainExists},
		{"another partner is not limited", func() error { return create(b.ID, "b1.example") }, nil},
		{"after a deletion there is room", func() error {
			if err := c.s.DeleteDomain(c.ctx, a.ID, "a2.example", false); err != nil {
				return err
			}
			return create(a.ID, "a3.example")
		}, nil},
		{"lowered below what it has: nothing deleted, nothing new", func() error {
			if _, err := c.s.SetPartnerLimits(c.ctx, a.ID, mailstore.PartnerLimits{MaxDomains: n(1)}); err != nil {
				return err
			}
			if _, total, err := c.s.Domains(c.ctx, a.ID, mailstore.Page{}); err != nil || total != 2 {
				return fmt.Errorf("Domains(a) = %d, %v; want 2", total, err)
			}
			return create(a.ID, "a4.example")
		}, mailstore.ErrDomainLimit},
		{"0 lifts the limit", func() error {
			if _, err := c.s.SetPartnerLimits(c.ctx, a.ID, mailstore.PartnerLimits{MaxDomains: n(0)}); err != nil {
				return err
			}
			return create(a.ID, "a4.example")
		}, nil},
	}
	for _, st := range steps {
		if err := st.do(); !ctlIs(err, st.err) {
			t.Errorf("%s: CreateDomain() = %v, want %v", st.name, err, st.err)
		}
	}
	if _, err := c.s.DomainByName(c.ctx, "a2.example"); !ctlIs(err, mailstore.ErrDomainNotFound) {
		t.Errorf("DomainByName(a2.example) = %v, want ErrDomainNotFound", err)
	}
	if _, total, err := c.s.Domains(c.ctx, a.ID, mailstore.Page{}); err != nil || total != 3 {
		t.Errorf("Domains(a) = %d, %v; want 3 (a1, a3, a4)", total, err)
	}
	ps, err := c.s.Partners(c.ctx)
	if err != nil || len(ps) != 2 || ps[0].MaxDomains != 0 || ps[1].MaxDomains != 0 {
		t.Errorf("Partners() = %+v, %v; want a and b without limit", ps, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.s.SetPartnerLimits(ctx, a.ID, mailstore.PartnerLimits{MaxDomains: n(5)}); !errors.Is(err, context.Canceled) {
		t.Errorf("SetPartnerLimits(done context) = %v, want context.Canceled", err)
	}
	if got, err := c.s.PartnerByName(c.ctx, "a"); err != nil || got.MaxDomains != 0 {
		t.Errorf("PartnerByName(a) after a call with a done context = %+v, %v; want max domains 0", got, err)
	}
}
