-- 007: auto-replies (mailstore.AutoReplies): each mailbox's vacation
-- notice, and whom it replied to when, so that every node keeps to one
-- reply per sender in the interval.
--
-- Older binaries keep working (min_compatible stays 1): they never read
-- the tables. IF NOT EXISTS: the file may be renumbered when merged.
CREATE TABLE IF NOT EXISTS autoreplies (
	mailbox_id bigint PRIMARY KEY REFERENCES mailboxes (id) ON DELETE CASCADE,
	enabled    boolean NOT NULL,
	subject    text NOT NULL,
	body       text NOT NULL,
	starts_at  timestamptz,
	ends_at    timestamptz
);
CREATE TABLE IF NOT EXISTS autoreply_sent (
	mailbox_id bigint NOT NULL REFERENCES mailboxes (id) ON DELETE CASCADE,
	sender     text NOT NULL,
	sent_at    timestamptz NOT NULL,
	PRIMARY KEY (mailbox_id, sender)
);
