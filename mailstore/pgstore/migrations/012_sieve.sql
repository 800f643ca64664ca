-- 012: each mailbox's Sieve scripts (mailstore.SieveScripts), at most one
-- active; they go with the mailbox (ON DELETE CASCADE).
--
-- Older binaries keep working (min_compatible stays 1): they never read
-- the table. IF NOT EXISTS: the file may be renumbered when merged.
CREATE TABLE IF NOT EXISTS sieve_scripts (
	mailbox_id bigint NOT NULL REFERENCES mailboxes (id) ON DELETE CASCADE,
	name       text NOT NULL,
	script     text NOT NULL,
	active     boolean NOT NULL DEFAULT false,
	updated_at timestamptz NOT NULL,
	PRIMARY KEY (mailbox_id, name)
);
-- One active script per mailbox, and the delivery's look-up of it.
CREATE UNIQUE INDEX IF NOT EXISTS sieve_scripts_active ON sieve_scripts (mailbox_id) WHERE active;
