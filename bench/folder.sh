#!/usr/bin/env bash
# folder.sh: the folder-open rows, mailhost against Dovecot side by side in one
# run: opening a folder (UID FETCH 1:* (UID FLAGS RFC822.SIZE INTERNALDATE
# ENVELOPE)) and SEARCH BODY over 2,000, 10,000 and 100,000 messages, a
# listing by BODY.PEEK[HEADER.FIELDS (...)] and SEARCH SUBJECT / FROM over
# 10,000, FETCH 1:* BODY.PEEK[] of 2,000 and 10,000, one FETCH n
# BODY.PEEK[] per message of 2,000, each warm and cold.
#
# Usage (as root, from anywhere): bench/folder.sh
# Settings, from the environment (defaults in brackets):
#   OUT     results directory [/tmp/mailhost-folder-DATE]
#   SIZES   folder sizes [2000 10000 100000]
#   REPS    warm repetitions of every command [7]
#   MAXLOAD wait before measuring until the 1-minute load average is below this [1.5]
#   MAXWAIT ...but no longer than this many seconds [1200]
#   MH_PG   a PostgreSQL database name: also a mailhost on PostgreSQL, as
#           "mailhost-pg", its store in that database of 127.0.0.1:5432
#           (user postgres, trust), dropped and made anew; its "cold"
#           restarts the node and drops the page cache, not PostgreSQL's
#           own buffers (the server is not this script's) [none]
#   MH_BASE a git revision to build a second mailhost from and measure
#           beside (as "mailhost-base"), e.g. main [none]
#
# Both servers hold the same messages (bench/folderbench: message i is the
# same 4,096 bytes for both), one mailbox per folder size, n<SIZE>@bench.test:
# Dovecot in a Maildir (written directly), mailhost in its bbolt store
# (mailstore.Deliver, as SMTP delivery stores it: summaries included).
# Dovecot 2.3 from Debian, its own configuration in $STATE (nothing under
# /etc is touched), Maildir with its default index and cache settings;
# mailhost serve on a fresh data directory. Both over STARTTLS on loopback.
#
# "first" is each server's first open of a folder after it was filled
# (Dovecot builds its index and cache then: a client's first visit after
# delivery by another agent); "cold" is an open after both servers were
# restarted and the page cache dropped (echo 3 > /proc/sys/vm/drop_caches);
# "warm" is REPS opens in one session after that, the two servers
# alternating command by command. folderbench times each command from
# sending it to reading its tagged OK, reading the responses as bytes.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$BENCH/.." && pwd)
OUT=${OUT:-/tmp/mailhost-folder-$(date +%Y%m%d-%H%M%S)}
SIZES=${SIZES:-2000 10000 100000}
REPS=${REPS:-7}
MH_BASE=${MH_BASE:-}
MH_PG=${MH_PG:-}
MHP_IMAP=127.0.0.1:22156
MHP_HTTP=127.0.0.1:28092
PG_URL=postgres://postgres@127.0.0.1:5432/$MH_PG
MAXLOAD=${MAXLOAD:-1.5}
MAXWAIT=${MAXWAIT:-1200}
STATE=${FOLDER_STATE:-/var/lib/mailhost-folderbench}
# The ports lie below Linux's ephemeral range (32768-60999), where a
# client connection of anything else on the machine may hold one.
DC_IMAP=127.0.0.1:22154
MH_IMAP=127.0.0.1:22153
MH_HTTP=127.0.0.1:28090
MHB_IMAP=127.0.0.1:22155
MHB_HTTP=127.0.0.1:28091
PASSWORD=load-test-password
OPEN="UID FETCH 1:* (UID FLAGS RFC822.SIZE INTERNALDATE ENVELOPE)"
# A folder listing by header fields, as Thunderbird's (less Priority and
# Newsgroups, which mailhost's summaries do not keep).
HEADERS="UID FETCH 1:* (UID RFC822.SIZE FLAGS BODY.PEEK[HEADER.FIELDS (From To Cc Bcc Subject Date Message-ID In-Reply-To References Content-Type Reply-To X-Priority)])"

mkdir -p "$OUT/bin"
log() { echo "folder: $(date +%T) $*" | tee -a "$OUT/folder.log" >&2; }
. "$BENCH/lib.sh"

mh_build
FB=$OUT/bin/folderbench

# --- Dovecot ----------------------------------------------------------------

command -v dovecot >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q dovecot-imapd
dc_conf=$STATE/dovecot.conf
dc_setup() {
	mkdir -p "$STATE"
	: >"$STATE/passwd"
	for n in $SIZES; do echo "n$n@bench.test:{PLAIN}$PASSWORD" >>"$STATE/passwd"; done
	dc_conf_write mailhost-folderbench yes
}

# --- mailhost ---------------------------------------------------------------

