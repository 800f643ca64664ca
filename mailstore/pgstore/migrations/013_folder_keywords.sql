-- 013: how many messages of each folder hold each keyword (a flag that
-- is not a system flag), by mailstore.KeywordKey (the flag with its
-- ASCII letters upper case: upper(... COLLATE "C")), so that a writer
-- decides mailstore's limit of distinct keywords per folder from the
-- rows of the keywords it adds and removes (mail_keywords.go), not from
-- the folder's messages. Every writer of a folder's messages holds the
-- folder's row lock first, and so its rows here.
--
-- Rolling upgrade: older binaries keep working (min_compatible stays 1)
-- but do not keep these counts: a folder whose keywords an older binary
-- changes during the upgrade may count a keyword it no longer holds, or
-- miss one, until the keyword's messages change again. The limit is
-- then a little off for that folder; nothing else reads the counts.
CREATE TABLE folder_keywords (
	folder_id bigint NOT NULL REFERENCES folders (id) ON DELETE CASCADE,
	keyword   text NOT NULL,
	n         bigint NOT NULL,
	PRIMARY KEY (folder_id, keyword)
);

INSERT INTO folder_keywords (folder_id, keyword, n)
SELECT m.folder_id, upper(k COLLATE "C"), count(*)
FROM messages m, unnest(m.flags) AS k
WHERE k <> '' AND left(k, 1) <> '\'
GROUP BY 1, 2;
