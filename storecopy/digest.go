package storecopy

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// Summary is what a copy compares between source and destination: per
// kind of record, how many and a SHA-256 over their canonical encoding,
// in the dump's canonical order (mailstore.Dumper), bodies by their own
// SHA-256. Sequences are compared apart (the destination's may be ahead).
type Summary struct {
	Counts    map[mailstore.Kind]int64
	Sums      map[mailstore.Kind][sha256.Size]byte
	BodyBytes int64
	Sequences map[string]int64
}

// digester computes a Summary from the records as they pass.
type digester struct {
	h      map[mailstore.Kind]hash.Hash
	counts map[mailstore.Kind]int64
	bytes  int64
	seqs   map[string]int64
	buf    []byte
}

func newDigester() *digester {
	return &digester{h: map[mailstore.Kind]hash.Hash{}, counts: map[mailstore.Kind]int64{}, seqs: map[string]int64{}}
}

func (d *digester) summary() Summary {
	s := Summary{Counts: map[mailstore.Kind]int64{}, Sums: map[mailstore.Kind][sha256.Size]byte{}, BodyBytes: d.bytes, Sequences: d.seqs}
	for _, k := range mailstore.Kinds() {
		if k == mailstore.KindSequence {
			continue
		}
		s.Counts[k] = d.counts[k]
		if h := d.h[k]; h != nil {
			var sum [sha256.Size]byte
			h.Sum(sum[:0])
			s.Sums[k] = sum
		}
	}
	return s
}

// The encoding: every field length-prefixed or fixed-size, so that no
// two different records encode alike.

func (d *digester) str(s string) {
	d.buf = binary.AppendUvarint(d.buf, uint64(len(s)))
	d.buf = append(d.buf, s...)
}

func (d *digester) bytesField(b []byte) {
	d.buf = binary.AppendUvarint(d.buf, uint64(len(b)))
	d.buf = append(d.buf, b...)
}

func (d *digester) i64(n int64) { d.buf = binary.AppendVarint(d.buf, n) }

func (d *digester) flag(b bool) {
	if b {
		d.buf = append(d.buf, 1)
	} else {
		d.buf = append(d.buf, 0)
	}
}

// when encodes a time in UTC to the nanosecond, the zero time (a NULL
// on PostgreSQL) apart from every other.
func (d *digester) when(t time.Time) {
	if t.IsZero() {
		d.flag(false)
		return
	}
	d.flag(true)
	d.i64(t.Unix())
	d.i64(int64(t.Nanosecond()))
}

func (d *digester) strs(ss []string) {
	d.i64(int64(len(ss)))
	for _, s := range ss {
		d.str(s)
	}
}

