package sieve

import (
	"strings"
)

// ShouldRespond applies the checks of RFC 5230 sections 4.5 and 4.6 that
// need only the message and its envelope: the responder calls it for a
// Vacation action before its once-per-Days memory. It returns false and
// why when no reply may be sent: the sender is null or an automated
// address (MAILER-DAEMON, owner-*, *-request, LISTSERV, majordomo), the
// message is automatic (Auto-Submitted other than "no"), from a list
// (List-Id and the other List-* fields) or bulk (Precedence bulk, list
// or junk), or none of the user's addresses (env.To, with and without
// its subaddress detail, and v.Addresses) is in To, Cc, Bcc, Resent-To,
// Resent-Cc or Resent-Bcc. sep is the subaddress separator ("" for "+").
func ShouldRespond(msg Message, env Envelope, v Vacation, sep string) (bool, string) {
	if sep == "" {
		sep = "+"
	}
	from := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(env.From), "<"), ">")
	if from == "" {
		return false, "null sender"
	}
	local, _, _ := splitAddress(from)
	l := strings.ToLower(local)
	switch {
	case l == "mailer-daemon", l == "listserv", l == "majordomo",
		strings.HasPrefix(l, "owner-"), strings.HasSuffix(l, "-request"):
		return false, "sender " + from + " is automated"
	}
	for _, h := range msg.Header("Auto-Submitted") {
		v := strings.ToLower(strings.TrimSpace(h))
		if i := strings.IndexByte(v, ';'); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		if v != "no" {
			return false, "Auto-Submitted: " + h
		}
	}
	for _, f := range []string{"List-Id", "List-Help", "List-Subscribe", "List-Unsubscribe", "List-Post", "List-Owner", "List-Archive"} {
		if len(msg.Header(f)) > 0 {
			return false, "mailing list (" + f + ")"
		}
	}
	for _, h := range msg.Header("Precedence") {
		switch strings.ToLower(strings.TrimSpace(h)) {
		case "bulk", "list", "junk":
			return false, "Precedence: " + h
		}
	}
	mine := map[string]bool{}
	add := func(a string) {
		a = strings.ToLower(strings.TrimSpace(angleAddr(a)))
		if a == "" {
			return
		}
		mine[a] = true
		if lp, dom, ok := splitAddress(a); ok {
			if i := strings.Index(lp, sep); i >= 0 {
				mine[lp[:i]+"@"+dom] = true
			}
		}
	}
	add(env.To)
	for _, a := range v.Addresses {
		add(a)
	}
	if mine[strings.ToLower(from)] {
		return false, "sender is the user"
	}
	for _, f := range []string{"To", "Cc", "Bcc", "Resent-To", "Resent-Cc", "Resent-Bcc"} {
		for _, h := range msg.Header(f) {
			if strings.Contains(h, "=?") {
				if d, err := wordDecoder.DecodeHeader(h); err == nil {
					h = d
				}
			}
			for _, a := range addresses(h) {
				if mine[strings.ToLower(a)] {
					return true, ""
				}
			}
		}
	}
	return false, "none of the user's addresses is a recipient in the header"
}
