#!/bin/bash
# scale.sh: the request paths on stores of very different sizes, built by
# bench/populate, side by side in one run. For each store given as
# LABEL=STORE:PARTNERS:DOMAINS:MAILBOXES (STORE a bbolt data directory or
# a postgres:// URL):
#
# The node runs without the API's rate limit, which the repeated requests
# would pass.
#
#   start-up   mailhost serve to its first 200 on /healthz, a bbolt file
#              first dropped from the page cache (COLD=0 not); the node's RSS
#   imap       LOGIN, SELECT INBOX of u0 (about 2,000 messages), UID FETCH
#              1:* (UID FLAGS RFC822.SIZE INTERNALDATE) (bench/folderbench)
#   api        GET /users/?domain_id=&limit=50, /users/{email}/usage,
#              /domains/{name}/usage, /users/?limit=50 first and last page
#              of p0's mailboxes (curl, median of APIREPS, default 10)
#   smtp       2,000 messages of 2 KB over 20 sessions to 10 mailboxes of
#              d0 (mailhost-load); the node's RSS after all this
#   store      bench/scaleprobe: the store calls alone (RCPT look-up, folder
#              open, list pages, usage, Deliver rate, a retention pass of
#              1,000 deletions)
#   verify     mailhost store verify
#   backup     mailhost backup / pg_dump $PGDUMPOPTS (default -Fc) into
#              DUMPDIR, and the restore (a copy of the file / pg_restore
#              into a new database; RESTORE=inplace drops the store's own
#              database, restores it and verifies it again; RESTORE=0
#              skips PostgreSQL's, BACKUP=0 both); verify stops after
#              VERIFYMAX s
#   bytes      the file, or PostgreSQL's tables, indexes and TOAST, per
#              message and per mailbox
#
#   bench/scale.sh small=/work/scale/bolt-small:10:10:1000 big=/work/scale/bolt-big:100:1000:100000
#
# The stores are changed (the probes deliver and purge): run it on copies
# or on stores made for it. OUT=dir (default bench/results/DATE/scale).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/results/$(date -u +%F)/scale}
RESTORE=${RESTORE:-1} BACKUP=${BACKUP:-1} PGDUMPOPTS=${PGDUMPOPTS:--Fc} VERIFYMAX=${VERIFYMAX:-600} APIREPS=${APIREPS:-10} COLD=${COLD:-1}
MH=${MH:-/tmp/mh-scale} LOAD=${LOAD:-/tmp/mhload-scale}
mkdir -p "$OUT"
CGO_ENABLED=0 go build -o "$MH" ./cmd/mailhost
go build -o "$LOAD" ./cmd/mailhost-load
go build -o /tmp/folderbench-scale ./bench/folderbench
go build -o /tmp/scaleprobe-scale ./bench/scaleprobe
W=$(mktemp -d /tmp/mh-scale.XXXXXX)
PID=
trap '[ -n "$PID" ] && kill $PID 2>/dev/null; rm -rf "$W"' EXIT
log() { echo "$(date -u +%T) $*" | tee -a "$OUT/log"; }
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rss() { awk '/VmRSS/{print $2}' /proc/$1/status; }
ms() { python3 -c 'import sys,time; print(round((time.time()-float(sys.argv[1]))*1000,1))' "$1"; }
now() { date +%s.%N; }

