#!/usr/bin/env bash
# roundcube.sh: Roundcube 1.6 (Debian's package, SQLite, served by PHP's
# built-in server on loopback) in headless Chromium, against mailhost and
# against Dovecot side by side in one run, each holding the same 5,000
# messages: login to the first page, sort by date, subject and sender, the
# thread view, move a message to Trash, open a message, search. Each
# action is timed in the page (from the call to the response's rows
# shown; a login and an open from the click or navigation to the page
# shown) and its IMAP bytes counted both ways by a TCP proxy between
# Roundcube and the server (bench/rcbench).
#
# Usage (as root, from anywhere): bench/roundcube.sh
# Settings, from the environment (defaults in brackets):
#   OUT     results directory [/tmp/mailhost-roundcube-DATE]
#   N       messages [5000]
#   REPS    warm repetitions of the whole visit [3]
#   MAXLOAD wait before measuring until the 1-minute load average is below this [1.5]
#   MAXWAIT ...but no longer than this many seconds [600]
#   DEBUG   1: Roundcube's IMAP debug log in $OUT/rc/NAME/logs/imap.log [0]
#
# Installs what is missing from Debian (roundcube, roundcube-plugins,
# roundcube-sqlite3, php-cli, chromium, dovecot-imapd) with a policy-rc.d
# that keeps their services from starting. Dovecot 2.3 runs on its own
# configuration in $OUT (nothing under /etc is used), Maildir; mailhost
# serve on a fresh data directory. Both are filled by APPEND from a Go
# client, one message after the other, so message i has UID i+1 on both.
#
# "first" is each Roundcube's first visit (it creates its user row and
# the default folders); "cold" is a visit after both servers were
# restarted and the page cache dropped; "warm" is REPS visits after that,
# the servers alternating which goes first. PHP (with OPcache) and
# Chromium are the same for both; Roundcube keeps no IMAP cache.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$BENCH/.." && pwd)
OUT=${OUT:-/tmp/mailhost-roundcube-$(date +%Y%m%d-%H%M%S)}
N=${N:-5000}
REPS=${REPS:-3}
MAXLOAD=${MAXLOAD:-1.5}
MAXWAIT=${MAXWAIT:-600}
USER_EMAIL=rc@bench.test
PASSWORD=roundcube-bench-password

mkdir -p "$OUT/bin"
log() { echo "roundcube: $(date +%T) $*" | tee -a "$OUT/roundcube.log" >&2; }
. "$BENCH/lib.sh"
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

need=()
command -v php >/dev/null || need+=(php-cli)
[ -e /var/lib/roundcube/public_html/index.php ] || need+=(roundcube roundcube-sqlite3)
[ -e /usr/share/roundcube/plugins/managesieve ] || need+=(roundcube-plugins)
command -v chromium >/dev/null || need+=(chromium)
command -v dovecot >/dev/null || need+=(dovecot-imapd)
if [ ${#need[@]} -gt 0 ]; then
	log "installing ${need[*]}"
	# Never start the packages' services (Apache comes with roundcube).
	restore=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		restore=1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" roundcube-sqlite3 >/dev/null
	[ -n "$restore" ] && rm -f /usr/sbin/policy-rc.d
fi

log "building into $OUT/bin"
(cd "$REPO" && go build -o "$OUT/bin/mailhost" ./cmd/mailhost && go build -o "$OUT/bin/rcbench" ./bench/rcbench)
RB=$OUT/bin/rcbench
(cd "$REPO" && git log -1 --format='commit %h %s' && go version && dovecot --version | sed 's/^/dovecot /' &&
	dpkg-query -W roundcube php-cli chromium) >"$OUT/versions.txt"

DC_IMAP=127.0.0.1:$(freeport)
MH_IMAP=127.0.0.1:$(freeport)
MH_HTTP=127.0.0.1:$(freeport)
MH_SMTP=127.0.0.1:$(freeport)
MH_SIEVE=127.0.0.1:$(freeport)

# --- Dovecot ----------------------------------------------------------------

STATE=$OUT/dovecot
dc_conf=$STATE/dovecot.conf
mkdir -p "$STATE"
echo "$USER_EMAIL:{PLAIN}$PASSWORD" >"$STATE/passwd"
chmod 755 "$OUT"
dc_conf_write mailhost-roundcube no 'namespace inbox {
  inbox = yes
  separator = /
  mailbox Trash {
    special_use = \Trash
  }
}'
chown -R vmail:vmail "$STATE/mail"

# --- mailhost ---------------------------------------------------------------

MH_DATA=$OUT/data-mailhost
MH_PID=
mh_start() {
	MAILHOST_DATA=$MH_DATA MAILHOST_HTTP=$MH_HTTP MAILHOST_SMTP=$MH_SMTP MAILHOST_IMAP=$MH_IMAP \
		MAILHOST_MANAGESIEVE=$MH_SIEVE MAILHOST_IMAPS= MAILHOST_SUBMISSION= MAILHOST_SUBMISSIONS= \
		MAILHOST_ALLOW_INSECURE_AUTH=true MAILHOST_HOSTNAME=mailhost.bench.local \
		"$OUT/bin/mailhost" serve </dev/null >>"$MH_DATA.log" 2>&1 &
	MH_PID=$!
	for _ in $(seq 200); do
		curl -fs "http://$MH_HTTP/healthz" >/dev/null 2>&1 && return
		sleep 0.1
	done
	log "mailhost did not start; see $MH_DATA.log"
	exit 1
}
mh_stop() {
	[ -n "$MH_PID" ] || return 0
	kill -TERM "$MH_PID" 2>/dev/null || true
	wait "$MH_PID" 2>/dev/null || true
	MH_PID=
}
trap 'mh_stop; dc_stop' EXIT

# --- fill -------------------------------------------------------------------

dc_start
mh_start
key=$(cat "$MH_DATA/initial-api-key")
auth=(-fsS -o /dev/null -H "Authorization: Bearer $key" -H "Content-Type: application/json")
curl "${auth[@]}" -X POST "http://$MH_HTTP/domains/" -d '{"name":"bench.test","plan":"enterprise"}'
curl "${auth[@]}" -X POST "http://$MH_HTTP/users/" -d "{\"domain_name\":\"bench.test\",\"email\":\"$USER_EMAIL\",\"password\":\"$PASSWORD\"}"
for s in "mailhost $MH_IMAP" "dovecot $DC_IMAP"; do
	set -- $s
	log "filling $1 with $N messages"
	"$RB" fill -addr "$2" -user $USER_EMAIL -pass $PASSWORD -n "$N" 2>>"$OUT/roundcube.log"
done

# --- measure ----------------------------------------------------------------

RES=$OUT/results.jsonl
visit() { # PHASE REPS
	"$RB" run -server mailhost=$MH_IMAP -server dovecot=$DC_IMAP -user $USER_EMAIL -pass $PASSWORD \
		-dir "$OUT/rc" -phase "$1" -reps "$2" -debug="$([ "${DEBUG:-0}" = 1 ] && echo true || echo false)" >>"$RES" 2>>"$OUT/roundcube.log"
}
log "first visits"
visit first 1
wait_quiet
log "cold: restarting both servers, dropping the page cache"
mh_stop
dc_stop
sync
echo 3 >/proc/sys/vm/drop_caches
dc_start
mh_start
visit cold 1
log "warm: $REPS visits each"
visit warm "$REPS"
"$RB" summary "$RES" | tee "$OUT/summary.md"
log "results in $OUT"
