-- 005: reserved for another branch of issue 14 (rspamd, metrics or
-- webhooks), which brings the real 005. This placeholder only keeps the
-- versions contiguous on branch issue14-policy: delete it when merging,
-- and never apply it to a database that will get the real 005.
SELECT 1;
