package imapd

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mailhost/mailhost/internal/dovecottest"
)

// diffMessages are appended to both servers: plain, nested multipart,
// a folded quoted boundary, encoded words, 8-bit text, an address with
// its name in a comment, a group, an attached message, and replies for
// threading.
var diffMessages = []struct {
	flags, date, body string
}{
	{`(\Seen)`, "02-Nov-2026 10:00:00 +0000", crlf(`From: Bob Sender <bob@example.org>
To: Alice <alice@example.com>
Subject: Hello Alice
Date: Mon, 02 Nov 2026 10:00:00 +0000
Message-ID: <m1@example.org>
Content-Type: text/plain; charset=utf-8

The quick brown fox jumps over the lazy dog.
`)},
	{`()`, "03-Nov-2026 11:30:00 +0100", crlf(`From: "Carol Q. Public" <carol@example.net>
To: alice@example.com, "Dave, Jr." <dave@example.org>
Cc: Undisclosed: ;
Reply-To: reports@example.net
Subject: =?UTF-8?B?UXVhcnRhbHNiZXJpY2h0IMOcYmVyc2ljaHQ=?=
Date: Tue, 03 Nov 2026 11:30:00 +0100
Message-ID: <m2@example.net>
MIME-Version: 1.0
Content-Type: multipart/mixed;
 boundary="outer
 -boundary"

This is a multi-part message in MIME format.
--outer -boundary
Content-Type: multipart/alternative; boundary=inner

--inner
Content-Type: text/plain; charset=iso-8859-1
Content-Transfer-Encoding: quoted-printable

Gr=FC=DFe aus dem Quartal.
--inner
Content-Type: text/html; charset=utf-8

<p>Gr&uuml;&szlig;e aus dem Quartal.</p>
--inner--

--outer -boundary
Content-Type: application/pdf; name="report.pdf"
Content-Disposition: attachment; filename="report.pdf"
Content-Transfer-Encoding: base64
Content-ID: <part3@example.net>
Content-Description: The numbers

JVBERi0xLjQKJcOkw7zDtsOfCjIgMCBvYmoKPDwvTGVuZ3RoIDMgMCBSL0ZpbHRlci9GbGF0ZURl
Y29kZT4+CnN0cmVhbQp4nDPQM1Qo5ypUMFAw0DMwslAwtTTVMzI2VDCxNNSzMDEyUkhJ5QIAUmwF
--outer -boundary--
`)},
	{`(\Flagged $Label1)`, "04-Nov-2026 09:15:00 -0500", crlf(`From: erin@example.com (Erin Example)
To: alice@example.com
Subject: Re: Hello Alice
Date: Wed, 04 Nov 2026 09:15:00 -0500
Message-ID: <m3@example.com>
In-Reply-To: <m1@example.org>
References: <m1@example.org>
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: 8bit

Grüße, Erin — schön, dass es klappt.
Straße, Größe, Ärger.
`)},
	{`(\Answered \Draft)`, "05-Nov-2026 23:59:59 +0000", crlf(`From: =?ISO-8859-1?Q?Fr=E9d=E9ric?= <fred@example.org>
To: alice@example.com
Subject: =?ISO-8859-1?Q?Re:_caf=E9?= and more
 text on a folded line
Date: Thu, 05 Nov 2026 23:59:59 +0000
Message-ID: <m4@example.org>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="fwd"

--fwd
Content-Type: text/plain

Forwarded below.
--fwd
Content-Type: message/rfc822

From: Grace <grace@example.com>
To: fred@example.org
Subject: inner message
Date: Wed, 04 Nov 2026 08:00:00 +0000
Message-ID: <inner@example.com>

Inner body line.
--fwd--
`)},
	{`()`, "06-Nov-2026 12:00:00 +0000", crlf(`From: Bob Sender <bob@example.org>
To: Alice <alice@example.com>
Subject: Re: Re: Hello Alice
Date: Fri, 06 Nov 2026 12:00:00 +0000
Message-ID: <m5@example.org>
In-Reply-To: <m3@example.com>
References: <m1@example.org> <m3@example.com>
X-Priority: 1

Short.
`)},
	{`(\Deleted)`, "07-Nov-2026 08:00:00 +0000", crlf(`From: zed@example.com
To: alice@example.com
Subject: [list] weekly digest
Date: Sat, 07 Nov 2026 08:00:00 +0000
Message-ID: <m6@example.com>
List-Id: <list.example.com>

` + strings.Repeat("Digest line with some words in it.\n", 40))},
}

