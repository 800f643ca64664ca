package imap

// SelectOptions contains options for the SELECT or EXAMINE command.
type SelectOptions struct {
	ReadOnly  bool
	CondStore bool // requires CONDSTORE

	// mailhost patch: the QRESYNC parameter (RFC 7162 section 3.2.5).
	QResync *SelectQResync // requires QRESYNC
}

// SelectQResync is the QRESYNC parameter of SELECT and EXAMINE: what the
// client knew of the mailbox when it last had it selected.
//
// mailhost patch.
type SelectQResync struct {
	UIDValidity uint32
	ModSeq      uint64
	// KnownUIDs are the UIDs the client knows of, nil if not given.
	KnownUIDs UIDSet
	// SeqMatch, when given, pairs sequence numbers with the UIDs they had
	// (the seq-match-data of RFC 7162 section 3.2.5).
	SeqMatch *SelectSeqMatch
}

// SelectSeqMatch is the seq-match-data of the QRESYNC parameter.
//
// mailhost patch.
type SelectSeqMatch struct {
	SeqNums SeqSet
	UIDs    UIDSet
}

// SelectData is the data returned by a SELECT command.
//
// In the old RFC 2060, PermanentFlags, UIDNext and UIDValidity are optional.
type SelectData struct {
	// Flags defined for this mailbox
	Flags []Flag
	// Flags that the client can change permanently
	PermanentFlags []Flag
	// Number of messages in this mailbox (aka. "EXISTS")
	NumMessages uint32
	// Sequence number of the first unseen message. Obsolete, IMAP4rev1 only.
	// Server-only, not supported in imapclient.
	FirstUnseenSeqNum uint32
	// Number of recent messages in this mailbox. Obsolete, IMAP4rev1 only.
	// Server-only, not supported in imapclient.
	NumRecent   uint32
	UIDNext     UID
	UIDValidity uint32

	List *ListData // requires IMAP4rev2

	HighestModSeq uint64 // requires CONDSTORE

	// mailhost patch: MailboxID is the mailbox's MAILBOXID (RFC 8474
	// section 4.1), sent when not empty.
	MailboxID string // requires OBJECTID
}
