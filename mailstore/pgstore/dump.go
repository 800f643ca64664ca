package pgstore

// Dump and Load of the PostgreSQL store (mailstore/dump.go), in raw SQL
// against the schema of migrations 001 to 008. Dump reads one REPEATABLE READ snapshot, one query
// per table streamed row by row (pgx reads a row at a time, so a body is
// in memory only while its record is handled). Load writes with COPY
// (pgx CopyFrom), a transaction per batch of loadBatchRecords records or
// loadBatchBytes bytes of bodies, tables in foreign-key order.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

var (
	_ mailstore.Dumper   = (*Store)(nil)
	_ mailstore.Loader   = (*Store)(nil)
	_ mailstore.Verifier = (*Store)(nil)
)

const (
	loadBatchRecords = 1000
	loadBatchBytes   = 32 << 20
)

// snapshot runs fn in one read-only REPEATABLE READ transaction, without
// the retries of read: fn hands records out as it goes, and a second run
// would hand them out twice. A read-only transaction at that level is
// never aborted for serialization anyway.
func (s *Store) snapshot(ctx context.Context, fn func(pgx.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// each runs a query and calls fn after scanning each row into dest.
func each(ctx context.Context, tx pgx.Tx, what, sql string, dest []any, fn func() error) error {
	rows, err := tx.Query(ctx, sql)
	if err != nil {
		return fmt.Errorf("dump %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("dump %s: %w", what, err)
		}
		if err := fn(); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("dump %s: %w", what, err)
	}
	return nil
}

// sequences maps the dump's sequence names to this schema's: a table's
// identity column, or uid_validity_seq.
var sequences = []struct{ name, table string }{
	{mailstore.SeqPartners, "partners"},
	{mailstore.SeqAPIKeys, "api_keys"},
	{mailstore.SeqDomains, "domains"},
	{mailstore.SeqMailboxes, "mailboxes"},
	{mailstore.SeqAliases, "aliases"},
	{mailstore.SeqFolders, "folders"},
	{mailstore.SeqUIDValidity, ""},
	{mailstore.SeqBlobs, "blobs"},
	{mailstore.SeqQueue, "queue"},
	{mailstore.SeqWebhooks, "webhooks"},
	{mailstore.SeqEvents, "events"},
	{mailstore.SeqDeliveries, "webhook_deliveries"},
	{mailstore.SeqAudit, "audit_log"},
}

// seqExpr is the regclass of a sequence, for pg_sequence_last_value and
// setval.
func seqExpr(table string) string {
	if table == "" {
		return `'uid_validity_seq'::regclass`
	}
	return `pg_get_serial_sequence('` + table + `', 'id')::regclass`
}

// Dump implements mailstore.Dumper.
func (s *Store) Dump(ctx context.Context, fn func(mailstore.Record) error) error {
	return s.snapshot(ctx, func(tx pgx.Tx) error {
		return dumpTx(ctx, tx, fn)
	})
}

// dumpTx dumps in the order a load needs: the control plane, the mail
// plane, the lazily made tables, the sequences.
func dumpTx(ctx context.Context, tx pgx.Tx, fn func(mailstore.Record) error) error {
	for _, dump := range []func(context.Context, pgx.Tx, func(mailstore.Record) error) error{dumpControl, dumpMail, dumpState, dumpSequences} {
		if err := dump(ctx, tx, fn); err != nil {
			return err
		}
	}
	return nil
}

// dumpControl dumps settings, partners, keys, domains, DKIM keys,
// transfer, mailboxes and aliases.
func dumpControl(ctx context.Context, tx pgx.Tx, fn func(mailstore.Record) error) error {
	{
		var r mailstore.SettingRecord
		if err := each(ctx, tx, "settings", `SELECT name, value FROM settings ORDER BY name COLLATE "C"`,
			[]any{&r.Name, &r.Value}, func() error { return fn(r) }); err != nil {
			return err
		}
	}
	{
		var r mailstore.PartnerRecord
		if err := each(ctx, tx, "partners", `SELECT id, name, created_at, max_domains, domain_count FROM partners ORDER BY id`,
			[]any{&r.ID, &r.Name, &r.CreatedAt, &r.MaxDomains, &r.DomainCount}, func() error {
				r.CreatedAt = r.CreatedAt.UTC()
				return fn(r)
			}); err != nil {
			return err
		}
	}
	{
		var r mailstore.APIKeyRecord
		var revoked *time.Time
		if err := each(ctx, tx, "API keys", `SELECT id, partner_id, lookup, prefix, secret_hash, created_at, revoked_at FROM api_keys ORDER BY id`,
			[]any{&r.ID, &r.PartnerID, &r.Lookup, &r.Prefix, &r.SecretHash, &r.CreatedAt, &revoked}, func() error {
				r.CreatedAt = r.CreatedAt.UTC()
				r.Revoked, r.RevokedAt = revoked != nil, fromNull(revoked)
				return fn(r)
			}); err != nil {
			return err
		}
	}
	{
		var r mailstore.DomainRecord
		d := &r.Domain
		var verifiedAt, endedAt *time.Time
		if err := each(ctx, tx, "domains", `SELECT id, partner_id, name, plan, max_mailboxes, max_aliases, quota_mb,
				retention_days, transfer_monthly_mb, suspended, created_at, verified, verified_at, verify_token,
				spam_filter, claim_ended_at, mailbox_count, alias_count,
				message_count + (SELECT coalesce(sum(u.message_count), 0) FROM domain_usage u WHERE u.domain_id = domains.id)::bigint,
				used_bytes + (SELECT coalesce(sum(u.used_bytes), 0) FROM domain_usage u WHERE u.domain_id = domains.id)::bigint
				FROM domains ORDER BY id`,
			[]any{&d.ID, &d.PartnerID, &d.Name, &d.Plan, &d.MaxMailboxes, &d.MaxAliases, &d.QuotaMB,
				&d.RetentionDays, &d.TransferMonthlyMB, &d.Suspended, &d.CreatedAt, &d.Verified, &verifiedAt,
				&d.VerifyToken, &d.SpamFilter, &endedAt, &d.MailboxCount, &d.AliasCount, &d.MessageCount, &d.UsedBytes}, func() error {
				d.CreatedAt, d.VerifiedAt, d.ClaimEndedAt = d.CreatedAt.UTC(), fromNull(verifiedAt), fromNull(endedAt)
				return fn(r)
			}); err != nil {
			return err
		}
	}
	{
		// One record per domain: the rows come by domain, so a domain's
		// keys are complete when the next domain's first row comes.
		var cur mailstore.DKIMRecord
		var domainID int64
		var k mailstore.DKIMKey
		flush := func() error {
			if len(cur.Keys) == 0 {
				return nil
			}
			r := cur
			cur = mailstore.DKIMRecord{}
			return fn(r)
		}
		if err := each(ctx, tx, "DKIM keys", `SELECT domain_id, selector, algorithm, private, created_at FROM dkim_keys ORDER BY domain_id, position`,
			[]any{&domainID, &k.Selector, &k.Algorithm, &k.Private, &k.CreatedAt}, func() error {
				if domainID != cur.DomainID {
					if err := flush(); err != nil {
						return err
					}
					cur.DomainID = domainID
				}
				k.CreatedAt = k.CreatedAt.UTC()
				cur.Keys = append(cur.Keys, k)
				k.Private = nil // the next row's bytes are its own
				return nil
			}); err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
	}
	{
		var r mailstore.TransferRecord
		if err := each(ctx, tx, "transfer", `SELECT domain_id, month, sum(in_bytes)::bigint, sum(out_bytes)::bigint FROM transfer
				GROUP BY domain_id, month ORDER BY domain_id, month COLLATE "C"`,
			[]any{&r.DomainID, &r.Month, &r.InBytes, &r.OutBytes}, func() error { return fn(r) }); err != nil {
			return err
		}
	}
	{
		var r mailstore.MailboxRecord
		m := &r.Mailbox
		var lastLogin, changed *time.Time
		if err := each(ctx, tx, "mailboxes", `SELECT id, domain_id, partner_id, email, password_hash, quota_mb,
				used_bytes, message_count, folder_count, last_login, created_at, password_changed_at
				FROM mailboxes ORDER BY id`,
			[]any{&m.ID, &m.DomainID, &m.PartnerID, &m.Email, &m.PasswordHash, &m.QuotaMB, &m.UsedBytes,
				&m.MessageCount, &r.FolderCount, &lastLogin, &m.CreatedAt, &changed}, func() error {
				m.CreatedAt = m.CreatedAt.UTC()
				m.LastLogin, m.PasswordChangedAt = fromNull(lastLogin), fromNull(changed)
				return fn(r)
			}); err != nil {
			return err
		}
	}
	{
		var r mailstore.AliasRecord
		a := &r.Alias
		if err := each(ctx, tx, "aliases", `SELECT id, domain_id, partner_id, source, destination, created_at FROM aliases ORDER BY id`,
			[]any{&a.ID, &a.DomainID, &a.PartnerID, &a.Source, &a.Destination, &a.CreatedAt}, func() error {
				a.CreatedAt = a.CreatedAt.UTC()
				return fn(r)
			}); err != nil {
			return err
		}
	}
	return nil
}

// dumpMail dumps folders, subscriptions, bodies, messages, the queue and
// MTA-STS policies.
func dumpMail(ctx context.Context, tx pgx.Tx, fn func(mailstore.Record) error) error {
	{
		var r mailstore.FolderRecord
		f := &r.Folder
		var validity, next, modseq int64
		if err := each(ctx, tx, "folders", `SELECT id, mailbox_id, name, special_use, uid_validity,
				uid_next, messages, unseen, size, highest_modseq FROM folders ORDER BY id`,
			[]any{&f.ID, &f.MailboxID, &f.Name, &f.SpecialUse, &validity, &next,
				&f.Messages, &f.Unseen, &f.Size, &modseq}, func() error {
				f.UIDValidity, f.UIDNext, f.HighestModSeq = uint32(validity), uint32(next), uint64(modseq)
				return fn(r)
			}); err != nil {
			return err
		}
	}
	{
		var r mailstore.SubscriptionRecord
		if err := each(ctx, tx, "subscriptions", `SELECT mailbox_id, name FROM subscriptions ORDER BY mailbox_id, name COLLATE "C"`,
			[]any{&r.MailboxID, &r.Name}, func() error { return fn(r) }); err != nil {
			return err
		}
	}
	{
		var r mailstore.BlobRecord
		if err := each(ctx, tx, "bodies", `SELECT id, refs, body FROM blobs ORDER BY id`,
			[]any{&r.ID, &r.Refs, &r.Body}, func() error {
				err := fn(r)
				r.Body = nil // scan the next body into its own buffer
				return err
			}); err != nil {
			return err
		}
	}
	{
		var r mailstore.MessageRecord
		m := &r.Message
		var uid, modseq int64
		if err := each(ctx, tx, "messages", `SELECT folder_id, uid, blob_id, size, received_at, flags, modseq FROM messages ORDER BY folder_id, uid`,
			[]any{&m.FolderID, &uid, &m.BlobID, &m.Size, &m.ReceivedAt, &m.Flags, &modseq}, func() error {
				m.UID, m.ReceivedAt, m.ModSeq = uint32(uid), m.ReceivedAt.UTC(), uint64(modseq)
				if len(m.Flags) == 0 {
					m.Flags = nil
				}
				err := fn(r)
				m.Flags = nil
				return err
			}); err != nil {
			return err
		}
	}
	{
		var r mailstore.OutboundRecord
		o := &r.Outbound
		var kind string
		var attempts int32
		var leasedBy *string
		if err := each(ctx, tx, "queue", `SELECT id, kind, domain_id, from_addr, destination, recipients, blob_id,
				size, queued_at, next_attempt, attempts, last_error, held, leased_by, warned FROM queue ORDER BY id`,
			[]any{&o.ID, &kind, &o.DomainID, &o.From, &o.Destination, &o.Recipients, &o.BlobID, &o.Size,
				&o.QueuedAt, &o.NextAttempt, &attempts, &o.LastError, &o.Held, &leasedBy, &o.Warned}, func() error {
				o.Kind, o.Attempts = mailstore.OutboundKind(kind), int(attempts)
				o.QueuedAt, o.NextAttempt = o.QueuedAt.UTC(), o.NextAttempt.UTC()
				r.LeasedBy, o.Leased = "", leasedBy != nil
				if leasedBy != nil {
					r.LeasedBy = *leasedBy
				}
				err := fn(r)
				o.Recipients = nil
				return err
			}); err != nil {
			return err
		}
	}
	{
		var r mailstore.STSRecord
		p := &r.STSPolicy
		var maxAge int64
		if err := each(ctx, tx, "MTA-STS policies", `SELECT domain, policy_id, mode, mx, max_age_s, expires FROM sts_policies ORDER BY domain COLLATE "C"`,
			[]any{&p.Domain, &p.ID, &p.Mode, &p.MX, &maxAge, &p.Expires}, func() error {
				p.MaxAge, p.Expires = time.Duration(maxAge)*time.Second, p.Expires.UTC()
				err := fn(r)
				p.MX = nil
				return err
			}); err != nil {
			return err
		}
	}
	return nil
}

// dumpSequences dumps each sequence's last value.
func dumpSequences(ctx context.Context, tx pgx.Tx, fn func(mailstore.Record) error) error {
	for _, sq := range sequences {
		var v int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(pg_sequence_last_value(`+seqExpr(sq.table)+`), 0)`).Scan(&v); err != nil {
			return fmt.Errorf("dump sequence %s: %w", sq.name, err)
		}
		if err := fn(mailstore.SequenceRecord{Name: sq.name, Value: v}); err != nil {
			return err
		}
	}
	return nil
}

// dumpState dumps the tables of migrations 004 to 006: auto-replies,
// webhooks and their outbox, event marks, the audit log, ACME blobs.
func dumpState(ctx context.Context, tx pgx.Tx, fn func(mailstore.Record) error) error {
	{
		var r mailstore.AutoReplyRecord
		var start, end *time.Time
		if err := each(ctx, tx, "auto-replies", `SELECT mailbox_id, enabled, subject, body, starts_at, ends_at FROM autoreplies ORDER BY mailbox_id`,
			[]any{&r.MailboxID, &r.Enabled, &r.Subject, &r.Body, &start, &end}, func() error {
				r.Start, r.End = fromNull(start), fromNull(end)
				return fn(r)
			}); err != nil {
			return err
		}
	}
	{
		var r mailstore.AutoReplySentRecord
		if err := each(ctx, tx, "auto-reply senders", `SELECT mailbox_id, sender, sent_at FROM autoreply_sent ORDER BY mailbox_id, sender COLLATE "C"`,
			[]any{&r.MailboxID, &r.Sender, &r.SentAt}, func() error {
				r.SentAt = r.SentAt.UTC()
				return fn(r)
			}); err != nil {
			return err
		}
	}
	{
		var r mailstore.SieveScriptRecord
		if err := each(ctx, tx, "Sieve scripts", `SELECT mailbox_id, name, script, active, updated_at FROM sieve_scripts ORDER BY mailbox_id, name COLLATE "C"`,
			[]any{&r.MailboxID, &r.Name, &r.Script, &r.Active, &r.UpdatedAt}, func() error {
				r.UpdatedAt = r.UpdatedAt.UTC()
				return fn(r)
			}); err != nil {
			return err
		}
	}
	{
		var r mailstore.WebhookRecord
		w := &r.Webhook
		if err := each(ctx, tx, "webhooks", `SELECT id, partner_id, url, events, secret, created_at FROM webhooks ORDER BY id`,
			[]any{&w.ID, &w.PartnerID, &w.URL, &w.Events, &w.Secret, &w.CreatedAt}, func() error {
				w.CreatedAt = w.CreatedAt.UTC()
				err := fn(r)
				w.Events = nil
				return err
			}); err != nil {
			return err
		}
	}
	{
		var r mailstore.EventRecord
		e := &r.Event
		var data string
		if err := each(ctx, tx, "events", `SELECT id, partner_id, type, created_at, data::text FROM events ORDER BY id`,
			[]any{&e.ID, &e.PartnerID, &e.Type, &e.CreatedAt, &data}, func() error {
				e.CreatedAt, e.Data = e.CreatedAt.UTC(), json.RawMessage(data)
				return fn(r)
			}); err != nil {
			return err
		}
	}
	{
		var r mailstore.WebhookDeliveryRecord
		var attempts int32
		if err := each(ctx, tx, "webhook deliveries", `SELECT id, webhook_id, event_id, attempts, next_attempt, last_error FROM webhook_deliveries ORDER BY id`,
			[]any{&r.ID, &r.WebhookID, &r.EventID, &attempts, &r.NextAttempt, &r.LastError}, func() error {
				r.Attempts, r.NextAttempt = int(attempts), r.NextAttempt.UTC()
				return fn(r)
			}); err != nil {
			return err
		}
	}
	{
		var r mailstore.EventMarkRecord
		if err := each(ctx, tx, "event marks", `SELECT mark FROM event_marks ORDER BY mark COLLATE "C"`,
			[]any{&r.Mark}, func() error { return fn(r) }); err != nil {
			return err
		}
	}
	{
		var r mailstore.AuditRecord
		e := &r.AuditEntry
		var status int32
		if err := each(ctx, tx, "audit log", `SELECT id, at, partner_id, key_prefix, method, route, object, status FROM audit_log ORDER BY partner_id, id`,
			[]any{&e.ID, &e.Time, &e.PartnerID, &e.KeyPrefix, &e.Method, &e.Route, &e.Object, &status}, func() error {
				e.Time, e.Status = e.Time.UTC(), int(status)
				return fn(r)
			}); err != nil {
			return err
		}
	}
	{
		var r mailstore.CertRecord
		if err := each(ctx, tx, "ACME blobs", `SELECT name, data FROM certs ORDER BY name COLLATE "C"`,
			[]any{&r.Name, &r.Data}, func() error {
				err := fn(r)
				r.Data = nil // scan the next blob into its own buffer
				return err
			}); err != nil {
			return err
		}
	}
	return nil
}

// dataTables are the tables that hold objects, in the order a batch
// writes them (foreign keys: a row after the rows it names). A store
// with none filled is empty; settings and jobs do not count.
var dataTables = []string{
	"partners", "api_keys", "domains", "addresses", "mailboxes", "aliases",
	"transfer", "dkim_keys", "blobs", "folders", "subscriptions", "messages", "queue", "sts_policies",
	"autoreplies", "autoreply_sent", "sieve_scripts", "webhooks", "events", "webhook_deliveries",
	"event_marks", "audit_log", "certs",
}

var tableColumns = map[string][]string{
	"partners":      {"id", "name", "created_at", "max_domains", "domain_count"},
	"api_keys":      {"id", "partner_id", "lookup", "prefix", "secret_hash", "created_at", "revoked_at"},
	"domains":       {"id", "partner_id", "name", "plan", "max_mailboxes", "max_aliases", "quota_mb", "retention_days", "transfer_monthly_mb", "suspended", "created_at", "verified", "verified_at", "verify_token", "rev_name", "spam_filter", "claim_ended_at", "live", "mailbox_count", "alias_count", "message_count", "used_bytes"},
	"addresses":     {"address", "domain_id", "kind", "target_id"},
	"mailboxes":     {"id", "domain_id", "partner_id", "email", "password_hash", "quota_mb", "used_bytes", "message_count", "folder_count", "last_login", "created_at", "password_changed_at"},
	"aliases":       {"id", "domain_id", "partner_id", "source", "destination", "created_at"},
	"transfer":      {"domain_id", "month", "in_bytes", "out_bytes"},
	"dkim_keys":     {"domain_id", "position", "selector", "algorithm", "private", "created_at"},
	"blobs":         {"id", "refs", "body", "header"},
	"folders":       {"id", "mailbox_id", "name", "special_use", "subscribed", "uid_validity", "uid_next", "messages", "unseen", "size", "highest_modseq"},
	"subscriptions": {"mailbox_id", "name"},
	"messages":      {"folder_id", "uid", "mailbox_id", "domain_id", "blob_id", "size", "received_at", "flags", "modseq"},
	"queue":         {"id", "kind", "domain_id", "from_addr", "destination", "recipients", "blob_id", "size", "queued_at", "next_attempt", "attempts", "last_error", "held", "leased_by", "warned"},
	"sts_policies":  {"domain", "policy_id", "mode", "mx", "max_age_s", "expires"},

	"autoreplies":        {"mailbox_id", "enabled", "subject", "body", "starts_at", "ends_at"},
	"autoreply_sent":     {"mailbox_id", "sender", "sent_at"},
	"sieve_scripts":      {"mailbox_id", "name", "script", "active", "updated_at"},
	"webhooks":           {"id", "partner_id", "url", "events", "secret", "created_at"},
	"events":             {"id", "partner_id", "type", "created_at", "data"},
	"webhook_deliveries": {"id", "webhook_id", "event_id", "next_attempt", "attempts", "last_error"},
	"event_marks":        {"mark"},
	"audit_log":          {"id", "at", "partner_id", "key_prefix", "method", "route", "object", "status"},
	"certs":              {"name", "data"},
}

// Load implements mailstore.Loader.
func (s *Store) Load(ctx context.Context, src func(put func(mailstore.Record) error) error) error {
	for _, t := range dataTables {
		var filled bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+t+`)`).Scan(&filled); err != nil {
			return fmt.Errorf("check %s is empty: %w", t, err)
		}
		if filled {
			return fmt.Errorf("table %s has rows: %w", t, mailstore.ErrNotEmpty)
		}
	}
	l := &pgLoader{
		s: s, ctx: ctx,
		rows:          map[string][][]any{},
		folderMailbox: map[int64][2]int64{},
		mailboxDomain: map[int64]int64{},
		seq:           map[string]int64{},
		claims:        map[string][]mailstore.Domain{},
	}
	if err := src(l.put); err != nil {
		return err
	}
	if err := l.flush(); err != nil {
		return err
	}
	var live []int64
	for _, cs := range l.claims {
		if d, ok := mailstore.LiveClaim(cs); ok {
			live = append(live, d.ID)
		}
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE domains SET live = true WHERE id = ANY($1)`, live); err != nil {
			return fmt.Errorf("set the live claims: %w", err)
		}
		if _, err := tx.Exec(ctx, sqlCountKeywords); err != nil {
			return fmt.Errorf("count keywords: %w", err)
		}
		for _, sq := range sequences {
			if v := l.seq[sq.name]; v > 0 {
				if _, err := tx.Exec(ctx, `SELECT setval(`+seqExpr(sq.table)+`, greatest($1::bigint, coalesce(pg_sequence_last_value(`+seqExpr(sq.table)+`), 0)))`, v); err != nil {
					return fmt.Errorf("set sequence %s: %w", sq.name, err)
				}
			}
		}
		return nil
	})
}