for spec in "$@"; do
	label=${spec%%=*} rest=${spec#*=}
	nm=${rest##*:} rest=${rest%:*}; nd=${rest##*:} rest=${rest%:*}; np=${rest##*:} store=${rest%:*}
	if [[ $store == postgres* ]]; then data=$W/$label; mkdir -p "$data"; envstore=$store; else data=$store; envstore=; fi
	api=127.0.0.1:$(port) mx=127.0.0.1:$(port) imap=127.0.0.1:$(port)
	log "$label: $store ($np partners, $nd domains, $nm mailboxes)"
	# Cold: the bbolt file out of the page cache (this file only), so that
	# start-up reads what it needs from disk.
	[ -z "$envstore" ] && [ "$COLD" = 1 ] && python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$data/mailhost.db"
	t=$(now)
	MAILHOST_STORE=$envstore MAILHOST_DATA=$data MAILHOST_HTTP=$api MAILHOST_SMTP=$mx MAILHOST_IMAP=$imap \
		MAILHOST_IMAPS= MAILHOST_SUBMISSION= MAILHOST_SUBMISSIONS= MAILHOST_MANAGESIEVE= MAILHOST_API_RATE_LIMIT=100000 MAILHOST_API_RATE_BURST=100000 MAILHOST_HOSTNAME=mx.scale.test \
		MAILHOST_INBOUND_CHECKS=false MAILHOST_NODE=scale "$MH" serve </dev/null >>"$W/$label.log" 2>&1 &
	PID=$!
	until curl -fs "http://$api/healthz" >/dev/null 2>&1; do
		kill -0 $PID 2>/dev/null || { log "$label: mailhost serve exited: $(tail -n 1 "$W/$label.log")"; exit 1; }
		sleep 0.05
	done
	startup=$(ms "$t") rss0=$(rss $PID)
	key=$(MAILHOST_STORE=$envstore MAILHOST_DATA=$data "$MH" key create p0 2>>"$W/$label.log" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("key") or d.get("api_key") or d.get("secret"))')
	/tmp/folderbench-scale run -addr "$imap" -user u0@d0.scale.test -pass password -reps 3 -label "$label" \
		-cmd "UID FETCH 1:* (UID FLAGS RFC822.SIZE INTERNALDATE)" >"$OUT/$label.imap.jsonl" 2>>"$OUT/log"
	did=$(curl -fs -H "Authorization: Bearer $key" "http://$api/domains/d0.scale.test" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
	# The median of APIREPS requests, each a new curl (connection and all).
	apitime() { for _ in $(seq "$APIREPS"); do curl -fs -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $key" "http://$api$1"; done | sort -n | sed -n "$(( (APIREPS + 1) / 2 ))p"; }
	last=$(( nm / np - 50 )); [ $last -lt 0 ] && last=0
	list=$(apitime "/users/?domain_id=$did&limit=50") usage=$(apitime "/users/u1@d0.scale.test/usage") dusage=$(apitime "/domains/d0.scale.test/usage")
	plist=$(apitime "/users/?limit=50") plast=$(apitime "/users/?limit=50&offset=$last")
	"$LOAD" -provision=false -imap "" -smtp "$mx" -domain d0.scale.test -user 'u%d@' -m 10 -password password -n 2000 -c 20 -size 2048 \
		-json "$OUT/$label.load.json" >"$OUT/$label.load.txt" 2>&1
	rss1=$(rss $PID)
	kill $PID; wait $PID 2>/dev/null || true; PID=
	/tmp/scaleprobe-scale -store "$store" -partners "$np" -domains "$nd" -mailboxes "$nm" -label "$label" >"$OUT/$label.probe.json"
	t=$(now); MAILHOST_STORE=$envstore MAILHOST_DATA=$data timeout "$VERIFYMAX" "$MH" store verify >"$OUT/$label.verify.txt" 2>&1 || echo "exit $?" >>"$OUT/$label.verify.txt"; verify=$(ms "$t")
	if [[ $store == postgres* ]]; then
		db=${store%%\?*}; db=${db##*/}; base=${store%/*}
		backup=None bsize=None restore=
		sizes() {
			psql "$store" -AtX -F' ' -c "SELECT c.relname, pg_relation_size(c.oid), pg_indexes_size(c.oid), COALESCE(pg_total_relation_size(NULLIF(c.reltoastrelid,0)),0), c.reltuples::bigint
				FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY pg_total_relation_size(c.oid) DESC" >"$OUT/$label.sizes$1.txt"
			psql "$store" -AtX -c "SELECT (SELECT count(*) FROM messages), (SELECT count(*) FROM mailboxes), (SELECT count(*) FROM blobs), pg_database_size(current_database()), pg_current_wal_lsn() - '0/0'::pg_lsn" >"$OUT/$label.counts$1.txt"
		}
		sizes ""
		dump=${DUMPDIR:-$W}/$label.dump
		[ "$BACKUP" = 1 ] && { t=$(now); pg_dump $PGDUMPOPTS -f "$dump" "$store" 2>>"$OUT/log"; backup=$(ms "$t"); bsize=$(stat -c %s "$dump"); }
		if [ "$BACKUP" = 1 ] && [ "$RESTORE" = 1 ]; then
			psql "$base/template1?sslmode=disable" -qc "DROP DATABASE IF EXISTS restore_$label" -c "CREATE DATABASE restore_$label"
			t=$(now); pg_restore -j 2 -d "$base/restore_$label?sslmode=disable" "$dump" 2>>"$OUT/log" || true; restore=$(ms "$t")
			psql "$base/template1?sslmode=disable" -qc "DROP DATABASE restore_$label"
		elif [ "$BACKUP" = 1 ] && [ "$RESTORE" = inplace ]; then
			# No room for a second copy: the store's own database is dropped
			# and restored from the dump, then verified again.
			psql "$base/template1?sslmode=disable" -qc "DROP DATABASE $db" -c "CREATE DATABASE $db"
			t=$(now); pg_restore -j 2 -d "$store" "$dump" 2>>"$OUT/log" || echo "pg_restore exit $?" >>"$OUT/log"; restore=$(ms "$t")
			t=$(now); MAILHOST_STORE=$envstore MAILHOST_DATA=$data timeout "$VERIFYMAX" "$MH" store verify >"$OUT/$label.verify-restored.txt" 2>&1 || echo "exit $?" >>"$OUT/$label.verify-restored.txt"
			echo "verify after restore: $(ms "$t") ms" >>"$OUT/$label.verify-restored.txt"
			sizes -restored
		fi
		rm -f "$dump"
	else
		backup=None bsize=None restore=
		if [ "$BACKUP" = 1 ]; then
			t=$(now); MAILHOST_DATA=$data "$MH" backup "$W/$label.db" >>"$OUT/log" 2>&1; backup=$(ms "$t"); bsize=$(stat -c %s "$W/$label.db")
			mkdir -p "$W/restore"; t=$(now); cp "$W/$label.db" "$W/restore/mailhost.db"; sync "$W/restore/mailhost.db"; restore=$(ms "$t")
			rm -rf "$W/restore" "$W/$label.db"
		fi
		stat -c '%n %s' "$data/mailhost.db" >"$OUT/$label.sizes.txt"
		MAILHOST_DATA=$data "$MH" store stats -json >>"$OUT/$label.sizes.txt" 2>&1 || true
	fi
	python3 - "$OUT" "$label" <<PY >>"$OUT/summary.jsonl"
import json, sys
out, label = sys.argv[1], sys.argv[2]
imap = [json.loads(l) for l in open(f"{out}/{label}.imap.jsonl")]
d = dict(label=label, store="$store", partners=$np, domains=$nd, mailboxes=$nm,
         startup_ms=$startup, rss_start_kb=$rss0, rss_after_kb=$rss1,
         imap_login_ms=imap[0]["login_ms"], imap_select_ms=imap[0]["select_ms"],
         imap_fetch_ms=sorted(r["ms"] for r in imap)[len(imap)//2], imap_messages=imap[0]["untagged"],
         api_list_s=$list, api_user_usage_s=$usage, api_domain_usage_s=$dusage, api_reps=$APIREPS,
         api_partner_list_s=$plist, api_partner_list_last_s=$plast, api_partner_list_last_offset=$last,
         verify_ms=$verify, backup_ms=$backup, backup_bytes=$bsize, restore_ms=${restore:-None})
try:
    d["smtp"] = json.loads(open(f"{out}/{label}.load.json").readlines()[-1])
except Exception as e:
    d["smtp_error"] = str(e)
d["probe"] = json.load(open(f"{out}/{label}.probe.json"))
print(json.dumps(d))
PY
	log "$label: $(tail -n 1 "$OUT/summary.jsonl" | cut -c1-600)"
done
