#!/usr/bin/env bash
# sort.sh: SORT and THREAD, mailhost against Dovecot side by side in one
# run: UID SORT (DATE), (SUBJECT), (FROM), (DISPLAYFROM), UID THREAD
# REFERENCES and one UID SEARCH FROM over the whole folder, at 5,000,
# 10,000 and 100,000 messages, each first, cold and warm.
#
# Usage (as root, from anywhere): bench/sort.sh
# Settings, from the environment (defaults in brackets):
#   OUT     results directory [/tmp/mailhost-sort-DATE]
#   SIZES   folder sizes [5000 10000 100000]
#   REPS    warm repetitions of every command [7]
#   CMDS    the commands, one per line [the six above]
#   MAXLOAD wait before measuring until the 1-minute load average is below this [1.5]
#   MAXWAIT ...but no longer than this many seconds [900]
#   MH_BASE a git revision to build a second mailhost from and measure
#           beside (as "mailhost-base"), e.g. the commit before a change [none]
#
# Both servers hold the same messages (bench/folderbench -threads 10:
# message i is the same 4,096 bytes for both; conversations of 10 spread
# over the folder, subjects, senders and Date fields out of arrival
# order), one mailbox per folder size, n<SIZE>@bench.test: Dovecot 2.3
# from Debian in a Maildir (written directly), its own configuration in
# $STATE (nothing under /etc is touched), default index and cache
# settings; mailhost serve on a fresh bbolt data directory, filled by
# mailstore.Deliver (as SMTP delivery stores it). Both over STARTTLS on
# loopback.
#
# "first" is each server's first run of each command after the fill
# (Dovecot builds its index and puts the sort fields in its cache then);
# "cold" is the command after both servers were restarted and the page
# cache dropped (echo 3 > /proc/sys/vm/drop_caches); "warm" is REPS runs
# after that, each on a new connection, the servers alternating.
# folderbench times each command from sending it to reading its tagged OK,
# reading the responses as bytes.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$BENCH/.." && pwd)
OUT=${OUT:-/tmp/mailhost-sort-$(date +%Y%m%d-%H%M%S)}
SIZES=${SIZES:-5000 10000 100000}
REPS=${REPS:-7}
MH_BASE=${MH_BASE:-}
MAXLOAD=${MAXLOAD:-1.5}
MAXWAIT=${MAXWAIT:-900}
STATE=${SORT_STATE:-/var/lib/mailhost-sortbench}
# Below the kernel's ephemeral range (32768-60999 by default), where a
# client connection of other work on the machine may hold a port.
DC_IMAP=127.0.0.1:21164
MH_IMAP=127.0.0.1:21163
MH_HTTP=127.0.0.1:28093
MHB_IMAP=127.0.0.1:21165
MHB_HTTP=127.0.0.1:28094
PASSWORD=load-test-password
DEFAULT_CMDS='UID SORT (DATE) UTF-8 ALL
UID SORT (SUBJECT) UTF-8 ALL
UID SORT (FROM) UTF-8 ALL
UID SORT (DISPLAYFROM) UTF-8 ALL
UID THREAD REFERENCES UTF-8 ALL
UID SEARCH FROM "u372@example.org"'
CMDS=${CMDS:-$DEFAULT_CMDS}
mapfile -t COMMANDS <<<"$CMDS"

mkdir -p "$OUT/bin"
log() { echo "sort: $(date +%T) $*" | tee -a "$OUT/sort.log" >&2; }
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
	dc_conf_write mailhost-sortbench yes
}

# --- mailhost ---------------------------------------------------------------

# SERVERS: name, binary, data directory, IMAP address, HTTP address.
SERVERS=("mailhost $OUT/bin/mailhost $OUT/data-mailhost $MH_IMAP $MH_HTTP")
[ -n "$MH_BASE" ] && SERVERS+=("mailhost-base $OUT/bin/mailhost-base $OUT/data-base $MHB_IMAP $MHB_HTTP")
cleanup() { ACTION=stop mh_all; dc_stop; }
trap cleanup EXIT

# --- fill -------------------------------------------------------------------

dc_stop
rm -rf "$STATE"
dc_setup
for n in $SIZES; do
	log "filling Dovecot's n$n with $n messages"
	"$FB" maildir -dir "$STATE/mail/bench.test/n$n/Maildir" -n "$n" -threads 10
done
chown -R vmail:vmail "$STATE/mail"
for s in "${SERVERS[@]}"; do
	set -- $s
	rm -rf "$3" "$3.log"
	mh_start "$1" "$2" "$3" "$4" "$5"
	mh_provision "$5" "$3"
	mh_stop "$1"
	for n in $SIZES; do
		log "filling $1's n$n with $n messages"
		"$FB" fill -data "$3" -email "n$n@bench.test" -n "$n" -threads 10
	done
done
du -sh "$STATE/mail" "$OUT"/data-* >>"$OUT/sort.log"

# --- measure ----------------------------------------------------------------

addr_of() {
	case $1 in
	dovecot) echo $DC_IMAP ;;
	mailhost) echo $MH_IMAP ;;
	mailhost-base) echo $MHB_IMAP ;;
	esac
}
NAMES=(mailhost dovecot)
[ -n "$MH_BASE" ] && NAMES+=(mailhost-base)
measure() { # PHASE N CMD
	local phase=$1 n=$2 cmd=$3 name
	for name in "${NAMES[@]}"; do
		"$FB" run -addr "$(addr_of "$name")" -user "n$n@bench.test" -pass $PASSWORD -reps 1 \
			-label "$name $phase n=$n" -cmd "$cmd" >>"$OUT/results.jsonl" 2>>"$OUT/sort.log"
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
	for cmd in "${COMMANDS[@]}"; do measure first "$n" "$cmd"; done
done
for n in $SIZES; do
	for cmd in "${COMMANDS[@]}"; do
		restart_cold
		measure cold "$n" "$cmd"
		for _ in $(seq "$REPS"); do
			measure warm "$n" "$cmd"
			NAMES=("${NAMES[@]:1}" "${NAMES[0]}") # alternate who goes first
		done
	done
done
log "load average $(cut -d' ' -f1-3 /proc/loadavg)"
for s in "${SERVERS[@]}"; do
	set -- $s
	ps -o rss= -p "${MH_PID[$1]}" | awk -v n="$1" '{printf "%s RSS at the end: %.0f MB\n", n, $1/1024}' >>"$OUT/sort.log"
done
python3 "$BENCH/folder-summary.py" "$OUT/results.jsonl" | tee "$OUT/summary.md"
