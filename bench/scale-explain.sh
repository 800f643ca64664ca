#!/bin/bash
# scale-explain.sh URL [MAILBOXES DOMAINS]: EXPLAIN (ANALYZE, BUFFERS) of
# the statements behind each request path, with a mailbox and domain of a
# store built by bench/populate, and then pg_stat_statements' busiest
# statements with their rows and buffers per call (the delivery batch's
# among them), so that a statement reading more than its caller's rows
# shows as buffers far beyond its rows.
set -euo pipefail
URL=$1 M=${2:-250000} D=${3:-10000}
q() { psql "$URL" -qAtX -c "$1"; }
m=$((M / 2)) d=$((m * D / M))
email="u$m@d$d.scale.test" dom="d$d.scale.test"
mid=$(q "SELECT id FROM mailboxes WHERE email = '$email'")
pid=$(q "SELECT partner_id FROM mailboxes WHERE id = $mid")
did=$(q "SELECT domain_id FROM mailboxes WHERE id = $mid")
u0=$(q "SELECT id FROM mailboxes WHERE email = 'u0@d0.scale.test'")
inbox=$(q "SELECT id FROM folders WHERE mailbox_id = $u0 AND name = 'INBOX'")
ex() { echo "### $1"; echo '```'; psql "$URL" -qAtX -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) $2"; echo '```'; echo; }
ex "RCPT look-up, IMAP and SMTP AUTH log-in (MailboxByEmail)" "SELECT m.id, m.password_hash, m.used_bytes, d.id, d.quota_mb,
	EXISTS (SELECT 1 FROM autoreplies a WHERE a.mailbox_id = m.id),
	EXISTS (SELECT 1 FROM sieve_scripts s WHERE s.mailbox_id = m.id AND s.active)
	FROM domains d JOIN mailboxes m ON m.domain_id = d.id WHERE d.name = '$dom' AND d.live AND m.email = '$email'"
ex "SELECT: the folder (Folder)" "SELECT f.id, f.uid_next, f.messages FROM folders f WHERE f.mailbox_id = $u0 AND f.name = 'INBOX'"
ex "SELECT: its messages (Messages, u0's INBOX)" "SELECT m.folder_id, m.uid, m.blob_id, m.size, m.received_at, m.flags, m.modseq FROM messages m WHERE m.folder_id = $inbox ORDER BY m.uid"
ex "GET /users/?domain_id= (Mailboxes, first page)" "SELECT id, domain_id, partner_id, email, created_at FROM mailboxes WHERE domain_id = $did ORDER BY id LIMIT 50 OFFSET 0"
ex "GET /users/ (Mailboxes of the partner, page at offset 2,000)" "SELECT id, domain_id, partner_id, email, created_at FROM mailboxes WHERE partner_id = $pid ORDER BY id LIMIT 50 OFFSET 2000"
ex "GET /domains/ (Domains, first page)" "SELECT id, name FROM domains WHERE partner_id = $pid ORDER BY id LIMIT 50 OFFSET 0"
ex "GET /users/{email}/usage (Mailbox)" "SELECT id, used_bytes, message_count FROM mailboxes WHERE email = '$email' AND partner_id = $pid AND domain_id = (SELECT id FROM domains WHERE name = '$dom' AND partner_id = $pid)"
ex "GET /domains/{name}/usage (DomainUsage)" "SELECT d.id, d.mailbox_count, COALESCE(t.in_bytes, 0) FROM domains d LEFT JOIN LATERAL (
	SELECT sum(in_bytes)::bigint AS in_bytes, sum(out_bytes)::bigint AS out_bytes FROM transfer WHERE domain_id = d.id AND month = to_char(now(), 'YYYY-MM')) t ON true
	WHERE d.name = '$dom' AND d.partner_id = $pid"
ex "Retention: a domain's expired messages (purgeDomainBatch)" "SELECT folder_id, uid FROM messages WHERE domain_id = $did AND received_at < now() - interval '30 days' ORDER BY received_at LIMIT 1000"
ex "Retention: the domains with retention (once a pass)" "SELECT id, name, retention_days FROM domains WHERE retention_days > 0 ORDER BY id"
if q "SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'" | grep -q 1; then
	echo "### pg_stat_statements: the 25 statements with the most calls"
	echo '```'
	psql "$URL" -qX -c "SELECT calls, round(mean_exec_time::numeric, 3) AS mean_ms, round(rows::numeric / calls, 1) AS rows_per_call,
		round((shared_blks_hit + shared_blks_read)::numeric / calls, 1) AS blks_per_call, left(regexp_replace(query, '\s+', ' ', 'g'), 110) AS query
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY calls DESC LIMIT 25"
	echo '```'
fi
