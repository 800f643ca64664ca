package pgstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/mailhost/mailhost/mailstore"
)

// summariesChunkMessages bounds the messages of one Summaries query:
// summaries are a few hundred bytes, so a chunk holds well under a MiB.
// One chunk is read ahead: a chunk costs the database less than the
// session's work on it (ENVELOPE, a SEARCH's match), so more would not
// be waited for.
const (
	summariesChunkMessages = 1000
	summariesAhead         = 1
)

// Summaries implements mailstore.Mail: the summaries stored in the
// messages' rows (messages.header, 010), in chunks read one ahead of fn
// (readAhead), each one statement that checks the folder too. A message
// stored without one (before 010, or by an older binary) has its body's
// (blobs.header, 008), which the chunk's reader then copies into its
// row; a body stored without one either (before 008) is read through
// Bodies, its summary made and stored in both.
func (s *Store) Summaries(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uid uint32, header []byte) error) error {
	if len(uids) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	wrap := func(err error) error { return fmt.Errorf("summaries of folder %d: %w", folderID, err) }
	cut := func(rest []uint32, c *readChunk) int {
		n := min(len(rest), summariesChunkMessages)
		for _, u := range rest[:n] {
			c.uids = append(c.uids, int64(u))
		}
		return n
	}
	return readAhead(ctx, uids, summariesAhead, cut, func(ctx context.Context, c *readChunk) error {
		return s.readSummaries(ctx, mailboxID, folderID, c)
	}, wrap, fn)
}

