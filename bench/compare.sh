#!/usr/bin/env bash
# compare.sh: the same loads against mailhost and against Postfix + Dovecot
# (bench/postfix-dovecot.sh), back to back, repeated; bench/summarize.py
# turns the results into the table of bench/README.md.
#
# Usage (as root, from anywhere): bench/compare.sh
# Settings, from the environment (defaults in brackets):
#   OUT       results directory [/tmp/mailhost-bench-DATE]
#   REPS      repetitions of every scenario [3]
#   ONLY      space-separated scenarios to run
#             [all: tool-4k tool-100k tool-100k-bdat tool-4k-nochecks tool-100k-nochecks src-4k src-100k fetch logins]
#   N4K N100K messages per load-tool run at 4 KB and 100 KB [10000 2000]
#   NSRC4K NSRC100K messages per smtp-source run [5000 2000]
#   NFETCH    messages in the mailbox read by one FETCH 1:* [10000]
#   LOGINS    timed IMAP logins from 4 clients [1000]
#   FILL      1: also fill one mailhost mailbox to 100,000 messages, once [0]
#   MAXLOAD   wait before each repetition until the 1-minute load average is below this [1.5]
#   MAXWAIT   ...but no longer than this many seconds [1200]
#
# Scenarios, each run against a fresh mailhost (new data directory, 100
# mailboxes provisioned, then the server restarted so that neither the
# memory of the password hashes nor the login cache carries over) and
# against Postfix + Dovecot with every mailbox emptied:
#   tool-4k, tool-100k  mailhost-load: N messages over 20 connections to 100
#                       mailboxes. Postfix answers 250 once the message is in
#                       its queue, so its rate is taken end to end: from the
#                       start until its queue is empty and every message is in
#                       a Maildir.
#   tool-100k-bdat      the same at 100 KB with BDAT (RFC 3030 CHUNKING, which
#                       both servers offer) instead of DATA: no dot-unstuffing.
#   tool-4k-nochecks, tool-100k-nochecks
#                       the same against mailhost only, with its inbound SPF,
#                       DKIM and DMARC checks off (MAILHOST_INBOUND_CHECKS=false),
#                       which Postfix here does not do either. Elsewhere they
#                       are on (the default), against bench/postfix-dovecot.sh's
#                       local resolver.
#   src-4k, src-100k    Postfix's smtp-source -d -s 20 to one mailbox, timed the
#                       same way. -d keeps each session's connection: without
#                       it smtp-source reconnects per message and mailhost's 20
#                       connections per IP refuse it (see README).
#   fetch               NFETCH messages of 4 KB into one mailbox (that rate is
#                       recorded too), then one FETCH 1:* BODY.PEEK[].
#   logins              one cold login per mailbox, then LOGINS STARTTLS logins
#                       from 4 clients.
# During each load bench/rss.py samples the servers' memory (Pss and RSS
# summed over their process trees); mailhost-load also reports mailhost's
# own VmHWM.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$BENCH/.." && pwd)
OUT=${OUT:-/tmp/mailhost-bench-$(date +%Y%m%d-%H%M%S)}
REPS=${REPS:-3}
ONLY=${ONLY-tool-4k tool-100k tool-100k-bdat tool-4k-nochecks tool-100k-nochecks src-4k src-100k fetch logins}
N4K=${N4K:-10000}
N100K=${N100K:-2000}
NSRC4K=${NSRC4K:-5000}
NSRC100K=${NSRC100K:-2000}
NFETCH=${NFETCH:-10000}
LOGINS=${LOGINS:-1000}
FILL=${FILL:-0}
MAXLOAD=${MAXLOAD:-1.5}
MAXWAIT=${MAXWAIT:-1200}

MH_HTTP=127.0.0.1:38080
MH_SMTP=127.0.0.1:32525
MH_IMAP=127.0.0.1:32143
PF_SMTP=127.0.0.1:32526
DC_IMAP=127.0.0.1:32144
MH_DNS=127.0.0.1:${BENCH_DNS_PORT:-32053}
MH_CHECKS=true
PF_QUEUE=${BENCH_STATE:-/var/lib/mailhost-bench}/postfix-queue
DC_MAIL=${BENCH_STATE:-/var/lib/mailhost-bench}/mail
DOMAIN=bench.test