# SERVERS: name, binary, data directory, IMAP address, HTTP address.
SERVERS=("mailhost $OUT/bin/mailhost $OUT/data-mailhost $MH_IMAP $MH_HTTP")
[ -n "$MH_BASE" ] && SERVERS+=("mailhost-base $OUT/bin/mailhost-base $OUT/data-base $MHB_IMAP $MHB_HTTP")
[ -n "$MH_PG" ] && SERVERS+=("mailhost-pg $OUT/bin/mailhost $OUT/data-pg $MHP_IMAP $MHP_HTTP")

# --- fill -------------------------------------------------------------------

dc_stop
rm -rf "$STATE"
dc_setup
for n in $SIZES; do
	log "filling Dovecot's n$n with $n messages"
	"$FB" maildir -dir "$STATE/mail/bench.test/n$n/Maildir" -n "$n"
done
chown -R vmail:vmail "$STATE/mail"
for s in "${SERVERS[@]}"; do
	set -- $s
	rm -rf "$3" "$3.log"
	fillto=(-data "$3")
	if [ "$1" = mailhost-pg ]; then
		psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $MH_PG" -c "CREATE DATABASE $MH_PG"
		fillto=(-store "$PG_URL")
	fi
	mh_start "$1" "$2" "$3" "$4" "$5"
	mh_provision "$5" "$3"
	mh_stop "$1"
	for n in $SIZES; do
		log "filling $1's n$n with $n messages"
		"$FB" fill "${fillto[@]}" -email "n$n@bench.test" -n "$n"
	done
done
du -sh "$STATE/mail" "$OUT"/data-* >>"$OUT/folder.log"

# --- measure ----------------------------------------------------------------

# addr_of NAME: the IMAP address of a server.
addr_of() {
	case $1 in
	dovecot) echo $DC_IMAP ;;
	mailhost) echo $MH_IMAP ;;
	mailhost-base) echo $MHB_IMAP ;;
	mailhost-pg) echo $MHP_IMAP ;;
	esac
}
NAMES=(mailhost dovecot)
[ -n "$MH_BASE" ] && NAMES+=(mailhost-base)
[ -n "$MH_PG" ] && NAMES+=(mailhost-pg)
measure() { # PHASE N REPS CMD [folderbench flags...]
	local phase=$1 n=$2 reps=$3 cmd=$4 name
	shift 4
	for name in "${NAMES[@]}"; do
		"$FB" run -addr "$(addr_of "$name")" -user "n$n@bench.test" -pass $PASSWORD -reps "$reps" \
			-label "$name $phase n=$n" -cmd "$cmd" "$@" >>"$OUT/results.jsonl" 2>>"$OUT/folder.log"
	done
}
restart_cold() {
	ACTION=stop mh_all
	dc_stop
	sync
	echo 3 >/proc/sys/vm/drop_caches
	dc_start
	ACTION=start mh_all
}

wait_quiet
dc_start
ACTION=start mh_all
for n in $SIZES; do
	measure first "$n" 1 "$OPEN"
done
for n in $SIZES; do
	restart_cold
	measure cold "$n" 1 "$OPEN"
	for _ in $(seq "$REPS"); do measure warm "$n" 1 "$OPEN"; done
done
if [[ " $SIZES " == *" 10000 "* ]]; then
	n=10000
	for cmd in "$HEADERS" "FETCH 1:* BODY.PEEK[]" 'UID SEARCH SUBJECT "message 9999 about"' 'UID SEARCH FROM "carol"'; do
		restart_cold
		measure cold $n 1 "$cmd"
		for _ in $(seq "$REPS"); do measure warm $n 1 "$cmd"; done
	done
fi
# SEARCH BODY at every size, for its time against the folder's: the token
# of the last message, found in that one message.
for n in $SIZES; do
	cmd="UID SEARCH BODY \"token$((n - 1)).\""
	restart_cold
	measure cold "$n" 1 "$cmd"
	for _ in $(seq "$REPS"); do measure warm "$n" 1 "$cmd"; done
done
if [[ " $SIZES " == *" 2000 "* ]]; then
	restart_cold
	measure cold 2000 1 "FETCH 1:* BODY.PEEK[]"
	for _ in $(seq "$REPS"); do measure warm 2000 1 "FETCH 1:* BODY.PEEK[]"; done
	restart_cold
	measure cold 2000 1 "FETCH %d BODY.PEEK[]" -each 2000
	for _ in $(seq "$REPS"); do measure warm 2000 1 "FETCH %d BODY.PEEK[]" -each 2000; done
fi
log "load average $(cut -d' ' -f1-3 /proc/loadavg)"
ACTION=stop mh_all
dc_stop
python3 "$BENCH/folder-summary.py" "$OUT/results.jsonl" | tee "$OUT/summary.md"
