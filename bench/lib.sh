# lib.sh: what the side-by-side scripts (compare.sh, outbound-compare.sh,
# folder.sh, sort.sh, roundcube.sh)
# share. Sourced; the caller defines log, MAXLOAD and MAXWAIT.

load1() { cut -d' ' -f1 /proc/loadavg; }

# wait_quiet waits until the machine's 1-minute load average is below
# MAXLOAD (other work shares its two cores), for at most MAXWAIT seconds,
# and records the load it started at.
wait_quiet() {
	local waited=0
	while awk -v l="$(load1)" -v m="$MAXLOAD" 'BEGIN{exit !(l >= m)}'; do
		if ((waited >= MAXWAIT)); then
			log "load $(load1) still >= $MAXLOAD after ${MAXWAIT}s; running anyway"
			break
		fi
		sleep 15
		waited=$((waited + 15))
	done
	log "load average $(cut -d' ' -f1-3 /proc/loadavg)"
}

# dc_conf_write INSTANCE TLS [EXTRA] writes $dc_conf: a Dovecot of the
# script's own under $STATE, IMAP only, on $DC_IMAP, Maildir, the users
# of $STATE/passwd (which the caller writes: user:{PLAIN}password),
# their mail owned by vmail. TLS=yes serves STARTTLS with a self-signed
# certificate made once in $STATE and refuses plain logins; TLS=no
# allows them. EXTRA goes into the configuration as it is (a namespace).
dc_conf_write() {
	local instance=$1 tls=$2 extra=${3:-} ssl
	mkdir -p "$STATE/run" "$STATE/state" "$STATE/mail"
	id vmail >/dev/null 2>&1 || useradd --system --no-create-home --home-dir "$STATE/mail" --shell /usr/sbin/nologin vmail
	chgrp dovecot "$STATE/passwd"
	chmod 640 "$STATE/passwd"
	if [ "$tls" = yes ]; then
		if [ ! -s "$STATE/cert.pem" ]; then
			openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
				-subj "/CN=dovecot.bench.local" -keyout "$STATE/key.pem" -out "$STATE/cert.pem" 2>/dev/null
			chmod 600 "$STATE/key.pem"
		fi
		ssl="ssl = yes
ssl_cert = <$STATE/cert.pem
ssl_key = <$STATE/key.pem
disable_plaintext_auth = yes"
	else
		ssl="ssl = no
disable_plaintext_auth = no"
	fi
	cat >"$dc_conf" <<CONF
# Written by bench/$(basename "$0"); rewritten on every run.
instance_name = $instance
base_dir = $STATE/run
state_dir = $STATE/state
log_path = $STATE/dovecot.log
protocols = imap
listen = 127.0.0.1
$ssl
auth_mechanisms = plain login
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u $STATE/passwd
}
userdb {
  driver = static
  args = uid=vmail gid=vmail home=$STATE/mail/%d/%n
}
mail_location = maildir:~/Maildir
$extra
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${DC_IMAP##*:}
  }
  inet_listener imaps {
    port = 0
  }
}
CONF
}

# dc_start starts the Dovecot of $dc_conf and waits for its IMAP port;
# dc_stop stops it and waits for it to be gone.
dc_start() {
	dovecot -c "$dc_conf"
	for _ in $(seq 100); do
		(exec 3<>/dev/tcp/127.0.0.1/${DC_IMAP##*:}) 2>/dev/null && return
		sleep 0.1
	done
	log "dovecot did not start"
	exit 1
}
dc_stop() {
	doveadm -c "$dc_conf" stop 2>/dev/null || true
	for _ in $(seq 100); do
		pgrep -f "dovecot -c $dc_conf" >/dev/null || return 0
		sleep 0.1
	done
}

# The mailhost side of folder.sh and sort.sh: MH_PID by name; SERVERS
# (name, binary, data directory, IMAP address, HTTP address) and ACTION
# (start or stop) for mh_all; SIZES and PASSWORD for mh_provision; PG_URL
# for the server named mailhost-pg, which runs on PostgreSQL.
declare -A MH_PID
mh_start() { # NAME BIN DATA IMAP HTTP
	local store=
	[ "$1" = mailhost-pg ] && store=$PG_URL
	MAILHOST_STORE=$store MAILHOST_DATA=$3 MAILHOST_HTTP=$5 MAILHOST_SMTP=127.0.0.1:$((${4##*:} + 10)) MAILHOST_IMAP=$4 \
		MAILHOST_IMAPS= MAILHOST_SUBMISSION= MAILHOST_SUBMISSIONS= MAILHOST_MANAGESIEVE= MAILHOST_HOSTNAME=mailhost.bench.local \
		"$2" serve </dev/null >>"$3.log" 2>&1 &
	MH_PID[$1]=$!
	# A store of 100,000 messages opens slowly from a dropped page cache
	# on a loaded machine.
	for _ in $(seq 1200); do
		curl -fs "http://$5/healthz" >/dev/null 2>&1 && return
		kill -0 "${MH_PID[$1]}" 2>/dev/null || break
		sleep 0.1
	done
	log "$1 did not start; see $3.log"
	exit 1
}
mh_stop() { # NAME
	local pid=${MH_PID[$1]:-}
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	MH_PID[$1]=
}
mh_provision() { # HTTP DATA
	local key api=http://$1
	key=$(cat "$2/initial-api-key")
	auth=(-fsS -o /dev/null -H "Authorization: Bearer $key" -H "Content-Type: application/json")
	curl "${auth[@]}" -X POST "$api/domains/" -d '{"name":"bench.test","plan":"enterprise"}'
	for n in $SIZES; do
		curl "${auth[@]}" -X POST "$api/users/" -d "{\"domain_name\":\"bench.test\",\"email\":\"n$n@bench.test\",\"password\":\"$PASSWORD\"}"
	done
}
mh_all() {
	local s
	for s in "${SERVERS[@]}"; do
		set -- $s
		if [ "$ACTION" = start ]; then mh_start "$1" "$2" "$3" "$4" "$5"; else mh_stop "$1"; fi
	done
}

# mh_build builds mailhost and folderbench into $OUT/bin, and with
# MH_BASE a second mailhost (mailhost-base) from that revision, and
# writes what was built to $OUT/versions.txt. The base is built from an
# export of the revision, not a worktree: the repository's worktrees
# are left as they are.
mh_build() {
	log "building into $OUT/bin"
	mkdir -p "$OUT/bin"
	(cd "$REPO" && go build -o "$OUT/bin/mailhost" ./cmd/mailhost && go build -o "$OUT/bin/folderbench" ./bench/folderbench)
	if [ -n "$MH_BASE" ]; then
		rm -rf "$OUT/base-src"
		mkdir -p "$OUT/base-src"
		git -C "$REPO" archive "$MH_BASE" | tar -x -C "$OUT/base-src"
		(cd "$OUT/base-src" && go build -o "$OUT/bin/mailhost-base" ./cmd/mailhost)
		rm -rf "$OUT/base-src"
	fi
	(cd "$REPO" && git log -1 --format='commit %h %s' && go version && dovecot --version | sed 's/^/dovecot /' && nproc | sed 's/^/cores /') >"$OUT/versions.txt"
	if [ -n "$MH_BASE" ]; then echo "mailhost-base $(git -C "$REPO" rev-parse --short "$MH_BASE")" >>"$OUT/versions.txt"; fi
}
