package pgstore

// The mail plane: folders, messages, their bodies, and the change log.
// Deliver is in mail_deliver.go, folders in mail_folders.go, the other
// message writers in mail_messages.go, retention in mail_purge.go.
//
// Invariants, kept by every writer within its one transaction:
//
//   - folders.messages/unseen/size, mailboxes.message_count/used_bytes and
//     domains.message_count/used_bytes are the counts and sums over the
//     messages rows (used_bytes counts each message's size, even when its
//     body is shared); they change by delta, in SQL, never as a value
//     computed in Go from an earlier read;
//   - a folder's uid_next is above every UID in it; UIDs are taken from
//     the folder row by UPDATE ... RETURNING under its lock (sqlAddMessages),
//     so they are dense and become visible in increasing order;
//   - a folder's highest_modseq is the modseq of its latest changes row:
//     every writer of messages logs one row per message it adds (kind 1),
//     re-flags (2) or removes (3) in the statement that moves
//     highest_modseq, and prunes the log to the last mailstore.ChangeLogKeep
//     rows (in steps of pruneEvery, so that a delivery deletes nothing most
//     of the time);
//   - blobs.refs is the number of messages and queue entries naming the
//     blob; a blob with none is deleted in the same transaction (blob.go).
//
// Lock order. Every writer takes its row locks in this order, each kind
// sorted by id when it takes several: folders, mailboxes, domains,
// transfer rows (by domain, month), blobs. Deliveries to overlapping
// recipients, expunges and retention passes then wait for each other
// instead of deadlocking (s.tx retries a deadlock, but it must be rare).
// A method that needs several rows of one kind takes them with one
// SELECT ... ORDER BY id FOR NO KEY UPDATE before it updates them: an
// UPDATE ... FROM visits rows in whatever order its plan chooses. The
// folder lock is also what makes a message stable: every writer of a
// folder's messages holds its folder row first, so a message read under
// it stays until commit.
// The same lock guards a folder's folder_keywords rows
// (mail_keywords.go), which only a writer of its messages changes.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mailhost/mailhost/mailstore"
)

// Change kinds in the changes table.
const (
	changeAdd     = 1
	changeFlags   = 2
	changeExpunge = 3
)

// changeLogKeep is how many changes of a folder the log keeps at least.
const changeLogKeep = mailstore.ChangeLogKeep

// pruneEvery: a writer prunes a folder's log when its highest_modseq
// crosses a multiple of pruneEvery, so the log holds at most
// changeLogKeep + pruneEvery rows and most writes delete nothing.
const pruneEvery = 64

// Flags.

const (
	flagSeen    = `\Seen`
	flagDeleted = `\Deleted`
	flagRecent  = `\Recent`
)

// unseen is 1 for a message without \Seen: what it adds to a folder's
// unseen counter.
func unseen(flags []string) int64 {
	if mailstore.HasFlag(flags, flagSeen) {
		return 0
	}
	return 1
}

// flagsJSON is how a statement receives one message's flags among many
// (unnest cannot take a ragged text[][]): a JSON array, which the SQL
// turns back into text[] with jsonb_array_elements_text.
func flagsJSON(flags []string) string {
	if len(flags) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(flags)
	return string(b)
}

// sqlFlags turns a flagsJSON column (r.flags) into text[].
const sqlFlags = `CASE WHEN r.flags = '[]' THEN '{}'::text[] ELSE ARRAY(SELECT jsonb_array_elements_text(r.flags::jsonb)) END`

// Folder names.

// Rows.

// folderColumns are what mailScanFolder reads, in order.
const folderColumns = `f.id, f.mailbox_id, f.name, f.special_use, f.uid_validity,
	f.uid_next, f.messages, f.unseen, f.size, f.highest_modseq`

// mailScanFolder reads a row of folderColumns.
func mailScanFolder(row pgx.Row) (mailstore.Folder, error) {
	var f mailstore.Folder
	var validity, next, modseq int64
	err := row.Scan(&f.ID, &f.MailboxID, &f.Name, &f.SpecialUse, &validity,
		&next, &f.Messages, &f.Unseen, &f.Size, &modseq)
	f.UIDValidity, f.UIDNext = uint32(validity), uint32(next)
	f.HighestModSeq = uint64(modseq)
	return f, err
}

