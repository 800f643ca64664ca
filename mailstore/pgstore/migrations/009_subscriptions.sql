-- 009: IMAP subscriptions as a set of names per account
-- (mailstore.Mail.Subscribe), apart from the folders: a name may be
-- subscribed with no folder (RFC 9051 section 6.3.7: a subscription
-- outlives its folder), and CREATE no longer subscribes. Until now the
-- mark was folders.subscribed; the folders subscribed now stay so.
CREATE TABLE subscriptions (
	mailbox_id bigint NOT NULL REFERENCES mailboxes (id) ON DELETE CASCADE,
	name       text NOT NULL,
	PRIMARY KEY (mailbox_id, name)
);

INSERT INTO subscriptions (mailbox_id, name)
SELECT mailbox_id, name FROM folders WHERE subscribed;

-- Rolling upgrade: older binaries keep working (min_compatible stays 1).
-- They still read and write folders.subscribed, so until every node runs
-- schema 9 the column and the table mirror each other, by the two
-- triggers below: what an older node subscribes (its SUBSCRIBE, its
-- CREATE, which subscribes, and the default folders of its new accounts)
-- reaches the table, and what a newer node subscribes reaches the column,
-- which older nodes' LSUB reads. A subscription without a folder has no
-- row to mark, and an older node's RENAME takes the mark along with the
-- folder: older nodes may miss those, as they never had them. A later
-- migration drops the triggers and the column, with min_compatible 9.
--
-- pg_trigger_depth() > 1 stops the echo (each trigger's write fires the
-- other once), and keeps the subscriptions trigger out of a mailbox's
-- cascading delete, where its folders go too.
CREATE FUNCTION subscriptions_from_folder() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF pg_trigger_depth() > 1 THEN
		RETURN NULL;
	END IF;
	IF NEW.subscribed THEN
		INSERT INTO subscriptions (mailbox_id, name) VALUES (NEW.mailbox_id, NEW.name)
		ON CONFLICT DO NOTHING;
	ELSE
		DELETE FROM subscriptions WHERE mailbox_id = NEW.mailbox_id AND name = NEW.name;
	END IF;
	RETURN NULL;
END
$$;

CREATE TRIGGER folders_subscribed_insert AFTER INSERT ON folders
	FOR EACH ROW WHEN (NEW.subscribed) EXECUTE FUNCTION subscriptions_from_folder();
CREATE TRIGGER folders_subscribed_update AFTER UPDATE OF subscribed ON folders
	FOR EACH ROW WHEN (OLD.subscribed IS DISTINCT FROM NEW.subscribed)
	EXECUTE FUNCTION subscriptions_from_folder();

CREATE FUNCTION folders_from_subscription() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF pg_trigger_depth() > 1 THEN
		RETURN NULL;
	END IF;
	IF TG_OP = 'INSERT' THEN
		UPDATE folders SET subscribed = true
		WHERE mailbox_id = NEW.mailbox_id AND name = NEW.name AND NOT subscribed;
	ELSE
		UPDATE folders SET subscribed = false
		WHERE mailbox_id = OLD.mailbox_id AND name = OLD.name AND subscribed;
	END IF;
	RETURN NULL;
END
$$;

CREATE TRIGGER subscriptions_to_folders AFTER INSERT OR DELETE ON subscriptions
	FOR EACH ROW EXECUTE FUNCTION folders_from_subscription();
