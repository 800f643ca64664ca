#!/bin/bash
# pg-writers.sh: what a second concurrent writer costs PostgreSQL itself on
# this machine, with no mailhost in the loop (the old target "two nodes
# not slower than one"). Two nodes on one database are, by construction, two
# sessions committing at once; this measures that with pgbench alone.
#
# Each transaction is a small delivery batch: five 4 KB rows into a table
# of bodies and one counter row updated by delta, committed with
# synchronous_commit on. Per repetition, in alternation:
#
#   c=1  one pgbench client (one writer)
#   c=2  two clients (two writers), the same transactions
#
# first unthrottled (the transactions per second each reaches), then
# throttled to RATE transactions per second in total, so that both do the
# same work per second and only the number of writers differs. For each
# it prints the database's CPU per transaction, user and system, from
# /proc (the postmaster's process tree, reaped children included), and,
# when perf is there, the CPU migrations and futex calls per transaction
# across the machine.
#
#   bench/pg-writers.sh        # REPS=3 SECS=15 RATE=300 OUT=dir
#
# PostgreSQL: a cluster of its own, made for the run with initdb on port
# 55433 (default settings), as postgres.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3} SECS=${SECS:-15} RATE=${RATE:-300}
OUT=${OUT:-bench/results/$(date -u +%F)/pg-writers}
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}
mkdir -p "$OUT"
PGD=$(mktemp -d /tmp/mh-pgwriters.XXXXXX)
trap 'runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGD/data" -m fast stop >/dev/null 2>&1 || true; rm -rf "$PGD"' EXIT
chown postgres "$PGD"
runuser -u postgres -- "$PGBIN/initdb" -D "$PGD/data" -A trust -U postgres >/dev/null
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGD/data" -l "$PGD/log" -o "-p 55433 -k $PGD -c listen_addresses=127.0.0.1" -w start >/dev/null
URL=postgres://postgres@127.0.0.1:55433/postgres?sslmode=disable
PM=$(head -1 "$PGD/data/postmaster.pid")
log() { echo "$(date -u +%T) $*" | tee -a "$OUT/log"; }

psql "$URL" -qtAX >/dev/null <<'EOF'
CREATE TABLE bodies (id bigserial PRIMARY KEY, body bytea);
CREATE TABLE counters (id int PRIMARY KEY, n bigint NOT NULL, bytes bigint NOT NULL);
INSERT INTO counters SELECT g, 0, 0 FROM generate_series(1, 100) g;
EOF
cat >"$PGD/batch.sql" <<'EOF'
\set a random(1, 100)
BEGIN;
INSERT INTO bodies (body) SELECT convert_to(repeat('x', 4096), 'UTF8') FROM generate_series(1, 5);
UPDATE counters SET n = n + 5, bytes = bytes + 20480 WHERE id = :a;
COMMIT;
EOF

# ticks: "user system" CPU ticks (1/100 s) of the postmaster's tree.
ticks() {
	python3 - "$PM" <<'EOF'
import os, sys
root = int(sys.argv[1]); procs = {}
for d in os.listdir("/proc"):
    if not d.isdigit():
        continue
    try:
        s = open(f"/proc/{d}/stat").read()
    except OSError:
        continue
    f = s[s.rindex(")") + 2:].split()
    procs[int(d)] = (int(f[1]), int(f[11]) + int(f[13]), int(f[12]) + int(f[14]))
kids = {}
for pid, p in procs.items():
    kids.setdefault(p[0], []).append(pid)
u = st = 0; todo = [root]; seen = set()
while todo:
    pid = todo.pop()
    if pid in seen or pid not in procs:
        continue
    seen.add(pid); u += procs[pid][1]; st += procs[pid][2]; todo += kids.get(pid, [])
print(u, st)
EOF
}

# run CLIENTS [RATE]: one pgbench run and its line.
run() {
	local c=$1 rate=${2:-} u0 s0 u1 s1 out tx stat=$PGD/stat extra=""
	read -r u0 s0 < <(ticks)
	local cmd=("$PGBIN/pgbench" -n -f "$PGD/batch.sql" -c "$c" -j "$c" -T "$SECS" ${rate:+-R "$rate"} "$URL")
	if command -v perf >/dev/null && perf stat -e cpu-migrations -a -o /dev/null true 2>/dev/null; then
		out=$(perf stat -x, -e cpu-migrations,syscalls:sys_enter_futex -a -o "$stat" -- "${cmd[@]}" 2>&1)
	else
		out=$("${cmd[@]}" 2>&1)
		: >"$stat"
	fi
	read -r u1 s1 < <(ticks)
	tx=$(awk '/actually processed/ {split($NF, a, "/"); print a[1]}' <<<"$out")
	if [ -s "$stat" ]; then
		extra=$(awk -F, -v tx="$tx" '$3 == "cpu-migrations" {m = $1} $3 ~ /futex/ {f = $1}
			END {printf " migrations/tx %.2f futex/tx %.2f", m / tx, f / tx}' "$stat")
	fi
	log "$(awk -v c="$c" -v r="${rate:-max}" -v tx="$tx" -v s="$SECS" -v u=$((u1 - u0)) -v st=$((s1 - s0)) -v e="$extra" \
		'BEGIN {printf "writers %d rate %s: %.0f tx/s, database CPU per tx %.0f us (user %.0f, system %.0f)%s", c, r, tx / s, (u + st) * 10000 / tx, u * 10000 / tx, st * 10000 / tx, e}')"
}

log "pg-writers: REPS=$REPS SECS=$SECS RATE=$RATE, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq "$REPS"); do
	log "repetition $rep"
	run 1
	run 2
	run 1 "$RATE"
	run 2 "$RATE"
done
