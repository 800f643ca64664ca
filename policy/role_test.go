package policy

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

func TestOperatorMailbox(t *testing.T) {
	for _, tc := range []struct{ host, want string }{
		{"mx.example.net", "postmaster@mx.example.net"},
		{"MX.Example.NET", "postmaster@mx.example.net"},
		{"localhost", "postmaster@mailhost.localhost"},
		{"vm", "postmaster@vm.localhost"},
		{"VM-1", "postmaster@vm-1.localhost"},
		{"bad_host", "postmaster@badhost.localhost"},
		{"1.2.3.4", "postmaster@1.localhost"},
		{"", ""},
		{"___", ""},
	} {
		got, err := OperatorMailbox(tc.host)
		if got != tc.want || (tc.want == "") != errors.Is(err, ErrBadDomain) {
			t.Errorf("OperatorMailbox(%q) = %q, %v; want %q", tc.host, got, err, tc.want)
		}
	}
}

func TestRoleFallback(t *testing.T) {
	const op = "postmaster@mx.test"
	unknown := fmt.Errorf("resolve: %w", ErrUnknownUser)
	for _, tc := range []struct {
		addr     string
		resolved error
		operator string
		want     bool
	}{
		{"postmaster", nil, op, true},
		{"postmaster", nil, "", false},
		{"postmaster@a.test", unknown, op, true},
		{"abuse@a.test", unknown, op, true},
		{"postmaster@a.test", nil, op, false},          // the domain's own
		{"postmaster@a.test", ErrNotHosted, op, false}, // not hosted here
		{"postmaster@a.test", ErrAliasLoop, op, false},
		{"info@a.test", unknown, op, false},
		{"xpostmaster@a.test", unknown, op, false},
		{op, unknown, op, false}, // the operator's own address: no loop
	} {
		to, ok := RoleFallback(tc.addr, tc.resolved, tc.operator)
		if ok != tc.want || ok && to != tc.operator {
			t.Errorf("RoleFallback(%q, %v, %q) = %q, %v; want %v", tc.addr, tc.resolved, tc.operator, to, ok, tc.want)
		}
	}
}

func TestMayReach(t *testing.T) {
	const own, other = 1, 2
	unverified := mailstore.Domain{Name: "bigbank.example", PartnerID: own}
	verified := mailstore.Domain{Name: "a.test", PartnerID: own, Verified: true}
	ownBox := mailstore.Mailbox{Email: "bob@a.test", PartnerID: own}
	otherBox := mailstore.Mailbox{Email: "eve@b.test", PartnerID: other}
	for _, tc := range []struct {
		name   string
		from   mailstore.Domain
		ms     []mailstore.Mailbox
		remote []string
		ok     bool
	}{
		{"verified to anyone", verified, []mailstore.Mailbox{ownBox, otherBox}, []string{"x@remote.test"}, true},
		{"unverified to its own partner", unverified, []mailstore.Mailbox{ownBox}, nil, true},
		{"unverified to another partner", unverified, []mailstore.Mailbox{ownBox, otherBox}, nil, false},
		{"unverified to a remote address", unverified, nil, []string{"x@remote.test"}, false},
	} {
		err := MayReach(tc.from, own, tc.ms, tc.remote)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrSenderNotVerified) {
			t.Errorf("%s: MayReach = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func TestFromOutside(t *testing.T) {
	m := mailstore.Mailbox{PartnerID: 2}
	for _, tc := range []struct {
		sender int64
		want   bool
	}{{0, true}, {NoPartner, true}, {1, true}, {2, false}} {
		if got := FromOutside(tc.sender, m); got != tc.want {
			t.Errorf("FromOutside(%d, partner 2's mailbox) = %v, want %v", tc.sender, got, tc.want)
		}
	}
}
