#!/usr/bin/env bash
# sieve-compare.sh: the same 200-rule Sieve script at delivery, mailhost
# against Dovecot's Pigeonhole side by side in one run. Per message, wall
# and CPU time of deliveries to a mailbox without a script and to one
# with it, on each server, and the ratio with / without.
#
# Usage (as root, from anywhere): bench/sieve-compare.sh
# Settings, from the environment (defaults in brackets):
#   OUT     results directory [/tmp/mailhost-sieve-DATE]
#   N       messages per batch [500]
#   REPS    batches of each of the four kinds, alternating [7]
#   MAXLOAD wait before measuring until the 1-minute load average is below this [1.5]
#   MAXWAIT ...but no longer than this many seconds [600]
#
# The script is package delivery's sieveRules(200) (sieve_bench_test.go,
# written out here the same way): header :contains into a folder,
# address :is, address :domain with addflag, List-Id, envelope with
# discard, none matching the message, so every rule is evaluated. The
# message is delivery's benchMessage (2.6 KB, 14 header fields).
#
# mailhost: `mailhost serve` on a fresh data directory, the script set
# through the API, messages over SMTP to its MX, one connection, one
# transaction per message (Python's smtplib), each synced before its 250;
# SPF/DKIM/DMARC checks off (no DNS here). Its CPU is the server
# process's (its threads' schedstat), the client's left out.
# Dovecot 2.3 with Pigeonhole 0.5: dovecot-lda run once per message, as
# an MTA's local delivery runs it, as the vmail user, with its own
# configuration in $OUT/dc (nothing under /etc is touched, no dovecot
# daemon), Maildir, the script as the user's active script (compiled on
# the first delivery, before the batches). Its CPU is the lda processes'
# (RUSAGE_CHILDREN of the loop that runs them). The process start is part
# of every Dovecot delivery, and the SMTP exchange of every mailhost one:
# compare each server's ratio with / without, and the time a script adds
# per message, more than the absolute times.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$BENCH/.." && pwd)
OUT=${OUT:-/tmp/mailhost-sieve-$(date +%Y%m%d-%H%M%S)}
N=${N:-500}
REPS=${REPS:-7}
MAXLOAD=${MAXLOAD:-1.5}
MAXWAIT=${MAXWAIT:-600}
MH_SMTP=127.0.0.1:32525
MH_HTTP=127.0.0.1:38095
LDA=/usr/lib/dovecot/dovecot-lda

mkdir -p "$OUT/bin"
log() { echo "sieve-compare: $(date +%T) $*" | tee -a "$OUT/sieve-compare.log" >&2; }
. "$BENCH/lib.sh"

[ -x "$LDA" ] && [ -e /usr/lib/dovecot/modules/lib90_sieve_plugin.so ] ||
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q dovecot-core dovecot-sieve >/dev/null
id vmail >/dev/null 2>&1 || useradd --system --no-create-home vmail

log "building into $OUT/bin"
(cd "$REPO" && go build -o "$OUT/bin/mailhost" ./cmd/mailhost)
(cd "$REPO" && git log -1 --format='commit %h %s' && go version && dovecot --version | sed 's/^/dovecot /') >"$OUT/versions.txt"

# --- the script and the message ------------------------------------------------

{
	echo 'require ["fileinto", "imap4flags", "envelope"];'
	for ((i = 0; i < 200; i++)); do
		case $((i % 5)) in
		0) echo "if header :contains \"subject\" \"topic-$i\" { fileinto \"Topics\"; stop; }" ;;
		1) echo "if address :is \"from\" \"list$i@lists.example\" { fileinto \"Lists\"; stop; }" ;;
		2) echo "if address :domain :is \"from\" \"vendor$i.example\" { addflag \"\\\\Flagged\"; }" ;;
		3) echo "if header :contains \"list-id\" \"<list$i.lists.example>\" { fileinto \"Lists\"; stop; }" ;;
		4) echo "if envelope :is \"from\" \"bounce$i@mailer.example\" { discard; stop; }" ;;
		esac
	done
} >"$OUT/rules.sieve"
{
	echo 'Return-Path: <someone@sender.example>'
	echo 'Received: from mx.sender.example (mx.sender.example [192.0.2.1]) by mx.a.test with ESMTPS id 1a2b3c for <bob@big.test>; Sat, 28 Nov 2026 09:00:00 +0000'
	echo 'DKIM-Signature: v=1; a=rsa-sha256; d=sender.example; s=s1; h=from:to:subject:date:message-id; bh=abc; b=def'
	echo 'From: Some One <someone@sender.example>'
	echo 'To: Bob <bob@big.test>'
	echo 'Cc: carol@big.test, dave@elsewhere.example'
	echo 'Subject: an ordinary message about the meeting'
	echo 'Date: Sat, 28 Nov 2026 09:00:00 +0000'
	echo 'Message-ID: <1@sender.example>'
	echo 'MIME-Version: 1.0'
	echo 'Content-Type: text/plain; charset=utf-8'
	echo 'User-Agent: Thunderbird'
	echo 'X-Spam: no'
	echo
	for ((i = 0; i < 48; i++)); do echo 'Some text of the body, as people write it.'; done
} >"$OUT/message.eml"

