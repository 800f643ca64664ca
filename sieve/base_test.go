package sieve

import (
	"testing"
)

// rfc5228Example is the extended example of RFC 5228 section 9.
const rfc5228Example = `#
# Example Sieve Filter
# Declare any optional features or extension used by the script
#
require ["fileinto"];

#
# Handle messages from known mailing lists
# Move messages from IETF filter discussion list to filter mailbox
#
if header :is "Sender" "owner-ietf-mta-filters@imc.org"
        {
        fileinto "filter";  # move to "filter" mailbox
        }
#
# Keep all messages to or from people in my company
#
elsif address :DOMAIN :is ["From", "To"] "example.com"
        {
        keep;               # keep in "In" mailbox
        }

#
# Try and catch unsolicited email.  If a message is not to me,
# or it contains a subject known to be spam, file it away.
#
elsif anyof (NOT address :all :contains
               ["To", "Cc", "Bcc"] "me@example.com",
             header :matches "subject"
               ["*make*money*fast*", "*university*dipl*mas*"])
        {
        fileinto "spam";   # move to "spam" mailbox
        }
else
        {
        # Move all other (non-company) mail to "personal"
        # mailbox.
        fileinto "personal";
        }
`

func TestRFC5228(t *testing.T) {
	runCases(t, []runCase{
		{"9 list", rfc5228Example, "Sender: owner-ietf-mta-filters@imc.org\nTo: me@example.com\n\nx\n", Envelope{}, "fileinto:filter"},
		{"9 company", rfc5228Example, "From: Boss <boss@EXAMPLE.com>\nTo: me@example.org\n\nx\n", Envelope{}, "keep"},
		{"9 company in To", rfc5228Example, "From: a@b.example\nTo: x@c.example, Team <team@example.com>\n\nx\n", Envelope{}, "keep"},
		{"9 not to me", rfc5228Example, "From: a@b.example\nTo: you@example.org\n\nx\n", Envelope{}, "fileinto:spam"},
		{"9 spam subject", rfc5228Example, "From: a@b.example\nTo: list@lists.example.org\nCc: me@example.com\nSubject: MAKE big MONEY very FAST\n\nx\n", Envelope{}, "fileinto:spam"},
		{"9 personal", rfc5228Example, "From: a@b.example\nCc: Me <me@example.com>\nSubject: hello\n\nx\n", Envelope{}, "fileinto:personal"},

		// 2.3 comments.
		{"2.3 bracket comment", "if size :over 100K { /* this is a comment\n   this is still a comment */ discard /* this is a comment\n   */ ;\n}", "Subject: x\n\n" + string(make([]byte, 200<<10)), Envelope{}, "discard"},
		{"2.3 small", "if size :over 100K { /* c */ discard /* c */ ;\n}", "Subject: x\n\nsmall\n", Envelope{}, "implicit"},
		// 2.5.1 test lists.
		{"2.5.1 no Date", `if anyof (not exists ["From", "Date"], header :contains "from" "fool@example.com") { discard; }`, "From: a@b.example\n\nx\n", Envelope{}, "discard"},
		{"2.5.1 fool", `if anyof (not exists ["From", "Date"], header :contains "from" "fool@example.com") { discard; }`, "From: Fool <FOOL@example.com>\nDate: Tue, 3 Jul 2007 10:00:00 +0000\n\nx\n", Envelope{}, "discard"},
		{"2.5.1 neither", `if anyof (not exists ["From", "Date"], header :contains "from" "fool@example.com") { discard; }`, "From: wise@example.com\nDate: Tue, 3 Jul 2007 10:00:00 +0000\n\nx\n", Envelope{}, "implicit"},
		// 2.7.1 :contains "" is in every value; :is "" only the empty one.
		{"2.7.1 empty contains", `if header :contains "X" "" { discard; }`, "X: frobnitzm\n\nx\n", Envelope{}, "discard"},
		{"2.7.1 empty is", `if header :is "X" "" { discard; }`, "X: frobnitzm\n\nx\n", Envelope{}, "implicit"},
		{"2.7.1 empty value is", `if header :is "X" "" { discard; }`, "X:\n\nx\n", Envelope{}, "discard"},
		{"2.7.1 contains nit", `if header :contains "X" ["fbm", "nit"] { discard; }`, "X: frobnitzm\n\nx\n", Envelope{}, "discard"},
		// 2.7.1 :matches, "?" one octet, "\" quotes.
		{"2.7.1 matches", `if header :matches "Subject" "frob*m" { discard; }`, "Subject: frobnitzm\n\nx\n", Envelope{}, "discard"},
		{"2.7.1 matches ?", `if header :matches "Subject" "fr?b??tzm" { discard; }`, "Subject: frobnitzm\n\nx\n", Envelope{}, "discard"},
		{"2.7.1 matches quoted", `if header :matches "Subject" "a\\*b" { discard; }`, "Subject: axb\n\nx\n", Envelope{}, "implicit"},
		{"2.7.1 matches quoted star", `if header :matches "Subject" "a\\*b" { discard; }`, "Subject: a*b\n\nx\n", Envelope{}, "discard"},
		{"2.7.1 matches whole", `if header :matches "Subject" "frob" { discard; }`, "Subject: frobnitzm\n\nx\n", Envelope{}, "implicit"},
		// 2.7.3 comparators: i;octet is case-sensitive, the default is not.
		{"2.7.3 casemap", `if header :is "Subject" "HELLO" { discard; }`, "Subject: hello\n\nx\n", Envelope{}, "discard"},
		{"2.7.3 octet", `if header :comparator "i;octet" :is "Subject" "HELLO" { discard; }`, "Subject: hello\n\nx\n", Envelope{}, "implicit"},
		// 2.7.2 encoded words are decoded; blanks around the value dropped.
		{"2.7.2 rfc2047", `if header :is "Subject" "Grüße aus Köln" { discard; }`, "Subject: =?ISO-8859-1?Q?Gr=FC=DFe_aus_K=F6ln?=\n\nx\n", Envelope{}, "discard"},
		{"2.7.2 rfc2047 utf-8 b", `if header :contains "Subject" "€" { discard; }`, "Subject:   =?UTF-8?B?4oKsIDEwMA==?=  \n\nx\n", Envelope{}, "discard"},
		{"2.7.2 folded", `if header :is "Subject" "one two" { discard; }`, "Subject: one\n two\n\nx\n", Envelope{}, "discard"},
		// 2.7.4 address parts.
		{"2.7.4 localpart", `if address :localpart "From" "ken" { discard; }`, "From: \"Ken, K.\" <ken@example.com>\n\nx\n", Envelope{}, "discard"},
		{"2.7.4 domain", `if address :domain :is "To" "example.org" { discard; }`, "To: a@example.com, b (comment) @ example.org\n\nx\n", Envelope{}, "discard"},
		{"2.7.4 group", `if address :all :is "To" "b@example.org" { discard; }`, "To: friends: a@example.com, b@example.org;\n\nx\n", Envelope{}, "discard"},
		{"2.7.4 invalid", `if address :domain :is "To" "" { discard; }`, "To: undisclosed-recipients:;\n\nx\n", Envelope{}, "implicit"},
		// 2.4.2.2 no field named "From:", and that is no error.
		{"2.4.2.2 bad name", `if exists "From:" { discard; }`, "From: a@b\n\nx\n", Envelope{}, "implicit"},
		{"2.4.2.2 bad header name", `if header :contains "From:" "" { discard; }`, "From: a@b\n\nx\n", Envelope{}, "implicit"},
		// 2.10.2, 2.10.3 implicit keep and duplicates.
		{"2.10.2 empty script", ``, "Subject: x\n\nx\n", Envelope{}, "implicit"},
		{"2.10.2 keep", `keep;`, "Subject: x\n\nx\n", Envelope{}, "keep"},
		{"2.10.3 keep twice", `keep; keep;`, "Subject: x\n\nx\n", Envelope{}, "keep"},
		{"2.10.3 fileinto twice", `require "fileinto"; fileinto "a"; fileinto "b"; fileinto "a";`, "Subject: x\n\nx\n", Envelope{}, "fileinto:a, fileinto:b"},
		{"2.10.3 fileinto INBOX is keep", `require "fileinto"; keep; fileinto "inbox";`, "Subject: x\n\nx\n", Envelope{}, "keep"},
		{"2.10.3 redirect twice", `redirect "a@example.com"; redirect "A@example.com";`, "Subject: x\n\nx\n", Envelope{}, "redirect:a@example.com"},
		// 3.3 stop.
		{"3.3 stop", `if true { stop; } discard;`, "Subject: x\n\nx\n", Envelope{}, "implicit"},
		{"3.1 elsif", `if false { discard; } elsif true { keep; } else { redirect "a@b.example"; }`, "Subject: x\n\nx\n", Envelope{}, "keep"},
		{"3.1 else", `if false { discard; } elsif false { keep; } else { redirect "a@b.example"; }`, "Subject: x\n\nx\n", Envelope{}, "redirect:a@b.example"},
		// 4.2 redirect cancels the implicit keep; 4.3 keep; 4.4 discard.
		{"4.2 redirect phrase", `redirect "Boss <boss@example.com>";`, "Subject: x\n\nx\n", Envelope{}, "redirect:boss@example.com"},
		{"4.2 redirect", `redirect "a@example.com";`, "Subject: x\n\nx\n", Envelope{}, "redirect:a@example.com"},
		{"4.4 discard then keep", `discard; keep;`, "Subject: x\n\nx\n", Envelope{}, "discard, keep"},
		// 5.4 envelope, 5.5 exists, 5.9 size.
		{"5.4 envelope from", `require "envelope"; if envelope :all :is "from" "tim@example.com" { discard; }`, "Subject: x\n\nx\n", Envelope{From: "tim@example.com"}, "discard"},
		{"5.4 envelope null", `require "envelope"; if envelope :all :is "from" "" { discard; }`, "Subject: x\n\nx\n", Envelope{From: ""}, "discard"},
		{"5.4 envelope null domain", `require "envelope"; if envelope :domain :is "from" "" { discard; }`, "Subject: x\n\nx\n", Envelope{From: ""}, "discard"},
		{"5.4 envelope null localpart", `require "envelope"; if envelope :localpart :is "from" "" { discard; }`, "Subject: x\n\nx\n", Envelope{From: "<>"}, "discard"},
		{"5.4 envelope to domain", `require "envelope"; if envelope :domain :is "to" "EXAMPLE.com" { discard; }`, "Subject: x\n\nx\n", Envelope{To: "me+x@example.com"}, "discard"},
		{"5.5 exists all", `if exists ["From", "Date"] { discard; }`, "From: a@b\n\nx\n", Envelope{}, "implicit"},
		{"5.9 size under", `if size :under 1K { discard; }`, "Subject: x\n\nx\n", Envelope{}, "discard"},
		{"5.9 size over", `if size :over 1K { discard; }`, "Subject: x\n\nx\n", Envelope{}, "implicit"},
		{"5.8 not", `if not true { discard; }`, "Subject: x\n\nx\n", Envelope{}, "implicit"},
		{"5.1 allof", `if allof (true, false) { discard; }`, "Subject: x\n\nx\n", Envelope{}, "implicit"},
		{"multi-line dot-stuffing", "require \"reject\";\nreject text:\n..a\n.b\n..\n.\n;", "Subject: x\n\nx\n", Envelope{}, "reject:.a\n.b\n.\n"},
	})
}

