package sieve

import (
	"context"
	"strings"
	"testing"
)

const plain = "From: Sender <sender@example.org>\nTo: me@example.com\nSubject: hello\n\nbody\n"

func TestVariables(t *testing.T) {
	// RFC 5229 section 4.1, the modifiers on "juMBlEd?lETteRS=.*".
	mods := `require ["variables", "reject"];
set                        "a" "juMBlEd?lETteRS=.*";
set :length                "b" "${a}";
set :lower                 "c" "${a}";
set :upper                 "d" "${a}";
set :lowerfirst            "e" "${a}";
set :lowerfirst :upper     "f" "${a}";
set :upperfirst            "g" "${a}";
set :upperfirst :lower     "h" "${a}";
set :quotewildcard         "i" "${a}";
reject "${b}|${c}|${d}|${e}|${f}|${g}|${h}|${i}";
`
	// RFC 5229 section 3: references, unknown and malformed ones.
	refs := `require ["variables", "reject"];
set "company" "ACME";
reject "${full}|${company}|${BAD${Company}|${President, ${Company} Inc.}";
`
	vacationText := "require [\"variables\", \"reject\"];\nset \"honorific\"  \"Mr\";\nset \"first_name\" \"Wile\";\nset \"last_name\"  \"Coyote\";\nset \"vacation\" text:\nDear ${HONORIFIC} ${last_name},\nI'm out, please leave a message after the meep.\n.\n;\nreject \"${vacation}\";"
	// RFC 5229 section 3.2.
	lists := `require ["fileinto", "variables"];
if header :matches "List-ID" "*<*@*" {
    fileinto "INBOX.lists.${2}"; stop;
}
# Imagine the header
# Subject: [acme-users] [fwd] version 1.0 is out
if header :matches "Subject" "[*] *" {
    # ${1} will hold "acme-users",
    # ${2} will hold "[fwd] version 1.0 is out"
    fileinto "INBOX.lists.${1}"; stop;
}
# Imagine the header
# To: coyote@ACME.Example.COM
if address :matches ["To", "Cc"] ["coyote@**.com",
        "wile@**.com"] {
    # ${0} is the matching address
    # ${1} always holds the empty string
    # ${2} is part of the domain name ("ACME.Example")
    fileinto "INBOX.business.${2}|${0}|${1}"; stop;
} else {
    # Control wouldn't reach this block if any match was
    # successful, so no match variables are set at this
    # point.
}
if anyof (true, address :domain :matches "To" "*.com") {
    # The second test is never evaluated, so there are
    # still no match variables set.
    fileinto "none${1}"; stop;
}
`
	runCases(t, []runCase{
		{"4.1 modifiers", mods, plain, Envelope{}, `reject:18|jumbled?letters=.*|JUMBLED?LETTERS=.*|juMBlEd?lETteRS=.*|jUMBLED?LETTERS=.*|JuMBlEd?lETteRS=.*|Jumbled?letters=.*|juMBlEd\?lETteRS=.\*`},
		{"3 references", refs, plain, Envelope{}, `reject:|ACME|${BADACME|${President, ACME Inc.}`},
		{"3 text", vacationText, plain, Envelope{}, "reject:Dear Mr Coyote,\nI'm out, please leave a message after the meep.\n"},
		{"3.2 list-id", lists, "List-ID: Sieve <sieve.ietf.org@lists.example>\nSubject: x\n\nx\n", Envelope{}, "fileinto:INBOX.lists.sieve.ietf.org"},
		{"3.2 subject", lists, "Subject: [acme-users] [fwd] version 1.0 is out\n\nx\n", Envelope{}, "fileinto:INBOX.lists.acme-users"},
		{"3.2 to", lists, "To: coyote@ACME.Example.COM\nSubject: x\n\nx\n", Envelope{}, "fileinto:INBOX.business.ACME.Example|coyote@ACME.Example.COM|"},
		{"3.2 none", lists, "To: roadrunner@example.com\nSubject: x\n\nx\n", Envelope{}, "fileinto:none"},
		// 5: the string test.
		{"5 string", `require ["variables", "fileinto"]; set "state" "${state} pending"; if string :matches " ${state} " "* pending *" { fileinto "ok"; }`, plain, Envelope{}, "fileinto:ok"},
		{"5 string count empty", `require ["variables", "relational", "comparator-i;ascii-numeric", "fileinto"]; set "a" "x"; if string :count "eq" :comparator "i;ascii-numeric" ["${a}", "", "${b}"] "1" { fileinto "one"; }`, plain, Envelope{}, "fileinto:one"},
		// Names are case-insensitive; match variables stay after a failed test.
		{"names", `require ["variables", "fileinto"]; set "Folder" "X"; if header :matches "Subject" "h*o" {} if header :matches "Subject" "nomatch*" {} fileinto "${folder}${1}";`, plain, Envelope{}, "fileinto:Xell"},
		// :quotewildcard keeps a variable literal in a :matches key.
		{"quotewildcard", `require ["variables", "fileinto"]; set :quotewildcard "q" "a*"; if header :matches "Subject" "${q}" { fileinto "lit"; } else { fileinto "wild"; }`, "Subject: abc\n\nx\n", Envelope{}, "fileinto:wild"},
		{"quotewildcard literal", `require ["variables", "fileinto"]; set :quotewildcard "q" "a*"; if header :matches "Subject" "${q}" { fileinto "lit"; }`, "Subject: a*\n\nx\n", Envelope{}, "fileinto:lit"},
		{"unquoted wildcard", `require ["variables", "fileinto"]; set "q" "a*"; if header :matches "Subject" "${q}" { fileinto "wild"; }`, "Subject: abc\n\nx\n", Envelope{}, "fileinto:wild"},
		// Without the require, "${x}" is text.
		{"no require", `require "fileinto"; fileinto "${x}";`, plain, Envelope{}, "fileinto:${x}"},
	})

	// RFC 5229 section 4: long values are truncated, at a character.
	res, err := runOn(t, `require ["variables", "reject"]; set "a" "ééééé"; set "b" "${a}${a}${a}${a}"; reject "${b}";`, plain, Envelope{}, RunOptions{MaxVariableSize: 7})
	if err != nil || res.Actions[0].(Reject).Reason != "ééé" {
		t.Errorf("truncated variable = %+v, %v, want ééé", res.Actions, err)
	}
}