# --- Dovecot --------------------------------------------------------------------

DC=$OUT/dc
rm -rf "$DC"
mkdir -p "$DC/run" "$DC/state" "$DC/home/plain" "$DC/home/rules"
cat >"$DC/dovecot.conf" <<EOF
protocols =
ssl = no
log_path = $DC/dovecot.log
base_dir = $DC/run
state_dir = $DC/state
mail_location = maildir:~/Maildir
first_valid_uid = 1
protocol lda {
  mail_plugins = \$mail_plugins sieve
}
plugin {
  sieve = file:~/sieve;active=~/.dovecot.sieve
}
EOF
cp "$OUT/rules.sieve" "$DC/home/rules/.dovecot.sieve"
touch "$DC/dovecot.log"
chown -R vmail:vmail "$DC"
chmod -R a+rX "$OUT"

# dc_batch USER N: N deliveries to USER with dovecot-lda, one process
# each, as vmail; prints "wall_seconds cpu_seconds".
dc_batch() {
	setpriv --reuid=vmail --regid=vmail --clear-groups env -i PATH=/usr/bin:/bin python3 - "$LDA" "$DC" "$1" "$2" "$OUT/message.eml" <<'EOF'
import os, resource, subprocess, sys, time
lda, dc, user, n, msg = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), open(sys.argv[5], 'rb').read()
env = {'HOME': f'{dc}/home/{user}', 'USER': user, 'PATH': '/usr/bin:/bin'}
cmd = [lda, '-c', f'{dc}/dovecot.conf', '-f', 'someone@sender.example', '-a', f'{user}@bench.test']
r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
for _ in range(n):
    subprocess.run(cmd, input=msg, env=env, check=True)
t1, r1 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
print(f'{t1 - t0:.6f} {(r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime):.6f}')
EOF
}

# --- mailhost -------------------------------------------------------------------

MH_PID=
mh_stop() {
	[ -n "$MH_PID" ] || return 0
	kill -TERM "$MH_PID" 2>/dev/null || true
	wait "$MH_PID" 2>/dev/null || true
	MH_PID=
}
trap mh_stop EXIT
rm -rf "$OUT/data"
MAILHOST_DATA=$OUT/data MAILHOST_HTTP=$MH_HTTP MAILHOST_SMTP=$MH_SMTP MAILHOST_IMAP= MAILHOST_IMAPS= \
	MAILHOST_SUBMISSION= MAILHOST_SUBMISSIONS= MAILHOST_MANAGESIEVE= MAILHOST_HOSTNAME=mailhost.bench.local \
	MAILHOST_INBOUND_CHECKS=false MAILHOST_DMARC_ENFORCE=false \
	"$OUT/bin/mailhost" serve </dev/null >>"$OUT/mailhost.log" 2>&1 &
MH_PID=$!
for _ in $(seq 200); do
	curl -fs "http://$MH_HTTP/healthz" >/dev/null 2>&1 && break
	sleep 0.1
done
key=$(cat "$OUT/data/initial-api-key")
auth=(-fsS -o /dev/null -H "Authorization: Bearer $key" -H "Content-Type: application/json")
api=http://$MH_HTTP
curl "${auth[@]}" -X POST "$api/domains/" -d '{"name":"bench.test","plan":"enterprise"}'
for u in plain rules; do
	curl "${auth[@]}" -X POST "$api/users/" -d "{\"domain_name\":\"bench.test\",\"email\":\"$u@bench.test\",\"password\":\"load-test-password\"}"
done
python3 -c 'import json,sys; print(json.dumps({"script": open(sys.argv[1]).read()}))' "$OUT/rules.sieve" |
	curl "${auth[@]}" -X PUT "$api/users/rules@bench.test/sieve" --data-binary @-

