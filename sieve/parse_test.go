package sieve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, script, want string
		offered            []string
	}{
		{"unknown command", "require \"fileinto\";\n\nif true {\n      filein \"x\";\n}", `line 4, column 7: unknown command "filein"`, nil},
		{"unknown test", "if hedaer :is \"a\" \"b\" { keep; }", `line 1, column 4: unknown test "hedaer"`, nil},
		{"not required", "if true {\n  fileinto \"x\";\n}", `line 2, column 3: command "fileinto" needs require "fileinto"`, nil},
		{"test not required", `if envelope "from" "a" { keep; }`, `line 1, column 4: test "envelope" needs require "envelope"`, nil},
		{"tag not required", `require "fileinto"; fileinto :create "x";`, `line 1, column 30: tag :create needs require "mailbox"`, nil},
		{"unsupported", "require [\"fileinto\",\n  \"notify\"];", `line 2, column 3: extension "notify" is not supported`, nil},
		{"not offered", `require ["fileinto", "vacation"];`, `line 1, column 22: extension "vacation" is not supported`, []string{"fileinto"}},
		{"offered but not implemented", `require "notify";`, `line 1, column 9: extension "notify" is not supported`, []string{"notify"}},
		{"capability case", `require "FileInto";`, `line 1, column 9: extension "FileInto" is not supported`, nil},
		{"require late", "keep;\nrequire \"fileinto\";", "line 2, column 1: require must come before any other command", nil},
		{"require in block", "if true { require \"fileinto\"; }", "line 1, column 11: require must come before any other command", nil},
		{"elsif alone", "elsif true { keep; }", "line 1, column 1: elsif without a preceding if", nil},
		{"else after else", "if true { keep; } else { keep; } else { keep; }", "line 1, column 34: else without a preceding if", nil},
		{"missing semicolon", "keep\ndiscard;", `line 2, column 1: command "keep" takes no test`, nil},
		{"unterminated string", "if header :is \"a\" \"b { keep; }", "line 1, column 19: unterminated string", nil},
		{"unterminated comment", "keep; /* no end", "line 1, column 7: unterminated comment", nil},
		{"unterminated text", "require \"reject\"; reject text:\nline\n", "line 1, column 26: unterminated multi-line string", nil},
		{"text junk", "require \"reject\"; reject text: x\n.\n;", `line 1, column 32: "text:" must be followed by the end of the line`, nil},
		{"bad character", "keep; @", `line 1, column 7: unexpected character '@'`, nil},
		{"unknown tag", `if header :iss "a" "b" { keep; }`, `line 1, column 11: test "header": unknown tag :iss`, nil},
		{"two match types", `if header :is :contains "a" "b" { keep; }`, `line 1, column 15: test "header": more than one match type`, nil},
		{"tag after positional", `if header "a" :is "b" { keep; }`, `line 1, column 15: test "header": tag :is must come before the other arguments`, nil},
		{"positional count", `if header :is "a" { keep; }`, `line 1, column 4: test "header" takes 2 positional arguments, not 1`, nil},
		{"number for string", `redirect 5;`, `line 1, column 10: command "redirect": argument 1 must be a string`, nil},
		{"bad redirect", `redirect "not an address";`, `line 1, column 10: redirect to "not an address", which is not an address`, nil},
		{"empty fileinto", `require "fileinto"; fileinto "";`, `line 1, column 30: fileinto "": not a folder name`, nil},
		{"unknown comparator", `if header :comparator "i;foo" "a" "b" { keep; }`, `line 1, column 23: unknown comparator "i;foo"`, nil},
		{"numeric not required", `if header :comparator "i;ascii-numeric" "a" "1" { keep; }`, `line 1, column 23: comparator "i;ascii-numeric" needs require "comparator-i;ascii-numeric"`, nil},
		{"numeric contains", `require "comparator-i;ascii-numeric"; if header :contains :comparator "i;ascii-numeric" "a" "1" { keep; }`, `comparator i;ascii-numeric does not do substring or pattern matches`, nil},
		{"bad relational", `require "relational"; if header :value "gtx" "a" "1" { keep; }`, `line 1, column 40: unknown relational operator "gtx"`, nil},
		{"address of subject", `if address :is "Subject" "a" { keep; }`, `line 1, column 16: test "address": header "Subject" holds no addresses`, nil},
		{"last without index", `require "index"; if header :last :is "a" "b" { keep; }`, `line 1, column 21: test "header": :last needs :index`, nil},
		{"bad date part", `require "date"; if currentdate "fortnight" "1" { keep; }`, `line 1, column 32: test "currentdate": unknown date part "fortnight"`, nil},
		{"bad zone", `require "date"; if currentdate :zone "CET" "year" "1" { keep; }`, `zone "CET" is not of the form +hhmm`, nil},
		{"set bad name", `require "variables"; set "a-b" "x";`, `line 1, column 26: "a-b" is not a variable name`, nil},
		{"set two cases", `require "variables"; set :lower :upper "a" "x";`, `line 1, column 33: command "set": :lower and :upper together`, nil},
		{"namespace", `require "variables"; set "a" "${env.x}";`, `variable namespace of "env.x" is not supported`, nil},
		{"size needs tag", `if size 10 { keep; }`, `line 1, column 4: size needs :over or :under`, nil},
		{"if without block", `if true;`, `line 1, column 1: if needs a block`, nil},
		{"block on keep", `keep { }`, `line 1, column 1: command "keep" takes no block`, nil},
		{"not with list", `if not (true) { keep; }`, `line 1, column 4: not takes one test`, nil},
		{"anyof single", `if anyof true { keep; }`, `line 1, column 4: anyof takes a test list`, nil},
		{"number too big", `if size :over 99999999999G { keep; }`, `line 1, column 15: number 99999999999G is too large`, nil},
		{"vacation tag twice", `require "vacation"; vacation :days 1 :days 2 "x";`, `line 1, column 38: command "vacation": :days given twice`, nil},
		{"empty list", `if header [] "a" { keep; }`, `line 1, column 12: expected a string in the string list, found "]"`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.script), ParseOptions{Extensions: c.offered})
			if err == nil {
				t.Fatalf("Parse(%q) = nil error, want %q", c.script, c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse(%q) = %q, want %q", c.script, err, c.want)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Errorf("error %T is no *Error", err)
			}
		})
	}
}

