package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// Folders implements mailstore.Store. Names are sorted bytewise (COLLATE
// "C"), as bbolt's keys are, whatever the database's collation.
func (s *Store) Folders(ctx context.Context, mailboxID int64) ([]mailstore.Folder, error) {
	var out []mailstore.Folder
	err := s.read(ctx, func(tx pgx.Tx) error {
		out = []mailstore.Folder{}
		var ok bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM mailboxes WHERE id = $1)`, mailboxID).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return mailstore.ErrMailboxNotFound
		}
		rows, err := tx.Query(ctx, `SELECT `+folderColumns+` FROM folders f WHERE f.mailbox_id = $1 ORDER BY f.name COLLATE "C"`, mailboxID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			f, err := mailScanFolder(rows)
			if err != nil {
				return err
			}
			out = append(out, f)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("folders of mailbox %d: %w", mailboxID, err)
	}
	return out, nil
}

// Folder implements mailstore.Store.
func (s *Store) Folder(ctx context.Context, mailboxID int64, name string) (mailstore.Folder, error) {
	var f mailstore.Folder
	err := s.look(ctx, func(tx querier) error {
		var err error
		f, err = mailScanFolder(tx.QueryRow(ctx, `SELECT `+folderColumns+` FROM folders f WHERE f.mailbox_id = $1 AND f.name = $2`,
			mailboxID, mailstore.CanonFolder(name)))
		if noRows(err) {
			return mailstore.ErrFolderNotFound
		}
		return err
	})
	if err != nil {
		return mailstore.Folder{}, fmt.Errorf("folder %q: %w", name, err)
	}
	return f, nil
}

// CreateFolder implements mailstore.Store. The account's folder_count
// takes the slot with one conditional UPDATE, so MaxFolders holds under
// racing creates.
func (s *Store) CreateFolder(ctx context.Context, mailboxID int64, name string) (mailstore.Folder, error) {
	name = mailstore.CanonFolder(name)
	if err := mailstore.CheckFolderName(name); err != nil {
		return mailstore.Folder{}, fmt.Errorf("create folder: %w", err)
	}
	var f mailstore.Folder
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		// A taken name is ErrFolderExists even at the limit.
		var taken bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM folders WHERE mailbox_id = $1 AND name = $2)`, mailboxID, name).Scan(&taken); err != nil {
			return err
		}
		if taken {
			return mailstore.ErrFolderExists
		}
		tag, err := tx.Exec(ctx, `UPDATE mailboxes SET folder_count = folder_count + 1 WHERE id = $1 AND folder_count < $2`,
			mailboxID, mailstore.MaxFolders)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			var ok bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM mailboxes WHERE id = $1)`, mailboxID).Scan(&ok); err != nil {
				return err
			}
			if !ok {
				return mailstore.ErrMailboxNotFound
			}
			return mailstore.ErrTooManyFolders
		}
		// subscribed mirrors the subscriptions for older binaries
		// (migration 009); its default, true, would subscribe the folder.
		f, err = mailScanFolder(tx.QueryRow(ctx, `INSERT INTO folders AS f (mailbox_id, name, uid_validity, subscribed)
			VALUES ($1, $2, nextval('uid_validity_seq'),
				EXISTS (SELECT 1 FROM subscriptions WHERE mailbox_id = $1 AND name = $2))
			RETURNING `+folderColumns, mailboxID, name))
		if isUnique(err, "") {
			return mailstore.ErrFolderExists // made meanwhile
		}
		return err
	})
	if err != nil {
		return mailstore.Folder{}, fmt.Errorf("create folder %q: %w", name, err)
	}
	s.notify(mailboxID)
	return f, nil
}

// DeleteFolder implements mailstore.Store. Its messages go with it, their
// counters and body references in the same transaction, and so does its
// change log (nothing can ask for it: the id is never used again).
// Children ("name/...") stay.
func (s *Store) DeleteFolder(ctx context.Context, mailboxID int64, name string) error {
	name = mailstore.CanonFolder(name)
	if name == "INBOX" {
		return fmt.Errorf("delete folder %q: %w", name, mailstore.ErrFolderProtected)
	}
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		var fid int64
		err := tx.QueryRow(ctx, `SELECT id FROM folders WHERE mailbox_id = $1 AND name = $2 FOR UPDATE`, mailboxID, name).Scan(&fid)
		if noRows(err) {
			return mailstore.ErrFolderNotFound
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `DELETE FROM messages WHERE folder_id = $1 RETURNING blob_id, size`, fid)
		if err != nil {
			return err
		}
		drops := map[int64]int64{}
		var msgs, bytes, blob, size int64
		if _, err := pgx.ForEachRow(rows, []any{&blob, &size}, func() error {
			drops[blob]++
			msgs++
			bytes += size
			return nil
		}); err != nil {
			return err
		}
		var domainID int64
		if err := tx.QueryRow(ctx, `UPDATE mailboxes SET message_count = message_count - $2, used_bytes = used_bytes - $3,
			folder_count = greatest(folder_count - 1, 0) WHERE id = $1 RETURNING domain_id`, mailboxID, msgs, bytes).Scan(&domainID); err != nil {
			return fmt.Errorf("mailbox counters: %w", err)
		}
		if msgs > 0 {
			if _, err := tx.Exec(ctx, `UPDATE domains SET message_count = message_count - $2, used_bytes = used_bytes - $3 WHERE id = $1`,
				domainID, msgs, bytes); err != nil {
				return fmt.Errorf("domain counters: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM changes WHERE folder_id = $1`, fid); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM folders WHERE id = $1`, fid); err != nil {
			return err
		}
		return unrefBlobs(ctx, tx, drops)
	})
	if err != nil {
		return fmt.Errorf("delete folder %q: %w", name, err)
	}
	s.notify(mailboxID)
	return nil
}

// RenameFolder implements mailstore.Store. The folders keep their ids,
// UIDs, UIDValidity and special use (RFC 3501 6.3.5); the children move
// with their parent. The names change in two steps, through names no
// folder can have (a control character and the id), so that a move
// inside the moving set ("a" to "a/b") does not collide with itself;
// the unique key then finds a name taken by another folder.
func (s *Store) RenameFolder(ctx context.Context, mailboxID int64, oldName, newName string) error {
	oldName, newName = mailstore.CanonFolder(oldName), mailstore.CanonFolder(newName)
	if oldName == "INBOX" {
		return fmt.Errorf("rename folder %q: %w", oldName, mailstore.ErrFolderProtected)
	}
	if err := mailstore.CheckFolderName(newName); err != nil {
		return fmt.Errorf("rename folder %q: %w", oldName, err)
	}
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, name FROM folders
			WHERE mailbox_id = $1 AND (name = $2 OR left(name, length($3)) = $3)
			ORDER BY id FOR NO KEY UPDATE`, mailboxID, oldName, oldName+"/")
		if err != nil {
			return err
		}
		var ids []int64
		var names []string
		found := false
		var id int64
		var name string
		if _, err := pgx.ForEachRow(rows, []any{&id, &name}, func() error {
			found = found || name == oldName
			ids = append(ids, id)
			names = append(names, newName+strings.TrimPrefix(name, oldName))
			return nil
		}); err != nil {
			return err
		}
		if !found {
			return mailstore.ErrFolderNotFound
		}
		if oldName == newName {
			return nil
		}
		for _, n := range names {
			if err := mailstore.CheckFolderName(n); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE folders SET name = chr(1) || id::text WHERE id = ANY($1)`, ids); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE folders f SET name = u.name FROM unnest($1::bigint[], $2::text[]) AS u(id, name) WHERE f.id = u.id`, ids, names)
		if isUnique(err, "") {
			return mailstore.ErrFolderExists
		}
		if err != nil {
			return err
		}
		// The subscriptions keep their names; the mark older binaries
		// read (migration 009) follows them, not the folders.
		_, err = tx.Exec(ctx, `UPDATE folders f SET subscribed = EXISTS (SELECT 1 FROM subscriptions s
			WHERE s.mailbox_id = f.mailbox_id AND s.name = f.name) WHERE f.id = ANY($1)`, ids)
		return err
	})
	if err != nil {
		return fmt.Errorf("rename folder %q to %q: %w", oldName, newName, err)
	}
	s.notify(mailboxID)
	return nil
}
