package imapd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/mailhost/mailhost/mailstore"
)

// lines is the untagged responses of a command that must succeed, those
// of kind ("LIST", "LSUB") only, sorted: the order of LIST responses is
// not the protocol's.
func lines(t *testing.T, rc *rawConn, kind, cmd string) []string {
	t.Helper()
	var out []string
	for _, l := range mustOK(t, rc, cmd) {
		if strings.HasPrefix(l, "* "+kind+" ") {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// TestSubscriptionsApart: subscriptions are names of their own (RFC 3501
// section 6.3.6, RFC 9051 sections 6.3.4 to 6.3.9): CREATE does not
// subscribe, SUBSCRIBE takes a name with no folder, DELETE and RENAME
// leave the subscription where it was, UNSUBSCRIBE of a name not
// subscribed is OK, and LIST (SUBSCRIBED) shows a name without a folder
// \NonExistent where LSUB shows it \Noselect.
func TestSubscriptionsApart(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := rawLogin(t, e)
	steps := []struct {
		cmd  string
		want []string // nil: no check of the responses, only OK
	}{
		// A new account's folders are subscribed; CREATE subscribes nothing.
		{`LSUB "" "*"`, []string{
			`* LSUB (\HasNoChildren \Archive) "/" "Archive"`,
			`* LSUB (\HasNoChildren \Drafts) "/" "Drafts"`,
			`* LSUB (\HasNoChildren \Junk) "/" "Junk"`,
			`* LSUB (\HasNoChildren \Sent) "/" "Sent"`,
			`* LSUB (\HasNoChildren \Trash) "/" "Trash"`,
			`* LSUB (\HasNoChildren) "/" INBOX`,
		}},
		{`CREATE Work/Notes`, nil},
		{`LSUB "" "Work*"`, []string{}},
		{`LIST (SUBSCRIBED) "" "Work*"`, []string{}},
		{`LIST "" "Work*" RETURN (SUBSCRIBED)`, []string{
			`* LIST (\HasChildren) "/" "Work"`,
			`* LIST (\HasNoChildren) "/" "Work/Notes"`,
		}},
		// A name with no folder.
		{`SUBSCRIBE Later`, nil},
		{`LIST (SUBSCRIBED) "" "Later"`, []string{`* LIST (\NonExistent \HasNoChildren \Subscribed) "/" "Later"`}},
		{`LSUB "" "Later"`, []string{`* LSUB (\Noselect \HasNoChildren) "/" "Later"`}},
		{`LIST "" "Later"`, []string{}},
		{`LIST "" "Later" RETURN (SUBSCRIBED)`, []string{}},
		// DELETE keeps the subscription (RFC 9051 section 6.3.7).
		{`SUBSCRIBE Work/Notes`, nil},
		{`DELETE Work/Notes`, nil},
		{`LIST (SUBSCRIBED) "" "Work/*"`, []string{`* LIST (\NonExistent \HasNoChildren \Subscribed) "/" "Work/Notes"`}},
		// A folder made again under the name is subscribed at once.
		{`CREATE Work/Notes`, nil},
		{`LIST (SUBSCRIBED) "" "Work/*"`, []string{`* LIST (\HasNoChildren \Subscribed) "/" "Work/Notes"`}},
		// RENAME leaves the subscription on the old name (RFC 9051 section 6.3.6).
		{`RENAME Work Job`, nil},
		{`LIST (SUBSCRIBED) "" "Wo*"`, []string{`* LIST (\NonExistent \HasNoChildren \Subscribed) "/" "Work/Notes"`}},
		{`LIST "" "Job*" RETURN (SUBSCRIBED)`, []string{
			`* LIST (\HasChildren) "/" "Job"`,
			`* LIST (\HasNoChildren) "/" "Job/Notes"`,
		}},
		// UNSUBSCRIBE of a name not subscribed is OK (RFC 9051 section 6.3.8).
		{`UNSUBSCRIBE Never`, nil},
		{`UNSUBSCRIBE Work/Notes`, nil},
		{`UNSUBSCRIBE Work/Notes`, nil},
		{`LIST (SUBSCRIBED) "" "Work*"`, []string{}},
		// INBOX in any case is one name; a trailing delimiter is dropped.
		{`UNSUBSCRIBE inbox`, nil},
		{`LSUB "" "INBOX"`, []string{}},
		{`SUBSCRIBE Inbox`, nil},
		{`SUBSCRIBE Job/`, nil},
	}
	for _, s := range steps {
		kind := "LIST"
		if strings.HasPrefix(s.cmd, "LSUB") {
			kind = "LSUB"
		}
		got := lines(t, rc, kind, s.cmd)
		slices.Sort(s.want)
		if s.want != nil && !slices.Equal(got, s.want) {
			t.Errorf("%s: %q, want %q", s.cmd, got, s.want)
		}
	}
	got := lines(t, rc, "LIST", `LIST (SUBSCRIBED) "" "%"`)
	if !slices.Contains(got, `* LIST (\HasNoChildren \Subscribed) "/" INBOX`) || !slices.Contains(got, `* LIST (\HasChildren \Subscribed) "/" "Job"`) {
		t.Errorf(`LIST (SUBSCRIBED) "" "%%": %q, want INBOX and Job subscribed`, got)
	}
	// A name no folder could have is refused, as CREATE refuses it.
	for _, name := range []string{`"a*"`, `"a//b"`} {
		if _, tagged := rc.cmd("SUBSCRIBE %s", name); !strings.HasPrefix(tagged, "NO [CANNOT]") {
			t.Errorf("SUBSCRIBE %s = %s, want NO [CANNOT]", name, tagged)
		}
	}
}

// TestSubscriptionsHierarchy: the levels above subscribed names. LSUB
// "%" answers an unsubscribed parent of a subscribed folder \Noselect
// (RFC 3501 section 6.3.9); LIST (SUBSCRIBED) "%" does not list it, and
// with RECURSIVEMATCH does, with CHILDINFO (RFC 9051 sections 6.3.9.1 and
// 6.3.9.6, and example 7 of 6.3.9.8), \NonExistent when it is no folder.
func TestSubscriptionsHierarchy(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := rawLogin(t, e)
	for _, cmd := range []string{
		`CREATE Fruit/Banana`, `CREATE Fruit/Apple`, `SUBSCRIBE Fruit/Banana`,
		`SUBSCRIBE Veg/Corn`, // neither Veg nor Veg/Corn is a folder
		`CREATE Tofu`, `SUBSCRIBE Tofu`, `SUBSCRIBE Tofu/Silken`,
		`UNSUBSCRIBE Drafts`, `UNSUBSCRIBE Junk`, `UNSUBSCRIBE Sent`, `UNSUBSCRIBE Trash`, `UNSUBSCRIBE Archive`,
	} {
		mustOK(t, rc, cmd)
	}
	for _, tt := range []struct {
		cmd  string
		want []string
	}{
		{`LSUB "" "%"`, []string{
			`* LSUB (\Noselect) "/" "Fruit"`,
			`* LSUB (\HasNoChildren) "/" INBOX`,
			`* LSUB (\HasNoChildren) "/" "Tofu"`,
			`* LSUB (\Noselect) "/" "Veg"`,
		}},
		{`LSUB "" "*"`, []string{
			`* LSUB (\HasNoChildren) "/" "Fruit/Banana"`,
			`* LSUB (\HasNoChildren) "/" INBOX`,
			`* LSUB (\HasNoChildren) "/" "Tofu"`,
			`* LSUB (\Noselect \HasNoChildren) "/" "Tofu/Silken"`,
			`* LSUB (\Noselect \HasNoChildren) "/" "Veg/Corn"`,
		}},
		{`LSUB "" "Fruit/%"`, []string{`* LSUB (\HasNoChildren) "/" "Fruit/Banana"`}},
		{`LIST (SUBSCRIBED) "" "%"`, []string{
			`* LIST (\HasNoChildren \Subscribed) "/" INBOX`,
			`* LIST (\HasNoChildren \Subscribed) "/" "Tofu"`,
		}},
		{`LIST (SUBSCRIBED RECURSIVEMATCH) "" "%"`, []string{
			`* LIST (\HasChildren) "/" "Fruit" (CHILDINFO ("SUBSCRIBED"))`,
			`* LIST (\HasNoChildren \Subscribed) "/" INBOX`,
			`* LIST (\HasNoChildren \Subscribed) "/" "Tofu" (CHILDINFO ("SUBSCRIBED"))`,
			`* LIST (\NonExistent \HasNoChildren) "/" "Veg" (CHILDINFO ("SUBSCRIBED"))`,
		}},
		// A parent whose subscribed children are all listed is not
		// (RFC 9051 section 6.3.9.6 asks servers to suppress it).
		{`LIST (SUBSCRIBED RECURSIVEMATCH) "" "Fruit*"`, []string{
			`* LIST (\HasNoChildren \Subscribed) "/" "Fruit/Banana"`,
		}},
		// STATUS only for what meets the selection (example 11).
		{`LIST (SUBSCRIBED RECURSIVEMATCH) "" "%" RETURN (STATUS (MESSAGES))`, []string{
			`* LIST (\HasChildren) "/" "Fruit" (CHILDINFO ("SUBSCRIBED"))`,
			`* LIST (\HasNoChildren \Subscribed) "/" INBOX`,
			`* LIST (\HasNoChildren \Subscribed) "/" "Tofu" (CHILDINFO ("SUBSCRIBED"))`,
			`* LIST (\NonExistent \HasNoChildren) "/" "Veg" (CHILDINFO ("SUBSCRIBED"))`,
			`* STATUS INBOX (MESSAGES 0)`,
			`* STATUS "Tofu" (MESSAGES 0)`,
		}},
		{`LIST (SUBSCRIBED SPECIAL-USE) "" "*"`, []string{}},
	} {
		untagged := mustOK(t, rc, tt.cmd)
		slices.Sort(untagged)
		slices.Sort(tt.want)
		if !slices.Equal(untagged, tt.want) {
			t.Errorf("%s:\n got %q\nwant %q", tt.cmd, untagged, tt.want)
		}
	}
	// RECURSIVEMATCH alone is BAD (RFC 9051 section 6.3.9.1).
	if _, tagged := rc.cmd(`LIST (RECURSIVEMATCH) "" "%%"`); !strings.HasPrefix(tagged, "BAD") {
		t.Errorf("LIST (RECURSIVEMATCH) = %s, want BAD", tagged)
	}
}

// TestSubscriptionsClient: what a real client reads of the same through
// imapclient's parser: \NonExistent, \Subscribed and CHILDINFO.
func TestSubscriptionsClient(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.login(nil)
	if err := c.Create("Fruit/Banana", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Fruit/Banana", "Fruit/Peach"} {
		if err := c.Subscribe(name).Wait(); err != nil {
			t.Fatalf("SUBSCRIBE %s: %v", name, err)
		}
	}
	list, err := c.List("", "%", &imap.ListOptions{SelectSubscribed: true, SelectRecursiveMatch: true, ReturnChildren: true}).Collect()
	if err != nil {
		t.Fatalf("LIST (SUBSCRIBED RECURSIVEMATCH): %v", err)
	}
	var fruit *imap.ListData
	for _, l := range list {
		if l.Mailbox == "Fruit" {
			fruit = l
		}
	}
	if fruit == nil || fruit.ChildInfo == nil || !fruit.ChildInfo.Subscribed || slices.Contains(fruit.Attrs, imap.MailboxAttrSubscribed) {
		t.Errorf("LIST (SUBSCRIBED RECURSIVEMATCH) %%: Fruit = %+v, want unsubscribed with CHILDINFO (SUBSCRIBED)", fruit)
	}
	list, err = c.List("", "Fruit/*", &imap.ListOptions{SelectSubscribed: true}).Collect()
	if err != nil {
		t.Fatalf("LIST (SUBSCRIBED): %v", err)
	}
	got := map[string][]imap.MailboxAttr{}
	for _, l := range list {
		got[l.Mailbox] = l.Attrs
	}
	if len(got) != 2 || slices.Contains(got["Fruit/Banana"], imap.MailboxAttrNonExistent) ||
		!slices.Contains(got["Fruit/Peach"], imap.MailboxAttrNonExistent) || !slices.Contains(got["Fruit/Peach"], imap.MailboxAttrSubscribed) {
		t.Errorf("LIST (SUBSCRIBED) Fruit/*: %v, want Fruit/Banana, and Fruit/Peach \\NonExistent \\Subscribed", got)
	}
	if err := c.Unsubscribe("Nothing/Here").Wait(); err != nil {
		t.Errorf("UNSUBSCRIBE of a name not subscribed = %v, want OK", err)
	}
}

// TestSubscriptionLimit: past mailstore.MaxSubscriptions, SUBSCRIBE is
// NO [LIMIT]; a name subscribed already is still OK.
func TestSubscriptionLimit(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	for i := len(mailstore.DefaultFolders); i < mailstore.MaxSubscriptions; i++ {
		if err := e.st.Subscribe(ctx, e.mb.ID, fmt.Sprintf("n%04d", i)); err != nil {
			t.Fatal(err)
		}
	}
	c := e.login(nil)
	if err := c.Subscribe("One/More").Wait(); imapCode(err) != imap.ResponseCodeLimit {
		t.Errorf("SUBSCRIBE past the limit = %v, want NO [LIMIT]", err)
	}
	if err := c.Subscribe("INBOX").Wait(); err != nil {
		t.Errorf("SUBSCRIBE INBOX (subscribed) at the limit = %v, want OK", err)
	}
}