# mh_cpu: the server's CPU seconds so far, summed over its threads
# (/proc/PID/task/*/schedstat, in nanoseconds; /proc/PID/stat counts in
# ticks of 10 ms, too coarse for a batch).
mh_cpu() { cat /proc/"$MH_PID"/task/*/schedstat | awk '{s += $1} END {printf "%.6f\n", s / 1e9}'; }

# mh_batch USER N: N messages to USER over one SMTP connection; prints
# "wall_seconds cpu_seconds" (the server's CPU).
mh_batch() {
	local c0 c1 wall
	c0=$(mh_cpu)
	wall=$(python3 - "$MH_SMTP" "$1@bench.test" "$2" "$OUT/message.eml" <<'EOF'
import smtplib, sys, time
host, port = sys.argv[1].rsplit(':', 1)
rcpt, n, msg = sys.argv[2], int(sys.argv[3]), open(sys.argv[4], 'rb').read().replace(b'\n', b'\r\n')
c = smtplib.SMTP(host, int(port), local_hostname='client.sender.example')
t0 = time.monotonic()
for _ in range(n):
    c.sendmail('someone@sender.example', [rcpt], msg)
t1 = time.monotonic()
c.quit()
print(f'{t1 - t0:.6f}')
EOF
	)
	c1=$(mh_cpu)
	echo "$wall $(awk -v a="$c0" -v b="$c1" 'BEGIN{print b - a}')"
}

# --- measure --------------------------------------------------------------------

# Warm: each side's first delivery (Pigeonhole compiles the script then,
# mailhost parses and caches it).
for u in plain rules; do
	mh_batch "$u" 1 >/dev/null
	dc_batch "$u" 1 >/dev/null
done
wait_quiet
printf 'rep\tserver\tmailbox\tn\twall_s\tcpu_s\n' >"$OUT/results.tsv"
for ((rep = 1; rep <= REPS; rep++)); do
	for u in plain rules; do
		read -r w c < <(mh_batch "$u" "$N")
		printf '%d\tmailhost\t%s\t%d\t%s\t%s\n' "$rep" "$u" "$N" "$w" "$c" >>"$OUT/results.tsv"
		read -r w c < <(dc_batch "$u" "$N")
		printf '%d\tdovecot\t%s\t%d\t%s\t%s\n' "$rep" "$u" "$N" "$w" "$c" >>"$OUT/results.tsv"
	done
	log "rep $rep done, load $(load1)"
done

# The script ran on both: its last rule discards mail from
# bounce199@mailer.example.
python3 - "$MH_SMTP" <<'EOF'
import smtplib, sys
host, port = sys.argv[1].rsplit(':', 1)
c = smtplib.SMTP(host, int(port))
c.sendmail('bounce199@mailer.example', ['rules@bench.test'], b'Subject: check\r\n\r\nx\r\n')
c.quit()
EOF
setpriv --reuid=vmail --regid=vmail --clear-groups env -i HOME="$DC/home/rules" USER=rules \
	"$LDA" -c "$DC/dovecot.conf" -f bounce199@mailer.example -a rules@bench.test <<<$'Subject: check\n\nx'
mh_stop
mh_discards=$(grep -c 'sieve: no copy stored' "$OUT/mailhost.log" || true)
dc_discards=$(grep -c 'Info: sieve: .*discard' "$DC/dovecot.log" || true)
log "the last rule's discard: mailhost logged $mh_discards, dovecot $dc_discards (want 1 each)"
if [ "$mh_discards" != 1 ] || [ "$dc_discards" != 1 ]; then
	log "the script did not run on both as expected; see $OUT/mailhost.log and $DC/dovecot.log"
	exit 1
fi

python3 - "$OUT/results.tsv" <<'EOF' | tee "$OUT/summary.md"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
def med(server, box, col):
    return statistics.median(float(r[col]) / int(r['n']) * 1000 for r in rows if r['server'] == server and r['mailbox'] == box)
print('| server | wall ms/msg, no script / 200 rules | ratio | CPU ms/msg, no script / 200 rules | ratio | a script adds, CPU ms/msg |')
print('|---|---|---|---|---|---|')
for s in ('mailhost', 'dovecot'):
    wp, wr, cp, cr = med(s, 'plain', 'wall_s'), med(s, 'rules', 'wall_s'), med(s, 'plain', 'cpu_s'), med(s, 'rules', 'cpu_s')
    print(f'| {s} | {wp:.3f} / {wr:.3f} | {wr / wp:.2f} | {cp:.3f} / {cr:.3f} | {cr / cp:.2f} | {cr - cp:.3f} |')
EOF
log "results in $OUT"
