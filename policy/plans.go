package policy

import (
	"errors"
	"sort"
	"strings"

	"github.com/mailhost/mailhost/mailstore"
)

// Ranges of the limit values (docs/api.md, "Conventions").
const (
	MinQuotaMB, MaxQuotaMB             = 1, 1 << 20
	MinRetentionDays, MaxRetentionDays = 1, 36500
	MinTransferMB, MaxTransferMB       = 1, 1 << 30
	MinPasswordLen, MaxPasswordLen     = 8, 1024
)

// ErrUnknownPlan is answered for a plan name not on offer.
var ErrUnknownPlan = errors.New("unknown plan")

// DefaultPlans are the three plans of the partner contract, in MB
// (1 GB = 1024 MB).
func DefaultPlans() []mailstore.Plan {
	return []mailstore.Plan{
		{Name: "starter", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 5120},
		{Name: "business", QuotaMB: 2048, RetentionDays: 60, TransferMonthlyMB: 10240},
		{Name: "enterprise", QuotaMB: 5120, RetentionDays: 90, TransferMonthlyMB: 51200},
	}
}

// Plans is the set of plans on offer, looked up case-insensitively.
type Plans struct {
	byName map[string]mailstore.Plan
	order  []string
}

// NewPlans builds a plan set from the defaults plus extra (an extra plan
// with a default's name replaces it). Names are lower-cased.
func NewPlans(extra []mailstore.Plan) *Plans {
	ps := &Plans{byName: map[string]mailstore.Plan{}}
	for _, p := range append(DefaultPlans(), extra...) {
		p.Name = strings.ToLower(p.Name)
		if _, ok := ps.byName[p.Name]; !ok {
			ps.order = append(ps.order, p.Name)
		}
		ps.byName[p.Name] = p
	}
	return ps
}

// Get finds a plan by name, ignoring case.
func (ps *Plans) Get(name string) (mailstore.Plan, error) {
	p, ok := ps.byName[strings.ToLower(name)]
	if !ok {
		return mailstore.Plan{}, ErrUnknownPlan
	}
	return p, nil
}

// All lists the plans: the defaults first, then the others by name.
func (ps *Plans) All() []mailstore.Plan {
	names := append([]string(nil), ps.order...)
	def := len(DefaultPlans())
	if len(names) > def {
		sort.Strings(names[def:])
	}
	out := make([]mailstore.Plan, 0, len(names))
	for _, n := range names {
		out = append(out, ps.byName[n])
	}
	return out
}