func TestParseSyntax(t *testing.T) {
	// Lexical forms that must parse (RFC 5228 section 8.1).
	ok := []string{
		"",
		"# only a comment",
		"keep; # no newline at the end",
		"/* a */ keep /* b */ ; /* c\n d */",
		"if size :over 1M { discard; } if size :under 10k { keep; } if size :over 1G { stop; }",
		"require \"reject\";\nreject text: # comment\nline\n.\n;",
		"require \"reject\";\r\nreject text:\r\nline\r\n.\r\n;",
		`if header :is "Subject" "a\"b\\c\d" { keep; }`,
		`IF HEADER :IS "Subject" "x" { KEEP; } ELSIF TRUE { Discard; }`,
		`if anyof(true,false,not true){keep;}`,
		`if header ["a","b"] ["c"] { }`,
		"if true {\n}\n",
		"require [\"fileinto\", \"reject\", \"envelope\", \"encoded-character\", \"imap4flags\", \"vacation\", \"copy\", \"body\", \"variables\", \"relational\", \"comparator-i;ascii-numeric\", \"comparator-i;octet\", \"comparator-i;ascii-casemap\", \"subaddress\", \"mailbox\", \"date\", \"index\", \"regex\", \"ereject\"];",
		"redirect \"\\\"odd local\\\"@example.com\";",
		"if header \"Subject\" \"\xff\xfe\" { keep; }",
	}
	for _, s := range ok {
		if _, err := Parse([]byte(s), ParseOptions{}); err != nil {
			t.Errorf("Parse(%q): %v", s, err)
		}
	}
	// The escapes and dot-stuffing of strings.
	lx := newLexer("\"a\\\"b\\\\c\\d\" text:\n..x\n.y\n.\n")
	for _, want := range []string{`a"b\cd`, ".x\n.y\n"} {
		tok, err := lx.next()
		if err != nil || tok.kind != tokString || tok.text != want {
			t.Errorf("string token = %q, %v, want %q", tok.text, err, want)
		}
	}
}