func TestImap4flags(t *testing.T) {
	// RFC 5232 section 7 (the example, shortened to the flag commands).
	script := `require ["imap4flags", "fileinto", "variables"];
if size :over 500K {
    setflag "\\Deleted";
}
if header :contains "from" "boss@frobnitzm.example.edu" {
    setflag "flagvar" "\\Flagged";
    fileinto :flags "${flagvar}" "INBOX.From Boss";
}
if header :contains "Disposition-Notification-To" "mel@example.com" {
    addflag "flagvar" "$MDNRequired";
}
if header :contains "from" "imap@cac.washington.example.edu" {
    removeflag "flagvar" "$MDNRequired";
    fileinto :flags "${flagvar}" "INBOX.imap-list";
}
`
	big := "From: a@b\nSubject: x\n\n" + strings.Repeat("x", 600<<10)
	runCases(t, []runCase{
		{"7 boss", script, "From: boss@frobnitzm.example.edu\n\nx\n", Envelope{}, `fileinto:INBOX.From Boss[\Flagged]`},
		{"7 big", script, big, Envelope{}, `implicit[\Deleted]`},
		{"7 imap list", script, "From: imap@cac.washington.example.edu\nDisposition-Notification-To: mel@example.com\n\nx\n", Envelope{}, `fileinto:INBOX.imap-list`},
		{"7 mdn", `require ["imap4flags", "fileinto", "variables"];
if header :contains "Disposition-Notification-To" "mel@example.com" { addflag "flagvar" "$MDNRequired"; }
fileinto :flags "${flagvar}" "x";`, "Disposition-Notification-To: mel@example.com\n\nx\n", Envelope{}, `fileinto:x[$MDNRequired]`},
		// 3: duplicates (any case) and blanks within a string.
		{"3 addflag", `require "imap4flags"; addflag "\\Deleted \\Answered"; addflag ["\\deleted", "\\Answered", "$Label"]; keep;`, plain, Envelope{}, `keep[\Deleted \Answered $Label]`},
		{"3 removeflag", `require "imap4flags"; setflag "A B C"; removeflag "b"; keep;`, plain, Envelope{}, `keep[A C]`},
		{"5 keep :flags", `require "imap4flags"; setflag "A"; keep :flags "B";`, plain, Envelope{}, `keep[B]`},
		// 5: hasflag, internal variable "A B".
		{"5 hasflag is", `require ["imap4flags", "fileinto"]; setflag "A B"; if hasflag :is "b A" { fileinto "y"; }`, plain, Envelope{}, `fileinto:y[A B]`},
		{"5 hasflag list", `require ["imap4flags", "fileinto"]; setflag "A B"; if hasflag ["b","A"] { fileinto "y"; }`, plain, Envelope{}, `fileinto:y[A B]`},
		{"5 hasflag no", `require ["imap4flags", "fileinto"]; setflag "A B"; if hasflag "C" { fileinto "y"; }`, plain, Envelope{}, `implicit[A B]`},
		{"5 hasflag comparator", `require ["imap4flags", "fileinto"]; setflag "A B"; if hasflag :comparator "i;octet" :is "a" { fileinto "y"; }`, plain, Envelope{}, `implicit[A B]`},
		{"5 hasflag count variable", `require ["imap4flags", "relational", "comparator-i;ascii-numeric", "variables", "fileinto"]; set "MyFlags" "x y z"; if hasflag :count "ge" :comparator "i;ascii-numeric" "MyFlags" "2" { fileinto "two"; }`, plain, Envelope{}, `fileinto:two`},
		{"5 hasflag count", `require ["imap4flags", "relational", "comparator-i;ascii-numeric", "fileinto"]; setflag "A B"; if hasflag :count "ge" :comparator "i;ascii-numeric" "2" { fileinto "two"; }`, plain, Envelope{}, `fileinto:two[A B]`},
	})
	// 5: MyVar holds "NonJunk Junk gnus-forward $Forwarded NotJunk JunkRecorded $Junk $NotJunk".
	myvar := `require ["imap4flags", "variables", "fileinto"];
set "MyVar" "NonJunk Junk gnus-forward $Forwarded NotJunk JunkRecorded $Junk $NotJunk";
`
	for _, c := range []struct {
		test string
		want bool
	}{
		{`hasflag :contains "MyVar" "Junk"`, true},
		{`hasflag :contains "MyVar" "forward"`, true},
		{`hasflag :contains "MyVar" ["label", "forward"]`, true},
		{`hasflag :contains "MyVar" ["junk", "forward"]`, true},
		{`hasflag :contains "MyVar" "junk forward"`, true},
		{`hasflag :contains "MyVar" "forward junk"`, true},
		{`hasflag :contains "MyVar" "label"`, false},
		{`hasflag :contains "MyVar" ["label1", "label2"]`, false},
		{`hasflag :is "MyVar" "Junk"`, true},
		{`hasflag :is "MyVar" "forward"`, false},
	} {
		res, err := runOn(t, myvar+"if "+c.test+` { fileinto "yes"; }`, plain, Envelope{}, RunOptions{})
		if got := !res.ImplicitKeep; err != nil || got != c.want {
			t.Errorf("%s = %v, %v, want %v", c.test, got, err, c.want)
		}
	}
}

