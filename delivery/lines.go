package delivery

import "bytes"

var (
	crlf = []byte("\r\n")
	cr   = []byte("\r")
	lf   = []byte("\n")
)

// NormalizeLineEnds returns msg with every line ended by CRLF: a bare LF
// and a bare CR (one not part of a CRLF) each become CRLF. It answers msg
// itself, not a copy, when there is nothing to change, as for almost all
// mail.
//
// Why (SMTP smuggling): RFC 5321 section 2.3.8 allows CR and
// LF in message content only together, as CRLF, yet senders emit bare
// ones, and servers differ in what they take for a line end, and so for
// the end of data (section 4.1.1.4): some read <LF>.<LF> or <CR>.<CR> as
// <CRLF>.<CRLF>. A message that carries such a sequence inside its body
// and is passed on unchanged can end early at a lenient next hop, whose
// reading of the rest is a second message from this server. Made CRLF,
// the sequence is a line holding ".", which the SMTP client dot-stuffs
// (section 4.5.2), so every next hop reads one message, the same one
// this server stored. Both readings of a bare CR or LF as a line end are
// made true rather than one of them: what is stored, shown over IMAP,
// DKIM-signed and relayed is what a lenient parser would have seen
// anyway. RFC 6376 section 5.3 has DKIM signers do the same conversion
// before signing, so signed mail has none to change.
func NormalizeLineEnds(msg []byte) []byte {
	n := bytes.Count(msg, crlf)
	if bytes.Count(msg, cr) == n && bytes.Count(msg, lf) == n {
		return msg
	}
	out := make([]byte, 0, len(msg)+len(msg)/32+2)
	for i := 0; i < len(msg); i++ {
		switch c := msg[i]; {
		case c == '\r' && i+1 < len(msg) && msg[i+1] == '\n':
			out = append(out, '\r', '\n')
			i++
		case c == '\r', c == '\n':
			out = append(out, '\r', '\n')
		default:
			out = append(out, c)
		}
	}
	return out
}
