-- 004: the ACME client's named blobs (mailstore.Certs): account key,
-- certificates with their keys, HTTP-01 tokens, shared by the nodes.
--
-- Older binaries keep working (min_compatible stays 1): they never read
-- the table.
CREATE TABLE certs (
	name       text PRIMARY KEY,
	data       bytea NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now()
);