mkdir -p "$OUT"
log() { echo "compare: $(date +%T) $*" | tee -a "$OUT/compare.log" >&2; }
now() { date +%s.%N; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", a - b}'; }
. "$BENCH/lib.sh"

# --- mailhost ---------------------------------------------------------------

MH_PID=
mh_start() { # DATA_DIR
	MAILHOST_DATA=$1 MAILHOST_HTTP=$MH_HTTP MAILHOST_SMTP=$MH_SMTP MAILHOST_IMAP=$MH_IMAP \
		MAILHOST_IMAPS= MAILHOST_MANAGESIEVE= MAILHOST_SUBMISSION= MAILHOST_SUBMISSIONS= MAILHOST_HOSTNAME=mailhost.bench.local \
		MAILHOST_DNS=$MH_DNS MAILHOST_INBOUND_CHECKS=$MH_CHECKS \
		"$OUT/bin/mailhost" serve </dev/null >>"$1.log" 2>&1 &
	MH_PID=$!
	for _ in $(seq 100); do
		curl -fs "http://$MH_HTTP/healthz" >/dev/null 2>&1 && return
		sleep 0.1
	done
	log "mailhost did not start; see $1.log"
	exit 1
}
mh_stop() {
	[ -n "$MH_PID" ] || return 0
	kill -TERM "$MH_PID" 2>/dev/null || true
	wait "$MH_PID" 2>/dev/null || true
	MH_PID=
}
# mh_fresh starts mailhost on a new data directory with the 100 mailboxes
# user0..user99@bench.test, then restarts it.
mh_fresh() { # TAG
	local data=$OUT/data-$1
	rm -rf "$data" "$data.log"
	mh_start "$data"
	local key
	key=$(cat "$data/initial-api-key")   # serve prints the key only on a terminal
	"$OUT/bin/mailhost-load" -api "http://$MH_HTTP" -key "$key" -domain $DOMAIN -m 100 -n 0 -imap '' >/dev/null
	mh_stop
	mh_start "$data"
}

# --- Postfix + Dovecot ------------------------------------------------------

pf_clean() { "$BENCH/postfix-dovecot.sh" clean; }
pf_pids() { "$BENCH/postfix-dovecot.sh" pids; }
pf_queued() { find "$PF_QUEUE"/{maildrop,incoming,active,deferred} -type f 2>/dev/null | wc -l; }
pf_stored() { find "$DC_MAIL" -type f \( -path '*/Maildir/new/*' -o -path '*/Maildir/cur/*' \) 2>/dev/null | wc -l; }
# pf_drain waits until Postfix's queue is empty and WANT messages are in
# the Maildirs, polling every 50 ms, for at most 15 minutes.
pf_drain() { # WANT
	local deadline=$(($(date +%s) + 900))
	while [ "$(pf_queued)" -gt 0 ]; do
		(($(date +%s) < deadline)) || { log "Postfix queue not drained"; return 1; }
		sleep 0.05
	done
	local got
	got=$(pf_stored)
	if [ "$got" -ne "$1" ]; then
		log "Dovecot holds $got messages, want $1 (deferred or bounced? see postfix.log)"
		return 1
	fi
}

# --- one measurement ---------------------------------------------------------

RSS_PID=
rss_start() { # OUTFILE PID...
	python3 "$BENCH/rss.py" "$@" &
	RSS_PID=$!
}
rss_stop() { kill -TERM "$RSS_PID"; wait "$RSS_PID" || true; }

# measure runs a command against one server, recording its output, wall
# time, the servers' memory and the load average around it.
# It writes $dir/$server-$scenario.{out,json,rss.json,meta}.
measure() { # DIR SERVER SCENARIO DRAIN_WANT(0: none) PIDS -- COMMAND...
	local dir=$1 server=$2 scenario=$3 want=$4 pids=$5
	shift 6
	local base=$dir/$server-$scenario
	local l0 t0 t1
	l0=$(load1)
	# shellcheck disable=SC2086 # pids is a list
	rss_start "$base.rss.json" $pids
	t0=$(now)
	"$@" >"$base.out" 2>&1 || { rss_stop; log "$server $scenario failed: $(tail -3 "$base.out")"; return 1; }
	if [ "$want" -gt 0 ]; then pf_drain "$want" || { rss_stop; return 1; }; fi
	t1=$(now)
	rss_stop
	printf '{"server":"%s","scenario":"%s","wall_seconds":%s,"load_before":%s,"load_after":%s}\n' \
		"$server" "$scenario" "$(minus "$t1" "$t0")" "$l0" "$(load1)" >"$base.meta"
	log "$server $scenario: $(grep -E 'msg/s|logins/s' "$base.out" | tr '\n' ' ' | cut -c1-200) wall $(minus "$t1" "$t0")s"
}

LOAD=("$OUT/bin/mailhost-load" -provision=false -domain $DOMAIN -c 20 -m 100)

run_scenario() { # DIR SCENARIO
	local d=$1 s=$2 mhpid pfpids
	pfpids=$(pf_pids)
	case $s in
	tool-4k | tool-100k | tool-100k-bdat)
		local size=4096 n=$N4K bdat=-bdat=false
		[ "$s" != tool-4k ] && size=102400 n=$N100K
		[ "$s" = tool-100k-bdat ] && bdat=-bdat
		mh_fresh "$s"
		measure "$d" mailhost "$s" 0 "$MH_PID" -- "${LOAD[@]}" -smtp $MH_SMTP -imap '' -n "$n" -size $size $bdat -pid "$MH_PID" -json "$d/mailhost-$s.json"
		mh_stop
		pf_clean
		measure "$d" postfix "$s" "$n" "$pfpids" -- "${LOAD[@]}" -smtp $PF_SMTP -imap '' -n "$n" -size $size $bdat -json "$d/postfix-$s.json"
		;;
	src-4k | src-100k)
		local size=4096 n=$NSRC4K
		[ "$s" = src-100k ] && size=102400 n=$NSRC100K
		mh_fresh "$s"
		measure "$d" mailhost "$s" 0 "$MH_PID" -- smtp-source -d -s 20 -m "$n" -l $size -f load@sender.test -t user0@$DOMAIN $MH_SMTP
		mh_stop
		pf_clean
		measure "$d" postfix "$s" "$n" "$pfpids" -- smtp-source -d -s 20 -m "$n" -l $size -f load@sender.test -t user0@$DOMAIN $PF_SMTP
		;;
	fetch)
		mh_fresh "$s"
		measure "$d" mailhost fetch 0 "$MH_PID" -- "${LOAD[@]}" -smtp $MH_SMTP -imap $MH_IMAP -n "$NFETCH" -m 1 -logins 0 -pid "$MH_PID" -json "$d/mailhost-fetch.json"
		mh_stop
		pf_clean
		measure "$d" postfix fetch-fill "$NFETCH" "$pfpids" -- "${LOAD[@]}" -smtp $PF_SMTP -imap '' -n "$NFETCH" -m 1 -json "$d/postfix-fetch-fill.json"
		measure "$d" postfix fetch 0 "$pfpids" -- "${LOAD[@]}" -imap $DC_IMAP -n 0 -m 1 -logins 0 -json "$d/postfix-fetch.json"
		;;
	logins)
		mh_fresh "$s"
		measure "$d" mailhost logins 0 "$MH_PID" -- "${LOAD[@]}" -imap $MH_IMAP -n 0 -fetch=false -logins "$LOGINS" -pid "$MH_PID" -json "$d/mailhost-logins.json"
		mh_stop
		pf_clean
		measure "$d" postfix logins 0 "$pfpids" -- "${LOAD[@]}" -imap $DC_IMAP -n 0 -fetch=false -logins "$LOGINS" -json "$d/postfix-logins.json"
		;;
	tool-4k-nochecks | tool-100k-nochecks)
		local size=4096 n=$N4K
		[ "$s" = tool-100k-nochecks ] && size=102400 n=$N100K
		MH_CHECKS=false
		mh_fresh "$s"
		measure "$d" mailhost "$s" 0 "$MH_PID" -- "${LOAD[@]}" -smtp $MH_SMTP -imap '' -n "$n" -size $size -pid "$MH_PID" -json "$d/mailhost-$s.json"
		mh_stop
		MH_CHECKS=true
		;;
	*)
		log "unknown scenario $s"
		return 1
		;;
	esac
}

