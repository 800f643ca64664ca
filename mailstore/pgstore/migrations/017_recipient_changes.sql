-- 017: every node's MX keeps its recipients' look-ups (recipients.go)
-- until a change to what such an answer says: these triggers announce
-- one on the schema's shared channel ('mailhost_' || schema, payload
-- '/r'), at the commit of the transaction that made it, whoever made it
-- (any node, an older binary, an operator's SQL). They are statement
-- triggers on the columns an answer holds, so that a delivery, which
-- updates a mailbox's counters only, fires none, and creating a mailbox
-- or an alias (counters of its domain) neither: a new address is never
-- a kept answer. recipients_test's TestRecipientTriggersCoverColumns
-- keeps the column lists true to the tables.
--
-- Older binaries keep working (min_compatible stays 1): their listeners
-- skip a payload without a colon. IF NOT EXISTS, OR REPLACE: the file may
-- be renumbered when merged.
CREATE OR REPLACE FUNCTION recipients_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	-- Cut as LISTEN cuts the identifier (63 bytes), as the notifier's
	-- channelName (notify.go) cuts it: pg_notify would refuse a longer
	-- name, and with it the write.
	PERFORM pg_notify(left('mailhost_' || TG_TABLE_SCHEMA, 63), '/r');
	RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS recipients_changed ON domains;
CREATE TRIGGER recipients_changed AFTER DELETE OR UPDATE OF
	partner_id, name, plan, max_mailboxes, max_aliases, quota_mb, retention_days,
	transfer_monthly_mb, suspended, created_at, verified, verified_at, verify_token,
	rev_name, spam_filter, live, claim_ended_at
	ON domains FOR EACH STATEMENT EXECUTE FUNCTION recipients_changed();

DROP TRIGGER IF EXISTS recipients_changed ON mailboxes;
CREATE TRIGGER recipients_changed AFTER DELETE OR UPDATE OF
	domain_id, partner_id, email, quota_mb, created_at
	ON mailboxes FOR EACH STATEMENT EXECUTE FUNCTION recipients_changed();

DROP TRIGGER IF EXISTS recipients_changed ON autoreplies;
CREATE TRIGGER recipients_changed AFTER INSERT OR DELETE OR UPDATE
	ON autoreplies FOR EACH STATEMENT EXECUTE FUNCTION recipients_changed();

DROP TRIGGER IF EXISTS recipients_changed ON sieve_scripts;
CREATE TRIGGER recipients_changed AFTER INSERT OR DELETE OR UPDATE
	ON sieve_scripts FOR EACH STATEMENT EXECUTE FUNCTION recipients_changed();
