package autoreply

import (
	"net/textproto"
	"testing"
)

func TestReplyableMessage(t *testing.T) {
	tests := []struct {
		name string
		h    textproto.MIMEHeader
		want bool
	}{
		{"plain", textproto.MIMEHeader{}, true},
		{"auto-submitted no", textproto.MIMEHeader{"Auto-Submitted": {"no"}}, true},
		{"auto-submitted no with comment", textproto.MIMEHeader{"Auto-Submitted": {"No (manual)"}}, true},
		{"auto-replied", textproto.MIMEHeader{"Auto-Submitted": {"auto-replied"}}, false},
		{"auto-generated", textproto.MIMEHeader{"Auto-Submitted": {"auto-generated"}}, false},
		{"precedence bulk", textproto.MIMEHeader{"Precedence": {"Bulk"}}, false},
		{"precedence list", textproto.MIMEHeader{"Precedence": {"list"}}, false},
		{"precedence junk", textproto.MIMEHeader{"Precedence": {" junk"}}, false},
		{"precedence first-class", textproto.MIMEHeader{"Precedence": {"first-class"}}, true},
		{"list-id", textproto.MIMEHeader{"List-Id": {"<l.example>"}}, false},
		{"list-unsubscribe", textproto.MIMEHeader{"List-Unsubscribe": {"<mailto:u@l.example>"}}, false},
		{"quarantined", textproto.MIMEHeader{"X-Mailhost-Quarantine": {"dmarc"}}, false},
	}
	for _, tt := range tests {
		if got := replyableMessage(tt.h); got != tt.want {
			t.Errorf("replyableMessage(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestReplyableSender(t *testing.T) {
	for addr, want := range map[string]bool{
		"bob@remote.test":                       true,
		"mailer-daemon@remote.test":             false,
		"owner-list@lists.test":                 false,
		"list-request@lists.test":               false,
		"srs0=abcd=xy=remote.test=bob@fwd.test": false,
	} {
		if got := replyableSender(addr); got != want {
			t.Errorf("replyableSender(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestMsgID(t *testing.T) {
	for in, want := range map[string]string{
		"<a@b>":            "<a@b>",
		" <a@b> (comment)": "<a@b>",
		"none":             "",
		"<a b@c>":          "",
		"":                 "",
	} {
		if got := msgID(in); got != want {
			t.Errorf("msgID(%q) = %q, want %q", in, got, want)
		}
	}
}