// messageColumns are what scanMessage reads, in order.
const messageColumns = `m.folder_id, m.uid, m.blob_id, m.size, m.received_at, m.flags, m.modseq`

func scanMessage(row pgx.Row) (mailstore.Message, error) {
	var m mailstore.Message
	var uid, modseq int64
	err := row.Scan(&m.FolderID, &uid, &m.BlobID, &m.Size, &m.ReceivedAt, &m.Flags, &modseq)
	m.UID, m.ModSeq = uint32(uid), uint64(modseq)
	m.ReceivedAt = m.ReceivedAt.UTC()
	if len(m.Flags) == 0 {
		m.Flags = nil
	}
	return m, err
}

// lockedFolder is a folder locked by its writer, with the account's
// domain (for the counters).
type lockedFolder struct {
	id, mailboxID, domainID int64
	// modseq is the folder's highest_modseq when locked: the changes the
	// writer logs take the modseqs after it, in the order logged.
	modseq int64
}

// lockFolders locks the account's folders of ids (FOR NO KEY UPDATE, in
// id order) and answers them by id; a folder that is not the account's
// is ErrFolderNotFound.
func lockFolders(ctx context.Context, tx pgx.Tx, mailboxID int64, ids ...int64) (map[int64]lockedFolder, error) {
	rows, err := tx.Query(ctx, `
		SELECT f.id, m.domain_id, f.highest_modseq FROM folders f JOIN mailboxes m ON m.id = f.mailbox_id
		WHERE f.id = ANY($1) AND f.mailbox_id = $2
		ORDER BY f.id FOR NO KEY UPDATE OF f`, ids, mailboxID)
	if err != nil {
		return nil, fmt.Errorf("lock folders: %w", err)
	}
	out := map[int64]lockedFolder{}
	for rows.Next() {
		f := lockedFolder{mailboxID: mailboxID}
		if err := rows.Scan(&f.id, &f.domainID, &f.modseq); err != nil {
			rows.Close()
			return nil, err
		}
		out[f.id] = f
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lock folders: %w", err)
	}
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			return nil, fmt.Errorf("folder %d: %w", id, mailstore.ErrFolderNotFound)
		}
	}
	return out, nil
}

// Adding messages.

// newMessage is a message to file in a folder under the folder's next UID.
type newMessage struct {
	folderID, mailboxID, domainID int64
	blobID, size                  int64
	received                      time.Time
	flags                         []string
	header                        []byte // its summary; nil: its body's
}

// sqlAddMessages files messages in their folders, and logs them. c has
// one row per folder (id, how many, unseen among them, bytes): the UPDATE
// takes the folder's lock (held already by a writer that follows the
// lock order) and its UIDs at once, uid_next .. uid_next+n-1, and as many
// modseqs. r has one row per message with k, its place among its
// folder's messages of this statement, and its summary (010), or NULL
// for the one its body has (Copy and Move). It answers each folder's
// first UID. sqlAddMessagesCTEs is it without its final SELECT, for
// statements that do more (sqlDeliverWrites); the summaries are the
// statement's last parameter, so those statements build it from
// sqlAddMessagesHead and sqlAddMessagesTail around their own number for
// it (mail_deliver.go).
const (
	sqlAddMessagesHead = `
WITH c AS (
	SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[]) AS c(id, n, unseen, bytes)
), f AS (
	UPDATE folders f SET uid_next = f.uid_next + c.n, messages = f.messages + c.n,
		unseen = f.unseen + c.unseen, size = f.size + c.bytes,
		highest_modseq = f.highest_modseq + c.n
	FROM c WHERE f.id = c.id
	RETURNING f.id, f.uid_next - c.n AS uid0, f.highest_modseq - c.n AS mod0, f.highest_modseq AS mod1
), r AS (
	SELECT * FROM unnest($5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[],
		$10::bigint[], $11::timestamptz[], $12::text[], `
	sqlAddMessagesTail = `::bytea[])
		AS r(folder_id, k, mailbox_id, domain_id, blob_id, size, received_at, flags, header)
), m AS (
	INSERT INTO messages (folder_id, uid, mailbox_id, domain_id, blob_id, size, received_at, flags, header, modseq)
	SELECT r.folder_id, f.uid0 + r.k, r.mailbox_id, r.domain_id, r.blob_id, r.size, r.received_at, ` + sqlFlags + `,
		coalesce(r.header, (SELECT b.header FROM blobs b WHERE b.id = r.blob_id)), f.mod0 + r.k + 1
	FROM r JOIN f ON f.id = r.folder_id
), l AS (
	INSERT INTO changes (folder_id, modseq, kind, uid, blob_id, size, received_at, flags)
	SELECT r.folder_id, f.mod0 + r.k + 1, 1, f.uid0 + r.k, r.blob_id, r.size, r.received_at, ` + sqlFlags + `
	FROM r JOIN f ON f.id = r.folder_id
), p AS (
	DELETE FROM changes x USING f
	WHERE x.folder_id = f.id AND f.mod1 / $13 > f.mod0 / $13 AND x.modseq <= f.mod1 - $14
)`
	sqlAddMessagesCTEs = sqlAddMessagesHead + `$15` + sqlAddMessagesTail
)