func appendCmd(mailbox string, i int) string {
	m := diffMessages[i]
	return fmt.Sprintf("APPEND %s %s %q {%d+}\r\n%s", mailbox, m.flags, m.date, len(m.body), m.body)
}

// diffScript is the script both servers run, logged in, with INBOX and
// the default folders present and empty.
func diffScript() []diffStep {
	var s []diffStep
	add := func(cmds ...string) {
		for _, c := range cmds {
			s = append(s, diffStep{cmd: c})
		}
	}
	add2 := func(cmds ...string) {
		for _, c := range cmds {
			s = append(s, diffStep{conn: 1, cmd: c})
		}
	}

	// Mailboxes.
	add(
		`NOOP`,
		`CAPABILITY`,
		`LIST "" ""`,
		`LIST "" "*"`,
		`LIST "" "%"`,
		`LSUB "" "*"`,
		`LIST "" "INBOX"`,
		`LIST "" "inbox"`,
		`CREATE Projects`,
		`CREATE Projects/2026`,
		`CREATE Projects/2026/Q4`,
		`CREATE Projects`,
		`CREATE INBOX`,
		`CREATE "K&AOQ-se2"`,
		`LIST "" "Projects*"`,
		`LIST "" "Projects/%"`,
		`LIST "Projects/" "%"`,
		`LIST "" "K*"`,
		`SUBSCRIBE Projects/2026`,
		`SUBSCRIBE NoSuchFolder`,
		`LSUB "" "*"`,
		`LSUB "" "Projects/%"`,
		`LIST (SUBSCRIBED) "" "*"`,
		`LIST (SUBSCRIBED RECURSIVEMATCH) "" "Projects"`,
		`LIST "" "*" RETURN (SUBSCRIBED)`,
		`LIST "" "*" RETURN (CHILDREN)`,
		`LIST (SPECIAL-USE) "" "*"`,
		`LIST "" "*" RETURN (SPECIAL-USE)`,
		`LIST "" ("INBOX" "Sent" "Projects")`,
		`LIST "" "%" RETURN (STATUS (MESSAGES UNSEEN UIDNEXT))`,
		`UNSUBSCRIBE Projects/2026`,
		`UNSUBSCRIBE Projects/2026`,
		`LSUB "" "Projects*"`,
		`RENAME Projects/2026/Q4 Projects/2026/Q1`,
		`RENAME Projects/2026 Projects/Y2026`,
		`LIST "" "Projects*"`,
		`RENAME NoSuchFolder Elsewhere`,
		`RENAME Projects Sent`,
		`DELETE Projects/Y2026/Q1`,
		`DELETE NoSuchFolder`,
		`DELETE INBOX`,
		`CREATE Scratch`,
		`DELETE Scratch`,
		`LIST "" "*"`,
		`STATUS INBOX (MESSAGES RECENT UIDNEXT UNSEEN)`,
		`STATUS NoSuchFolder (MESSAGES)`,
		`STATUS Projects (MESSAGES UIDNEXT UNSEEN)`,
		`NAMESPACE`,
		`GETQUOTAROOT INBOX`,
		`GETQUOTA ""`,
		`ID NIL`,
		`ID ("name" "diff-test" "version" "1")`,
	)

	// Messages.
	for i := range diffMessages {
		add(appendCmd("INBOX", i))
	}
	add(appendCmd("Projects", 0), appendCmd("Projects", 2))
	add(
		`APPEND NoSuchFolder {6+}`+"\r\nHi\r\n\r\n",
		`STATUS INBOX (MESSAGES RECENT UIDNEXT UNSEEN)`,
		`STATUS INBOX (MESSAGES DELETED SIZE)`,
		`STATUS Projects (MESSAGES UIDNEXT UNSEEN)`,
		`LIST "" "%" RETURN (STATUS (MESSAGES UNSEEN))`,
	)

	// Read-only, then read-write.
	add(
		`EXAMINE INBOX`,
		`FETCH 1:* (FLAGS)`,
		`STORE 1 +FLAGS (\Seen)`,
		`FETCH 2 (BODY[TEXT]<0.20>)`,
		`FETCH 2 (FLAGS)`,
		`CLOSE`,
		`SELECT NoSuchFolder`,
		`SELECT INBOX`,
	)

	// FETCH of every item on every message.
	items := []string{
		`FLAGS`, `UID`, `INTERNALDATE`, `RFC822.SIZE`, `ENVELOPE`, `BODY`, `BODYSTRUCTURE`,
		`BODY.PEEK[]`, `BODY.PEEK[HEADER]`, `BODY.PEEK[TEXT]`, `BODY.PEEK[1]`, `BODY.PEEK[1.MIME]`,
		`BODY.PEEK[HEADER.FIELDS (From Subject)]`, `BODY.PEEK[HEADER.FIELDS.NOT (From Subject Received)]`,
		`BODY.PEEK[]<0.50>`, `BODY.PEEK[TEXT]<10.30>`, `RFC822.HEADER`, `FAST`, `ALL`, `FULL`,
	}
	for n := 1; n <= len(diffMessages); n++ {
		for _, it := range items {
			if it == "FAST" || it == "ALL" || it == "FULL" {
				// A macro stands alone; in parentheses it is BAD.
				add(fmt.Sprintf("FETCH %d %s", n, it), fmt.Sprintf("FETCH %d (%s)", n, it))
				continue
			}
			add(fmt.Sprintf("FETCH %d (%s)", n, it))
		}
	}
	// Sections of the multiparts.
	for _, sec := range []string{"1", "1.1", "1.2", "1.MIME", "1.1.MIME", "2", "2.MIME", "1.2.TEXT", "3", "2.HEADER", "2.TEXT", "2.1", "HEADER.FIELDS (CONTENT-TYPE)", "1.HEADER"} {
		add(fmt.Sprintf("FETCH 2 (BODY.PEEK[%s])", sec), fmt.Sprintf("FETCH 4 (BODY.PEEK[%s])", sec))
	}
	add(
		`FETCH 2 (BODY.PEEK[1.1]<5.10>)`,
		`FETCH 1:3 (UID FLAGS RFC822.SIZE)`,
		`UID FETCH 1:* (FLAGS)`,
		`UID FETCH 2,4 (UID RFC822.SIZE)`,
		`FETCH 1 (RFC822)`,
		`FETCH 1 (FLAGS)`,
		`FETCH 5 (RFC822.TEXT)`,
		`FETCH 5 (FLAGS)`,
		`FETCH 5 (BODY[HEADER.FIELDS (Subject)])`,
		`FETCH 5 (FLAGS)`,
		`FETCH 99 (FLAGS)`,
		`FETCH 1 (NOSUCHITEM)`,
		`FETCH 1 (BODY[HEADER.FIELDS ()])`,
		`FETCH 1:* (FLAGS) garbage`,
		`FETCH`,
	)

	// STORE.
	add(
		`STORE 1 +FLAGS (\Flagged)`,
		`STORE 1 -FLAGS (\Seen)`,
		`STORE 2 FLAGS (\Seen \Answered)`,
		`STORE 2 +FLAGS.SILENT ($Forwarded)`,
		`FETCH 2 (FLAGS)`,
		`STORE 3 +FLAGS (NewKeyword)`,
		`STORE 1:3 -FLAGS.SILENT (NewKeyword)`,
		`UID STORE 4 +FLAGS (\Seen)`,
		`STORE 4 +FLAGS (\Recent)`,
		`STORE 1 +FLAGS (\Bogus)`,
		`FETCH 1:* (FLAGS)`,
	)
	add2(`SELECT INBOX`, `STORE 2 +FLAGS (\Flagged)`, `NOOP`)
	add(`NOOP`)

	// SEARCH.
	for _, k := range []string{
		`ALL`, `SEEN`, `UNSEEN`, `FLAGGED`, `UNFLAGGED`, `ANSWERED`, `UNANSWERED`, `DELETED`, `UNDELETED`,
		`DRAFT`, `UNDRAFT`, `RECENT`, `NEW`, `OLD`, `KEYWORD $Label1`, `UNKEYWORD $Label1`, `KEYWORD $Forwarded`,
		`FROM bob`, `FROM "Carol"`, `TO alice`, `CC undisclosed`, `BCC nobody`, `SUBJECT hello`, `SUBJECT "Re:"`,
		`SUBJECT Quartalsbericht`, `SUBJECT café`, `BODY fox`, `BODY Grüße`, `TEXT digest`, `TEXT Grace`,
		`HEADER Message-ID m3`, `HEADER X-Priority ""`, `HEADER List-Id list`,
		`BEFORE 4-Nov-2026`, `ON 4-Nov-2026`, `SINCE 4-Nov-2026`, `SENTBEFORE 4-Nov-2026`, `SENTON 4-Nov-2026`, `SENTSINCE 5-Nov-2026`,
		`LARGER 1000`, `SMALLER 500`, `UID 2:4`, `1:3`, `2,4,6`, `*`, `NOT SEEN`, `OR SEEN FLAGGED`, `OR (FROM bob) (TO dave)`,
		`(SEEN FLAGGED)`, `NOT (OR DELETED DRAFT)`, `CHARSET UTF-8 SUBJECT Quartalsbericht`, `CHARSET BOGUS-8 ALL`,
		`MODSEQ 1`, `NOSUCHKEY`, `BEFORE notadate`,
	} {
		add("SEARCH "+k, "UID SEARCH "+k)
	}
	add(
		`SEARCH RETURN () ALL`,
		`SEARCH RETURN (MIN MAX COUNT) ALL`,
		`SEARCH RETURN (ALL) UNSEEN`,
		`SEARCH RETURN (COUNT) NOTHINGHERE`,
		`UID SEARCH RETURN (MIN MAX) FLAGGED`,
		`SEARCH RETURN (SAVE) FROM bob`,
		`FETCH $ (UID)`,
		`UID SEARCH UID $`,
		`SEARCH RETURN (MIN) MODSEQ 1`,
	)

	// SORT and THREAD.
	for _, k := range []string{
		`(ARRIVAL)`, `(DATE)`, `(REVERSE DATE)`, `(SUBJECT)`, `(REVERSE SUBJECT)`, `(FROM)`, `(TO)`, `(CC)`, `(SIZE)`,
		`(REVERSE SIZE)`, `(DISPLAYFROM)`, `(DISPLAYTO)`, `(SUBJECT DATE)`,
	} {
		add("SORT "+k+" UTF-8 ALL", "UID SORT "+k+" UTF-8 UNDELETED")
	}
	add(
		`SORT (DATE) UTF-8 FROM bob`,
		`SORT (BOGUS) UTF-8 ALL`,
		`SORT (DATE) BOGUS-8 ALL`,
		`SORT RETURN (MIN MAX COUNT) (DATE) UTF-8 ALL`,
		`THREAD ORDEREDSUBJECT UTF-8 ALL`,
		`THREAD REFERENCES UTF-8 ALL`,
		`UID THREAD REFERENCES UTF-8 ALL`,
		`THREAD REFERENCES UTF-8 FROM bob`,
		`THREAD BOGUS UTF-8 ALL`,
	)

	// CONDSTORE and QRESYNC.
	add(
		`FETCH 1:* (MODSEQ)`,
		`FETCH 1:* (FLAGS) (CHANGEDSINCE 1)`,
		`STORE 1 (UNCHANGEDSINCE 1) +FLAGS (\Answered)`,
		`STORE 1 (UNCHANGEDSINCE 999999) +FLAGS (\Answered)`,
		`SEARCH MODSEQ 2`,
		`STATUS Projects (HIGHESTMODSEQ)`,
		`ENABLE CONDSTORE`,
		`ENABLE QRESYNC`,
		`ENABLE NOSUCHTHING`,
	)

	// COPY, MOVE, EXPUNGE.
	add(
		`COPY 1:2 Projects`,
		`COPY 1 NoSuchFolder`,
		`UID COPY 3 Projects`,
		`MOVE 5 Archive`,
		`UID MOVE 4 Archive`,
		`MOVE 1 NoSuchFolder`,
		`STATUS Archive (MESSAGES UIDNEXT)`,
		`STATUS Projects (MESSAGES UIDNEXT)`,
		`FETCH 1:* (FLAGS)`,
		`STORE 1 +FLAGS.SILENT (\Deleted)`,
		`UID EXPUNGE 1`,
		`UID EXPUNGE 2:3`,
		`EXPUNGE`,
		`FETCH 1:* (UID FLAGS)`,
		`IDLE`,
	)
	add2(`NOOP`, `FETCH 1:* (UID)`, `UNSELECT`, `EXAMINE Archive`, `FETCH 1:* (UID FLAGS ENVELOPE)`, `CLOSE`)

	// Extensions mailhost may not offer yet: run once both announce them.
	mb := diffMessages[0].body
	for _, st := range []diffStep{
		{needCap: "MULTIAPPEND", cmd: fmt.Sprintf("APPEND Projects {%d+}\r\n%s {%d+}\r\n%s", len(mb), mb, len(mb), mb)},
		{needCap: "MULTIAPPEND", cmd: "STATUS Projects (MESSAGES)"},
		{needCap: "BINARY", cmd: "SELECT Projects"},
		{needCap: "BINARY", cmd: "FETCH 1 (BINARY.PEEK[1] BINARY.SIZE[1])"},
		{needCap: "BINARY", cmd: "FETCH 1 (BINARY.PEEK[]<0.30>)"},
		{needCap: "WITHIN", cmd: "SEARCH OLDER 1"},
		{needCap: "WITHIN", cmd: "SEARCH YOUNGER 1000000000"},
		{needCap: "PREVIEW", cmd: "FETCH 1 (PREVIEW)"},
		{needCap: "BINARY", cmd: "UNSELECT"},
	} {
		s = append(s, st)
	}

	// Back to Projects; then errors and the end.
	add(
		`SELECT Projects`,
		`FETCH 1:* (UID FLAGS INTERNALDATE)`,
		`SORT (DATE) UTF-8 ALL`,
		`STORE 1:* +FLAGS (\Deleted)`,
		`CLOSE`,
		`STATUS Projects (MESSAGES)`,
		`SELECT INBOX (CONDSTORE)`,
		`UNSELECT`,
		`UNSELECT`,
		`EXPUNGE`,
		`FETCH 1 (FLAGS)`,
		`CHECK`,
		`SELECT Trash`,
		`FETCH 1:* (FLAGS)`,
		`FETCH * (FLAGS)`,
		`UID FETCH 1:* (FLAGS)`,
		`STORE 1:* +FLAGS (\Seen)`,
		`SEARCH ALL`,
		`UNSELECT`,
		`SELECT Projects/Y2026`,
		`EXAMINE Projects/Y2026`,
		`SELECT Projects`,
		`SELECT`,
		`BOGUS`,
		`LIST`,
		`CREATE`,
		`CREATE ""`,
		`DELETE ""`,
		`LOGIN again please`,
		`NOOP`,
	)
	return s
}

