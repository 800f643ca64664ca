#!/usr/bin/env bash
# ab.sh: the two mailhost builds of folder.sh's run side by side, warm,
# alternating, with each server's CPU time per command from /proc.
set -eu
F=${F:-/tmp/fe/folder} # folder.sh's OUT, after its run (bin/, data-mailhost, data-base)
CMD=${CMD:-UID FETCH 1:* (UID FLAGS RFC822.SIZE INTERNALDATE ENVELOPE)}
N=${N:-10000}
ROUNDS=${ROUNDS:-10}
REPS=${REPS:-5}
start() { # name bin data imap http
	MAILHOST_DATA=$3 MAILHOST_HTTP=$5 MAILHOST_SMTP=127.0.0.1:$((${4##*:} + 10)) MAILHOST_IMAP=$4 \
		MAILHOST_IMAPS= MAILHOST_SUBMISSION= MAILHOST_SUBMISSIONS= MAILHOST_MANAGESIEVE= MAILHOST_HOSTNAME=mailhost.bench.local \
		"$2" serve </dev/null >>"$3.ab.log" 2>&1 &
	echo $! >/tmp/fe/ab-$1.pid
	for _ in $(seq 200); do curl -fs "http://$5/healthz" >/dev/null 2>&1 && return; sleep 0.1; done
	echo "$1 did not start" >&2; exit 1
}
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
start mailhost $F/bin/mailhost $F/data-mailhost 127.0.0.1:22153 127.0.0.1:28090
start base $F/bin/mailhost-base $F/data-base 127.0.0.1:22155 127.0.0.1:28091
trap 'kill $(cat /tmp/fe/ab-mailhost.pid) $(cat /tmp/fe/ab-base.pid) 2>/dev/null || true' EXIT
hz=$(getconf CLK_TCK)
for r in $(seq $ROUNDS); do
	for s in "mailhost 22153" "base 22155"; do
		set -- $s
		pid=$(cat /tmp/fe/ab-$1.pid)
		c0=$(cpu $pid)
		out=$($F/bin/folderbench run -addr 127.0.0.1:$2 -user n$N@bench.test -pass load-test-password -reps $REPS -label "$1" -cmd "$CMD" 2>/dev/null)
		c1=$(cpu $pid)
		ms=$(echo "$out" | python3 -c 'import sys,json; v=sorted(json.loads(l)["ms"] for l in sys.stdin if l.strip()); print(v[len(v)//2])')
		echo "round $r $1 load $(cut -d' ' -f1 /proc/loadavg) median_ms $ms server_cpu_ms_per_cmd $(( (c1-c0)*1000/hz/REPS ))"
	done
done
