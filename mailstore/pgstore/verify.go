package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// verifyQueries recompute every counter in SQL aggregates and answer
// only the rows that drift: (object, field, stored, recomputed). Each
// query pairs a counter with its recomputed value in a VALUES list, so
// that one scan per table serves all of that table's counters. Objects
// are named as bbolt's Verify names them.
var verifyQueries = []struct{ what, sql string }{
	{"partners", `
		WITH n AS (SELECT partner_id, count(*) AS n FROM domains GROUP BY partner_id)
		SELECT 'partner ' || p.id || ' (' || p.name || ')', v.field, v.stored, v.re
		FROM partners p LEFT JOIN n ON n.partner_id = p.id
		CROSS JOIN LATERAL (VALUES (1, 'domain_count', p.domain_count, coalesce(n.n, 0))) v(i, field, stored, re)
		WHERE v.stored <> v.re ORDER BY p.id, v.i`},
	{"folders", `
		WITH m AS (
			SELECT folder_id, count(*) AS n,
				count(*) FILTER (WHERE NOT ('\Seen' = ANY (flags))) AS unseen,
				sum(size)::bigint AS size, max(uid) AS max_uid
			FROM messages GROUP BY folder_id)
		SELECT 'folder ' || f.id || ' (mailbox ' || f.mailbox_id || ', ' || f.name || ')', v.field, v.stored, v.re
		FROM folders f LEFT JOIN m ON m.folder_id = f.id
		CROSS JOIN LATERAL (VALUES
			(1, 'messages', f.messages, coalesce(m.n, 0)),
			(2, 'unseen', f.unseen, coalesce(m.unseen, 0)),
			(3, 'size', f.size, coalesce(m.size, 0)),
			-- uid_next drifts only when it is not above every UID.
			(4, 'uid_next', f.uid_next, CASE WHEN f.uid_next > coalesce(m.max_uid, 0) THEN f.uid_next ELSE m.max_uid + 1 END)
		) v(i, field, stored, re)
		WHERE v.stored <> v.re ORDER BY f.id, v.i`},
	{"messages without a folder", `
		SELECT 'folder ' || m.folder_id || ' (missing)', 'messages', 0::bigint, count(*)
		FROM messages m WHERE NOT EXISTS (SELECT 1 FROM folders f WHERE f.id = m.folder_id)
		GROUP BY m.folder_id ORDER BY m.folder_id`},
	{"message owners", `
		SELECT 'message ' || m.folder_id || '/' || m.uid, v.field, v.stored, v.re
		FROM messages m JOIN folders f ON f.id = m.folder_id JOIN mailboxes mb ON mb.id = f.mailbox_id
		CROSS JOIN LATERAL (VALUES (1, 'mailbox_id', m.mailbox_id, f.mailbox_id), (2, 'domain_id', m.domain_id, mb.domain_id)) v(i, field, stored, re)
		WHERE v.stored <> v.re ORDER BY m.folder_id, m.uid, v.i`},
	{"mailboxes", `
		WITH f AS (SELECT mailbox_id, count(*) AS n FROM folders GROUP BY mailbox_id),
		m AS (
			SELECT f.mailbox_id, count(*) AS n, sum(m.size)::bigint AS size
			FROM messages m JOIN folders f ON f.id = m.folder_id GROUP BY f.mailbox_id)
		SELECT 'mailbox ' || mb.id || ' (' || mb.email || ')', v.field, v.stored, v.re
		FROM mailboxes mb LEFT JOIN f ON f.mailbox_id = mb.id LEFT JOIN m ON m.mailbox_id = mb.id
		CROSS JOIN LATERAL (VALUES
			(1, 'message_count', mb.message_count, coalesce(m.n, 0)),
			(2, 'used_bytes', mb.used_bytes, coalesce(m.size, 0)),
			(3, 'folder_count', mb.folder_count, coalesce(f.n, 0))
		) v(i, field, stored, re)
		WHERE v.stored <> v.re ORDER BY mb.id, v.i`},
	{"domains", `
		WITH mb AS (SELECT domain_id, count(*) AS n FROM mailboxes GROUP BY domain_id),
		al AS (SELECT domain_id, count(*) AS n FROM aliases GROUP BY domain_id),
		m AS (
			SELECT mb.domain_id, count(*) AS n, sum(m.size)::bigint AS size
			FROM messages m JOIN folders f ON f.id = m.folder_id JOIN mailboxes mb ON mb.id = f.mailbox_id
			GROUP BY mb.domain_id),
		du AS (SELECT domain_id, sum(message_count)::bigint AS n, sum(used_bytes)::bigint AS size FROM domain_usage GROUP BY domain_id)
		SELECT 'domain ' || d.id || ' (' || d.name || ')', v.field, v.stored, v.re
		FROM domains d LEFT JOIN mb ON mb.domain_id = d.id LEFT JOIN al ON al.domain_id = d.id
		LEFT JOIN m ON m.domain_id = d.id LEFT JOIN du ON du.domain_id = d.id
		CROSS JOIN LATERAL (VALUES
			(1, 'mailbox_count', d.mailbox_count, coalesce(mb.n, 0)),
			(2, 'alias_count', d.alias_count, coalesce(al.n, 0)),
			(3, 'message_count', d.message_count + coalesce(du.n, 0), coalesce(m.n, 0)),
			(4, 'used_bytes', d.used_bytes + coalesce(du.size, 0), coalesce(m.size, 0))
		) v(i, field, stored, re)
		WHERE v.stored <> v.re ORDER BY d.id, v.i`},
	{"bodies", `
		WITH r AS (
			SELECT blob_id, count(*) AS n FROM (
				SELECT blob_id FROM messages UNION ALL SELECT blob_id FROM queue) x
			GROUP BY blob_id)
		SELECT 'blob ' || coalesce(b.id, r.blob_id), v.field, v.stored, v.re
		FROM blobs b FULL JOIN r ON r.blob_id = b.id
		CROSS JOIN LATERAL (VALUES
			(1, 'refs', coalesce(b.refs, 0), coalesce(r.n, 0)),
			-- A body is there if and only if something names it.
			(2, 'body present', (b.id IS NOT NULL)::int::bigint, (coalesce(r.n, 0) > 0)::int::bigint)
		) v(i, field, stored, re)
		WHERE v.stored <> v.re ORDER BY coalesce(b.id, r.blob_id), v.i`},
}

// Verify implements mailstore.Verifier: one snapshot, one aggregate
// query per kind of counter; Go only collects the rows that drift.
func (s *Store) Verify(ctx context.Context) ([]mailstore.Drift, error) {
	var out []mailstore.Drift
	err := s.snapshot(ctx, func(tx pgx.Tx) error {
		for _, q := range verifyQueries {
			rows, err := tx.Query(ctx, q.sql)
			if err != nil {
				return fmt.Errorf("%s: %w", q.what, err)
			}
			ds, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (mailstore.Drift, error) {
				var d mailstore.Drift
				err := row.Scan(&d.Object, &d.Field, &d.Stored, &d.Recomputed)
				return d, err
			})
			if err != nil {
				return fmt.Errorf("%s: %w", q.what, err)
			}
			out = append(out, ds...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	return out, nil
}