func TestVacation(t *testing.T) {
	runCases(t, []runCase{
		{"4 cyrus", `require "vacation";
if header :contains "subject" "cyrus" {
    vacation "I'm out -- send mail to cyrus-bugs";
} else {
    vacation "I'm out -- call me at +1 304 555 0123";
}`, "Subject: cyrus bug\n\nx\n", Envelope{}, "vacation:7:I'm out -- send mail to cyrus-bugs, implicit"},
		{"4.4 redirect or vacation", `require "vacation";
if header :contains "from" "boss@example.edu" {
    redirect "pleeb@isp.example.org";
} else {
    vacation "Sorry, I'm away, I'll read your message when I get around to it.";
}`, "From: boss@example.edu\n\nx\n", Envelope{}, "redirect:pleeb@isp.example.org"},
		{"4.1 days", `require "vacation";
vacation :days 23 :addresses ["tjs@example.edu", "ts4z@landru.example.edu"]
   "I'm away until October 19.  If it's an emergency, call 911, I guess." ;`, plain, Envelope{}, "vacation:23:I'm away until October 19.  If it's an emergency, call 911, I guess., implicit"},
		{"4.8 language", `require "vacation";
if header :contains ["accept-language", "content-language"] "en" {
    vacation "I am away.";
} else {
    vacation "Je suis parti.";
}`, "Content-Language: fr\n\nx\n", Envelope{}, "vacation:7:Je suis parti., implicit"},
		{"twice", `require "vacation"; vacation "a"; vacation "b";`, plain, Envelope{}, "error: more than one vacation"},
		{"days 0", `require "vacation"; vacation :days 0 "a";`, plain, Envelope{}, "vacation:1:a, implicit"},
	})

	s := mustParse(t, `require ["vacation", "variables"];
if header :matches "subject" "*" {
    vacation :subject "Automatic response to: ${1}" :from "Me <me@example.com>" :mime :handle "h1" text:
Content-Type: text/plain

I'm away.
.
;
}`)
	res, err := s.Run(context.Background(), NewMessage([]byte(crlf(plain))), Envelope{}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Actions[0].(Vacation)
	if v.Subject != "Automatic response to: hello" || v.From != "Me <me@example.com>" || !v.MIME || v.Handle != "h1" || !strings.HasPrefix(v.Reason, "Content-Type: text/plain") {
		t.Errorf("Vacation = %+v", v)
	}
	// Without :handle, the handle follows the arguments (RFC 5230 section 4.2).
	h := func(script string) string {
		res, err := runOn(t, script, plain, Envelope{}, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Actions[0].(Vacation).Handle
	}
	a, b, c := h(`require "vacation"; vacation "away";`), h(`require "vacation"; vacation :days 3 "away";`), h(`require "vacation"; vacation "back soon";`)
	if a == "" || a != b || a == c {
		t.Errorf("handles %q %q %q: want the first two equal and the third different", a, b, c)
	}
}

func TestShouldRespond(t *testing.T) {
	env := Envelope{From: "sender@example.org", To: "me+tag@example.com"}
	cases := []struct {
		name string
		msg  string
		env  Envelope
		v    Vacation
		want bool
	}{
		{"to me", "To: Me <me+tag@example.com>\n\nx\n", env, Vacation{}, true},
		{"to me without detail", "To: me@example.com\n\nx\n", env, Vacation{}, true},
		{"cc alias", "To: a@example.net\nCc: alias@example.com\n\nx\n", env, Vacation{Addresses: []string{"alias@example.com"}}, true},
		{"bcc only by envelope", "To: list@example.net\n\nx\n", env, Vacation{}, false},
		{"null sender", "To: me@example.com\n\nx\n", Envelope{To: "me@example.com"}, Vacation{}, false},
		{"mailer-daemon", "To: me@example.com\n\nx\n", Envelope{From: "MAILER-DAEMON@example.org", To: "me@example.com"}, Vacation{}, false},
		{"owner-", "To: me@example.com\n\nx\n", Envelope{From: "owner-list@example.org", To: "me@example.com"}, Vacation{}, false},
		{"-request", "To: me@example.com\n\nx\n", Envelope{From: "list-request@example.org", To: "me@example.com"}, Vacation{}, false},
		{"auto-submitted", "To: me@example.com\nAuto-Submitted: auto-replied\n\nx\n", env, Vacation{}, false},
		{"auto-submitted no", "To: me@example.com\nAuto-Submitted: no\n\nx\n", env, Vacation{}, true},
		{"list-id", "To: me@example.com\nList-Id: <l.example.org>\n\nx\n", env, Vacation{}, false},
		{"precedence bulk", "To: me@example.com\nPrecedence: bulk\n\nx\n", env, Vacation{}, false},
		{"from myself", "To: me@example.com\n\nx\n", Envelope{From: "me@example.com", To: "me@example.com"}, Vacation{}, false},
	}
	for _, c := range cases {
		got, why := ShouldRespond(NewMessage([]byte(crlf(c.msg))), c.env, c.v, "")
		if got != c.want {
			t.Errorf("%s: ShouldRespond = %v (%s), want %v", c.name, got, why, c.want)
		}
	}
}

func TestSubaddress(t *testing.T) {
	// RFC 5233 section 5.
	script := `require ["envelope", "subaddress", "fileinto"];
if envelope :user "to" "postmaster" {
    fileinto "inbox.postmaster";
    stop;
}
if envelope :detail "to" "mta-filters" {
    fileinto "inbox.ietf-mta-filters";
}
if envelope :detail "to" "foo" {
    redirect "ken@example.net";
}`
	runCases(t, []runCase{
		{"postmaster", script, plain, Envelope{To: "postmaster+x@example.com"}, "fileinto:inbox.postmaster"},
		{"list", script, plain, Envelope{To: "ken+mta-filters@example.com"}, "fileinto:inbox.ietf-mta-filters"},
		{"foo", script, plain, Envelope{To: "ken+foo@example.com"}, "redirect:ken@example.net"},
		{"none", script, plain, Envelope{To: "ken@example.com"}, "implicit"},
		// 4: an empty detail is "", no separator is no detail at all.
		{"empty detail", `require ["envelope", "subaddress"]; if envelope :detail "to" "" { discard; }`, plain, Envelope{To: "ken+@example.com"}, "discard"},
		{"no detail", `require ["envelope", "subaddress"]; if envelope :detail :matches "to" "*" { discard; }`, plain, Envelope{To: "ken@example.com"}, "implicit"},
		{"address detail", `require ["subaddress"]; if address :detail "To" "news" { discard; }`, "To: Me <me+news@example.com>\n\nx\n", Envelope{}, "discard"},
	})
	res, err := runOn(t, `require ["envelope", "subaddress"]; if envelope :detail "to" "foo" { discard; }`, plain, Envelope{To: "ken-foo@example.com"}, RunOptions{SubaddressSeparator: "-"})
	if err != nil || describe(res) != "discard" {
		t.Errorf("separator -: %s, %v", describe(res), err)
	}
}

func TestRelational(t *testing.T) {
	// RFC 5231 section 6's message and tests.
	msg := "Received: from a by b\nReceived: from c by d\nSubject: example\nTo: foo@example.com.invalid, baz@example.com.invalid\nCC: qux@example.com.invalid\n\nx\n"
	req := `require ["relational", "comparator-i;ascii-numeric"]; `
	for _, c := range []struct {
		test string
		want bool
	}{
		{`address :count "ge" :comparator "i;ascii-numeric" ["to", "cc"] ["3"]`, true},
		{`anyof ( address :count "ge" :comparator "i;ascii-numeric" ["to"] ["3"], address :count "ge" :comparator "i;ascii-numeric" ["cc"] ["3"] )`, false},
		{`header :count "ge" :comparator "i;ascii-numeric" ["received"] ["3"]`, false},
		{`header :count "ge" :comparator "i;ascii-numeric" ["received", "subject"] ["3"]`, true},
		{`header :count "ge" :comparator "i;ascii-numeric" ["to", "cc"] ["3"]`, false},
		{`header :value "gt" "subject" "EXAMPLD"`, true},
		{`header :value "lt" :comparator "i;octet" "subject" "Example"`, false},
		{`header :value "ne" "subject" "EXAMPLE"`, false},
		{`address :count "eq" :comparator "i;ascii-numeric" "bcc" "0"`, true},
		// i;ascii-casemap orders after mapping to upper case (RFC 4790
		// section 9.2): "E" (0x45) is below "_" (0x5F). Pigeonhole maps
		// to lower case and answers true.
		{`header :value "gt" "subject" "_"`, false},
		{`header :value "lt" "subject" "_"`, true},
	} {
		res, err := runOn(t, req+"if "+c.test+" { discard; }", msg, Envelope{}, RunOptions{})
		if got := !res.ImplicitKeep; err != nil || got != c.want {
			t.Errorf("%s = %v, %v, want %v", c.test, got, err, c.want)
		}
	}
	// The example script of section 5.
	script := `require ["relational", "comparator-i;ascii-numeric", "fileinto"];
if header :value "lt" :comparator "i;ascii-numeric" ["x-priority"] ["3"] {
    fileinto "Priority";
} elsif address :count "gt" :comparator "i;ascii-numeric" ["to"] ["5"] {
    # everything with more than 5 recipients in the "to" field
    # is considered SPAM
    fileinto "SPAM";
} elsif address :value "gt" :all :comparator "i;ascii-casemap" ["from"] ["M"] {
    fileinto "From N-Z";
} else {
    fileinto "From A-M";
}
if allof ( address :count "eq" :comparator "i;ascii-numeric" ["to", "cc"] ["1"],
           address :all :comparator "i;ascii-casemap" ["to", "cc"] ["me@foo.example.com"] ) {
    fileinto "Only me";
}`
	runCases(t, []runCase{
		{"priority", script, "X-Priority: 1 (Highest)\nFrom: zed@example.com\nTo: me@foo.example.com\n\nx\n", Envelope{}, "fileinto:Priority, fileinto:Only me"},
		{"no priority is infinity", script, "X-Priority: none\nFrom: zed@example.com\nTo: a@x, b@x\n\nx\n", Envelope{}, "fileinto:From N-Z"},
		// An empty group holds no address (Pigeonhole counts one).
		{"empty group", `require ["relational", "comparator-i;ascii-numeric", "fileinto"]; if address :count "eq" :comparator "i;ascii-numeric" ["to", "cc"] "2" { fileinto "two"; }`, "To: friends: a@x.example;, b@y.example\nCc: undisclosed-recipients:;\n\nx\n", Envelope{}, "fileinto:two"},
		{"spam", script, "From: a@example.com\nTo: a@x, b@x, c@x, d@x, e@x, f@x\n\nx\n", Envelope{}, "fileinto:SPAM"},
		{"a-m", script, "From: alice@example.com\nTo: me@foo.example.com\n\nx\n", Envelope{}, "fileinto:From A-M, fileinto:Only me"},
	})
	// i;ascii-numeric (RFC 4790 section 9.1).
	for _, c := range []struct {
		a, b string
		want int
	}{{"10", "9", 1}, {"007", "7", 0}, {"3 apples", "3", 0}, {"x", "99999999999999999999", 1}, {"x", "y", 0}, {"", "1", 1}} {
		if got := compareNumeric(c.a, c.b); (got > 0) != (c.want > 0) || (got < 0) != (c.want < 0) {
			t.Errorf("compareNumeric(%q, %q) = %d, want sign of %d", c.a, c.b, got, c.want)
		}
	}
}

func TestReject(t *testing.T) {
	runCases(t, []runCase{
		// RFC 5429 section 2.2.
		{"2.2 big", "require [\"reject\"];\nif size :over 100K {\n    reject text:\nYour message is to big. If you want to send me a big attachment,\nput it on a public web site and send me an URL.\n.\n    ;\n}", "Subject: x\n\n" + strings.Repeat("x", 101<<10), Envelope{}, "reject:Your message is to big. If you want to send me a big attachment,\nput it on a public web site and send me an URL.\n"},
		{"2.2.1 coyote", "require [\"reject\"];\nif header :contains \"from\" \"coyote@desert.example.org\" {\n    reject text:\nI am not taking mail from you, and I don't\nwant your birdseed, either!\"\n.\n    ;\n}", "From: coyote@desert.example.org\n\nx\n", Envelope{}, "reject:I am not taking mail from you, and I don't\nwant your birdseed, either!\"\n"},
		{"2.1 ereject", `require ["ereject", "fileinto"]; if header :contains "subject" "spam" { ereject "AntiSpam engine thinks your message is spam."; } else { fileinto "Suspect"; }`, "Subject: spam spam\n\nx\n", Envelope{}, "ereject:AntiSpam engine thinks your message is spam."},
		// 2.4: one reject, never with vacation, not with delivery.
		{"2.4 twice", `require ["reject", "ereject"]; reject "a"; ereject "b";`, plain, Envelope{}, "error: more than one reject"},
		{"2.4 vacation", `require ["reject", "vacation"]; vacation "away"; reject "no";`, plain, Envelope{}, "error: reject after vacation"},
		{"2.4 vacation after", `require ["reject", "vacation"]; reject "no"; vacation "away";`, plain, Envelope{}, "error: vacation after reject"},
		{"2.4 keep", `require ["reject"]; keep; reject "no";`, plain, Envelope{}, "error: reject after keep"},
		{"2.4 fileinto after", `require ["reject", "fileinto"]; reject "no"; fileinto "x";`, plain, Envelope{}, "error: fileinto after reject"},
		{"2.4 discard", `require ["reject"]; discard; reject "no";`, plain, Envelope{}, "discard, reject:no"},
	})
}

func TestCopy(t *testing.T) {
	// RFC 3894 section 4 and its uses.
	runCases(t, []runCase{
		{"fileinto :copy", `require ["copy", "fileinto"]; fileinto :copy "incoming";`, plain, Envelope{}, "fileinto:incoming:copy, implicit"},
		{"redirect :copy", `require ["copy"]; if header :contains "subject" "hello" { redirect :copy "other@example.net"; }`, plain, Envelope{}, "redirect:other@example.net:copy, implicit"},
		{"copy then plain", `require ["copy", "fileinto"]; fileinto :copy "a"; fileinto "a";`, plain, Envelope{}, "fileinto:a"},
	})
	if _, err := Parse([]byte(`require ["fileinto"]; fileinto :copy "a";`), ParseOptions{}); err == nil || !strings.Contains(err.Error(), `require "copy"`) {
		t.Errorf(":copy without require: %v", err)
	}
}

func TestMailbox(t *testing.T) {
	runCases(t, []runCase{
		{"exists", `require ["fileinto", "mailbox"]; if mailboxexists "Partners" { fileinto "Partners"; } else { fileinto :create "Partners"; }`, plain, Envelope{}, "fileinto:Partners"},
		{"missing", `require ["fileinto", "mailbox"]; if mailboxexists ["Partners", "Other"] { fileinto "Partners"; } else { fileinto :create "Other"; }`, plain, Envelope{}, "fileinto:Other:create"},
	})
}

func TestDate(t *testing.T) {
	// RFC 5260 section 7 and 6.
	boss := `require ["date", "relational", "fileinto"];
if allof(header :is "from" "boss@example.com",
         date :value "ge" :originalzone "date" "hour" "09",
         date :value "lt" :originalzone "date" "hour" "17")
{ fileinto "urgent"; }`
	weekend := `require ["date", "relational", "fileinto"];
if anyof(date :is "received" "weekday" "0",
         date :is "received" "weekday" "6")
{ fileinto "weekend"; }`
	monthly := `require ["date", "variables", "fileinto"];
if currentdate :matches "month" "*" { set "month" "${1}"; }
if currentdate :matches "year"  "*" { set "year" "${1}"; }
fileinto "${month}-${year}";`
	july := `require ["date", "relational", "vacation"];
if allof(currentdate :value "ge" "date" "2007-06-30",
         currentdate :value "le" "date" "2007-07-07")
{ vacation :days 7  "I'm away during the first week in July."; }`
	cutoff := `require ["date", "relational", "index"];
if date :value "gt" :index 2 :zone "-0500" "received"
        "iso8601" "2007-02-26T09:00:00-05:00"
{ redirect "aftercutoff@example.org"; }`
	received := "Received: from a by b; Mon, 26 Feb 2007 10:00:00 -0500\nReceived: from c by d; Mon, 26 Feb 2007 09:30:00 -0500\n\nx\n"
	runCases(t, []runCase{
		{"boss in hours", boss, "From: boss@example.com\nDate: Tue, 3 Jul 2007 16:59:00 -0700\n\nx\n", Envelope{}, "fileinto:urgent"},
		{"boss late", boss, "From: boss@example.com\nDate: Tue, 3 Jul 2007 17:00:00 -0700\n\nx\n", Envelope{}, "implicit"},
		{"weekend", weekend, "Received: from x by y; Sat, 7 Jul 2007 12:00:00 +0000\n\nx\n", Envelope{}, "fileinto:weekend"},
		{"weekday", weekend, "Received: from x by y; Fri, 6 Jul 2007 12:00:00 +0000\n\nx\n", Envelope{}, "implicit"},
		{"monthly", monthly, plain, Envelope{}, "fileinto:07-2007"},
		{"july", july, plain, Envelope{}, "vacation:7:I'm away during the first week in July., implicit"},
		{"cutoff second received", cutoff, received, Envelope{}, "redirect:aftercutoff@example.org"},
		{"cutoff last", `require ["date", "relational", "index"];
if date :value "gt" :index 1 :last :zone "-0500" "received" "iso8601" "2007-02-26T09:45:00-05:00" { discard; }`, received, Envelope{}, "implicit"},
		{"zone", `require ["date"]; if date :zone "+0200" "date" "time" "01:30:00" { discard; }`, "Date: Mon, 2 Jul 2007 23:30:00 +0000\n\nx\n", Envelope{}, "discard"},
		{"julian", `require ["date"]; if currentdate "julian" "54284" { discard; }`, plain, Envelope{}, "discard"},
		{"std11", `require ["date"]; if currentdate :zone "+0000" "std11" "Tue, 03 Jul 2007 10:20:30 +0000" { discard; }`, plain, Envelope{}, "discard"},
		{"bad date", `require ["date"]; if date :matches "date" "year" "*" { discard; }`, "Date: yesterday\n\nx\n", Envelope{}, "implicit"},
	})
}

func TestIndex(t *testing.T) {
	msg := "Received: one\nReceived: two\nReceived: three\nTo: a@x.example\nTo: b@y.example\n\nx\n"
	runCases(t, []runCase{
		{"header index", `require ["index", "fileinto"]; if header :index 2 :is "received" "two" { fileinto "a"; }`, msg, Envelope{}, "fileinto:a"},
		{"header last", `require ["index", "fileinto"]; if header :index 1 :last :is "received" "three" { fileinto "a"; }`, msg, Envelope{}, "fileinto:a"},
		{"header index past", `require ["index", "fileinto"]; if header :index 4 :contains "received" "" { fileinto "a"; }`, msg, Envelope{}, "implicit"},
		{"address last", `require ["index", "fileinto"]; if address :index 2 :last :domain "to" "x.example" { fileinto "a"; }`, msg, Envelope{}, "fileinto:a"},
	})
}

func TestBody(t *testing.T) {
	mime := `From: a@example.org
To: me@example.com
Subject: plans
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b1"

preamble
--b1
Content-Type: text/plain; charset=iso-8859-1
Content-Transfer-Encoding: quoted-printable

The project schedule: launch of the missile at the coordinates =E0 Paris.
--b1
Content-Type: text/html; charset=utf-8

<p>The <b>fine</b> print</p>
--b1
Content-Type: audio/mp3
Content-Transfer-Encoding: base64

SUQzAwAAAAAA
--b1--
`
	// RFC 5173 section 7.
	secrets := `require ["body", "fileinto"];
# Save any message with any text MIME part that contains the
# words "missile" or "coordinates" in the "secrets" folder.
if body :content "text" :contains ["missile", "coordinates"] {
    fileinto "secrets";
}
# Save any message with an audio/mp3 MIME part in
# the "jukebox" folder.
if body :content "audio/mp3" :contains "" {
    fileinto "jukebox";
}`
	runCases(t, []runCase{
		{"7 secrets and jukebox", secrets, mime, Envelope{}, "fileinto:secrets, fileinto:jukebox"},
		{"7 plain", secrets, plain, Envelope{}, "implicit"},
		{"7 text schedule", `require ["body", "fileinto"]; if body :text :contains "project schedule" { fileinto "project/schedule"; }`, mime, Envelope{}, "fileinto:project/schedule"},
		{"charset decoded", `require ["body"]; if body :text :contains "à Paris" { discard; }`, mime, Envelope{}, "discard"},
		{"html tags dropped", `require ["body"]; if body :text :contains "fine print" { discard; }`, mime, Envelope{}, "implicit"},
		{"html text", `require ["body"]; if body :text :matches "*The*fine*print*" { discard; }`, mime, Envelope{}, "discard"},
		{"raw undecoded", `require ["body"]; if body :raw :contains "=E0 Paris" { discard; }`, mime, Envelope{}, "discard"},
		{"raw not header", `require ["body"]; if body :raw :contains "Subject" { discard; }`, mime, Envelope{}, "implicit"},
		{"raw make money", `require "body"; if body :raw :contains "MAKE MONEY FAST" { discard; }`, "Subject: x\n\nplease make money fast\n", Envelope{}, "discard"},
		{"default is text", `require "body"; if body :contains "missile" { discard; }`, mime, Envelope{}, "discard"},
		{"content not audio text", `require "body"; if body :content "audio" :contains "missile" { discard; }`, mime, Envelope{}, "implicit"},
	})
	// Beyond MaxBodyBytes the body is not seen.
	long := "Subject: x\n\n" + strings.Repeat("a", 2000) + "needle\n"
	for _, c := range []struct {
		max  int64
		want bool
	}{{100, false}, {1 << 20, true}} {
		res, err := runOn(t, `require "body"; if body :raw :contains "needle" { discard; }`, long, Envelope{}, RunOptions{MaxBodyBytes: c.max})
		if got := !res.ImplicitKeep; err != nil || got != c.want {
			t.Errorf("MaxBodyBytes %d: found = %v, %v, want %v", c.max, got, err, c.want)
		}
	}
}

func TestRegex(t *testing.T) {
	runCases(t, []runCase{
		{"address", `require "regex"; if address :regex ["to", "cc"] "^me(\\+.*)?@company\\.com$" { discard; }`, "To: Me <me+lists@company.com>\n\nx\n", Envelope{}, "discard"},
		{"address no", `require "regex"; if address :regex ["to", "cc"] "^me(\\+.*)?@company\\.com$" { discard; }`, "To: Me <mee@company.com>\n\nx\n", Envelope{}, "implicit"},
		{"groups", `require ["regex", "variables", "fileinto"]; if header :regex "List-ID" "<([^.]*)\\.([^>]*)>" { fileinto "lists.${1}.${2}"; }`, "List-ID: Sieve <sieve.ietf.org>\n\nx\n", Envelope{}, "fileinto:lists.sieve.ietf.org"},
		{"casemap", `require "regex"; if header :regex "Subject" "^HELLO$" { discard; }`, plain, Envelope{}, "discard"},
		{"octet", `require "regex"; if header :regex :comparator "i;octet" "Subject" "^HELLO$" { discard; }`, plain, Envelope{}, "implicit"},
		{"variable pattern", `require ["regex", "variables"]; set "p" "^hel+o$"; if header :regex "Subject" "${p}" { discard; }`, plain, Envelope{}, "discard"},
	})
	if _, err := Parse([]byte(`require "regex"; if header :regex "Subject" "(" { discard; }`), ParseOptions{}); err == nil || !strings.Contains(err.Error(), "line 1, column 45") {
		t.Errorf("bad regex: %v, want an error at line 1, column 45", err)
	}
}
