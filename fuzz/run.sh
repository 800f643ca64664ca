#!/bin/sh
# fuzz/run.sh runs every fuzz target of the module, one after the other,
# each for the same time, with one worker (the machines this runs on are
# shared), and prints a summary line per target: its package, name, CPU
# seconds spent by the fuzzing processes, executions, and whether it
# failed.
#
#   fuzz/run.sh [-t 2m] [-p 1] [-c] [PATTERN]
#
# -t is each target's -fuzztime (default 2m), -p its -parallel (default
# 1), PATTERN an extended regexp the "package FuzzName" lines must match
# (default: all). A failure leaves the crasher under the package's
# testdata/fuzz/FuzzName/, where go test replays it: commit it with the
# fix. -c also copies the inputs the fuzzer found interesting (its corpus
# in the Go build cache) there, so that go test replays them too. The log
# of each run goes to $FUZZLOG (default /tmp/mailhost-fuzz), one file per
# target.
set -eu
time=2m
par=1
keep=
while getopts t:p:c opt; do
	case $opt in
	t) time=$OPTARG ;;
	p) par=$OPTARG ;;
	c) keep=1 ;;
	*) echo "usage: $0 [-t DURATION] [-p N] [-c] [PATTERN]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
pattern=${1:-.}
cd "$(dirname "$0")/.."
logs=${FUZZLOG:-/tmp/mailhost-fuzz}
mkdir -p "$logs"

# Every "func FuzzX(" in a test file, as "./pkg FuzzX".
targets=$(grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do
	pkg=$(dirname "$f")
	sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$f" | while read -r name; do
		echo "$pkg $name"
	done
done | grep -E -- "$pattern" || true)
if [ -z "$targets" ]; then
	echo "no fuzz target matches $pattern" >&2
	exit 2
fi

rm -f "$logs/failed"
echo "$targets" | while read -r pkg name; do
	log="$logs/$(echo "$pkg" | tr / _ | sed 's/^\._//')_$name.log"
	# Built first, so that the CPU time counted is the fuzzing's (go test
	# -fuzz then finds the instrumented build in its cache).
	# Each from its own directory: third_party/go-smtp is a module of its
	# own.
	(cd "$pkg" && go test -run '^$' -fuzz "^$name\$" -fuzztime 1x -parallel 1 . >/dev/null 2>&1) || true
	start=$(date +%s)
	status=ok
	(cd "$pkg" && /usr/bin/time -f '%U %S' -o "$log.cpu" go test -run '^$' -fuzz "^$name\$" -fuzztime "$time" \
		-parallel "$par" . >"$log" 2>&1) || status=FAIL
	cpu=$(tail -1 "$log.cpu" | awk '{printf "%d", $1 + $2}')
	execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	printf '%-12s %-22s %5ss wall %5ss cpu %10s execs  %s\n' "$pkg" "$name" "$(($(date +%s) - start))" "$cpu" "${execs:-0}" "$status"
	if [ -n "$keep" ]; then
		cache="$(go env GOCACHE)/fuzz/$(cd "$pkg" && go list -f '{{.ImportPath}}' .)/$name"
		mkdir -p "$pkg/testdata/fuzz/$name"
		cp -n "$cache"/* "$pkg/testdata/fuzz/$name/" 2>/dev/null || true
	fi
	if [ "$status" = FAIL ]; then
		echo "$pkg $name" >>"$logs/failed"
		grep -A 20 -- '--- FAIL' "$log" | head -30
	fi
done
if [ -e "$logs/failed" ]; then
	echo "failed: $(tr '\n' ' ' <"$logs/failed")" >&2
	exit 1
fi
