#!/bin/sh
# Runs the whole probe against a fresh server (root: private.py listens on
# port 25): bench/probe/run.sh [OUTDIR]. Leaves the DNS stub and the server
# stopped.
set -e
cd "$(dirname "$0")"
OUT=${1:-/tmp/probe}
rm -rf "$OUT/data" && mkdir -p "$OUT/data" && echo '{}' > "$OUT/zone.json"
go build -o /tmp/probe-mh ../../cmd/mailhost
python3 dnsstub.py 127.0.0.1 5353 "$OUT/zone.json" 2> "$OUT/dns.log" & DNS=$!
PROBE_DATA=$OUT/data; export PROBE_DATA; . ./env.sh
/tmp/probe-mh serve > "$OUT/serve.out" 2> "$OUT/serve.err" & SRV=$!
trap 'kill $SRV $DNS' EXIT
sleep 3
KEY_A=$(sed -n 3p "$OUT/serve.out" | tr -d ' ')
PMPW=$(grep -A2 "Its password" "$OUT/serve.out" | sed -n 3p | tr -d ' ')
KEY_B=$(/tmp/probe-mh partner create partnerB | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')
PW='a long password 123'
python3 partners.py "$KEY_A" "$KEY_B" "$OUT/zone.json" "$PMPW" > "$OUT/partners.out" 2>&1
python3 framing.py "$PW" b1@beta.example b2@beta.example > "$OUT/framing.out" 2>&1
python3 imapprobe.py b2@beta.example "$PW" > "$OUT/imap.out" 2>&1
python3 quota.py "$KEY_A" alpha.example > "$OUT/quota.out" 2>&1
python3 private.py "$OUT/zone.json" b1@beta.example "$PW" > "$OUT/private.out" 2>&1
python3 extras.py "$KEY_A" "$KEY_B" "$PW" > "$OUT/extras.out" 2>&1
echo "outputs in $OUT/*.out"
