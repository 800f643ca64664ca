#!/bin/bash
# node-cost.sh: what one delivered message costs with K = 1, 2 and 3 nodes
# on one PostgreSQL, at fixed rates well under saturation, so that the
# figures say what the design costs per node rather than how the two
# cores are shared at full load. Per repetition, node count and rate, on
# a fresh schema:
#
#   idle  IDLE seconds with no load: CPU per node per second (the nodes'
#         own heartbeats, lease renewals, change polling) and the
#         database's CPU per second
#   load  RATE msg/s in total for SECS seconds (mailhost-load -rate),
#         spread over the nodes' MX addresses: per delivered message, the
#         nodes' CPU, the database's CPU (its whole process tree), the
#         WAL bytes, the database transactions (xact_commit), the context
#         switches of the nodes and of the database, and the achieved rate
#
# PGSTATS=1 loads pg_stat_statements and writes, per run, the statements
# of the load by calls (stmts-REP-K-RATE.txt) and of the idle time
# (idle-stmts-REP-K-RATE.txt).
#
#   bench/node-cost.sh     # REPS=3 NODES="1 2 3" RATES="150 300" SECS=20 IDLE=10 SIZE=4096 C=30 M=100 OUT=dir
#
# PostgreSQL: a cluster of its own made with initdb on port 55433
# (default settings, synchronous_commit on), so that its process tree's
# CPU is this load's alone. Nodes listen on 127.0.0.1: node i's API on
# Pi080, MX Pi025 (i = 5, 6, 7; P=2 by default, so under the ephemeral
# port range, where another program's outgoing connection can hold the
# port). MH and LOAD name binaries already built (NOBUILD=1), for
# measuring another commit's build.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3} NODES=${NODES:-"1 2 3"} RATES=${RATES:-"150 300"} SECS=${SECS:-20} IDLE=${IDLE:-10}
SIZE=${SIZE:-4096} C=${C:-30} M=${M:-100} P=${P:-2}
OUT=${OUT:-bench/results/$(date -u +%F)/node-cost}
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}
MH=${MH:-/tmp/mh-nc} LOAD=${LOAD:-/tmp/mhload-nc}
mkdir -p "$OUT"
if [ -z "${NOBUILD:-}" ]; then
	CGO_ENABLED=0 go build -o "$MH" ./cmd/mailhost
	go build -o "$LOAD" ./cmd/mailhost-load
