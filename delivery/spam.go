package delivery

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/spam"
)

// Scanner is the spam filter; *spam.Client satisfies it.
type Scanner interface {
	Check(ctx context.Context, env spam.Envelope, msg []byte) (spam.Result, error)
}

// Outcomes of the spam filter (Transaction.Filter).
var (
	// ErrSpam: the filter rejects the message and a recipient's domain
	// refuses what it rejects (mailstore.SpamFilterReject), or a
	// submission the filter rejects (a stolen password sending spam).
	ErrSpam = &Refusal{"message refused as spam", false}
	// ErrSpamLater: the filter answered "soft reject" or "greylist":
	// the sender may try again later.
	ErrSpamLater = &Refusal{"message deferred by the spam filter", true}
	// ErrFilterUnavailable: the filter could not be asked, and
	// Config.SpamFailClosed has the message wait rather than go
	// unscanned.
	ErrFilterUnavailable = &Refusal{"spam filter unavailable", true}
)

// UnscannedHeader is the field Filter adds to a message the filter could
// not scan, when it delivers it all the same (fail open).
const UnscannedHeader = "X-Spam-Scanner: unscanned; spam filter unavailable"

// FilterInput is what the session knows of the message beyond the
// transaction: the client and the id of the message in the logs.
type FilterInput struct {
	IP      netip.Addr
	Helo    string
	QueueID string
}

// Verdict is what Filter did, for the log.
type Verdict struct {
	// Scanned: the filter answered; Action and Score are its verdict.
	Scanned bool
	Action  spam.Action
	Score   float64
	// Unscanned is the error of a filter that could not be asked, the
	// message delivered anyway (fail open); nil otherwise.
	Unscanned error
	// Junk are the mailboxes the message goes to the Junk folder of.
	Junk []int64
}

