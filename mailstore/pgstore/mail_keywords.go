package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// sqlCountKeywords counts every folder's keywords from its messages, as
// migration 011 does: for Load, which copies the messages but not the
// counts (they follow from the messages).
const sqlCountKeywords = `INSERT INTO folder_keywords (folder_id, keyword, n)
SELECT m.folder_id, upper(k COLLATE "C"), count(*)
FROM messages m, unnest(m.flags) AS k
WHERE k <> '' AND left(k, 1) <> '\'
GROUP BY 1, 2`

// keywordDelta gathers how a transaction changes the number of messages
// holding each keyword, by folder and mailstore.KeywordKey (the
// folder_keywords table, 013_folder_keywords.sql).
type keywordDelta map[int64]map[string]int64

// reflag counts a message of folderID going from flags old to new (nil
// old: it arrives; nil new: it leaves).
func (d keywordDelta) reflag(folderID int64, old, new []string) {
	if !mailstore.HasKeywords(old) && !mailstore.HasKeywords(new) {
		return
	}
	f := d[folderID]
	if f == nil {
		f = map[string]int64{}
		d[folderID] = f
	}
	mailstore.KeywordDelta(f, old, new)
}

// applyKeywords writes d and refuses (mailstore.ErrTooManyKeywords) a
// change that leaves a folder with more distinct keywords than max and
// more than it had (mailstore.CheckKeywords); the caller's transaction
// is then rolled back. The caller holds the folders' row locks. One
// round trip, none when d changes no count.
func applyKeywords(ctx context.Context, tx pgx.Tx, d keywordDelta, max int) error {
	var fids, ns []int64
	var keys []string
	var gained []int64 // folders that may hold a keyword they did not
	for fid, f := range d {
		grows := false
		for k, n := range f {
			if n == 0 {
				continue
			}
			fids, keys, ns = append(fids, fid), append(keys, k), append(ns, n)
			grows = grows || n > 0
		}
		if grows {
			gained = append(gained, fid)
		}
	}
	if len(fids) == 0 {
		return nil
	}
	const count = `SELECT f.id, (SELECT count(*) FROM folder_keywords k WHERE k.folder_id = f.id)
		FROM unnest($1::bigint[]) AS f(id)`
	before, after := map[int64]int64{}, map[int64]int64{}
	scan := func(into map[int64]int64) func(pgx.Rows) error {
		return func(rows pgx.Rows) error {
			var id, n int64
			_, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error {
				into[id] = n
				return nil
			})
			return err
		}
	}
	b := &pgx.Batch{}
	if len(gained) > 0 {
		b.Queue(count, gained).Query(scan(before))
	}
	b.Queue(`INSERT INTO folder_keywords AS k (folder_id, keyword, n)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[])
		ON CONFLICT (folder_id, keyword) DO UPDATE SET n = k.n + excluded.n`, fids, keys, ns)
	b.Queue(`DELETE FROM folder_keywords WHERE folder_id = ANY($1) AND keyword = ANY($2) AND n <= 0`, fids, keys)
	if len(gained) > 0 {
		b.Queue(count, gained).Query(scan(after))
	}
	if err := sendBatch(ctx, tx, b); err != nil {
		return fmt.Errorf("keyword counts: %w", err)
	}
	for _, fid := range gained {
		if err := mailstore.CheckKeywords(before[fid], after[fid], max); err != nil {
			return fmt.Errorf("folder %d: %d keywords, at most %d: %w", fid, after[fid], max, err)
		}
	}
	return nil
}
