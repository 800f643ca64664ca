package smtp

import (
	"strings"
	"testing"
)

// FuzzParse runs the command-line parsers the server applies to what a
// client sends (mailhost's addition to this fork): no panic, a path
// parsed is a mailbox with a local part, an "@" and a domain without
// blanks or ">", and the parser never reads past its input.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"MAIL FROM:<root@nsa.gov> SIZE=1024 BODY=8BITMIME",
		"RCPT TO:<@a,@b:user@example.com> NOTIFY=SUCCESS,FAILURE",
		`MAIL FROM:<"quoted \" local"@example.com>`,
		"MAIL FROM:<>",
		"EHLO mx.example.com extra",
		"RCPT TO:<postmaster>",
		"MAIL FROM:<a@b BY=120;R",
		"STARTTLS junk",
		"HELO",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		_, arg, err := parseCmd(line)
		if err != nil {
			return
		}
		parseArgs(arg)
		if d, err := parseHelloArgument(arg); err == nil && (d == "" || strings.Contains(d, " ")) {
			t.Fatalf("parseHelloArgument(%q) = %q", arg, d)
		}
		parseDeliverByArgument(arg)
		_, rest, _ := strings.Cut(arg, ":")
		for _, reverse := range []bool{true, false} {
			p := parser{s: rest}
			var path string
			if reverse {
				path, err = p.parseReversePath()
			} else {
				path, err = p.parsePath()
			}
			if err != nil || path == "" {
				continue
			}
			at := strings.LastIndexByte(path, '@')
			if at <= 0 || at == len(path)-1 || strings.ContainsAny(path[at+1:], " \t>") {
				t.Fatalf("path of %q = %q", rest, path)
			}
			if !strings.HasSuffix(rest, p.s) {
				t.Fatalf("parser of %q left %q, not a suffix", rest, p.s)
			}
		}
	})
}