// acceptedDiffs are the steps whose responses may differ from Dovecot's,
// each with the reason.
var acceptedDiffs = map[string]accepted{
	`GETQUOTAROOT INBOX`:       {reason: `the quota root's name is the server's choice: mailhost "" (one per account), this Dovecot "User quota"`},
	`GETQUOTA ""`:              {reason: `the quota root's name is the server's choice: "" is mailhost's, Dovecot has none of that name`, statusMayDiffer: true},
	`SUBSCRIBE NoSuchFolder`:   {reason: "RFC 9051 section 6.3.7 lets a server subscribe a name that does not exist (mailhost does, so that a subscription can precede the folder); Dovecot refuses", statusMayDiffer: true},
	`LSUB "" "*"`:              {reason: `follows from SUBSCRIBE NoSuchFolder: mailhost lists it \Noselect`},
	`LIST (SUBSCRIBED) "" "*"`: {reason: "follows from SUBSCRIBE NoSuchFolder (mailhost lists it \\NonExistent); and mailhost adds \\HasChildren/\\HasNoChildren and special-use attributes to every LIST-EXTENDED reply, which RFC 5258 section 4 and RFC 6154 section 2 allow unasked, Dovecot only when asked"},
	`LIST (SUBSCRIBED RECURSIVEMATCH) "" "Projects"`:        {reason: "mailhost adds \\HasChildren unasked (RFC 5258 section 4 allows it)"},
	`LIST "" "*" RETURN (SUBSCRIBED)`:                       {reason: "follows from SUBSCRIBE NoSuchFolder; and mailhost adds special-use attributes unasked (RFC 6154 section 2 allows it)"},
	`LIST "" "*" RETURN (CHILDREN)`:                         {reason: "mailhost adds special-use attributes unasked (RFC 6154 section 2 allows it)"},
	`LIST (SPECIAL-USE) "" "*"`:                             {reason: "mailhost adds \\HasChildren/\\HasNoChildren unasked (RFC 5258 section 4 allows it)"},
	`LIST "" "*" RETURN (SPECIAL-USE)`:                      {reason: "mailhost adds \\HasChildren/\\HasNoChildren unasked (RFC 5258 section 4 allows it)"},
	`LIST "" ("INBOX" "Sent" "Projects")`:                   {reason: "mailhost adds child and special-use attributes unasked (RFC 5258 section 4, RFC 6154 section 2)"},
	`LIST "" "%" RETURN (STATUS (MESSAGES UNSEEN UIDNEXT))`: {reason: "mailhost adds child and special-use attributes unasked (RFC 5258 section 4, RFC 6154 section 2)"},
	`LIST "" "%" RETURN (STATUS (MESSAGES UNSEEN))`:         {reason: "mailhost adds child and special-use attributes unasked (RFC 5258 section 4, RFC 6154 section 2)"},
	`STATUS INBOX (MESSAGES DELETED SIZE)`:                  {reason: "DELETED and SIZE are IMAP4rev2 (RFC 9051) status items; Dovecot 2.3 has neither", statusMayDiffer: true},
	`STORE 1 +FLAGS (\Seen)`:                                {reason: "in a folder opened with EXAMINE: mailhost refuses (NO), Dovecot answers OK and ignores it; RFC 9051 section 6.3.3 forbids the change, not the answer", statusMayDiffer: true},
	`FETCH 2 (ENVELOPE)`:                                    {reason: "mailhost decodes RFC 2047 encoded words and sends them again as UTF-8 encoded words, Dovecot sends the header's own bytes; the text a client decodes is the same"},
	`FETCH 4 (ENVELOPE)`:                                    {reason: "as FETCH 2 (ENVELOPE): encoded words re-encoded in UTF-8"},
	`FETCH 2 ALL`:                                           {reason: "as FETCH 2 (ENVELOPE): encoded words re-encoded in UTF-8"},
	`FETCH 4 ALL`:                                           {reason: "as FETCH 2 (ENVELOPE): encoded words re-encoded in UTF-8"},
	`FETCH 2 FULL`:                                          {reason: "as FETCH 2 (ENVELOPE): encoded words re-encoded in UTF-8"},
	`FETCH 4 FULL`:                                          {reason: "as FETCH 2 (ENVELOPE): encoded words re-encoded in UTF-8"},
	`FETCH 1:* (UID FLAGS ENVELOPE)`:                        {reason: "as FETCH 2 (ENVELOPE): encoded words re-encoded in UTF-8"},
	`STORE 4 +FLAGS (\Recent)`:                              {reason: "\\Recent cannot be stored (RFC 3501 section 2.3.2): mailhost ignores it and answers OK, Dovecot answers BAD; the flags stay as they were either way", statusMayDiffer: true},
	`STORE 1 +FLAGS (\Bogus)`:                               {reason: "an unknown system flag: Dovecot answers BAD, mailhost OK and ignores it; RFC 9051 section 2.3.2 only lets a server refuse it", statusMayDiffer: true},
	`SELECT INBOX`:                                          {reason: "FLAGS and PERMANENTFLAGS: Dovecot keeps a keyword once used (NewKeyword), mailhost lists the keywords the folder's messages hold; RFC 9051 section 7.3.5 allows both"},
	`SELECT INBOX (CONDSTORE)`:                              {reason: "as SELECT INBOX: keywords no message holds"},
	`SELECT Projects`:                                       {reason: "as SELECT INBOX: Dovecot lists keywords used once in the folder"},
	`SEARCH SUBJECT café`:                                   {reason: "8-bit text in an atom: Dovecot answers BAD (RFC 9051 section 9 says atoms are 7-bit), mailhost takes it as UTF-8", statusMayDiffer: true},
	`UID SEARCH SUBJECT café`:                               {reason: "as SEARCH SUBJECT café", statusMayDiffer: true},
	`ENABLE NOSUCHTHING`:                                    {reason: "mailhost answers an empty ENABLED, Dovecot none; RFC 5161 section 3.1 allows both"},
	`SELECT`:                                                {reason: "a SELECT with no argument: Dovecot closes the selected folder ([CLOSED]) before answering BAD, mailhost answers BAD and keeps it"},
}

