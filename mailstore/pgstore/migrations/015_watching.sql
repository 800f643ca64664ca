-- 015: which node instances have IMAP sessions watching which accounts
-- (notify.go), so that a writer sends its doorbell only to the nodes that
-- watch the accounts it changed, rather than waking every node for every
-- delivery. A row lives while its instance renews it; a node that died
-- leaves rows that expire.
--
-- Rolling upgrade: older binaries keep working (min_compatible stays 1):
-- a newer node still wakes on an older node's notifications, but an older
-- node's sessions learn of a newer node's changes only by their own
-- periodic check (imapd's PollInterval) until it is upgraded.
CREATE TABLE IF NOT EXISTS watching (
	mailbox_id bigint NOT NULL,
	instance   text NOT NULL,
	expires_at timestamptz NOT NULL,
	PRIMARY KEY (mailbox_id, instance)
);
CREATE INDEX IF NOT EXISTS watching_instance ON watching (instance);