// readSummaries reads the summaries of c.uids into c: by one range of
// the messages key when the chunk is ascending and dense (uidRange; the
// rows between that were not asked for are dropped), else by a descent
// per UID. The body's summary is read only for a row without its own.
func (s *Store) readSummaries(ctx context.Context, mailboxID, folderID int64, c *readChunk) error {
	const columns = `SELECT m.uid, m.blob_id, m.header IS NULL,
		coalesce(m.header, (SELECT b.header FROM blobs b WHERE b.id = m.blob_id)) FROM messages m`
	const folder = ` AND EXISTS (SELECT 1 FROM folders f WHERE f.id = $1 AND f.mailbox_id = $2)`
	lo, hi, ranged := uidRange(c.uids, 2)
	var (
		uid, blob int64
		lacks     bool               // the row has no summary of its own
		header    pgtype.DriverBytes // the driver's memory, copied at once
		missing   []uint32           // neither the row nor the body has one
		blobOf    map[uint32]int64
		fillUIDs  []int64 // rows to give their body's summary
		fillHdrs  [][]byte
		seen      bool
	)
	err := retryRead(ctx, func() (pgx.Rows, error) {
		if ranged {
			return s.pool.Query(ctx, columns+` WHERE m.folder_id = $1 AND m.uid BETWEEN $3 AND $4`+folder,
				folderID, mailboxID, lo, hi)
		}
		return s.pool.Query(ctx, columns+` WHERE m.folder_id = $1 AND m.uid = ANY($3::bigint[])`+folder,
			folderID, mailboxID, c.uids)
	}, func(rows pgx.Rows) (bool, error) {
		_, err := pgx.ForEachRow(rows, []any{&uid, &blob, &lacks, &header}, func() error {
			seen = true
			if !c.want(uid, ranged) {
				return nil
			}
			switch {
			case header == nil:
				if blobOf == nil {
					blobOf = map[uint32]int64{}
				}
				if _, ok := blobOf[uint32(uid)]; !ok {
					missing = append(missing, uint32(uid))
					blobOf[uint32(uid)] = blob
				}
				return nil
			case lacks:
				fillUIDs = append(fillUIDs, uid)
				fillHdrs = append(fillHdrs, slices.Clone([]byte(header)))
			}
			c.put(uid, header)
			s.summaries.put(blob, header)
			return nil
		})
		return seen, err
	})
	if err != nil {
		return err
	}
	if !seen {
		// No row in the range: expunged, or not the account's folder.
		var ok bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM folders WHERE id = $1 AND mailbox_id = $2)`,
			folderID, mailboxID).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return mailstore.ErrFolderNotFound
		}
		return nil
	}
	if len(missing) > 0 {
		made, err := s.makeSummaries(ctx, mailboxID, folderID, missing, blobOf)
		if err != nil {
			return err
		}
		for _, u := range missing {
			if h, ok := made[u]; ok {
				c.put(int64(u), h)
				fillUIDs = append(fillUIDs, int64(u))
				fillHdrs = append(fillHdrs, h)
			}
		}
	}
	if len(fillUIDs) > 0 {
		c.after = func(ctx context.Context) { s.fillMessageSummaries(ctx, folderID, fillUIDs, fillHdrs) }
	}
	return nil
}

// fillMessageSummaries copies summaries into the rows of messages stored
// without one (uids, and their summaries in headers). It is a cache
// fill: Summaries answers the same without it, so its failure is not
// one. Rows another transaction holds (a flag change, an expunge) are
// skipped rather than waited for, so that this write neither waits nor
// deadlocks; a later call fills them.
func (s *Store) fillMessageSummaries(ctx context.Context, folderID int64, uids []int64, headers [][]byte) {
	_, _ = s.pool.Exec(ctx, `WITH l AS (SELECT m.uid FROM messages m
			WHERE m.folder_id = $1 AND m.uid = ANY($2::bigint[]) AND m.header IS NULL
			ORDER BY m.uid FOR NO KEY UPDATE SKIP LOCKED)
		UPDATE messages m SET header = d.header
		FROM unnest($2::bigint[], $3::bytea[]) AS d(uid, header) JOIN l ON l.uid = d.uid
		WHERE m.folder_id = $1 AND m.uid = l.uid`, folderID, uids, headers)
}

// makeSummaries makes the summaries of messages whose body has none from
// their bodies, and stores them (blobOf names each one's body). A message
// expunged meanwhile is left out.
func (s *Store) makeSummaries(ctx context.Context, mailboxID, folderID int64, uids []uint32, blobOf map[uint32]int64) (map[uint32][]byte, error) {
	made := make(map[uint32][]byte, len(uids))
	if err := s.Bodies(ctx, mailboxID, folderID, uids, func(uid uint32, body []byte) error {
		made[uid] = mailstore.HeaderSummary(body)
		return nil
	}); err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(made))
	headers := make([][]byte, 0, len(made))
	for uid, h := range made {
		if id := blobOf[uid]; !slices.Contains(ids, id) {
			ids = append(ids, id)
			headers = append(headers, h)
		}
	}
	// A cache fill: Summaries answers the same without it, so its failure
	// is not one. Rows another transaction holds (a COPY or an EXPUNGE of
	// the same bodies) are skipped rather than waited for, so that this
	// write neither waits nor deadlocks; a later call fills them.
	_, _ = s.pool.Exec(ctx, `WITH d AS (SELECT * FROM unnest($1::bigint[], $2::bytea[]) AS d(id, header)),
		l AS (SELECT b.id FROM blobs b JOIN d ON d.id = b.id WHERE b.header IS NULL
			ORDER BY b.id FOR NO KEY UPDATE OF b SKIP LOCKED)
		UPDATE blobs b SET header = d.header FROM d JOIN l ON l.id = d.id WHERE b.id = d.id`, ids, headers)
	return made, nil
}

// CachedSummary answers the summary of the body blob if this node keeps
// it, without asking the database: summaries are read (Summaries) and
// stored (Deliver) by the thousand when a folder is listed or searched by
// its header fields, and a body's summary never changes, so what is kept
// is right for every message of that body. The caller must not change
// it.
func (s *Store) CachedSummary(blob int64) ([]byte, bool) { return s.summaries.get(blob) }
