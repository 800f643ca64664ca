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
		buf, missing, blobOf = buf[:0], missing[:0], nil
		// Each UID is one descent of the messages key (a join with
		// unnest let the planner read the whole folder for every chunk);
		// the rows come in key order and are put back in the chunk's.
		rows, err := s.pool.Query(ctx, `SELECT m.uid, m.blob_id, b.header FROM messages m JOIN blobs b ON b.id = m.blob_id
			WHERE m.folder_id = $1 AND m.uid = ANY($2::bigint[])
			AND EXISTS (SELECT 1 FROM folders f WHERE f.id = $1 AND f.mailbox_id = $3)`, folderID, chunk, mailboxID)
		if err != nil {
			return wrap(err)
		}
		var (
			uid    int64
			blob   int64
			header pgtype.DriverBytes // the driver's memory, copied at once
			spans  = make(map[int64][2]int, len(chunk))
		)
		if _, err := pgx.ForEachRow(rows, []any{&uid, &blob, &header}, func() error {
			if header == nil {
				spans[uid] = [2]int{-1, -1} // made below
				if blobOf == nil {
					blobOf = map[uint32]int64{}
				}
				if _, ok := blobOf[uint32(uid)]; !ok {
					missing = append(missing, uint32(uid))
					blobOf[uint32(uid)] = blob
				}
				return nil
			}
			start := len(buf)
			buf = append(buf, header...)
			spans[uid] = [2]int{start, len(buf)}
			return nil
		}); err != nil {
			return wrap(err)
		}
		if len(spans) == 0 {
			// None of the chunk: expunged, or not the account's folder.
			var ok bool
			if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM folders WHERE id = $1 AND mailbox_id = $2)`,
				folderID, mailboxID).Scan(&ok); err != nil {
				return wrap(err)
			}
			if !ok {
				return wrap(mailstore.ErrFolderNotFound)
			}
		}
		var made map[uint32][]byte
		if len(missing) > 0 {
			if made, err = s.makeSummaries(ctx, mailboxID, folderID, missing, blobOf); err != nil {
				return err
			}
		}
		for _, u := range chunk {
			uid := uint32(u)
			sp, ok := spans[u]
			switch {
			case !ok:
				// Not in the folder: skipped.
			case sp[0] < 0:
				if h, ok := made[uid]; ok {
					if err := fn(uid, h); err != nil {
						return err
					}
				}
			default:
				// The full slice expression keeps fn from appending into
				// the next summary.
				if err := fn(uid, buf[sp[0]:sp[1]:sp[1]]); err != nil {
					return err
				}
			}
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
