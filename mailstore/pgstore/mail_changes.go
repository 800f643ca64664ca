package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// Changes implements mailstore.Store. It reads the folder row and the log
// rows after since in one snapshot: an index range of the changes table,
// as many rows as there are changes. The log of a folder holds at least
// its last changeLogKeep changes (writers prune it in steps, see
// pruneEvery), so since is answered when the change after it is still
// there, and is ErrChangesGone otherwise.
func (s *Store) Changes(ctx context.Context, mailboxID, folderID int64, since uint64) (mailstore.Folder, []mailstore.Change, error) {
	var f mailstore.Folder
	var out []mailstore.Change
	err := s.read(ctx, func(tx pgx.Tx) error {
		out = nil
		var err error
		f, err = mailScanFolder(tx.QueryRow(ctx, `SELECT `+folderColumns+` FROM folders f WHERE f.id = $1 AND f.mailbox_id = $2`, folderID, mailboxID))
		if noRows(err) {
			return mailstore.ErrFolderNotFound
		}
		if err != nil || since >= f.HighestModSeq {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT modseq, kind, uid, blob_id, size, received_at, flags
			FROM changes WHERE folder_id = $1 AND modseq > $2 ORDER BY modseq`, folderID, int64(since))
		if err != nil {
			return err
		}
		out = make([]mailstore.Change, 0, min(f.HighestModSeq-since, mailstore.ChangeLogKeep+pruneEvery))
		var (
			modseq, uid int64
			kind        int16
			m           mailstore.Message
			received    *time.Time
		)
		_, err = pgx.ForEachRow(rows, []any{&modseq, &kind, &uid, &m.BlobID, &m.Size, &received, &m.Flags}, func() error {
			c := mailstore.Change{ModSeq: uint64(modseq), Kind: mailstore.ChangeKind(kind)}
			c.Message = mailstore.Message{FolderID: folderID, UID: uint32(uid)}
			if c.Kind != mailstore.ChangeExpunge {
				c.Message.BlobID, c.Message.Size = m.BlobID, m.Size
				if received != nil {
					c.Message.ReceivedAt = received.UTC()
				}
				if len(m.Flags) > 0 {
					c.Message.Flags = m.Flags
				}
				c.Message.ModSeq = c.ModSeq
			}
			m.Flags = nil
			out = append(out, c)
			return nil
		})
		if err != nil {
			return err
		}
		if len(out) == 0 || out[0].ModSeq != since+1 {
			return mailstore.ErrChangesGone
		}
		return nil
	})
	if err != nil {
		return mailstore.Folder{}, nil, fmt.Errorf("changes of folder %d since %d: %w", folderID, since, err)
	}
	return f, out, nil
}