// acceptedCaps are the capabilities only one of the two announces, with
// the reason.
var acceptedCaps = map[string]string{
	"IMAP4REV2":            "mailhost speaks IMAP4rev2 (RFC 9051); Dovecot 2.3 only IMAP4rev1",
	"UTF8=ACCEPT":          "mailhost takes UTF-8 mailbox names and headers (RFC 6855); Dovecot 2.3 does not offer it",
	"UNAUTHENTICATE":       "RFC 8437: Dovecot 2.3 does not offer it",
	"APPENDLIMIT=67108864": "RFC 7889: mailhost announces its message size limit; Dovecot only when imap_max_line_length/quota give one",
	"QUOTA=RES-STORAGE":    "RFC 9208 (QUOTA's current form): Dovecot 2.3 has the older RFC 2087 QUOTA only",
	"OBJECTID":             "RFC 8474: Dovecot 2.3 does not offer it",
	"COMPRESS=DEFLATE":     "RFC 4978: this Dovecot is started without its imap_zlib plugin",
	"MULTIAPPEND":          "RFC 3502: not in mailhost yet (its steps run once both announce it)",
	"BINARY":               "RFC 3516: not in mailhost yet (its steps run once both announce it)",
	"WITHIN":               "RFC 5032: not in mailhost yet (its steps run once both announce it)",
	"PREVIEW":              "RFC 8970: not in mailhost yet (its step runs once both announce it)",
	"PREVIEW=FUZZY":        "the draft form of PREVIEW that Dovecot 2.3 also announces",
	"SNIPPET=FUZZY":        "an older draft of PREVIEW that Dovecot 2.3 also announces",
	"SAVEDATE":             "RFC 8514: not offered by mailhost",
	"CONTEXT=SEARCH":       "RFC 5267 search contexts (ESEARCH updates): not offered by mailhost",
	"CATENATE":             "RFC 4469: not offered by mailhost",
	"URL-PARTIAL":          "RFC 5550, with URLAUTH: not offered by mailhost",
	"I18NLEVEL=1":          "RFC 5255 comparators: not offered by mailhost",
	"LOGIN-REFERRALS":      "RFC 2221: mailhost has one server to log in to",
	"THREAD=REFS":          "a Dovecot-only thread algorithm (draft-ietf-morg-inthread)",
	"NOTIFY":               "RFC 5465: not offered by mailhost",
}

// TestDovecotDifferential runs diffScript on mailhost and on Dovecot 2.3
// and compares the responses.
func TestDovecotDifferential(t *testing.T) {
	dc := dovecottest.Start(t, dovecottest.Options{})
	e := newEnv(t, envOptions{insecureAuth: true})
	runDifferential(t, e.addr, dc, diffScript(), acceptedDiffs, acceptedCaps)
}
