#!/bin/bash
# postgres.sh: the store on PostgreSQL against the store on bbolt, side by
# side in one run. Per repetition and backend, a fresh store:
#
#   bbolt  one node, the bbolt file in its data directory
#   pg     one node on PostgreSQL (schema mhbench in database test)
#   pg2    two nodes on the same schema, the same load tool's C sessions
#          taking them in turn (LOADS=2: a load tool of C/2 sessions for
#          each node, as before 2026-11-27)
#
# and for each: SMTP delivery of N messages of SIZE bytes over C sessions
# to M mailboxes (stored and synced before each 250), then one IMAP
# FETCH 1:* BODY.PEEK[] of a mailbox holding FETCHN messages. Per
# delivery it prints the nodes' CPU per message and, with PostgreSQL, the
# database's (the postmaster's process tree), the messages per delivery
# batch and the WAL written per message.
#
#   bench/postgres.sh          # REPS=3 N=10000 SIZE=4096 C=20 M=100 FETCHN=10000 OUT=dir ONLY="bbolt pg pg2" DBCPU=0 LOADS=1 LOADOPTS=
#
# MHPKG=./bench/mhprof runs the nodes with net/http/pprof (node A's on
# 127.0.0.1:36060; node B's port is taken and B runs without it).
#
# LOADOPTS are more flags of the load tool for the deliveries, such as
# -pipelining (MAIL, RCPT and DATA as one group, as Postfix sends them).
#
# Ports on 127.0.0.1: node A API 43080, MX 43025, IMAP 43143; node B
# 44080, 44025, 44143. PostgreSQL: a cluster of its own, made for the run
# with initdb on port 55432 (default settings, synchronous_commit on), so
# that its process tree's CPU is this load's alone; OWNPG=0 uses PGBASE
# instead (default the machine's test database).
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3} N=${N:-10000} SIZE=${SIZE:-4096} C=${C:-20} M=${M:-100} FETCHN=${FETCHN:-10000}
ONLY=${ONLY:-"bbolt pg pg2"}
OUT=${OUT:-bench/results/$(date -u +%F)/postgres}
OWNPG=${OWNPG:-1}
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}
MH=${MH:-/tmp/mh} LOAD=${LOAD:-/tmp/mhload}
mkdir -p "$OUT"
CGO_ENABLED=0 go build -o "$MH" "${MHPKG:-./cmd/mailhost}"
go build -o "$LOAD" ./cmd/mailhost-load
D=$(mktemp -d /tmp/mh-postgres.XXXXXX)
PGD=$(mktemp -d /tmp/mh-pgdata.XXXXXX)
PIDS=()
stop() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	PIDS=()
}
pgstop() { [ "$OWNPG" = 1 ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGD/data" -m fast stop >/dev/null 2>&1 || true; }
trap 'stop; pgstop; rm -rf "$D" "$PGD"' EXIT
if [ "$OWNPG" = 1 ]; then
	chown postgres "$PGD"
	runuser -u postgres -- "$PGBIN/initdb" -D "$PGD/data" -A trust -U postgres >/dev/null
	runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGD/data" -l "$PGD/log" -o "-p 55432 -k $PGD -c listen_addresses=127.0.0.1 ${PGOPTS:-}" -w start >/dev/null
	PGBASE=postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable
	[ -n "${PGSTATS:-}" ] && psql "$PGBASE" -qtAX -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
fi
PGBASE=${PGBASE:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
PGURL="$PGBASE&search_path=mhbench"
log() { echo "$(date -u +%T) $*" | tee -a "$OUT/log"; }
psqlc() { psql "$PGBASE" -qtAX -c "$1" 2>/dev/null; }
pgpid() { head -1 "$(psqlc 'SHOW data_directory')/postmaster.pid"; }
wal() { psqlc "SELECT pg_current_wal_insert_lsn()"; }
waldiff() { psqlc "SELECT pg_wal_lsn_diff('$2', '$1')::bigint"; }
# cputicks PID...: the CPU ticks (1/100 s) of those processes' trees,
# reaped children included.
cputicks() {
	python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import procstat
p = procstat.read_all(); t = procstat.tree(p, [int(x) for x in sys.argv[2:]])
print(sum(p[i][2] + p[i][3] for i in t))' bench "$@"
}
# batches: the delivery batches so far: each adds to its node's row of
# domain_usage once per recipients' domain (one domain here). Statistics
# reach the view within a second of the transaction.
batches() { sleep 1.2; psqlc "SELECT n_tup_upd + n_tup_ins FROM pg_stat_user_tables WHERE schemaname = 'mhbench' AND relname = 'domain_usage'"; }

# serve NAME STORE API MX IMAP: a node, in the background.
serve() {
	local name=$1 store=$2 api=$3 mx=$4 imap=$5
	MAILHOST_DATA=$D/$name MAILHOST_STORE=$store MAILHOST_NODE=$name \
	MAILHOST_HTTP=127.0.0.1:$api MAILHOST_SMTP=127.0.0.1:$mx MAILHOST_IMAP=127.0.0.1:$imap \
	MAILHOST_SUBMISSION= MAILHOST_SUBMISSIONS= MAILHOST_IMAPS= MAILHOST_MANAGESIEVE= MAILHOST_HOSTNAME=mh.test \
	MAILHOST_INBOUND_CHECKS=false MAILHOST_API_RATE_LIMIT=100000 MAILHOST_API_RATE_BURST=100000 \
		"$MH" serve >>"$D/$name.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$api/healthz" && return; sleep 0.1; done
	echo "node $name did not start; its log:" >&2; cat "$D/$name.log" >&2; exit 1
}

# serve prints the key only on a terminal; the node that made the partner wrote it to its data directory
key() { cat "$D"/*/initial-api-key 2>/dev/null | head -1; }

for r in $(seq "$REPS"); do
	for b in $ONLY; do
		stop; rm -rf "${D:?}"/*
		store=
		if [ "$b" != bbolt ]; then
			psqlc "DROP SCHEMA IF EXISTS mhbench CASCADE; CREATE SCHEMA mhbench"
			store=$PGURL
		fi
		serve a "$store" 43080 43025 43143
		[ "$b" = pg2 ] && serve b "$store" 44080 44025 44143
		KEY=$(key)
		DOM=bench-$r.test
		FDOM=fetch-$r.test
		# Provision (password hashes are not what is measured).
		"$LOAD" -key "$KEY" -api http://127.0.0.1:43080 -domain "$DOM" -m "$M" -n 0 -imap '' -logins 0 >/dev/null
		"$LOAD" -key "$KEY" -api http://127.0.0.1:43080 -domain "$FDOM" -m 1 -n 0 -imap '' -logins 0 >/dev/null
		tree=${PIDS[*]}; tree=${tree// /,}
		dbtree=
		[ "$b" != bbolt ] && dbtree=,$(pgpid)
		# DBCPU=1: count the database's process tree alone (its CPU per
		# message), not the nodes'.
		if [ "${DBCPU:-0}" = 1 ] && [ "$b" != bbolt ]; then tree=$(pgpid); dbtree=; fi
		w0=; [ "$b" != bbolt ] && w0=$(wal)
		# Per-message CPU of the nodes and of the database, and the batch
		# size (deliveries per commit), whatever the backend.
		n0=$(cputicks "${PIDS[@]}"); d0=0; x0=0
		[ "$b" != bbolt ] && d0=$(cputicks "$(pgpid)") && x0=$(batches)
		log "rep $r $b: load $(cut -d' ' -f1-3 /proc/loadavg)"
		start=$(date +%s.%N)
		if [ "$b" = pg2 ] && [ "${LOADS:-1}" = 2 ]; then
			"$LOAD" -provision=false -domain "$DOM" -m "$M" -n $((N / 2)) -c $((C / 2)) -size "$SIZE" ${LOADOPTS:-} -smtp 127.0.0.1:43025 \
				-imap '' -logins 0 -json "$OUT/deliver.json" -label "rep $r $b node a" >"$D/la.out" &
			la=$!
			"$LOAD" -provision=false -domain "$DOM" -m "$M" -n $((N / 2)) -c $((C / 2)) -size "$SIZE" ${LOADOPTS:-} -smtp 127.0.0.1:44025 \
				-imap '' -logins 0 -json "$OUT/deliver.json" -label "rep $r $b node b" >"$D/lb.out"
			wait "$la"
			cat "$D/la.out" "$D/lb.out" >>"$OUT/log"
		else
			mx=127.0.0.1:43025
			[ "$b" = pg2 ] && mx=$mx,127.0.0.1:44025
			"$LOAD" -provision=false -domain "$DOM" -m "$M" -n "$N" -c "$C" -size "$SIZE" ${LOADOPTS:-} -smtp "$mx" \
				-imap '' -logins 0 -cpu-tree "${tree}${dbtree}" -json "$OUT/deliver.json" -label "rep $r $b" | tee -a "$OUT/log"
		fi
		end=$(date +%s.%N)
		rate=$(awk -v n="$N" -v s="$start" -v e="$end" 'BEGIN{printf "%.0f", n/(e-s)}')
		line="rep $r $b: $N deliveries in $(awk -v s="$start" -v e="$end" 'BEGIN{printf "%.2f", e-s}') s: $rate msg/s (wall clock, load tools included)"
		n1=$(cputicks "${PIDS[@]}")
		line="$line; node CPU $(awk -v a="$n0" -v b="$n1" -v n="$N" 'BEGIN{printf "%.3f", (b-a)*10/n}') ms/message"
		if [ "$b" != bbolt ]; then
			w1=$(wal)
			d1=$(cputicks "$(pgpid)"); x1=$(batches)
			line="$line; database CPU $(awk -v a="$d0" -v b="$d1" -v n="$N" 'BEGIN{printf "%.3f", (b-a)*10/n}') ms/message"
			line="$line; $(awk -v a="$x0" -v b="$x1" -v n="$N" 'BEGIN{printf "%.1f", n/(b-a)}') messages/batch"
			line="$line; WAL $(( $(waldiff "$w0" "$w1") / N )) bytes/message"
		fi
		log "$line"
		# The fetch mailbox: FETCHN messages, then one FETCH 1:* BODY.PEEK[].
		"$LOAD" -provision=false -domain "$FDOM" -m 1 -n "$FETCHN" -c "$C" -size "$SIZE" -smtp 127.0.0.1:43025 \
			-imap 127.0.0.1:43143 -logins 0 -fetch -cpu-tree "${tree}${dbtree}" -json "$OUT/fetch.json" -label "rep $r $b" | tee -a "$OUT/log"
	done
done
stop
if [ -n "${PGSTATS:-}" ]; then
	# PGSTATS=1 PGOPTS="-c shared_preload_libraries=pg_stat_statements
	# -c pg_stat_statements.track_planning=on": the statements the runs
	# sent, by total time (planning, then running, in ms).
	psqlc "SELECT calls, round(total_plan_time::numeric, 1) AS plan_ms, round(total_exec_time::numeric, 1) AS ms, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 160)
		FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25" >"$OUT/pg_stat_statements.txt"
fi
log "results in $OUT"
