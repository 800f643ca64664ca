-- 006: a domain's spam filter setting (mailstore.Domain.SpamFilter):
-- '' follows the server's spam_filter setting, else 'off', 'junk' or
-- 'reject'. Older binaries keep working (min_compatible stays 1): they
-- ignore the column and their inserts take the default.
ALTER TABLE domains
	ADD COLUMN spam_filter text NOT NULL DEFAULT ''
		CHECK (spam_filter IN ('', 'off', 'junk', 'reject'));
