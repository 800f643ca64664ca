#!/usr/bin/env bash
# outbound-compare.sh: outbound mail side by side, mailhost against
# Postfix + Dovecot SASL + OpenDKIM on the same machine. Per repetition,
# alternating, the same mailhost-load command against each:
#
#   mailhost-load -provision=false -domain bench.test -user 'user%d@' -m C -c C -n 0 -imap '' \
#       -submission ADDR -submit N -size SIZE -sink 127.0.0.1:32626 -pid PID -cpu-tree PIDS -json ...
#
# C authenticated sessions (STARTTLS, AUTH PLAIN) submit N messages from
# their own addresses to remote recipients; each server queues them
# (fsync before 250), signs them with DKIM (RSA-2048 and Ed25519) and
# relays them to the load tool's sink.
#
#   mailhost  `mailhost serve` on a fresh data directory (as bench/outbound.sh
#             does), domain bench.test with C mailboxes provisioned through the
#             API, then restarted; MAILHOST_RELAY=127.0.0.1:32626. Submission
#             127.0.0.1:32588 (API 32580, MX 32581, IMAP 32582).
#   postfix   bench/postfix-dovecot.sh setup-outbound: submission 127.0.0.1:32587,
#             relayhost [127.0.0.1]:32626; restarted (with Dovecot and both
#             OpenDKIMs) and its queue emptied before each repetition.
#
# CPU: -cpu-tree counts whole process trees, exited children included:
# mailhost's one process; Postfix's master (smtpd, cleanup, qmgr, smtp,
# trivial-rewrite, scache, tlsmgr...), both OpenDKIMs and Dovecot (auth).
#
#   bench/outbound-compare.sh     # REPS=3 N=10000 SIZE=4096 C=20 OUT=dir MAXLOAD=1.5 MAXWAIT=600 ONLY="mailhost postfix"
#
# Before each repetition it waits (at most MAXWAIT s) for the 1-minute
# load average to fall below MAXLOAD, and logs `uptime`. The binaries are
# built from this tree into a temporary directory. Leaves Postfix, Dovecot,
# OpenDKIM and dnsmasq stopped (bench/postfix-dovecot.sh stop) at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
REPS=${REPS:-3} N=${N:-10000} SIZE=${SIZE:-4096} C=${C:-20}
MAXLOAD=${MAXLOAD:-1.5} MAXWAIT=${MAXWAIT:-600}
ONLY=${ONLY:-mailhost postfix}
OUT=${OUT:-bench/results/$(date -u +%F)/outbound-postfix}
SINK=127.0.0.1:32626
MH_SUB=127.0.0.1:32588 MH_API=127.0.0.1:32580
PF_SUB=127.0.0.1:32587
export PF_SINK_PORT=${SINK##*:}
mkdir -p "$OUT"
BIN=$(mktemp -d /tmp/outbound-compare.XXXXXX)
D=$BIN/mh
MH_PID=

log() { echo "outbound-compare: $(date -u +%T) $*" | tee -a "$OUT/log" >&2; }
mh_stop() { if [ -n "$MH_PID" ]; then kill "$MH_PID" 2>/dev/null && wait "$MH_PID" 2>/dev/null || true; fi; MH_PID=; }
cleanup() {
	mh_stop
	bench/postfix-dovecot.sh stop >/dev/null 2>&1 || true
	rm -rf "$BIN"
}
trap cleanup EXIT

. bench/lib.sh # after the cd to the repository

mh_serve() {
	MAILHOST_DATA=$D/data MAILHOST_HTTP=$MH_API MAILHOST_SMTP=127.0.0.1:32581 \
	MAILHOST_SUBMISSION=$MH_SUB MAILHOST_SUBMISSIONS= MAILHOST_IMAP=127.0.0.1:32582 \
	MAILHOST_IMAPS= MAILHOST_MANAGESIEVE= MAILHOST_RELAY=$SINK MAILHOST_HOSTNAME=mh.test \
		"$BIN/mailhost" serve >>"$D/serve.log" 2>&1 &
	MH_PID=$!
	for _ in $(seq 100); do curl -s -o /dev/null "http://$MH_API/" && return; sleep 0.1; done
	log "mailhost did not start"; exit 1
}

LOAD_ARGS=(-provision=false -domain bench.test -user 'user%d@' -m "$C" -c "$C" -n 0 -imap ''
	-submit "$N" -size "$SIZE" -sink "$SINK")

run_mailhost() {
	local r=$1
	mh_stop
	rm -rf "$D"; mkdir -p "$D"
	mh_serve
	local key
	key=$(cat "$D/data/initial-api-key")   # serve prints the key only on a terminal
	"$BIN/mailhost-load" -key "$key" -api "http://$MH_API" -domain bench.test -m "$C" -n 0 -imap '' >/dev/null
	mh_stop; mh_serve
	log "rep $r mailhost: $(uptime)"
	"$BIN/mailhost-load" "${LOAD_ARGS[@]}" -submission $MH_SUB -pid "$MH_PID" -cpu-tree "$MH_PID" \
		-json "$OUT/mailhost.json" -label "mailhost rep $r" 2>&1 | tee -a "$OUT/mailhost.log"
	mh_stop
}

run_postfix() {
	local r=$1 pf dr de dc
	bench/postfix-dovecot.sh stop
	bench/postfix-dovecot.sh start
	bench/postfix-dovecot.sh clean
	read -r pf dr de dc <<<"$(bench/postfix-dovecot.sh outpids)"
	log "rep $r postfix (master $pf, opendkim $dr $de, dovecot $dc): $(uptime)"
	python3 bench/cpu-by-command.py snap "$BIN/cpu.json" "$pf" "$dr" "$de" "$dc"
	"$BIN/mailhost-load" "${LOAD_ARGS[@]}" -submission $PF_SUB -pid "$pf" -cpu-tree "$pf,$dr,$de,$dc" \
		-json "$OUT/postfix.json" -label "postfix rep $r" 2>&1 | tee -a "$OUT/postfix.log"
	# By command, over the whole run (the 20 logins included, unlike -cpu-tree's figure).
	echo "postfix rep $r: CPU by command, whole load-tool run" >>"$OUT/postfix-cpu-by-command.txt"
	python3 bench/cpu-by-command.py diff "$BIN/cpu.json" "$pf" "$dr" "$de" "$dc" >>"$OUT/postfix-cpu-by-command.txt"
	bench/postfix-dovecot.sh status | tee -a "$OUT/postfix.log"
}

log "results in $OUT"
(CGO_ENABLED=0 go build -o "$BIN/mailhost" ./cmd/mailhost && go build -o "$BIN/mailhost-load" ./cmd/mailhost-load)
bench/postfix-dovecot.sh setup-outbound
{
	echo "date: $(date -u +%FT%TZ)"
	echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo ' (with uncommitted changes in the tree)')"
	echo "cpu: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
	echo "kernel: $(uname -r)"
	echo "go: $(go version | cut -d' ' -f3)"
	echo "postfix: $(postconf -c "${BENCH_STATE:-/var/lib/mailhost-bench}/postfix-out-etc" -h mail_version)"
	echo "dovecot: $(dovecot --version)"
	echo "opendkim: $(dpkg-query -W -f '${Version}' opendkim)"
	echo "openssl: $(openssl version)"
	echo "settings: REPS=$REPS N=$N SIZE=$SIZE C=$C"
	echo "load before the signature benchmarks: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "go test -bench (one signature, Go's crypto, as mailhost):"
	go test -run '^$' -bench . -benchtime 2s ./bench/signbench | grep '^Benchmark'
	echo "openssl speed -seconds 2 rsa2048 ed25519 (OpenSSL, as OpenDKIM):"
	openssl speed -seconds 2 rsa2048 ed25519 2>/dev/null | grep -E 'sign/s|^rsa 2048|EdDSA'
} | tee "$OUT/machine.txt"

for ((r = 1; r <= REPS; r++)); do
	for s in $ONLY; do
		wait_quiet
		"run_$s" "$r"
	done
done
python3 bench/outbound-summary.py "$OUT" | tee "$OUT/summary.md"
