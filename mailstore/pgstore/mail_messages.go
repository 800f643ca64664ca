package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/mailhost/mailhost/mailstore"
)

// sqlQuotaTake counts n messages of `bytes` bytes on a mailbox if it has
// room: at or over its quota, or over it with them, it changes nothing
// (mailstore.Mailbox.Fits, in SQL: a zero quota admits nothing). The check and
// the change are one statement on the locked row, so racing APPENDs and
// COPYs cannot pass the quota together.
const sqlQuotaTake = `UPDATE mailboxes SET message_count = message_count + $2, used_bytes = used_bytes + $3
	WHERE id = $1 AND used_bytes < quota_mb * $4 AND $3 <= quota_mb * $4 - used_bytes`

// Messages implements mailstore.Store.
func (s *Store) Messages(ctx context.Context, mailboxID, folderID int64) ([]mailstore.Message, error) {
	var out []mailstore.Message
	err := s.read(ctx, func(tx pgx.Tx) error {
		var n int64
		err := tx.QueryRow(ctx, `SELECT messages FROM folders WHERE id = $1 AND mailbox_id = $2`, folderID, mailboxID).Scan(&n)
		if noRows(err) {
			return mailstore.ErrFolderNotFound
		}
		if err != nil {
			return err
		}
		out = make([]mailstore.Message, 0, max(n, 0))
		rows, err := tx.Query(ctx, `SELECT `+messageColumns+` FROM messages m WHERE m.folder_id = $1 ORDER BY m.uid`, folderID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			m, err := scanMessage(rows)
			if err != nil {
				return err
			}
			out = append(out, m)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("messages of folder %d: %w", folderID, err)
	}
	return out, nil
}

// Body implements mailstore.Store: one statement, which tells a folder
// that is not the account's from a UID that is not in it.
func (s *Store) Body(ctx context.Context, mailboxID, folderID int64, uid uint32) ([]byte, error) {
	var body []byte
	// One statement, one snapshot: no BEGIN and COMMIT around it (a
	// client fetching one message at a time pays each round trip).
	var blob *int64
	err := s.look(ctx, func(tx querier) error {
		var found bool
		err := tx.QueryRow(ctx, `SELECT m.uid IS NOT NULL, m.blob_id, b.body FROM folders f
			LEFT JOIN messages m ON m.folder_id = f.id AND m.uid = $3
			LEFT JOIN blobs b ON b.id = m.blob_id
			WHERE f.id = $1 AND f.mailbox_id = $2`, folderID, mailboxID, int64(uid)).Scan(&found, &blob, &body)
		switch {
		case noRows(err):
			return mailstore.ErrFolderNotFound
		case err != nil:
			return err
		case !found:
			return mailstore.ErrMessageNotFound
		case body == nil:
			return fmt.Errorf("body missing")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("body of message %d/%d: %w", folderID, uid, err)
	}
	s.bodies.put(*blob, body) // a client that reads a message often reads it again
	return body, nil
}

// CachedBody answers the body of blob if this node keeps it (bodyCache),
// without asking the database: the body of a message in a selected
// folder, whose body id the IMAP session has from Messages or Changes
// (imapd answers a FETCH from it when every body asked is kept). A body
// never changes and its id is never reused, so what is kept is right;
// the caller must not change it.
func (s *Store) CachedBody(blob int64) ([]byte, bool) { return s.bodies.get(blob) }

// Bounds on one query of Bodies: 64 bodies make the statement's cost
// small per message; 4 MiB bounds a chunk. A session holds at most
// bodiesAhead+1 chunks (the one fn reads and those read meanwhile), each
// plus at most one message beyond the bound. One chunk ahead: more
// would take a session more connections and more of the database's CPU
// at once, where several sessions already share it.
const (
	bodiesChunkMessages = 64
	bodiesChunkBytes    = 4 << 20
	bodiesAhead         = 1
)

// Bodies implements mailstore.Store. A first query reads the sizes and
// body ids of the messages asked for (and checks the folder); the bodies
// then come in chunks bounded by count and bytes (readAhead), from the
// node's cache (bodyCache) or the database.
func (s *Store) Bodies(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uid uint32, body []byte) error) error {
	if len(uids) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	wrap := func(err error) error { return fmt.Errorf("bodies of folder %d: %w", folderID, err) }
	if len(uids) == 1 {
		// FETCH n: one statement, not the sizes and then the chunk.
		body, err := s.Body(ctx, mailboxID, folderID, uids[0])
		switch {
		case errors.Is(err, mailstore.ErrMessageNotFound):
			return nil
		case err != nil:
			return wrap(err)
		}
		return fn(uids[0], body)
	}
	want := make([]int64, 0, len(uids))
	for _, u := range uids {
		want = append(want, int64(u))
	}
	lo, hi, ranged := uidRange(want, 2)
	type stored struct{ size, blob int64 }
	msgs := make(map[uint32]stored, len(uids))
	folder := false
	err := retryRead(ctx, func() (pgx.Rows, error) {
		if ranged {
			return s.pool.Query(ctx, `SELECT m.uid, m.size, m.blob_id FROM folders f
				LEFT JOIN messages m ON m.folder_id = f.id AND m.uid BETWEEN $3 AND $4
				WHERE f.id = $1 AND f.mailbox_id = $2`, folderID, mailboxID, lo, hi)
		}
		return s.pool.Query(ctx, `SELECT m.uid, m.size, m.blob_id FROM folders f
			LEFT JOIN messages m ON m.folder_id = f.id AND m.uid = ANY($3)
			WHERE f.id = $1 AND f.mailbox_id = $2`, folderID, mailboxID, want)
	}, func(rows pgx.Rows) (bool, error) {
		var uid, size, blob *int64
		_, err := pgx.ForEachRow(rows, []any{&uid, &size, &blob}, func() error {
			folder = true
			if uid != nil {
				msgs[uint32(*uid)] = stored{*size, *blob}
			}
			return nil
		})
		return folder, err
	})
	if err != nil {
		return wrap(err)
	}
	if !folder {
		return wrap(mailstore.ErrFolderNotFound)
	}
	cut := func(rest []uint32, c *readChunk) int {
		var bytes int64
		n := 0
		for ; n < len(rest) && len(c.uids) < bodiesChunkMessages && bytes < bodiesChunkBytes; n++ {
			// A UID not read above is not in the folder: left out (and
			// so are those a range read beyond the ones asked).
			if m, ok := msgs[rest[n]]; ok {
				c.uids = append(c.uids, int64(rest[n]))
				bytes += m.size
			}
		}
		return n
	}
	return readAhead(ctx, uids, bodiesAhead, cut, func(ctx context.Context, c *readChunk) error {
		// The bodies this node keeps (bodyCache) are not read again.
		var read []int64
		for _, u := range c.uids {
			if body, ok := s.bodies.get(msgs[uint32(u)].blob); ok {
				c.put(u, body)
			} else {
				read = append(read, u)
			}
		}
		if len(read) == 0 {
			return nil
		}
		return s.readBodies(ctx, folderID, read, c)
	}, wrap, fn)
}

// readBodies reads the bodies of uids (of c's) into c, and keeps them
// (bodyCache). The folder's ownership was checked by Bodies (folder ids
// are never reused). Consecutive UIDs are one range of the messages
// key; any others, one descent of it per UID (a join with unnest here
// let the planner scan the whole folder for every chunk, which made a
// FETCH quadratic in the folder's size). Bodies are the bulk of the
// work, so a range here reads no row that is not asked for.
func (s *Store) readBodies(ctx context.Context, folderID int64, uids []int64, c *readChunk) error {
	found := 0
	err := retryRead(ctx, func() (pgx.Rows, error) {
		if lo, hi, ok := uidRange(uids, 1); ok {
			return s.pool.Query(ctx, `SELECT m.uid, m.blob_id, b.body FROM messages m JOIN blobs b ON b.id = m.blob_id
				WHERE m.folder_id = $1 AND m.uid BETWEEN $2 AND $3`, folderID, lo, hi)
		}
		return s.pool.Query(ctx, `SELECT m.uid, m.blob_id, b.body FROM messages m JOIN blobs b ON b.id = m.blob_id
			WHERE m.folder_id = $1 AND m.uid = ANY($2::bigint[])`, folderID, uids)
	}, func(rows pgx.Rows) (bool, error) {
		var uid, blob int64
		var body pgtype.DriverBytes // the driver's memory, copied at once
		_, err := pgx.ForEachRow(rows, []any{&uid, &blob, &body}, func() error {
			found++
			c.put(uid, body)
			s.bodies.put(blob, body)
			return nil
		})
		return found > 0, err
	})
	if err != nil {
		return err
	}
	if found == 0 {
		// None of them is left: expunged, or the folder deleted (its
		// messages go with it, at once).
		var ok bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM folders WHERE id = $1)`, folderID).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return mailstore.ErrFolderNotFound
		}
	}
	return nil
}

// Append implements mailstore.Store.
func (s *Store) Append(ctx context.Context, mailboxID, folderID int64, body []byte, flags []string, receivedAt time.Time) (mailstore.Message, error) {
	out, err := s.AppendMany(ctx, mailboxID, folderID, []mailstore.AppendMessage{{Body: body, Flags: flags, ReceivedAt: receivedAt}})
	if err != nil {
		return mailstore.Message{}, err
	}
	return out[0], nil
}

// AppendMany implements mailstore.Store: one transaction, the quota taken
// for all the messages at once.
func (s *Store) AppendMany(ctx context.Context, mailboxID, folderID int64, msgs []mailstore.AppendMessage) ([]mailstore.Message, error) {
	var total int64
	flags := make([][]string, len(msgs))
	summaries := make([][]byte, len(msgs))
	for i, m := range msgs {
		if m.ReceivedAt.IsZero() {
			return nil, fmt.Errorf("append: no received time: %w", mailstore.ErrInvalidArgument)
		}
		flags[i] = mailstore.NormFlags(m.Flags)
		if err := mailstore.CheckKeywordLength(flags[i]); err != nil {
			return nil, fmt.Errorf("append: %w", err)
		}
		total += int64(len(m.Body))
		summaries[i] = mailstore.HeaderSummary(m.Body)
	}
	var out []mailstore.Message
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		fs, err := lockFolders(ctx, tx, mailboxID, folderID)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, sqlQuotaTake, mailboxID, len(msgs), total, int64(mailstore.MB))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return mailstore.ErrOverQuota
		}
		var add addBatch
		kw := keywordDelta{}
		for i, m := range msgs {
			blob, err := addBlob(ctx, tx, m.Body, summaries[i], 1)
			if err != nil {
				return err
			}
			add.add(newMessage{folderID: folderID, mailboxID: mailboxID, domainID: fs[folderID].domainID,
				blobID: blob, size: int64(len(m.Body)), received: mailstore.UTC(m.ReceivedAt), flags: flags[i], header: summaries[i]})
			kw.reflag(folderID, nil, flags[i])
		}
		if out, err = addMessages(ctx, tx, &add); err != nil {
			return err
		}
		b := &pgx.Batch{}
		queueUsage(b, "domains", usage{fs[folderID].domainID: {int64(len(msgs)), total}}, false)
		if err := sendBatch(ctx, tx, b); err != nil {
			return err
		}
		return applyKeywords(ctx, tx, kw, s.maxKeywords)
	})
	if err != nil {
		return nil, fmt.Errorf("append to folder %d: %w", folderID, err)
	}
	s.notify(mailboxID)
	return out, nil
}

// SetFlags implements mailstore.Store. UIDs no longer in the folder are
// skipped; the messages whose flags did change come back, in the order
// of uids (a UID given twice is applied twice, as in bbolt).
func (s *Store) SetFlags(ctx context.Context, mailboxID, folderID int64, uids []uint32, op mailstore.FlagOp, flags []string) ([]mailstore.Message, error) {
	out, _, err := s.setFlags(ctx, mailboxID, folderID, uids, op, flags, nil)
	return out, err
}

// SetFlagsIf implements mailstore.Store. The messages' modseqs are
// compared under the folder's lock, which every writer of its messages
// holds.
func (s *Store) SetFlagsIf(ctx context.Context, mailboxID, folderID int64, uids []uint32, op mailstore.FlagOp, flags []string, unchangedSince uint64) ([]mailstore.Message, []uint32, error) {
	return s.setFlags(ctx, mailboxID, folderID, uids, op, flags, &unchangedSince)
}

// setFlags is SetFlags, and with unchangedSince SetFlagsIf.
func (s *Store) setFlags(ctx context.Context, mailboxID, folderID int64, uids []uint32, op mailstore.FlagOp, flags []string, unchangedSince *uint64) ([]mailstore.Message, []uint32, error) {
	flags = mailstore.NormFlags(flags)
	if op != mailstore.FlagsRemove {
		if err := mailstore.CheckKeywordLength(flags); err != nil {
			return nil, nil, fmt.Errorf("set flags in folder %d: %w", folderID, err)
		}
	}
	var out []mailstore.Message
	var modified []uint32
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		out, modified = []mailstore.Message{}, nil
		fs, err := lockFolders(ctx, tx, mailboxID, folderID)
		if err != nil {
			return err
		}
		cur, err := loadMessages(ctx, tx, folderID, uids)
		if err != nil {
			return err
		}
		var lb logBatch
		kw := keywordDelta{}
		final := map[uint32]mailstore.Message{}
		for _, uid := range uids {
			m, ok := cur[uid]
			if !ok {
				continue
			}
			if unchangedSince != nil && m.ModSeq > *unchangedSince {
				modified = append(modified, uid)
				continue
			}
			next, changed := mailstore.ApplyFlags(m.Flags, op, flags)
			if !changed {
				continue
			}
			old := m.Flags
			m.Flags = next
			// sqlLogChanges gives the folder's changes the modseqs after
			// the one it had when locked, in the order logged.
			m.ModSeq = uint64(fs[folderID].modseq) + uint64(len(out)) + 1
			cur[uid] = m
			final[uid] = m
			lb.reflagged(m, old)
			kw.reflag(folderID, old, next)
			out = append(out, m)
		}
		if lb.empty() {
			return nil
		}
		fu := make([]int64, 0, len(final))
		ff := make([]string, 0, len(final))
		fm := make([]int64, 0, len(final))
		for uid, m := range final {
			fu = append(fu, int64(uid))
			ff = append(ff, flagsJSON(m.Flags))
			fm = append(fm, int64(m.ModSeq))
		}
		b := &pgx.Batch{}
		b.Queue(`UPDATE messages m SET flags = ARRAY(SELECT jsonb_array_elements_text(u.flags::jsonb)), modseq = u.modseq
			FROM unnest($2::bigint[], $3::text[], $4::bigint[]) AS u(uid, flags, modseq) WHERE m.folder_id = $1 AND m.uid = u.uid`, folderID, fu, ff, fm)
		b.Queue(sqlLogChanges, lb.args()...)
		if err := sendBatch(ctx, tx, b); err != nil {
			return err
		}
		return applyKeywords(ctx, tx, kw, s.maxKeywords)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("set flags in folder %d: %w", folderID, err)
	}
	if len(out) > 0 {
		s.notify(mailboxID)
	}
	return out, modified, nil
}

// loadMessages reads the folder's messages of uids, by UID. The caller
// holds the folder's lock, so they stay as read.
func loadMessages(ctx context.Context, tx pgx.Tx, folderID int64, uids []uint32) (map[uint32]mailstore.Message, error) {
	want := make([]int64, len(uids))
	for i, u := range uids {
		want[i] = int64(u)
	}
	rows, err := tx.Query(ctx, `SELECT `+messageColumns+` FROM messages m WHERE m.folder_id = $1 AND m.uid = ANY($2)`, folderID, want)
	if err != nil {
		return nil, fmt.Errorf("read messages: %w", err)
	}
	defer rows.Close()
	out := make(map[uint32]mailstore.Message, len(uids))
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out[m.UID] = m
	}
	return out, rows.Err()
}

// sources loads the messages named by uids, in that order, each once;
// ErrMessageNotFound if one is not in the folder (COPY and MOVE succeed
// whole or not at all, RFC 9051 6.4.7).
func sources(ctx context.Context, tx pgx.Tx, folderID int64, uids []uint32) ([]mailstore.Message, error) {
	cur, err := loadMessages(ctx, tx, folderID, uids)
	if err != nil {
		return nil, err
	}
	out := make([]mailstore.Message, 0, len(cur))
	seen := make(map[uint32]bool, len(uids))
	for _, uid := range uids {
		if seen[uid] {
			continue
		}
		seen[uid] = true
		m, ok := cur[uid]
		if !ok {
			return nil, fmt.Errorf("uid %d: %w", uid, mailstore.ErrMessageNotFound)
		}
		out = append(out, m)
	}
	return out, nil
}

// Copy implements mailstore.Store. Copies share the originals' bodies
// (refBlobs: a body freed meanwhile means its message is gone, which is
// ErrMessageNotFound) but count in full against the quota, as every
// message does.
func (s *Store) Copy(ctx context.Context, mailboxID, fromFolderID int64, uids []uint32, toFolderID int64) ([]uint32, error) {
	var out []uint32
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		out = []uint32{}
		fs, err := lockFolders(ctx, tx, mailboxID, fromFolderID, toFolderID)
		if err != nil {
			return err
		}
		msgs, err := sources(ctx, tx, fromFolderID, uids)
		if err != nil || len(msgs) == 0 {
			return err
		}
		var total int64
		refs := map[int64]int64{}
		for _, m := range msgs {
			total += m.Size
			refs[m.BlobID]++
		}
		tag, err := tx.Exec(ctx, sqlQuotaTake, mailboxID, len(msgs), total, int64(mailstore.MB))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return mailstore.ErrOverQuota
		}
		// The domain's counters before the bodies' references: the lock
		// order (mail.go) puts domains before blobs.
		domainID := fs[toFolderID].domainID
		b := &pgx.Batch{}
		queueUsage(b, "domains", usage{domainID: {int64(len(msgs)), total}}, false)
		if err := sendBatch(ctx, tx, b); err != nil {
			return err
		}
		ok, err := refBlobs(ctx, tx, refs)
		if err != nil {
			return err
		}
		if !ok {
			return mailstore.ErrMessageNotFound
		}
		var add addBatch
		for _, m := range msgs {
			add.add(newMessage{folderID: toFolderID, mailboxID: mailboxID, domainID: domainID,
				blobID: m.BlobID, size: m.Size, received: m.ReceivedAt, flags: m.Flags})
		}
		added, err := addMessages(ctx, tx, &add)
		if err != nil {
			return err
		}
		kw := keywordDelta{}
		for _, m := range added {
			out = append(out, m.UID)
			kw.reflag(toFolderID, nil, m.Flags)
		}
		return applyKeywords(ctx, tx, kw, s.maxKeywords)
	})
	if err != nil {
		return nil, fmt.Errorf("copy from folder %d to %d: %w", fromFolderID, toFolderID, err)
	}
	if len(out) > 0 {
		s.notify(mailboxID)
	}
	return out, nil
}

// Move implements mailstore.Store: each message leaves its folder (logged
// as an expunge there) and enters the other under a new UID, keeping its
// body, flags and received time. The account's and domain's counters do
// not change, nor do body references.
func (s *Store) Move(ctx context.Context, mailboxID, fromFolderID int64, uids []uint32, toFolderID int64) ([]uint32, error) {
	var out []uint32
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		out = []uint32{}
		fs, err := lockFolders(ctx, tx, mailboxID, fromFolderID, toFolderID)
		if err != nil {
			return err
		}
		msgs, err := sources(ctx, tx, fromFolderID, uids)
		if err != nil || len(msgs) == 0 {
			return err
		}
		gone := make([]int64, len(msgs))
		var lb logBatch
		var add addBatch
		kw := keywordDelta{}
		for i, m := range msgs {
			gone[i] = int64(m.UID)
			lb.removed(fromFolderID, m.UID, m.Size, m.Flags)
			kw.reflag(fromFolderID, m.Flags, nil)
			kw.reflag(toFolderID, nil, m.Flags)
			add.add(newMessage{folderID: toFolderID, mailboxID: mailboxID, domainID: fs[toFolderID].domainID,
				blobID: m.BlobID, size: m.Size, received: m.ReceivedAt, flags: m.Flags})
		}
		b := &pgx.Batch{}
		b.Queue(`DELETE FROM messages WHERE folder_id = $1 AND uid = ANY($2)`, fromFolderID, gone)
		b.Queue(sqlLogChanges, lb.args()...)
		if err := sendBatch(ctx, tx, b); err != nil {
			return err
		}
		added, err := addMessages(ctx, tx, &add)
		if err != nil {
			return err
		}
		for _, m := range added {
			out = append(out, m.UID)
		}
		return applyKeywords(ctx, tx, kw, s.maxKeywords)
	})
	if err != nil {
		return nil, fmt.Errorf("move from folder %d to %d: %w", fromFolderID, toFolderID, err)
	}
	if len(out) > 0 {
		s.notify(mailboxID)
	}
	return out, nil
}

// Expunge implements mailstore.Store. Given UIDs are removed whatever
// their flags, in the order given; nil removes the \Deleted ones, in UID
// order.
func (s *Store) Expunge(ctx context.Context, mailboxID, folderID int64, uids []uint32) ([]uint32, error) {
	var out []uint32
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		out = []uint32{}
		fs, err := lockFolders(ctx, tx, mailboxID, folderID)
		if err != nil {
			return err
		}
		var rows pgx.Rows
		if uids == nil {
			rows, err = tx.Query(ctx, `DELETE FROM messages WHERE folder_id = $1 AND $2 = ANY(flags)
				RETURNING uid, blob_id, size, flags`, folderID, flagDeleted)
		} else {
			want := make([]int64, len(uids))
			for i, u := range uids {
				want[i] = int64(u)
			}
			rows, err = tx.Query(ctx, `DELETE FROM messages WHERE folder_id = $1 AND uid = ANY($2)
				RETURNING uid, blob_id, size, flags`, folderID, want)
		}
		if err != nil {
			return err
		}
		type gone struct {
			blob, size int64
			flags      []string
		}
		removed := map[uint32]gone{}
		var uid, blob, size int64
		var flags []string
		if _, err := pgx.ForEachRow(rows, []any{&uid, &blob, &size, &flags}, func() error {
			removed[uint32(uid)] = gone{blob, size, flags}
			flags = nil
			return nil
		}); err != nil {
			return err
		}
		if len(removed) == 0 {
			return nil
		}
		order := uids
		if uids == nil {
			order = make([]uint32, 0, len(removed))
			for u := range removed {
				order = append(order, u)
			}
			slices.Sort(order)
		}
		var lb logBatch
		kw := keywordDelta{}
		drops := map[int64]int64{}
		var bytes int64
		for _, u := range order {
			g, ok := removed[u]
			if !ok {
				continue
			}
			delete(removed, u) // a UID given twice is removed once
			out = append(out, u)
			lb.removed(folderID, u, g.size, g.flags)
			kw.reflag(folderID, g.flags, nil)
			drops[g.blob]++
			bytes += g.size
		}
		n := int64(len(out))
		b := &pgx.Batch{}
		b.Queue(sqlLogChanges, lb.args()...)
		queueUsage(b, "mailboxes", usage{mailboxID: {-n, -bytes}}, false)
		queueUsage(b, "domains", usage{fs[folderID].domainID: {-n, -bytes}}, false)
		if err := sendBatch(ctx, tx, b); err != nil {
			return err
		}
		if err := applyKeywords(ctx, tx, kw, s.maxKeywords); err != nil {
			return err
		}
		return unrefBlobs(ctx, tx, drops)
	})
	if err != nil {
		return nil, fmt.Errorf("expunge in folder %d: %w", folderID, err)
	}
	if len(out) > 0 {
		s.notify(mailboxID)
	}
	return out, nil
}