func TestParseLimits(t *testing.T) {
	big := []byte("keep;" + strings.Repeat(" ", DefaultMaxScriptSize))
	if _, err := Parse(big, ParseOptions{}); !errors.Is(err, ErrLimit) {
		t.Errorf("Parse of %d bytes: %v, want ErrLimit", len(big), err)
	}
	if _, err := Parse([]byte("keep;  "), ParseOptions{MaxSize: 5}); !errors.Is(err, ErrLimit) {
		t.Errorf("MaxSize 5: %v, want ErrLimit", err)
	}
	deep := strings.Repeat("if true {", 100) + strings.Repeat("}", 100)
	if _, err := Parse([]byte(deep), ParseOptions{}); err == nil || !strings.Contains(err.Error(), "nested") {
		t.Errorf("deep blocks: %v", err)
	}
	deepTest := "if " + strings.Repeat("not ", 100) + "true { keep; }"
	if _, err := Parse([]byte(deepTest), ParseOptions{}); err == nil || !strings.Contains(err.Error(), "nested") {
		t.Errorf("deep tests: %v", err)
	}
	var b strings.Builder
	b.WriteString(`require "regex";`)
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&b, "if header :regex \"Subject\" \"a%d\" { keep; }\n", i)
	}
	if _, err := Parse([]byte(b.String()), ParseOptions{MaxRegexps: 2}); !errors.Is(err, ErrLimit) {
		t.Errorf("3 regexps with MaxRegexps 2: %v, want ErrLimit", err)
	}
	list := `if header :is "a" [` + strings.Repeat(`"x",`, maxListLen) + `"x"] { keep; }`
	if _, err := Parse([]byte(list), ParseOptions{}); err == nil || !strings.Contains(err.Error(), "string list longer") {
		t.Errorf("long list: %v", err)
	}
}

