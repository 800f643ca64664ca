-- 002: the live nodes (mailstore.Members), one row per node name, its last
-- heartbeat. Rows of nodes gone for good stay (a few bytes each) and no
-- longer count once their heartbeat is older than the caller's ttl.
CREATE TABLE nodes (
	name    text PRIMARY KEY,
	seen_at timestamptz NOT NULL
);
