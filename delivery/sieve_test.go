package delivery

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// sieveRules is a script of n rules of the kind people write: a header
// test filing into a folder each.
func sieveRules(n int) string {
	var b strings.Builder
	b.WriteString(`require ["fileinto", "imap4flags"];` + "\n")
	for i := range n {
		fmt.Fprintf(&b, "if anyof (header :contains \"subject\" \"topic-%d\", address :is \"from\" \"list%d@lists.example\") { fileinto \"Junk\"; stop; }\n", i, i)
	}
	return b.String()
}

// BenchmarkSieveDelivery: one MX delivery to bob@a.test on a real bbolt
// store, without a script and with a 200-rule one (none matching, the
// worst case: every rule is evaluated). The mailbox has 1 MB of quota:
// run it with -benchtime 2000x.
func BenchmarkSieveDelivery(b *testing.B) {
	msg := []byte("From: someone@sender.example\r\nTo: bob@a.test\r\nSubject: an ordinary message\r\nMessage-ID: <1@sender.example>\r\n\r\n" + strings.Repeat("Some text of the body.\r\n", 10))
	for _, withScript := range []bool{false, true} {
		b.Run(fmt.Sprintf("script=%v", withScript), func(b *testing.B) {
			f := newFixture(b)
			ctx := context.Background()
			bob := f.mailbox("bob@a.test")
			if withScript {
				if err := f.st.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: bob.ID, Name: "rules", Script: sieveRules(200), Active: true}); err != nil {
					b.Fatal(err)
				}
			}
			a := New(Config{Store: f.st, SRS: testSRS, Now: func() time.Time { return testNow }, Sieve: NewSieve(SieveConfig{Store: f.st})})
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				tx := a.StartMX("someone@sender.example", 0)
				if err := tx.AddRecipient(ctx, "bob@a.test", ""); err != nil {
					b.Fatal(err)
				}
				if _, err := tx.Commit(ctx, msg, testNow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