// pgLoader is one Load: the rows of the batch under way, per table, and
// what later records need from earlier ones.
type pgLoader struct {
	s     *Store
	ctx   context.Context
	rows  map[string][][]any
	n     int
	bytes int

	// folderMailbox (folder -> mailbox, domain) fills a message's
	// denormalised columns.
	folderMailbox map[int64][2]int64
	mailboxDomain map[int64]int64
	// seq is, per sequence, the highest of the source's sequence and the
	// ids loaded.
	seq map[string]int64
	// claims are the claims of each name loaded (id, verified, ended):
	// what mailstore.LiveClaim needs.
	claims map[string][]mailstore.Domain
}

func (l *pgLoader) saw(name string, id int64) {
	if id > l.seq[name] {
		l.seq[name] = id
	}
}

func (l *pgLoader) add(table string, row ...any) { l.rows[table] = append(l.rows[table], row) }

func (l *pgLoader) put(r mailstore.Record) error {
	if err := l.row(r); err != nil {
		return fmt.Errorf("load %T: %w", r, err)
	}
	if l.n++; l.n >= loadBatchRecords || l.bytes >= loadBatchBytes {
		return l.flush()
	}
	return nil
}

// flush writes the batch in one transaction, a COPY per table.
func (l *pgLoader) flush() error {
	if l.n == 0 {
		return nil
	}
	err := pgx.BeginTxFunc(l.ctx, l.s.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		for _, t := range dataTables {
			rows := l.rows[t]
			if len(rows) == 0 {
				continue
			}
			if _, err := tx.CopyFrom(l.ctx, pgx.Identifier{t}, tableColumns[t], pgx.CopyFromRows(rows)); err != nil {
				return fmt.Errorf("copy into %s: %w", t, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load batch: %w", err)
	}
	clear(l.rows)
	l.n, l.bytes = 0, 0
	return nil
}

func (l *pgLoader) row(r mailstore.Record) error {
	switch r := r.(type) {
	case mailstore.SettingRecord:
		return l.setting(r)
	case mailstore.PartnerRecord:
		l.saw(mailstore.SeqPartners, r.ID)
		l.add("partners", r.ID, r.Name, mailstore.UTC(r.CreatedAt), r.MaxDomains, r.DomainCount)
	case mailstore.APIKeyRecord:
		l.saw(mailstore.SeqAPIKeys, r.ID)
		var revoked *time.Time
		if r.Revoked {
			revoked = nullTime(r.RevokedAt)
		}
		l.add("api_keys", r.ID, r.PartnerID, r.Lookup, r.Prefix, r.SecretHash, mailstore.UTC(r.CreatedAt), revoked)
	case mailstore.DomainRecord:
		d := r.Domain
		l.saw(mailstore.SeqDomains, d.ID)
		l.add("domains", d.ID, d.PartnerID, d.Name, d.Plan, d.MaxMailboxes, d.MaxAliases, d.QuotaMB,
			d.RetentionDays, d.TransferMonthlyMB, d.Suspended, mailstore.UTC(d.CreatedAt), d.Verified,
			nullTime(d.VerifiedAt), d.VerifyToken, mailstore.ReversedName(d.Name), d.SpamFilter,
			nullTime(d.ClaimEndedAt), false, d.MailboxCount, d.AliasCount, d.MessageCount, d.UsedBytes)
		// Loaded not live (not dumped: the rule makes it); the live
		// claims are set once every claim is in (Load).
		l.claims[d.Name] = append(l.claims[d.Name], mailstore.Domain{ID: d.ID, Verified: d.Verified, ClaimEndedAt: d.ClaimEndedAt})
	case mailstore.DKIMRecord:
		for i, k := range r.Keys {
			l.add("dkim_keys", r.DomainID, int32(i), k.Selector, k.Algorithm, k.Private, mailstore.UTC(k.CreatedAt))
		}
	case mailstore.TransferRecord:
		l.add("transfer", r.DomainID, r.Month, r.InBytes, r.OutBytes)
	case mailstore.MailboxRecord:
		m := r.Mailbox
		l.saw(mailstore.SeqMailboxes, m.ID)
		l.mailboxDomain[m.ID] = m.DomainID
		l.add("addresses", m.Email, m.DomainID, "m", m.ID)
		l.add("mailboxes", m.ID, m.DomainID, m.PartnerID, m.Email, m.PasswordHash, m.QuotaMB, m.UsedBytes,
			m.MessageCount, r.FolderCount, nullTime(m.LastLogin), mailstore.UTC(m.CreatedAt), nullTime(m.PasswordChangedAt))
	case mailstore.AliasRecord:
		a := r.Alias
		l.saw(mailstore.SeqAliases, a.ID)
		l.add("addresses", a.Source, a.DomainID, "a", a.ID)
		l.add("aliases", a.ID, a.DomainID, a.PartnerID, a.Source, a.Destination, mailstore.UTC(a.CreatedAt))
	case mailstore.FolderRecord:
		f := r.Folder
		l.saw(mailstore.SeqFolders, f.ID)
		l.saw(mailstore.SeqUIDValidity, int64(f.UIDValidity))
		l.folderMailbox[f.ID] = [2]int64{f.MailboxID, l.mailboxDomain[f.MailboxID]}
		// subscribed false: the subscriptions, loaded after, set it
		// through migration 009's trigger (its default, true, would
		// subscribe every folder).
		l.add("folders", f.ID, f.MailboxID, f.Name, f.SpecialUse, false, int64(f.UIDValidity),
			int64(f.UIDNext), f.Messages, f.Unseen, f.Size, int64(f.HighestModSeq))
	case mailstore.SubscriptionRecord:
		l.add("subscriptions", r.MailboxID, r.Name)
	case mailstore.BlobRecord:
		l.saw(mailstore.SeqBlobs, r.ID)
		l.bytes += len(r.Body)
		// The body is the dumper's only until this call returns; the
		// batch keeps it until its COPY.
		// The header summary Deliver would have stored (008), made now
		// rather than by the first Summaries that finds it missing.
		l.add("blobs", r.ID, r.Refs, append([]byte{}, r.Body...), mailstore.HeaderSummary(r.Body))
	case mailstore.MessageRecord:
		m := r.Message
		owner, ok := l.folderMailbox[m.FolderID]
		if !ok {
			return fmt.Errorf("message %d/%d: folder not loaded", m.FolderID, m.UID)
		}
		flags := m.Flags
		if flags == nil {
			flags = []string{}
		}
		l.add("messages", m.FolderID, int64(m.UID), owner[0], owner[1], m.BlobID, m.Size, mailstore.UTC(m.ReceivedAt), flags, int64(m.ModSeq))
	case mailstore.OutboundRecord:
		o := r.Outbound
		l.saw(mailstore.SeqQueue, o.ID)
		var leasedBy *string
		if r.LeasedBy != "" {
			leasedBy = &r.LeasedBy
		} else if o.Leased {
			node := mailstore.LeaseNodeCopied
			leasedBy = &node
		}
		rcpts := o.Recipients
		if rcpts == nil {
			rcpts = []mailstore.OutboundRecipient{}
		}
		l.add("queue", o.ID, string(o.Kind), o.DomainID, o.From, o.Destination, rcpts, o.BlobID, o.Size,
			mailstore.UTC(o.QueuedAt), mailstore.UTC(o.NextAttempt), int32(o.Attempts), o.LastError, o.Held, leasedBy, o.Warned)
	case mailstore.STSRecord:
		p := r.STSPolicy
		mx := p.MX
		if mx == nil {
			mx = []string{}
		}
		l.add("sts_policies", p.Domain, p.ID, p.Mode, mx, int64(p.MaxAge/time.Second), mailstore.UTC(p.Expires))
	case mailstore.AutoReplyRecord:
		l.add("autoreplies", r.MailboxID, r.Enabled, r.Subject, r.Body, optTime(r.Start), optTime(r.End))
	case mailstore.AutoReplySentRecord:
		l.add("autoreply_sent", r.MailboxID, r.Sender, mailstore.UTC(r.SentAt))
	case mailstore.SieveScriptRecord:
		l.add("sieve_scripts", r.MailboxID, r.Name, r.Script, r.Active, mailstore.UTC(r.UpdatedAt))
	case mailstore.WebhookRecord:
		w := r.Webhook
		l.saw(mailstore.SeqWebhooks, w.ID)
		events := w.Events
		if events == nil {
			events = []string{}
		}
		l.add("webhooks", w.ID, w.PartnerID, w.URL, events, w.Secret, mailstore.UTC(w.CreatedAt))
	case mailstore.EventRecord:
		e := r.Event
		l.saw(mailstore.SeqEvents, e.ID)
		data := e.Data
		if len(data) == 0 {
			data = json.RawMessage("null")
		}
		// A copy: the record is the dumper's only until this call returns.
		l.add("events", e.ID, e.PartnerID, e.Type, mailstore.UTC(e.CreatedAt), append(json.RawMessage{}, data...))
	case mailstore.WebhookDeliveryRecord:
		l.saw(mailstore.SeqDeliveries, r.ID)
		l.add("webhook_deliveries", r.ID, r.WebhookID, r.EventID, mailstore.UTC(r.NextAttempt), int32(r.Attempts), r.LastError)
	case mailstore.EventMarkRecord:
		l.add("event_marks", r.Mark)
	case mailstore.AuditRecord:
		e := r.AuditEntry
		l.saw(mailstore.SeqAudit, e.ID)
		l.add("audit_log", e.ID, mailstore.UTC(e.Time), e.PartnerID, e.KeyPrefix, e.Method, e.Route, e.Object, int32(e.Status))
	case mailstore.CertRecord:
		l.bytes += len(r.Data)
		l.add("certs", r.Name, append([]byte{}, r.Data...))
	case mailstore.SequenceRecord:
		l.saw(r.Name, r.Value)
	default:
		return fmt.Errorf("unknown record %T", r)
	}
	return nil
}

// setting stores a setting at once. One the destination has already
// (made by a node started on it) must have the same value: another SRS
// secret would break the addresses rewritten with it.
func (l *pgLoader) setting(r mailstore.SettingRecord) error {
	var have string
	err := l.s.pool.QueryRow(l.ctx, `
		WITH ins AS (INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING value)
		SELECT value FROM ins UNION ALL SELECT value FROM settings WHERE name = $1 LIMIT 1`, r.Name, r.Value).Scan(&have)
	if err != nil {
		return fmt.Errorf("setting %s: %w", r.Name, err)
	}
	if have != r.Value {
		return fmt.Errorf("setting %s has another value: %w", r.Name, mailstore.ErrNotEmpty)
	}
	return nil
}