// add counts a record and hashes it into its kind's sum.
func (d *digester) add(r mailstore.Record) {
	k := mailstore.KindOf(r)
	d.counts[k]++
	d.buf = d.buf[:0]
	switch r := r.(type) {
	case mailstore.SettingRecord:
		d.str(r.Name)
		d.str(r.Value)
	case mailstore.PartnerRecord:
		// DomainCount is left out: bbolt keeps no such counter (it
		// counts an index), so a copy into bbolt cannot carry a
		// drifting one; verify reports that drift.
		d.i64(r.ID)
		d.str(r.Name)
		d.when(r.CreatedAt)
		d.i64(r.MaxDomains)
	case mailstore.APIKeyRecord:
		d.i64(r.ID)
		d.i64(r.PartnerID)
		d.str(r.Lookup)
		d.str(r.Prefix)
		d.bytesField(r.SecretHash)
		d.when(r.CreatedAt)
		d.flag(r.Revoked)
		d.when(r.RevokedAt)
	case mailstore.DomainRecord:
		x := r.Domain
		for _, n := range []int64{x.ID, x.PartnerID, x.MaxMailboxes, x.MaxAliases, x.QuotaMB, x.RetentionDays,
			x.TransferMonthlyMB, x.MailboxCount, x.AliasCount, x.MessageCount, x.UsedBytes} {
			d.i64(n)
		}
		d.str(x.Name)
		d.str(x.Plan)
		d.flag(x.Suspended)
		d.when(x.CreatedAt)
		d.flag(x.Verified)
		d.when(x.VerifiedAt)
		d.str(x.VerifyToken)
		d.str(x.SpamFilter)
		d.when(x.ClaimEndedAt)
	case mailstore.DKIMRecord:
		d.i64(r.DomainID)
		d.i64(int64(len(r.Keys)))
		for _, key := range r.Keys {
			d.str(key.Selector)
			d.str(key.Algorithm)
			d.bytesField(key.Private)
			d.when(key.CreatedAt)
		}
	case mailstore.TransferRecord:
		d.i64(r.DomainID)
		d.str(r.Month)
		d.i64(r.InBytes)
		d.i64(r.OutBytes)
	case mailstore.MailboxRecord:
		m := r.Mailbox
		for _, n := range []int64{m.ID, m.DomainID, m.PartnerID, m.QuotaMB, m.UsedBytes, m.MessageCount, r.FolderCount} {
			d.i64(n)
		}
		d.str(m.Email)
		d.str(m.PasswordHash)
		d.when(m.LastLogin)
		d.when(m.CreatedAt)
		d.when(m.PasswordChangedAt)
	case mailstore.AliasRecord:
		d.i64(r.ID)
		d.i64(r.DomainID)
		d.i64(r.PartnerID)
		d.str(r.Source)
		d.str(r.Destination)
		d.when(r.CreatedAt)
	case mailstore.FolderRecord:
		f := r.Folder
		for _, n := range []int64{f.ID, f.MailboxID, int64(f.UIDValidity), int64(f.UIDNext), f.Messages, f.Unseen, f.Size} {
			d.i64(n)
		}
		d.str(f.Name)
		d.str(f.SpecialUse)
		d.i64(int64(f.HighestModSeq))
	case mailstore.SubscriptionRecord:
		d.i64(r.MailboxID)
		d.str(r.Name)
	case mailstore.BlobRecord:
		d.i64(r.ID)
		d.i64(r.Refs)
		sum := sha256.Sum256(r.Body)
		d.bytesField(sum[:])
		d.bytes += int64(len(r.Body))
	case mailstore.MessageRecord:
		m := r.Message
		d.i64(m.FolderID)
		d.i64(int64(m.UID))
		d.i64(m.BlobID)
		d.i64(m.Size)
		d.when(m.ReceivedAt)
		d.strs(m.Flags)
	case mailstore.OutboundRecord:
		// The lease's node is left out: bbolt keeps only whether there
		// is a lease.
		o := r.Outbound
		d.i64(o.ID)
		d.str(string(o.Kind))
		d.i64(o.DomainID)
		d.str(o.From)
		d.str(o.Destination)
		d.i64(int64(len(o.Recipients)))
		for _, rc := range o.Recipients {
			d.str(rc.Address)
			d.str(string(rc.State))
			d.str(rc.Reply)
		}
		d.i64(o.BlobID)
		d.i64(o.Size)
		d.when(o.QueuedAt)
		d.when(o.NextAttempt)
		d.i64(int64(o.Attempts))
		d.str(o.LastError)
		d.flag(o.Held)
		d.flag(o.Leased || r.LeasedBy != "")
		d.flag(o.Warned)
	case mailstore.STSRecord:
		p := r.STSPolicy
		d.str(p.Domain)
		d.str(p.ID)
		d.str(p.Mode)
		d.strs(p.MX)
		d.i64(int64(p.MaxAge))
		d.when(p.Expires)
	case mailstore.AutoReplyRecord:
		a := r.AutoReply
		d.i64(a.MailboxID)
		d.flag(a.Enabled)
		d.str(a.Subject)
		d.str(a.Body)
		d.when(a.Start)
		d.when(a.End)
	case mailstore.AutoReplySentRecord:
		d.i64(r.MailboxID)
		d.str(r.Sender)
		d.when(r.SentAt)
	case mailstore.SieveScriptRecord:
		d.i64(r.MailboxID)
		d.str(r.Name)
		d.str(r.Script)
		d.flag(r.Active)
		d.when(r.UpdatedAt)
	case mailstore.WebhookRecord:
		w := r.Webhook
		d.i64(w.ID)
		d.i64(w.PartnerID)
		d.str(w.URL)
		d.strs(w.Events)
		d.str(w.Secret)
		d.when(w.CreatedAt)
	case mailstore.EventRecord:
		e := r.Event
		d.i64(e.ID)
		d.str(e.Type)
		d.i64(e.PartnerID)
		d.when(e.CreatedAt)
		d.bytesField(canonicalJSON(e.Data))
	case mailstore.WebhookDeliveryRecord:
		d.i64(r.ID)
		d.i64(r.WebhookID)
		d.i64(r.EventID)
		d.i64(int64(r.Attempts))
		d.when(r.NextAttempt)
		d.str(r.LastError)
	case mailstore.EventMarkRecord:
		d.str(r.Mark)
	case mailstore.AuditRecord:
		e := r.AuditEntry
		d.i64(e.ID)
		d.when(e.Time)
		d.i64(e.PartnerID)
		d.str(e.KeyPrefix)
		d.str(e.Method)
		d.str(e.Route)
		d.str(e.Object)
		d.i64(int64(e.Status))
	case mailstore.CertRecord:
		d.str(r.Name)
		sum := sha256.Sum256(r.Data)
		d.bytesField(sum[:])
	case mailstore.SequenceRecord:
		d.seqs[r.Name] = r.Value
		return
	default:
		// A kind this digest does not spell out yet: its Go syntax,
		// rather than nothing, so that a difference is not unseen (a
		// time's location may make equal records differ: write the
		// case).
		d.str(fmt.Sprintf("%#v", r))
	}
	h := d.h[k]
	if h == nil {
		h = sha256.New()
		d.h[k] = h
	}
	h.Write(d.buf)
}

// canonicalJSON is JSON in one spelling whatever the store kept: keys
// sorted, no spaces, numbers as written (PostgreSQL's jsonb reorders keys
// and adds spaces; bbolt keeps what was marshalled). Text that does not
// parse is hashed as it is, so that it still differs from any other.
func canonicalJSON(raw []byte) []byte {
	if len(raw) == 0 {
		return []byte("null")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}