// Filter has the message, body (as it will be stored), checked by
// Config.Spam, after the recipients are all accepted and before Commit,
// and applies the verdict as each recipient's domain says
// (Domain.SpamFilter, else Config.SpamDefault):
//
//   - "reject": ErrSpam (permanent) when a domain with the setting
//     "reject" is among the local recipients' (nothing is stored for
//     anyone: after DATA the refusal is one for the whole message),
//     else as "add header";
//   - "soft reject", "greylist": ErrSpamLater (temporary);
//   - "add header", "rewrite subject": the message goes to the Junk
//     folder of every local recipient whose domain filters (Commit), with
//     X-Spam: Yes and the score in its header;
//   - "no action": INBOX, with the score in the header.
//
// Domains with the setting "off" are not filtered; when no local
// recipient's domain filters, the filter is not asked. A submission is
// checked with the user (rspamd's rules for outgoing mail): "reject" is
// ErrSpam; "add header" and "rewrite subject" send the copies of other
// partners' mailboxes whose domain filters (InboundChecks) to Junk,
// without a field (the body is shared with the user's other
// recipients); anything else leaves the message as it is.
//
// When the filter cannot be asked (down, slow) the message is delivered
// unscanned with UnscannedHeader (Verdict.Unscanned says why), or, with
// Config.SpamFailClosed, refused with ErrFilterUnavailable (temporary).
// Other errors are failed lookups, temporary. Without Config.Spam, and
// for a Forward, Filter returns body as it is.
func (t *Transaction) Filter(ctx context.Context, in FilterInput, body []byte) ([]byte, Verdict, error) {
	sc := t.a.cfg.Spam
	if sc == nil || t.mode == Forward {
		return body, Verdict{}, nil
	}
	var filtering []int64 // local recipients whose domain filters
	reject := false
	// The mailboxes whose domain's setting applies: the MX's, and a
	// submission's that are another partner's (InboundChecks).
	checked := t.outside
	if t.mode == MX {
		checked = t.mailboxes
	}
	filters := map[int64]string{}
	for _, m := range checked {
		f, ok := filters[m.DomainID]
		if !ok {
			d, err := t.a.cfg.Store.DomainWithID(ctx, m.DomainID)
			if err != nil {
				return nil, Verdict{}, fmt.Errorf("spam filter of domain %d: %w", m.DomainID, err)
			}
			f = d.SpamFilter
			if f == "" {
				f = t.a.cfg.SpamDefault
			}
			filters[m.DomainID] = f
		}
		switch f {
		case mailstore.SpamFilterOff:
			continue
		case mailstore.SpamFilterReject:
			reject = true
		}
		filtering = append(filtering, m.ID)
	}
	if t.mode == MX && len(filtering) == 0 {
		return body, Verdict{}, nil
	}
	env := spam.Envelope{IP: in.IP, Helo: in.Helo, From: t.from, QueueID: in.QueueID, User: t.user.Email}
	for _, r := range t.rcpts {
		env.Rcpts = append(env.Rcpts, r.Address)
	}
	for _, r := range t.relay {
		for _, to := range r.To {
			if !slices.Contains(env.Rcpts, to) {
				env.Rcpts = append(env.Rcpts, to)
			}
		}
	}
	res, err := sc.Check(ctx, env, body)
	if err != nil {
		if t.a.cfg.SpamFailClosed {
			return nil, Verdict{Unscanned: err}, refuse(ErrFilterUnavailable, err)
		}
		if t.mode == Submission {
			return body, Verdict{Unscanned: err}, nil
		}
		return append([]byte(UnscannedHeader+"\r\n"), body...), Verdict{Unscanned: err}, nil
	}
	v := Verdict{Scanned: true, Action: res.Action, Score: res.Score}
	why := fmt.Errorf("%s, score %.2f of %.2f, %s", res.Action, res.Score, res.Required, strings.Join(res.Symbols, ","))
	if t.mode == Submission {
		if res.Action == spam.Reject {
			return nil, v, refuse(ErrSpam, why)
		}
		// Other partners' mailboxes whose domain filters get what the
		// filter flags in Junk, as from the MX; the body, shared with
		// the user's other recipients, gets no field of the verdict.
		if (res.Action == spam.AddHeader || res.Action == spam.RewriteSubject) && len(filtering) > 0 {
			t.junk = unionIDs(t.junk, filtering)
			v.Junk = filtering
		}
		return body, v, nil
	}
	junk := false
	switch res.Action {
	case spam.Reject:
		if reject {
			return nil, v, refuse(ErrSpam, why)
		}
		junk = true
	case spam.SoftReject, spam.Greylist:
		return nil, v, refuse(ErrSpamLater, why)
	case spam.AddHeader, spam.RewriteSubject:
		junk = true
	}
	var h strings.Builder
	if junk {
		t.junk = unionIDs(t.junk, filtering)
		v.Junk = filtering
		h.WriteString("X-Spam: Yes\r\n")
	}
	fmt.Fprintf(&h, "X-Spam-Score: %.2f / %.2f\r\nX-Spam-Action: %s\r\n", res.Score, res.Required, res.Action)
	for _, f := range res.Headers {
		if strings.EqualFold(f.Name, "X-Spam") || strings.ContainsAny(f.Value, "\r\n") {
			continue // ours says it; a folded value is not taken as it is
		}
		fmt.Fprintf(&h, "%s: %s\r\n", f.Name, f.Value)
	}
	return append([]byte(h.String()), body...), v, nil
}

// Quarantine sends the message to every local recipient's Junk folder
// instead of its INBOX: what a DMARC p=quarantine policy asks of a
// message that fails it (RFC 7489 section 6.3). Of a submission, only
// the mailboxes the policy is checked for (InboundChecks: other
// partners') are. Recipients the spam filter already sends there stay
// so.
func (t *Transaction) Quarantine() {
	if t.mode == Submission {
		t.junk = unionIDs(t.junk, mailboxIDs(t.outside))
		return
	}
	t.junk = unionIDs(t.junk, t.MailboxIDs())
}

// mailboxIDs are the ids of ms.
func mailboxIDs(ms []mailstore.Mailbox) []int64 {
	ids := make([]int64, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

// unionIDs is a with the ids of b it lacks.
func unionIDs(a, b []int64) []int64 {
	for _, id := range b {
		if !slices.Contains(a, id) {
			a = append(a, id)
		}
	}
	return a
}