fi
D=$(mktemp -d /tmp/mh-nodecost.XXXXXX)
PGD=$(mktemp -d /tmp/mh-nodecost-pg.XXXXXX)
PIDS=()
stop() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	PIDS=()
}
pgstop() { runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGD/data" -m fast stop >/dev/null 2>&1 || true; }
trap 'stop; pgstop; rm -rf "$D" "$PGD"' EXIT
chown postgres "$PGD"
runuser -u postgres -- "$PGBIN/initdb" -D "$PGD/data" -A trust -U postgres >/dev/null
PGOPTS=
[ -n "${PGSTATS:-}" ] && PGOPTS="-c shared_preload_libraries=pg_stat_statements"
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGD/data" -l "$PGD/log" -o "-p 55433 -k $PGD -c listen_addresses=127.0.0.1 $PGOPTS" -w start >/dev/null
PGBASE="postgres://postgres@127.0.0.1:55433/postgres?sslmode=disable"
PGURL="$PGBASE&search_path=mhbench"
log() { echo "$(date -u +%T) $*" | tee -a "$OUT/log"; }
psqlc() { psql "$PGBASE" -qtAX -c "$1" 2>/dev/null; }
[ -n "${PGSTATS:-}" ] && psqlc "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
stmts() {
	[ -n "${PGSTATS:-}" ] || return 0
	psqlc "SELECT calls, round(total_exec_time::numeric, 1) AS ms, left(regexp_replace(query, '\s+', ' ', 'g'), 140)
		FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat%' ORDER BY calls DESC LIMIT 30" >"$1"
	psqlc "SELECT pg_stat_statements_reset()" >/dev/null
}
pgpid() { head -1 "$PGD/data/postmaster.pid"; }
wal() { psqlc "SELECT pg_current_wal_insert_lsn()"; }
waldiff() { psqlc "SELECT pg_wal_lsn_diff('$2', '$1')::bigint"; }
xacts() { sleep 1.2; psqlc "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'"; }
cputicks() {
	python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import procstat
p = procstat.read_all(); t = procstat.tree(p, [int(x) for x in sys.argv[2:]])
print(sum(p[i][2] + p[i][3] for i in t))' bench "$@"
}
# ctxsw PID...: context switches, voluntary and not, of the processes'
# trees, every thread (Go's threads and PostgreSQL's backends live as
# long as the run).
ctxsw() {
	python3 -c 'import glob, sys; sys.path.insert(0, sys.argv[1]); import procstat
t = procstat.tree(procstat.read_all(), [int(x) for x in sys.argv[2:]])
n = 0
for pid in t:
    for st in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            n += sum(int(l.split()[1]) for l in open(st) if "ctxt_switches" in l)
        except OSError:
            pass
print(n)' bench "$@"
}
# per A B N: (B-A) CPU ticks (10 ms) as ms per unit of N.
per() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN{printf "%.3f", (b-a)*10/n}'; }

serve() {
	local i=$1
	MAILHOST_DATA=$D/n$i MAILHOST_STORE=$PGURL MAILHOST_NODE=n$i \
	MAILHOST_HTTP=127.0.0.1:${P}${i}080 MAILHOST_SMTP=127.0.0.1:${P}${i}025 MAILHOST_IMAP= \
	MAILHOST_SUBMISSION= MAILHOST_SUBMISSIONS= MAILHOST_IMAPS= MAILHOST_MANAGESIEVE= MAILHOST_HOSTNAME=mh.test \
	MAILHOST_INBOUND_CHECKS=false MAILHOST_API_RATE_LIMIT=100000 MAILHOST_API_RATE_BURST=100000 \
		"$MH" serve >>"$D/n$i.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:${P}${i}080/healthz" && return; sleep 0.1; done
	echo "node $i did not start; its log:" >&2; cat "$D/n$i.log" >&2; exit 1
}
key() { cat "$D"/*/initial-api-key 2>/dev/null | head -1; }

log "node-cost: REPS=$REPS NODES=\"$NODES\" RATES=\"$RATES\" SECS=$SECS IDLE=$IDLE SIZE=$SIZE C=$C M=$M; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$REPS"); do
	for k in $NODES; do
		for rate in $RATES; do
			stop; rm -rf "${D:?}"/*
			psqlc "DROP SCHEMA IF EXISTS mhbench CASCADE; CREATE SCHEMA mhbench"
			mx=
			for i in $(seq 5 $((4 + k))); do
				serve "$i"
				mx=${mx:+$mx,}127.0.0.1:${P}${i}025
			done
			KEY=$(key)
			DOM=cost-$r-$k-$rate.test
			"$LOAD" -key "$KEY" -api http://127.0.0.1:${P}5080 -domain "$DOM" -m "$M" -n 0 -imap '' -logins 0 >/dev/null
			# Idle: nothing but the nodes' own timers.
			sleep 2
			stmts /dev/null
			n0=$(cputicks "${PIDS[@]}"); d0=$(cputicks "$(pgpid)")
			sleep "$IDLE"
			n1=$(cputicks "${PIDS[@]}"); d1=$(cputicks "$(pgpid)")
			stmts "$OUT/idle-stmts-$r-$k-$rate.txt"
			idle="idle: $(per "$n0" "$n1" $((IDLE * k))) ms CPU per node per second, database $(per "$d0" "$d1" "$IDLE") ms per second"
			# Load at a fixed rate.
			n=$((rate * SECS))
			w0=$(wal); x0=$(xacts); n0=$(cputicks "${PIDS[@]}"); d0=$(cputicks "$(pgpid)")
			s0=$(ctxsw "${PIDS[@]}"); t0=$(ctxsw "$(pgpid)")
			"$LOAD" -provision=false -domain "$DOM" -m "$M" -n "$n" -c "$C" -size "$SIZE" -rate "$rate" -smtp "$mx" \
				-imap '' -logins 0 -json "$OUT/deliver.json" -label "rep $r nodes $k rate $rate" >"$D/load.out"
			n1=$(cputicks "${PIDS[@]}"); d1=$(cputicks "$(pgpid)"); w1=$(wal); x1=$(xacts)
			s1=$(ctxsw "${PIDS[@]}"); t1=$(ctxsw "$(pgpid)")
			stmts "$OUT/stmts-$r-$k-$rate.txt"
			achieved=$(sed -n 's/.*achieved \([0-9.]*\) msg\/s.*/\1/p' "$D/load.out")
			late=$(sed -n 's/.* \([0-9]*\) messages started more than.*/\1/p' "$D/load.out")
			log "rep $r nodes $k rate $rate: achieved $achieved msg/s ($late late); per message: node CPU $(per "$n0" "$n1" "$n") ms, database CPU $(per "$d0" "$d1" "$n") ms, WAL $(( $(waldiff "$w0" "$w1") / n )) bytes, $(awk -v a="$x0" -v b="$x1" -v n="$n" 'BEGIN{printf "%.2f", (b-a)/n}') transactions, context switches $(awk -v a="$s0" -v b="$s1" -v n="$n" 'BEGIN{printf "%.1f", (b-a)/n}') nodes and $(awk -v a="$t0" -v b="$t1" -v n="$n" 'BEGIN{printf "%.1f", (b-a)/n}') database; $idle"
		done
	done
done
stop
log "results in $OUT"
