package policy

import (
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

func TestDeliverLocally(t *testing.T) {
	const own, other = 1, 2
	for _, tc := range []struct {
		name   string
		sender int64
		to     mailstore.Domain
		want   bool
	}{
		{"MX, unverified domain", 0, mailstore.Domain{PartnerID: other}, true},
		{"MX, verified domain", 0, mailstore.Domain{PartnerID: other, Verified: true}, true},
		{"own partner, unverified", own, mailstore.Domain{PartnerID: own}, true},
		{"own partner, verified", own, mailstore.Domain{PartnerID: own, Verified: true}, true},
		{"other partner, verified", own, mailstore.Domain{PartnerID: other, Verified: true}, true},
		{"other partner, unverified", own, mailstore.Domain{PartnerID: other}, false},
		{"other partner, unverified, suspended", own, mailstore.Domain{PartnerID: other, Suspended: true}, false},
		{"other partner, verified before, lost", own, mailstore.Domain{PartnerID: other, VerifyToken: "t"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DeliverLocally(tc.sender, tc.to); got != tc.want {
				t.Errorf("DeliverLocally(%d, partner %d verified %v) = %v, want %v", tc.sender, tc.to.PartnerID, tc.to.Verified, got, tc.want)
			}
		})
	}
}

func TestReservedDomain(t *testing.T) {
	for _, tc := range []struct {
		name, host string
		want       bool
	}{
		{"mx.example.net", "mx.example.net", true},
		{"a.mx.example.net", "mx.example.net", true},
		{"a.b.mx.example.net", "MX.Example.Net.", true},
		{"example.net", "mx.example.net", false},
		{"xmx.example.net", "mx.example.net", false},
		{"mx.example.network", "mx.example.net", false},
		{"mx.example.net", "", false},
	} {
		if got := ReservedDomain(tc.name, tc.host); got != tc.want {
			t.Errorf("ReservedDomain(%q, %q) = %v, want %v", tc.name, tc.host, got, tc.want)
		}
	}
}