const sqlAddMessages = sqlAddMessagesCTEs + `
SELECT id, uid0, mod0 FROM f`

// addBatch gathers the arguments of sqlAddMessages.
type addBatch struct {
	index                    map[int64]int // folder id -> its row in c
	cID, cN, cUnseen, cBytes []int64
	rFolder, rK, rMailbox    []int64
	rDomain, rBlob, rSize    []int64
	rReceived                []time.Time
	rFlags                   []string
	rHeader                  [][]byte
	msgs                     []newMessage
}

// add appends m; its UID will be the folder's first UID of the statement
// plus the k it answers.
func (b *addBatch) add(m newMessage) (k int64) {
	if b.index == nil {
		b.index = map[int64]int{}
	}
	i, ok := b.index[m.folderID]
	if !ok {
		i = len(b.cID)
		b.index[m.folderID] = i
		b.cID = append(b.cID, m.folderID)
		b.cN = append(b.cN, 0)
		b.cUnseen = append(b.cUnseen, 0)
		b.cBytes = append(b.cBytes, 0)
	}
	k = b.cN[i]
	b.cN[i]++
	b.cUnseen[i] += unseen(m.flags)
	b.cBytes[i] += m.size
	b.rFolder = append(b.rFolder, m.folderID)
	b.rK = append(b.rK, k)
	b.rMailbox = append(b.rMailbox, m.mailboxID)
	b.rDomain = append(b.rDomain, m.domainID)
	b.rBlob = append(b.rBlob, m.blobID)
	b.rSize = append(b.rSize, m.size)
	b.rReceived = append(b.rReceived, m.received)
	b.rFlags = append(b.rFlags, flagsJSON(m.flags))
	b.rHeader = append(b.rHeader, m.header)
	b.msgs = append(b.msgs, m)
	return k
}

// args are the arguments of sqlAddMessagesCTEs but the last, the
// summaries (headers), which statements that do more pass last.
func (b *addBatch) args() []any {
	return []any{b.cID, b.cN, b.cUnseen, b.cBytes, b.rFolder, b.rK, b.rMailbox, b.rDomain,
		b.rBlob, b.rSize, b.rReceived, b.rFlags, int64(pruneEvery), int64(changeLogKeep)}
}

