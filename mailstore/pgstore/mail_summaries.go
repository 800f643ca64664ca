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
const summariesChunkMessages = 1000

// Summaries implements mailstore.Mail: one query per chunk of uids for
// the summaries stored beside the bodies (blobs.header, 008). A body
// stored without one (before 008, or by an older binary) is read through
// Bodies, its summary made and stored for the next call.
func (s *Store) Summaries(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uid uint32, header []byte) error) error {
	wrap := func(err error) error { return fmt.Errorf("summaries of folder %d: %w", folderID, err) }
	var (
		buf     []byte
		chunk   []int64
		ends    []int // end of each summary of chunk in buf; -1: not there
		missing []uint32
		blobOf  map[uint32]int64
	)
	for next := 0; next < len(uids); {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk = chunk[:0]
		for _, u := range uids[next:min(next+summariesChunkMessages, len(uids))] {
			chunk = append(chunk, int64(u))
		}
		next += len(chunk)
		buf, ends, missing, blobOf = buf[:0], ends[:0], missing[:0], nil
		rows, err := s.pool.Query(ctx, `SELECT m.uid IS NOT NULL, m.blob_id, b.header FROM folders f
			CROSS JOIN unnest($3::bigint[]) WITH ORDINALITY AS u(uid, ord)
			LEFT JOIN messages m ON m.folder_id = f.id AND m.uid = u.uid
			LEFT JOIN blobs b ON b.id = m.blob_id
			WHERE f.id = $1 AND f.mailbox_id = $2 ORDER BY u.ord`, folderID, mailboxID, chunk)
		if err != nil {
			return wrap(err)
		}
		var (
			there  bool
			blob   *int64
			header pgtype.DriverBytes // the driver's memory, copied at once
		)
		if _, err := pgx.ForEachRow(rows, []any{&there, &blob, &header}, func() error {
			i := len(ends)
			switch {
			case !there:
				ends = append(ends, -1) // not in the folder: skipped
			case header == nil:
				ends = append(ends, -1) // filled in below
				if blobOf == nil {
					blobOf = map[uint32]int64{}
				}
				uid := uint32(chunk[i])
				if _, ok := blobOf[uid]; !ok {
					missing = append(missing, uid)
					blobOf[uid] = *blob
				}
			default:
				buf = append(buf, header...)
				ends = append(ends, len(buf))
			}
			return nil
		}); err != nil {
			return wrap(err)
		}
		if len(ends) == 0 {
			return wrap(mailstore.ErrFolderNotFound)
		}
		var made map[uint32][]byte
		if len(missing) > 0 {
			if made, err = s.makeSummaries(ctx, mailboxID, folderID, missing, blobOf); err != nil {
				return err
			}
		}
		start := 0
		for i, end := range ends {
			uid := uint32(chunk[i])
			if end < 0 {
				if h, ok := made[uid]; ok {
					if err := fn(uid, h); err != nil {
						return err
					}
				}
				continue
			}
			// The full slice expression keeps fn from appending into the
			// next summary.
			if err := fn(uid, buf[start:end:end]); err != nil {
				return err
			}
			start = end
		}
	}
	return nil
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
