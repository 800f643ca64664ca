-- 003: domain verification (mailstore.Domain.Verified, VerifyToken).
--
-- Domains made before have no token (''): the API gives each one on first
-- use (EnsureVerifyToken), as bbolt does, rather than this file making
-- tokens in SQL without a cryptographic random source.
--
-- rev_name is the name with its labels reversed (mailstore.ReversedName,
-- "a.b.example.com" -> "com.example.b.a"), in the "C" collation so that
-- comparisons are byte order: the subdomains of a name are the range
-- [rev || '.', rev || '/') ('/' is the byte after '.'), and its parents
-- exact values. The index holds the verified domains only, the ones
-- CreateDomain and the re-check look for.
--
-- Older binaries keep working (min_compatible stays 1): they ignore the
-- columns, and their inserts take the defaults (unverified, no token);
-- SetVerified writes rev_name with verified, so a row an older binary
-- inserted is indexed right once verified.
ALTER TABLE domains
	ADD COLUMN verified     boolean NOT NULL DEFAULT false,
	ADD COLUMN verified_at  timestamptz,
	ADD COLUMN verify_token text NOT NULL DEFAULT '',
	ADD COLUMN rev_name     text COLLATE "C" NOT NULL DEFAULT '';

UPDATE domains SET rev_name = (
	SELECT string_agg(label, '.' ORDER BY n DESC)
	FROM unnest(string_to_array(name, '.')) WITH ORDINALITY AS l(label, n));

CREATE INDEX domains_verified_rev ON domains (rev_name) WHERE verified;
