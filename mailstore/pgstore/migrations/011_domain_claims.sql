-- 011: several partners may claim one domain name (mailstore.LiveClaim).
-- min_compatible: 11
--
-- Each partner's claim of a name is its own domains row: the name is
-- unique per partner, (name, partner_id), an index that also finds every
-- claim of a name. One claim per name is live, the one the mail plane
-- sees: `live`, kept by the writers that change a name's claims
-- (CreateDomain, SetVerified, SetVerifiedSole, DeleteDomain, each under
-- the name's advisory lock) by mailstore.LiveClaim, and unique among a
-- name's rows by domains_live_name, which the mail plane's look-ups by
-- name use. claim_ended_at is set on the claims another partner's
-- verification ended.
--
-- Mailbox addresses and alias sources are unique per claim, no longer
-- store-wide: the addresses namespace, mailboxes and aliases are keyed
-- by (domain_id, address).
--
-- Older binaries cannot run against this (min_compatible 11): they would
-- read any claim of a name as its only domain, and expect the store-wide
-- unique keys this drops. Every domain that exists is its name's only
-- claim, hence live; live defaults to true for the same reason (a row
-- inserted without it is its name's only claim), and every writer of
-- this version names it.
--
-- Each statement can run again (a test re-applies the migrations after
-- 008 to a database it took back).
ALTER TABLE domains
	ADD COLUMN IF NOT EXISTS live           boolean NOT NULL DEFAULT true,
	ADD COLUMN IF NOT EXISTS claim_ended_at timestamptz;
ALTER TABLE domains DROP CONSTRAINT IF EXISTS domains_name_key;
CREATE UNIQUE INDEX IF NOT EXISTS domains_name_partner ON domains (name, partner_id);
CREATE UNIQUE INDEX IF NOT EXISTS domains_live_name ON domains (name) WHERE live;

ALTER TABLE addresses DROP CONSTRAINT IF EXISTS addresses_pkey;
ALTER TABLE addresses ADD PRIMARY KEY (domain_id, address);
-- The primary key's first column serves what this index did.
DROP INDEX IF EXISTS addresses_domain;

ALTER TABLE mailboxes DROP CONSTRAINT IF EXISTS mailboxes_email_key;
CREATE UNIQUE INDEX IF NOT EXISTS mailboxes_domain_email ON mailboxes (domain_id, email);
ALTER TABLE aliases DROP CONSTRAINT IF EXISTS aliases_source_key;
CREATE UNIQUE INDEX IF NOT EXISTS aliases_domain_source ON aliases (domain_id, source);