trap 'mh_stop' EXIT

log "results in $OUT"
mkdir -p "$OUT/bin"
(cd "$REPO" && CGO_ENABLED=0 go build -o "$OUT/bin/mailhost" ./cmd/mailhost && go build -o "$OUT/bin/mailhost-load" ./cmd/mailhost-load)
"$BENCH/postfix-dovecot.sh" setup
{
	echo "date: $(date -u +%FT%TZ)"
	echo "commit: $(cd "$REPO" && git rev-parse --short HEAD)$(cd "$REPO" && git diff --quiet HEAD -- . || echo ' (with uncommitted changes in the tree)')"
	echo "cpu: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
	echo "memory: $(free -g | awk '/Mem:/{print $2}') GiB"
	echo "kernel: $(uname -r)"
	echo "go: $(go version | cut -d' ' -f3)"
	echo "postfix: $(postconf -c "${BENCH_STATE:-/var/lib/mailhost-bench}/postfix-etc" -h mail_version)"
	echo "dovecot: $(dovecot --version)"
	echo "filesystem: $(df -T "$OUT" | awk 'NR==2{print $2}') on $(df "$OUT" | awk 'NR==2{print $1}')"
	echo "settings: REPS=$REPS N4K=$N4K N100K=$N100K NSRC4K=$NSRC4K NSRC100K=$NSRC100K NFETCH=$NFETCH LOGINS=$LOGINS"
} >"$OUT/machine.txt"

for ((rep = 1; rep <= REPS; rep++)); do
	wait_quiet
	echo "rep $rep: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/rep-load.txt"
	d=$OUT/r$rep
	mkdir -p "$d"
	for s in $ONLY; do
		run_scenario "$d" "$s" || log "rep $rep: $s failed, going on"
	done
done

if [ "$FILL" = 1 ]; then
	wait_quiet
	echo "fill: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/rep-load.txt"
	mkdir -p "$OUT/fill"
	mh_fresh fill
	measure "$OUT/fill" mailhost fill 0 "$MH_PID" -- "${LOAD[@]}" -smtp $MH_SMTP -imap '' -n 100000 -m 1 -slice 10000 -pid "$MH_PID" -json "$OUT/fill/mailhost-fill.json" -timeout 30m
	mh_stop
fi

python3 "$BENCH/summarize.py" "$OUT" | tee "$OUT/summary.md"
