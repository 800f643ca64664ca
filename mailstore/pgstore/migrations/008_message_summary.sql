-- 008: each body's summary (mailstore.HeaderSummary: the header fields
-- of the IMAP ENVELOPE and of a folder's listing), written with the body
-- by Deliver and Append, so that opening a folder reads no body. NULL for
-- a body stored before this migration, or by an older binary: Summaries
-- makes it from the body and fills it in.
--
-- Older binaries keep working (min_compatible stays 1): they never read
-- the column, and the bodies they store get their summary lazily.
ALTER TABLE blobs ADD COLUMN header bytea;
