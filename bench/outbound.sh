#!/bin/sh
# outbound.sh: submission into mailhost's queue and the queue's drain to
# mailhost-load's loopback sink. Per repetition: a fresh data
# directory, `mailhost serve` with MAILHOST_RELAY pointing at the sink,
# provisioning (then a restart, so that the password hashes of
# provisioning do not count in the server's memory), then the timed run.
#
#   bench/outbound.sh                 # REPS=3 N=10000 SIZE=4096 C=20 OUT=dir
#
# Ports on 127.0.0.1: API 41080, MX 41025, submission 41587, sink 41626.
set -eu
cd "$(dirname "$0")/.."
REPS=${REPS:-3} N=${N:-10000} SIZE=${SIZE:-4096} C=${C:-20}
OUT=${OUT:-bench/results/$(date -u +%F)/outbound}
MH=${MH:-/tmp/mh} LOAD=${LOAD:-/tmp/mhload}
mkdir -p "$OUT"
[ -x "$MH" ] || CGO_ENABLED=0 go build -o "$MH" ./cmd/mailhost
[ -x "$LOAD" ] || go build -o "$LOAD" ./cmd/mailhost-load
D=$(mktemp -d /tmp/mh-outbound.XXXXXX)
PID=
stop() { [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; PID=; }
trap 'stop; rm -rf "$D"' EXIT
serve() {
	MAILHOST_DATA=$D/data MAILHOST_HTTP=127.0.0.1:41080 MAILHOST_SMTP=127.0.0.1:41025 \
	MAILHOST_SUBMISSION=127.0.0.1:41587 MAILHOST_SUBMISSIONS= MAILHOST_IMAP=127.0.0.1:41143 \
	MAILHOST_IMAPS= MAILHOST_MANAGESIEVE= MAILHOST_RELAY=127.0.0.1:41626 MAILHOST_HOSTNAME=mh.test \
		"$MH" serve >>"$D/serve.log" 2>&1 &
	PID=$!
	for _ in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:41080/ && return; sleep 0.1; done
	echo "mailhost did not start" >&2; exit 1
}
for r in $(seq "$REPS"); do
	stop; rm -rf "$D/data" "$D/serve.log"
	serve
	KEY=$(cat "$D/data/initial-api-key")   # serve prints the key only on a terminal
	DOM=outbound-$r-$(date +%s).test
	"$LOAD" -key "$KEY" -api http://127.0.0.1:41080 -domain "$DOM" -m "$C" -n 0 -imap '' >/dev/null
	stop; serve
	echo "rep $r size $SIZE: $(uptime)" | tee -a "$OUT/log"
	"$LOAD" -provision=false -domain "$DOM" -m "$C" -c "$C" -n 0 -imap '' \
		-submission 127.0.0.1:41587 -submit "$N" -size "$SIZE" -sink 127.0.0.1:41626 \
		-pid "$PID" -json "$OUT/outbound-$SIZE.json" -label "rep $r" | tee -a "$OUT/log"
done