// The encoded-character examples of RFC 5228 section 2.4.2.4.
func TestEncodedCharacter(t *testing.T) {
	cases := []struct{ in, want string }{
		{`$${hex:40}`, `$@`},
		{`${hex: 40 }`, `@`},
		{`${HEX: 40}`, `@`},
		{`${hex:40`, `${hex:40`},
		{`${hex:400}`, `${hex:400}`},
		{`${hex:4${hex:30}}`, `${hex:40}`},
		{`${unicode:40}`, `@`},
		{`${ unicode:40}`, `${ unicode:40}`},
		{`${UNICODE:40}`, `@`},
		{`${UnICoDE:0000040}`, `@`},
		{`${Unicode:40}`, `@`},
		{`${Unicode:Cool}`, `${Unicode:Cool}`},
		{`${unicode:263a 20 263A}`, "☺ ☺"},
		{`${hex:e2 98 ba}`, "☺"},
	}
	for _, c := range cases {
		got, err := decodeEncoded(c.in)
		if err != nil || got != c.want {
			t.Errorf("decodeEncoded(%q) = %q, %v, want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{`${unicode:200000}`, `${Unicode:DF01}`} {
		if _, err := Parse([]byte(`require ["encoded-character"]; if header :is "x" "`+in+`" { keep; }`), ParseOptions{}); err == nil {
			t.Errorf("Parse of %s: no error, want one", in)
		}
	}
	// Without the require, the sequence is text.
	runCases(t, []runCase{
		{"example", `require "encoded-character"; if header :contains "Subject" "$${hex:24 24}" { discard; }`, "Subject: win $$$ now\n\nx\n", Envelope{}, "discard"},
		{"example no match", `require "encoded-character"; if header :contains "Subject" "$${hex:24 24}" { discard; }`, "Subject: win $$ now\n\nx\n", Envelope{}, "implicit"},
		{"not required", `if header :contains "Subject" "${hex:24}" { discard; }`, "Subject: ${hex:24}\n\nx\n", Envelope{}, "discard"},
	})
}