// addMessages files the batch's messages and answers them with their
// UIDs, in the order added. It changes no mailbox or domain counter.
func addMessages(ctx context.Context, tx pgx.Tx, b *addBatch) ([]mailstore.Message, error) {
	if len(b.msgs) == 0 {
		return []mailstore.Message{}, nil
	}
	// With the delivery batch's plan settings (sqlBatchSettings) in the
	// same round trip: the statement's pruning of the change log must not
	// be a scan of every folder's log, whenever its plan was made.
	first := map[int64][2]int64{} // folder id -> first UID, modseq before
	batch := &pgx.Batch{}
	batch.Queue(sqlBatchSettings)
	batch.Queue(sqlAddMessages, append(b.args(), b.rHeader)...).Query(func(rows pgx.Rows) error {
		var id, uid0, mod0 int64
		_, err := pgx.ForEachRow(rows, []any{&id, &uid0, &mod0}, func() error {
			first[id] = [2]int64{uid0, mod0}
			return nil
		})
		return err
	})
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return nil, fmt.Errorf("add messages: %w", err)
	}
	out := make([]mailstore.Message, len(b.msgs))
	for i, m := range b.msgs {
		f, ok := first[m.folderID]
		if !ok {
			return nil, fmt.Errorf("add messages: folder %d: %w", m.folderID, mailstore.ErrFolderNotFound)
		}
		out[i] = mailstore.Message{
			FolderID: m.folderID, UID: uint32(f[0] + b.rK[i]), BlobID: m.blobID,
			Size: m.size, ReceivedAt: m.received, Flags: m.flags, ModSeq: uint64(f[1] + b.rK[i] + 1),
		}
	}
	return out, nil
}

// Logging other changes.

// sqlLogChanges moves folder counters by delta (c: id, messages, unseen,
// bytes, and n, the number of changes) and logs the changes (r: folder,
// k, kind, uid, flags) under the modseqs the same UPDATE takes.
const sqlLogChanges = `
WITH c AS (
	SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[]) AS c(id, msgs, unseen, bytes, n)
), f AS (
	UPDATE folders f SET messages = f.messages + c.msgs, unseen = f.unseen + c.unseen,
		size = f.size + c.bytes, highest_modseq = f.highest_modseq + c.n
	FROM c WHERE f.id = c.id
	RETURNING f.id, f.highest_modseq - c.n AS mod0, f.highest_modseq AS mod1
), r AS (
	SELECT * FROM unnest($6::bigint[], $7::bigint[], $8::smallint[], $9::bigint[], $10::text[],
		$11::bigint[], $12::bigint[], $13::timestamptz[])
		AS r(folder_id, k, kind, uid, flags, blob_id, size, received_at)
), l AS (
	INSERT INTO changes (folder_id, modseq, kind, uid, flags, blob_id, size, received_at)
	SELECT r.folder_id, f.mod0 + r.k + 1, r.kind, r.uid, ` + sqlFlags + `, r.blob_id, r.size, r.received_at
	FROM r JOIN f ON f.id = r.folder_id
)
DELETE FROM changes x USING f
WHERE x.folder_id = f.id AND f.mod1 / $14 > f.mod0 / $14 AND x.modseq <= f.mod1 - $15`

// logBatch gathers the arguments of sqlLogChanges.
type logBatch struct {
	index                       map[int64]int
	cID, cMsgs, cUnseen, cBytes []int64
	cN                          []int64
	rFolder, rK, rUID           []int64
	rKind                       []int16
	rFlags                      []string
	rBlob, rSize                []int64
	rReceived                   []*time.Time
}

func (b *logBatch) folder(id int64) int {
	if b.index == nil {
		b.index = map[int64]int{}
	}
	i, ok := b.index[id]
	if !ok {
		i = len(b.cID)
		b.index[id] = i
		b.cID = append(b.cID, id)
		b.cMsgs = append(b.cMsgs, 0)
		b.cUnseen = append(b.cUnseen, 0)
		b.cBytes = append(b.cBytes, 0)
		b.cN = append(b.cN, 0)
	}
	return i
}

// removed logs the removal of a message and takes it off its folder's
// counters.
func (b *logBatch) removed(folderID int64, uid uint32, size int64, flags []string) {
	i := b.folder(folderID)
	b.cMsgs[i]--
	b.cUnseen[i] -= unseen(flags)
	b.cBytes[i] -= size
	b.change(i, changeExpunge, mailstore.Message{FolderID: folderID, UID: uid})
}

// reflagged logs a flag change of m (as it is after the change) from old.
func (b *logBatch) reflagged(m mailstore.Message, old []string) {
	i := b.folder(m.FolderID)
	b.cUnseen[i] += unseen(m.Flags) - unseen(old)
	b.change(i, changeFlags, m)
}

