#!/usr/bin/env bash
# append-nagle.sh: APPEND from Python's imaplib as it is (Nagle's algorithm
# on, a synchronizing literal written in two sends: the message, then its
# closing CRLF), mailhost against Dovecot side by side in one run; also
# with TCP_NODELAY on the client, as a reference. Both over STARTTLS on
# loopback, each on a random free port, Dovecot with its own configuration
# in a temporary directory (no system service, nothing under /etc).
#
# Usage (as root, from anywhere): bench/append-nagle.sh
# Settings, from the environment (defaults in brackets):
#   N     APPENDs measured per server and mode [200]
#   SIZE  message size in bytes [4096]
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$BENCH/.." && pwd)
N=${N:-200}
SIZE=${SIZE:-4096}
TMP=$(mktemp -d /tmp/append-nagle.XXXXXX)
PASSWORD=append-nagle-password
log() { echo "append-nagle: $(date +%T) $*" >&2; }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

command -v dovecot >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q dovecot-imapd

MH_PID=
cleanup() {
	[ -n "$MH_PID" ] && kill -TERM "$MH_PID" 2>/dev/null && wait "$MH_PID" 2>/dev/null
	[ -f "$TMP/dovecot.conf" ] && doveadm -c "$TMP/dovecot.conf" stop 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

log "building mailhost"
(cd "$REPO" && go build -o "$TMP/mailhost" ./cmd/mailhost)

# --- Dovecot
DC_PORT=$(freeport)
mkdir -p "$TMP/run" "$TMP/state" "$TMP/mail"
id vmail >/dev/null 2>&1 || useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin vmail
chown vmail:vmail "$TMP/mail"
chmod 755 "$TMP"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
	-subj "/CN=dovecot.bench.local" -keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null
echo "a@bench.test:{PLAIN}$PASSWORD" >"$TMP/passwd"
chgrp dovecot "$TMP/passwd"
chmod 640 "$TMP/passwd"
cat >"$TMP/dovecot.conf" <<CONF
instance_name = append-nagle-$DC_PORT
base_dir = $TMP/run
state_dir = $TMP/state
log_path = $TMP/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = yes
ssl_cert = <$TMP/cert.pem
ssl_key = <$TMP/key.pem
disable_plaintext_auth = yes
auth_mechanisms = plain login
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u $TMP/passwd
}
userdb {
  driver = static
  args = uid=vmail gid=vmail home=$TMP/mail/%d/%n
}
mail_location = maildir:~/Maildir
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = $DC_PORT
  }
  inet_listener imaps {
    port = 0
  }
}
CONF
dovecot -c "$TMP/dovecot.conf"

# --- mailhost
MH_IMAP=$(freeport)
MH_HTTP=127.0.0.1:$(freeport)
MAILHOST_DATA=$TMP/data MAILHOST_HTTP=$MH_HTTP MAILHOST_SMTP=127.0.0.1:$(freeport) MAILHOST_IMAP=127.0.0.1:$MH_IMAP \
	MAILHOST_IMAPS= MAILHOST_SUBMISSION= MAILHOST_SUBMISSIONS= MAILHOST_MANAGESIEVE= MAILHOST_HOSTNAME=mailhost.bench.local \
	"$TMP/mailhost" serve </dev/null >"$TMP/mailhost.log" 2>&1 &
MH_PID=$!
for _ in $(seq 200); do curl -fs "http://$MH_HTTP/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
key=$(cat "$TMP/data/initial-api-key")
auth=(-fsS -o /dev/null -H "Authorization: Bearer $key" -H "Content-Type: application/json")
curl "${auth[@]}" -X POST "http://$MH_HTTP/domains/" -d '{"name":"bench.test","plan":"enterprise"}'
curl "${auth[@]}" -X POST "http://$MH_HTTP/users/" -d "{\"domain_name\":\"bench.test\",\"email\":\"a@bench.test\",\"password\":\"$PASSWORD\"}"
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$DC_PORT) 2>/dev/null && break; sleep 0.1; done

(cd "$REPO" && git log -1 --format='commit %h %s'; dovecot --version | sed 's/^/dovecot /'; python3 --version; uname -r; echo "load $(cut -d' ' -f1-3 /proc/loadavg)")
python3 "$BENCH/append-nagle.py" "$N" "$SIZE" \
	"mailhost=127.0.0.1:$MH_IMAP:a@bench.test:$PASSWORD" \
	"dovecot=127.0.0.1:$DC_PORT:a@bench.test:$PASSWORD"
