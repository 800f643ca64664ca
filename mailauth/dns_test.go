package mailauth

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

func TestDNSRecords(t *testing.T) {
	ks := keys(t)
	edTXT, _ := PublicKeyRecord(ks[0])
	rsaTXT, _ := PublicKeyRecord(ks[1])
	const mx = "mx.mailhost.test"
	want := []Record{
		{Type: "MX", Name: "example.com", Value: mx, Priority: 10},
		{Type: "TXT", Name: "example.com", Value: "v=spf1 mx a:mx.mailhost.test ~all"},
		{Type: "TXT", Name: "ed20261122._domainkey.example.com", Value: edTXT},
		{Type: "TXT", Name: "rsa20261122._domainkey.example.com", Value: rsaTXT},
		{Type: "TXT", Name: "_dmarc.example.com", Value: "v=DMARC1; p=none; adkim=r; aspf=r"},
		{Type: "SRV", Name: "_submissions._tcp.example.com", Value: mx, Priority: 5, Weight: 1, Port: 465},
		{Type: "SRV", Name: "_submission._tcp.example.com", Value: mx, Priority: 10, Weight: 1, Port: 587},
		{Type: "SRV", Name: "_imaps._tcp.example.com", Value: mx, Priority: 5, Weight: 1, Port: 993},
		{Type: "SRV", Name: "_imap._tcp.example.com", Value: mx, Priority: 10, Weight: 1, Port: 143},
		{Type: "CNAME", Name: "autoconfig.example.com", Value: mx},
		{Type: "CNAME", Name: "autodiscover.example.com", Value: mx},
	}
	bad := mailstore.DKIMKey{Selector: "broken", Algorithm: AlgRSA, Private: []byte("x")}
	tests := []struct {
		name string
		keys []mailstore.DKIMKey
		want []Record
	}{
		{"two keys", ks, want},
		{"no keys", nil, append(append([]Record{}, want[:2]...), want[4:]...)},
		{"a broken key is left out", append([]mailstore.DKIMKey{bad}, ks...), want},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DNSRecords("example.com", mx, tt.keys)
			if len(got) != len(tt.want) {
				t.Fatalf("DNSRecords() = %d records, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, g := range got {
				if g.Purpose == "" {
					t.Errorf("record %d (%s %s) has no purpose", i, g.Type, g.Name)
				}
				g.Purpose = ""
				if g != tt.want[i] {
					t.Errorf("record %d = %+v, want %+v", i, g, tt.want[i])
				}
			}
		})
	}
}

func TestRecordZone(t *testing.T) {
	long := strings.Repeat("a", 300)
	tests := []struct {
		r    Record
		want string
	}{
		{Record{Type: "MX", Name: "example.com", Value: "mx.host", Priority: 10}, "example.com. IN MX 10 mx.host."},
		{Record{Type: "SRV", Name: "_imaps._tcp.example.com", Value: "mx.host", Priority: 5, Weight: 1, Port: 993},
			"_imaps._tcp.example.com. IN SRV 5 1 993 mx.host."},
		{Record{Type: "CNAME", Name: "autoconfig.example.com", Value: "mx.host"}, "autoconfig.example.com. IN CNAME mx.host."},
		{Record{Type: "TXT", Name: "example.com", Value: `v=spf1 "q" ~all`}, `example.com. IN TXT "v=spf1 \"q\" ~all"`},
		{Record{Type: "TXT", Name: "k._domainkey.example.com", Value: long},
			`k._domainkey.example.com. IN TXT "` + long[:255] + `" "` + long[255:] + `"`},
	}
	for _, tt := range tests {
		t.Run(tt.r.Type, func(t *testing.T) {
			if got := tt.r.Zone(); got != tt.want {
				t.Errorf("Zone() = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRecordJSON(t *testing.T) {
	for _, tt := range []struct {
		r    Record
		want string
	}{
		{Record{Type: "TXT", Name: "example.com", Value: "v=spf1 ~all", Purpose: "SPF"},
			`{"type":"TXT","name":"example.com","value":"v=spf1 ~all","purpose":"SPF"}`},
		{Record{Type: "SRV", Name: "_imap._tcp.example.com", Value: "mx", Priority: 10, Weight: 1, Port: 143, Purpose: "IMAP"},
			`{"type":"SRV","name":"_imap._tcp.example.com","value":"mx","priority":10,"weight":1,"port":143,"purpose":"IMAP"}`},
	} {
		b, err := json.Marshal(tt.r)
		if err != nil || string(b) != tt.want {
			t.Errorf("json.Marshal(%s) = %s, %v; want %s", tt.r.Type, b, err, tt.want)
		}
	}
}