// change logs m (only its folder and UID for an expunge).
func (b *logBatch) change(i int, kind int16, m mailstore.Message) {
	folderID, uid, flags := m.FolderID, m.UID, m.Flags
	var received *time.Time
	if !m.ReceivedAt.IsZero() {
		received = &m.ReceivedAt
	}
	b.rBlob = append(b.rBlob, m.BlobID)
	b.rSize = append(b.rSize, m.Size)
	b.rReceived = append(b.rReceived, received)
	b.rFolder = append(b.rFolder, folderID)
	b.rK = append(b.rK, b.cN[i])
	b.cN[i]++
	b.rKind = append(b.rKind, kind)
	b.rUID = append(b.rUID, int64(uid))
	b.rFlags = append(b.rFlags, flagsJSON(flags))
}

func (b *logBatch) empty() bool { return len(b.rFolder) == 0 }

func (b *logBatch) args() []any {
	return []any{b.cID, b.cMsgs, b.cUnseen, b.cBytes, b.cN, b.rFolder, b.rK, b.rKind, b.rUID, b.rFlags,
		b.rBlob, b.rSize, b.rReceived, int64(pruneEvery), int64(changeLogKeep)}
}

// Account counters.

// usage is what a transaction adds to mailboxes' or domains' counters:
// id -> messages, bytes.
type usage map[int64][2]int64

func (u usage) add(id, msgs, bytes int64) {
	v := u[id]
	u[id] = [2]int64{v[0] + msgs, v[1] + bytes}
}

// arrays answers u's rows that change something, by id, as the columns
// of an unnest: ids (sorted, so that writers take the rows in one
// order), message counts, bytes.
func (u usage) arrays() (ids, msgs, bytes []int64) {
	for id, v := range u {
		if v != [2]int64{} {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	msgs = make([]int64, len(ids))
	bytes = make([]int64, len(ids))
	for i, id := range ids {
		msgs[i], bytes[i] = u[id][0], u[id][1]
	}
	return ids, msgs, bytes
}

// queueUsage queues the UPDATE of table's counters (mailboxes or
// domains) by u. With lock, and several rows, it first locks them in id
// order; a caller that locked them already passes false.
func queueUsage(b *pgx.Batch, table string, u usage, lock bool) {
	ids, msgs, bytes := u.arrays()
	if len(ids) == 0 {
		return
	}
	if lock && len(ids) > 1 {
		b.Queue(`SELECT 1 FROM `+table+` WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`, ids)
	}
	b.Queue(`UPDATE `+table+` t SET message_count = t.message_count + u.n, used_bytes = t.used_bytes + u.b
		FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS u(id, n, b) WHERE t.id = u.id`, ids, msgs, bytes)
}

// sendBatch runs a batch's statements in one round trip and answers the
// first error.
func sendBatch(ctx context.Context, tx pgx.Tx, b *pgx.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

// refBlobs adds references to bodies (id -> how many), locking them in id
// order as unrefBlobs does, and reports whether every one still exists:
// a body is gone when every message naming it was removed by a
// transaction that committed meanwhile.
func refBlobs(ctx context.Context, tx pgx.Tx, adds map[int64]int64) (bool, error) {
	if len(adds) == 0 {
		return true, nil
	}
	ids := make([]int64, 0, len(adds))
	for id := range adds {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ns := make([]int64, len(ids))
	for i, id := range ids {
		ns[i] = adds[id]
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT 1 FROM blobs WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
	var n int64
	b.Queue(`UPDATE blobs b SET refs = b.refs + d.n
		FROM unnest($1::bigint[], $2::bigint[]) AS d(id, n) WHERE b.id = d.id`, ids, ns).Exec(func(ct pgconn.CommandTag) error {
		n = ct.RowsAffected()
		return nil
	})
	if err := sendBatch(ctx, tx, b); err != nil {
		return false, fmt.Errorf("reference bodies: %w", err)
	}
	return n == int64(len(ids)), nil
}