func TestRunLimits(t *testing.T) {
	ctx := context.Background()
	msg := NewMessage([]byte(crlf(plain)))

	// Steps: many tests over a long key list.
	keys := strings.Repeat(`"nomatch",`, 1000) + `"x"`
	s, err := Parse([]byte(strings.Repeat(`if header :is ["Subject", "From", "To"] [`+keys+`] { discard; }`+"\n", 30)), ParseOptions{MaxSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(ctx, msg, Envelope{}, RunOptions{})
	if !errors.Is(err, ErrLimit) || !res.ImplicitKeep {
		t.Errorf("steps: %v, %+v, want ErrLimit and the implicit keep", err, res)
	}
	if _, err := s.Run(ctx, msg, Envelope{}, RunOptions{MaxSteps: 1 << 20}); err != nil {
		t.Errorf("steps with a larger budget: %v", err)
	}

	// Redirects: five distinct, the sixth is an error.
	var b strings.Builder
	for i := 0; i < 6; i++ {
		fmt.Fprintf(&b, "redirect \"u%d@example.com\"; redirect \"u%d@example.com\";\n", i, i)
	}
	s = mustParse(t, b.String())
	if _, err := s.Run(ctx, msg, Envelope{}, RunOptions{}); !errors.Is(err, ErrLimit) {
		t.Errorf("6 redirects: %v, want ErrLimit", err)
	}
	res, err = s.Run(ctx, msg, Envelope{}, RunOptions{MaxRedirects: 6})
	if err != nil || len(res.Actions) != 6 {
		t.Errorf("6 redirects allowed: %d actions, %v", len(res.Actions), err)
	}

	// Regular expressions built from variables, compiled per run.
	b.Reset()
	b.WriteString(`require ["regex", "variables"];`)
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&b, "set \"p\" \"x%d\"; if header :regex \"Subject\" \"${p}\" { keep; }\n", i)
	}
	s = mustParse(t, b.String())
	s.maxRe = 4
	if _, err := s.Run(ctx, msg, Envelope{}, RunOptions{}); !errors.Is(err, ErrLimit) {
		t.Errorf("5 variable regexps with a bound of 4: %v, want ErrLimit", err)
	}

	// A pathological wildcard pattern is charged to the step budget.
	long := NewMessage([]byte("Subject: " + strings.Repeat("a", 60000) + "\r\n\r\nx"))
	s = mustParse(t, `if header :matches "Subject" "*`+strings.Repeat("a", 4000)+`b" { keep; }`)
	if _, err := s.Run(ctx, long, Envelope{}, RunOptions{}); !errors.Is(err, ErrLimit) {
		t.Errorf("backtracking pattern: %v, want ErrLimit", err)
	}

	// A cancelled context stops the run.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	s = mustParse(t, strings.Repeat("if true { }\n", 200))
	if _, err := s.Run(cctx, msg, Envelope{}, RunOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestRunBounds(t *testing.T) {
	ctx := context.Background()
	msg := NewMessage([]byte(crlf(plain)))
	// Many references to a long variable expand to at most maxExpanded.
	s := mustParse(t, `require ["variables", "reject"]; set "a" "`+strings.Repeat("x", 4000)+`"; reject "`+strings.Repeat("${a}", 5000)+`";`)
	res, err := s.Run(ctx, msg, Envelope{}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Actions[0].(Reject).Reason); n != maxExpanded {
		t.Errorf("expanded reason of %d bytes, want %d", n, maxExpanded)
	}
	// A flag list holds at most maxFlags flags.
	var flags strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&flags, "f%d ", i)
	}
	s = mustParse(t, `require "imap4flags"; addflag "`+flags.String()+`"; addflag "`+flags.String()+`"; keep;`)
	if res, err = s.Run(ctx, msg, Envelope{}, RunOptions{}); err != nil || len(res.Actions[0].(Keep).Flags) != maxFlags {
		t.Errorf("flags: %v, want %d flags", err, maxFlags)
	}
	// Match variables are truncated like variables.
	s = mustParse(t, `require ["variables", "reject"]; if header :matches "Subject" "*" { reject "${1}"; }`)
	long := NewMessage([]byte("Subject: " + strings.Repeat("y", 10000) + "\r\n\r\nx"))
	if res, err = s.Run(ctx, long, Envelope{}, RunOptions{}); err != nil || len(res.Actions[0].(Reject).Reason) != DefaultMaxVariableSize {
		t.Errorf("match variable: %v, %d bytes, want %d", err, len(res.Actions[0].(Reject).Reason), DefaultMaxVariableSize)
	}
}

// A Script runs concurrently (go test -race checks that Run changes
// nothing shared).
func TestRunConcurrent(t *testing.T) {
	s := mustParse(t, benchScript())
	msg := NewMessage([]byte(benchMessage))
	done := make(chan string)
	for i := 0; i < 4; i++ {
		go func() {
			res, err := s.Run(context.Background(), msg, Envelope{To: "bob+work@example.com"}, RunOptions{})
			if err != nil {
				done <- err.Error()
				return
			}
			done <- describe(res)
		}()
	}
	for i := 0; i < 4; i++ {
		if got := <-done; got != "fileinto:Reports/Q2" {
			t.Errorf("concurrent Run = %s", got)
		}
	}
}
