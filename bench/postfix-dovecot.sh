#!/usr/bin/env bash
# postfix-dovecot.sh: a Postfix + Dovecot pair on loopback to measure
# mailhost against, side by side (bench/compare.sh drives it).
#
#   Postfix SMTP   127.0.0.1:32526  (compare.sh runs mailhost's on 32525)
#   Dovecot IMAP   127.0.0.1:32144  (STARTTLS; compare.sh runs mailhost's on 32143)
#   Dovecot LMTP   127.0.0.1:32424  Postfix hands every message to it
#   dnsmasq DNS    127.0.0.1:32053  answers NXDOMAIN for *.test at once
#
# With setup-outbound (bench/outbound-compare.sh), also the outbound side:
#
#   Postfix submission 127.0.0.1:32587  a second Postfix instance: STARTTLS
#                  required, AUTH through Dovecot's auth socket, sender
#                  must be the login's own address, OpenDKIM as milter,
#                  everything relayed to [127.0.0.1]:32626 (the load
#                  tool's sink; PF_SINK_PORT)
#   OpenDKIM       two milters, unix sockets $STATE/opendkim/{rsa,ed}.sock:
#                  every message from bench.test signed twice, RSA-2048 and
#                  Ed25519 (RFC 8463), relaxed/relaxed, as mailhost does.
#                  Two processes because Debian's OpenDKIM (2.11.0~beta2)
#                  signs with one SignatureAlgorithm per instance: given
#                  both keys (MultipleSignatures) and rsa-sha256, the
#                  Ed25519 key fails with "EVP_PKEY_get1_RSA() failed".
#
# The resolver is for mailhost (MAILHOST_DNS=127.0.0.1:32053): it checks
# SPF, DKIM and DMARC of inbound mail, four or five DNS queries a message,
# and this machine's own resolver drops queries when a few dozen are in
# flight (each then waits 5 s). A local resolver is what a mail host runs
# anyway; this one knows nothing but the bench domains, which do not exist.
#
# The ports are off the usual test ports (2525, 2526, 2143...) that other
# work on this machine uses, and below Linux's ephemeral range (32768+).
# Postfix relays for nobody: only the bench domain is accepted.
#
# 100 virtual mailboxes user0@bench.test .. user99@bench.test, password
# "load-test-password" (the load tool's default), hashed with argon2id at
# mailhost's own parameters (19 MiB, t=2, p=1) so that a cold login costs
# both servers the same; Dovecot caches verified passwords as mailhost does.
# Mail is stored as Maildir under $STATE/mail, owned by the user vmail.
#
# Nothing under /etc is touched: both daemons run from configuration files
# in $STATE (postfix -c, dovecot -c) with their own queue, run and state
# directories, so they cannot clash with a system Postfix or Dovecot.
#
# Usage (as root):
#   bench/postfix-dovecot.sh setup     install the packages, write the config, start (idempotent)
#   bench/postfix-dovecot.sh setup-outbound  setup, plus the submission instance and OpenDKIM
#   bench/postfix-dovecot.sh outpids   print the submission master, the two OpenDKIMs' and Dovecot's process ids
#   bench/postfix-dovecot.sh start     start both (one already running reloads its configuration)
#   bench/postfix-dovecot.sh stop      stop both
#   bench/postfix-dovecot.sh clean     empty every mailbox and the Postfix queue (servers keep running)
#   bench/postfix-dovecot.sh pids      print the two master process ids
#   bench/postfix-dovecot.sh status    show what runs and how many messages are stored
#   bench/postfix-dovecot.sh teardown  stop both and remove $STATE (the packages stay)
set -euo pipefail

STATE=${BENCH_STATE:-/var/lib/mailhost-bench}
SMTP_PORT=${PF_SMTP_PORT:-32526}
IMAP_PORT=${DC_IMAP_PORT:-32144}
LMTP_PORT=${DC_LMTP_PORT:-32424}
DNS_PORT=${BENCH_DNS_PORT:-32053}
DOMAIN=bench.test
USERS=${BENCH_USERS:-100}
PASSWORD=load-test-password

PF_ETC=$STATE/postfix-etc
PF_QUEUE=$STATE/postfix-queue
PF_DATA=$STATE/postfix-data
DC_ETC=$STATE/dovecot-etc
DC_RUN=$STATE/dovecot-run
# The outbound side (setup-outbound).
SUB_PORT=${PF_SUB_PORT:-32587}
SINK_PORT=${PF_SINK_PORT:-32626}
PF_OUT_ETC=$STATE/postfix-out-etc
PF_OUT_QUEUE=$STATE/postfix-out-queue
PF_OUT_DATA=$STATE/postfix-out-data
DKIM=$STATE/opendkim
MAIL=$STATE/mail
REPO=$(cd "$(dirname "$0")/.." && pwd)

log() { echo "postfix-dovecot: $*" >&2; }

install_packages() {
	local missing=()
	command -v postfix >/dev/null || missing+=(postfix)
	command -v smtp-source >/dev/null || missing+=(postfix)
	command -v dovecot >/dev/null || missing+=(dovecot-imapd)
	[ -x /usr/lib/dovecot/lmtp ] || missing+=(dovecot-lmtpd)
	command -v swaks >/dev/null || missing+=(swaks)
	command -v openssl >/dev/null || missing+=(openssl)
	command -v dnsmasq >/dev/null || missing+=(dnsmasq-base)
	if [ "${OUTBOUND:-}" = 1 ]; then
		command -v opendkim >/dev/null || missing+=(opendkim)
		command -v opendkim-genkey >/dev/null || missing+=(opendkim-tools)
	fi
	[ ${#missing[@]} -eq 0 ] && return
	log "installing ${missing[*]}"
	# "No configuration": the package must not write /etc/postfix/main.cf
	# or start a system Postfix on port 25.
	echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
}

write_postfix() {
	mkdir -p "$PF_ETC" "$PF_QUEUE" "$PF_DATA"
	: >"$PF_ETC/dynamicmaps.cf"
	cat >"$PF_ETC/main.cf" <<EOF
# Written by bench/postfix-dovecot.sh; rewritten on every setup.
compatibility_level = 3.6
config_directory = $PF_ETC
queue_directory = $PF_QUEUE
data_directory = $PF_DATA
mail_owner = postfix
setgid_group = postdrop
myhostname = postfix.bench.local
mydomain = bench.local
myorigin = \$myhostname
# No local delivery: every hosted address is virtual and goes to Dovecot.
mydestination =
local_recipient_maps =
alias_maps =
alias_database =
inet_protocols = ipv4
inet_interfaces = loopback-only
# Relay for nobody, not even loopback: mail for anything but the bench
# domain is refused at RCPT, and nothing could go out anyway.
mynetworks =
smtpd_relay_restrictions = reject_unauth_destination
default_transport = error:5.7.1 this bench Postfix does not relay
smtpd_banner = \$myhostname ESMTP
biff = no
# The $USERS mailboxes; texthash needs no postmap.
virtual_mailbox_domains = $DOMAIN
virtual_mailbox_maps = texthash:$PF_ETC/vmailbox
virtual_transport = lmtp:inet:127.0.0.1:$LMTP_PORT
# Postfix's defaults otherwise: 250 once the queue file is fsynced,
# 20 concurrent LMTP deliveries (default_destination_concurrency_limit).
maillog_file = $STATE/postfix.log
EOF
	# Every service from Debian's master.cf that this setup uses, without
	# chroot (the queue is not under /var/spool/postfix) and with the SMTP
	# listener on loopback at its own port.
	master_cf "$SMTP_PORT" >"$PF_ETC/master.cf"
	: >"$PF_ETC/vmailbox"
	for ((i = 0; i < USERS; i++)); do
		echo "user$i@$DOMAIN $DOMAIN/user$i/" >>"$PF_ETC/vmailbox"
	done
	postfix -c "$PF_ETC" set-permissions create-missing >/dev/null 2>&1 || true
	postfix -c "$PF_ETC" check
}

# master_cf PORT prints a master.cf with smtpd on 127.0.0.1:PORT.
master_cf() {
	cat <<EOF
# Written by bench/postfix-dovecot.sh.
# service        type  private unpriv chroot wakeup maxproc command
127.0.0.1:$1 inet n    -      n      -      -       smtpd
pickup           unix  n       -      n      60     1       pickup
cleanup          unix  n       -      n      -      0       cleanup
qmgr             unix  n       -      n      300    1       qmgr
rewrite          unix  -       -      n      -      -       trivial-rewrite
bounce           unix  -       -      n      -      0       bounce
defer            unix  -       -      n      -      0       bounce
trace            unix  -       -      n      -      0       bounce
verify           unix  -       -      n      -      1       verify
flush            unix  n       -      n      1000?  0       flush
proxymap         unix  -       -      n      -      -       proxymap
smtp             unix  -       -      n      -      -       smtp
relay            unix  -       -      n      -      -       smtp
showq            unix  n       -      n      -      -       showq
error            unix  -       -      n      -      -       error
retry            unix  -       -      n      -      -       error
discard          unix  -       -      n      -      -       discard
lmtp             unix  -       -      n      -      -       lmtp
anvil            unix  -       -      n      -      1       anvil
scache           unix  -       -      n      -      1       scache
postlog          unix-dgram n  -      n      -      1       postlogd
EOF
}

# write_postfix_out writes the outbound instance: submission with
# STARTTLS (required) and AUTH through Dovecot, the sender checked
# against the login, OpenDKIM as milter, everything to the sink.
write_postfix_out() {
	mkdir -p "$PF_OUT_ETC" "$PF_OUT_QUEUE" "$PF_OUT_DATA"
	: >"$PF_OUT_ETC/dynamicmaps.cf"
	cat >"$PF_OUT_ETC/main.cf" <<EOF
# Written by bench/postfix-dovecot.sh setup-outbound; rewritten on every setup.
compatibility_level = 3.6
config_directory = $PF_OUT_ETC
queue_directory = $PF_OUT_QUEUE
data_directory = $PF_OUT_DATA
mail_owner = postfix
setgid_group = postdrop
myhostname = postfix-out.bench.local
mydomain = bench.local
myorigin = \$myhostname
mydestination =
local_recipient_maps =
alias_maps =
alias_database =
inet_protocols = ipv4
inet_interfaces = loopback-only
mynetworks =
smtpd_banner = \$myhostname ESMTP
biff = no
maillog_file = $STATE/postfix-out.log
# Submission, as mailhost's: STARTTLS before anything (the same ECDSA
# P-256 certificate as Dovecot's), AUTH PLAIN checked by Dovecot (argon2id,
# the same users), only for a sender that is the login's own address.
smtpd_tls_security_level = encrypt
smtpd_tls_auth_only = yes
smtpd_tls_cert_file = $DC_ETC/cert.pem
smtpd_tls_key_file = $DC_ETC/key.pem
smtpd_sasl_auth_enable = yes
smtpd_sasl_type = dovecot
smtpd_sasl_path = $DC_RUN/auth-postfix
smtpd_sender_login_maps = texthash:$PF_OUT_ETC/senders
smtpd_sender_restrictions = reject_sender_login_mismatch
smtpd_relay_restrictions = permit_sasl_authenticated, reject
# DKIM: the two OpenDKIMs sign in the SMTP session, before the queue
# file is fsynced and 250 sent (mailhost signs before its queue commit).
smtpd_milters = unix:$DKIM/rsa.sock, unix:$DKIM/ed.sock
non_smtpd_milters =
milter_default_action = tempfail
# Everything to the load tool's sink, plain SMTP unless it offers
# STARTTLS (it does not; mailhost's queue does the same). Postfix's
# defaults otherwise: the queue file fsynced before 250, up to 20
# concurrent deliveries to the one destination, connections to it
# cached and reused (smtp_connection_cache_on_demand).
relayhost = [127.0.0.1]:$SINK_PORT
smtp_tls_security_level = may
# No notices to the postmaster: they would go to the sink as well.
notify_classes =
EOF
	{
		master_cf "$SUB_PORT"
		echo "tlsmgr           unix  -       -      n      1000?  1       tlsmgr"
	} >"$PF_OUT_ETC/master.cf"
	: >"$PF_OUT_ETC/senders"
	for ((i = 0; i < USERS; i++)); do
		echo "user$i@$DOMAIN user$i@$DOMAIN" >>"$PF_OUT_ETC/senders"
	done
	postfix -c "$PF_OUT_ETC" set-permissions create-missing >/dev/null 2>&1 || true
	postfix -c "$PF_OUT_ETC" check
}

# write_opendkim writes the configuration and keys of two OpenDKIM
# milters for the bench domain, one per algorithm: RSA-2048
# (opendkim-genkey) and Ed25519 (openssl), so that every message gets
# both signatures, as mailhost gives it.
write_opendkim() {
	mkdir -p "$DKIM"
	if [ ! -s "$DKIM/rsa.private" ]; then
		opendkim-genkey --bits=2048 --domain=$DOMAIN --selector=rsa --directory="$DKIM"
	fi
	if [ ! -s "$DKIM/ed.private" ]; then
		openssl genpkey -algorithm ed25519 -out "$DKIM/ed.private"
	fi
	cat >"$DKIM/keytable" <<EOF
rsa._domainkey.$DOMAIN $DOMAIN:rsa:$DKIM/rsa.private
ed._domainkey.$DOMAIN $DOMAIN:ed:$DKIM/ed.private
EOF
	local k alg
	for k in rsa ed; do
		alg=rsa-sha256
		[ $k = ed ] && alg=ed25519-sha256
		echo "*@$DOMAIN $k._domainkey.$DOMAIN" >"$DKIM/$k.signingtable"
		cat >"$DKIM/$k.conf" <<EOF
# Written by bench/postfix-dovecot.sh setup-outbound.
Mode s
Socket local:$DKIM/$k.sock
UMask 000
PidFile $DKIM/$k.pid
UserID opendkim:opendkim
Background yes
Syslog no
Canonicalization relaxed/relaxed
SignatureAlgorithm $alg
KeyTable file:$DKIM/keytable
SigningTable refile:$DKIM/$k.signingtable
OversignHeaders From
EOF
	done
	chown -R opendkim:opendkim "$DKIM"
	chmod 600 "$DKIM"/*.private
	chmod 755 "$DKIM"
}

write_dovecot() {
	mkdir -p "$DC_ETC" "$DC_RUN" "$MAIL"
	id vmail >/dev/null 2>&1 || useradd --system --no-create-home --home-dir "$MAIL" --shell /usr/sbin/nologin vmail
	chown vmail:vmail "$MAIL"
	# An ECDSA P-256 certificate, as mailhost makes for itself, so that a
	# STARTTLS handshake costs both servers the same.
	if [ ! -s "$DC_ETC/cert.pem" ]; then
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
			-subj "/CN=dovecot.bench.local" -keyout "$DC_ETC/key.pem" -out "$DC_ETC/cert.pem" 2>/dev/null
		chmod 600 "$DC_ETC/key.pem"
	fi
	# One hash for every user, made by mailhost's own code.
	if [ ! -s "$DC_ETC/passwd" ] || [ "$(wc -l <"$DC_ETC/passwd")" -ne "$USERS" ]; then
		local hash
		hash=$(cd "$REPO" && go run ./bench/hashpw "$PASSWORD")
		: >"$DC_ETC/passwd"
		for ((i = 0; i < USERS; i++)); do
			echo "user$i@$DOMAIN:{ARGON2ID}$hash" >>"$DC_ETC/passwd"
		done
		chmod 640 "$DC_ETC/passwd"
		chgrp dovecot "$DC_ETC/passwd"
	fi
	cat >"$DC_ETC/dovecot.conf" <<EOF
# Written by bench/postfix-dovecot.sh; rewritten on every setup.
instance_name = mailhost-bench
base_dir = $DC_RUN
state_dir = $STATE/dovecot-state
log_path = $STATE/dovecot.log
protocols = imap lmtp
listen = 127.0.0.1
ssl = yes
ssl_cert = <$DC_ETC/cert.pem
ssl_key = <$DC_ETC/key.pem
# As mailhost: no LOGIN before STARTTLS.
disable_plaintext_auth = yes
auth_mechanisms = plain login
# As mailhost's credential cache: verified passwords kept 10 minutes.
auth_cache_size = 10M
auth_cache_ttl = 10 min
auth_cache_negative_ttl = 0
passdb {
  driver = passwd-file
  args = scheme=ARGON2ID username_format=%u $DC_ETC/passwd
}
userdb {
  driver = static
  args = uid=vmail gid=vmail home=$MAIL/%d/%n
}
mail_location = maildir:~/Maildir
# Defaults kept: mail_fsync = optimized (a delivered message is fsynced
# before LMTP answers 250), one imap process per logged-in session,
# login processes in high-security mode (one per connection).
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = $IMAP_PORT
  }
  inet_listener imaps {
    port = 0
  }
}
service lmtp {
  inet_listener lmtp {
    address = 127.0.0.1
    port = $LMTP_PORT
  }
}
protocol lmtp {
  postmaster_address = postmaster@$DOMAIN
}
# For Postfix's submission (setup-outbound): AUTH checked by Dovecot.
service auth {
  unix_listener auth-postfix {
    mode = 0660
    user = postfix
    group = postfix
  }
}
EOF
	mkdir -p "$STATE/dovecot-state"
	doveconf -c "$DC_ETC/dovecot.conf" -n >/dev/null
}

dns_pid() { cat "$STATE/dnsmasq.pid" 2>/dev/null || true; }
pf_pid() { cat "$PF_QUEUE/pid/master.pid" 2>/dev/null | tr -d ' ' || true; }
dc_pid() { cat "$DC_RUN/master.pid" 2>/dev/null || true; }
out_pid() { cat "$PF_OUT_QUEUE/pid/master.pid" 2>/dev/null | tr -d ' ' || true; }
dkim_pid() { cat "$DKIM/$1.pid" 2>/dev/null || true; }
outbound() { [ -s "$PF_OUT_ETC/main.cf" ]; }
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

start() {
	# The daemons must not inherit our stdout: a caller reading it through
	# a pipe would wait for them forever.
	# One already running rereads its configuration, which setup may
	# just have rewritten.
	if alive "$(pf_pid)"; then
		log "postfix already running, reloading"
		postfix -c "$PF_ETC" reload </dev/null >>"$STATE/postfix.log" 2>&1
	else
		postfix -c "$PF_ETC" start </dev/null >>"$STATE/postfix.log" 2>&1
	fi
	if alive "$(dc_pid)"; then
		log "dovecot already running, reloading"
		doveadm -c "$DC_ETC/dovecot.conf" reload
	else
		dovecot -c "$DC_ETC/dovecot.conf" </dev/null >>"$STATE/dovecot.log" 2>&1
	fi
	if alive "$(dns_pid)"; then log "dnsmasq already running"; else
		# --local=/test/: answer *.test from local data only (there is
		# none: NXDOMAIN); no upstream; 127.0.0.1's PTR from /etc/hosts.
		dnsmasq --port="$DNS_PORT" --listen-address=127.0.0.1 --bind-interfaces --no-resolv \
			--local=/test/ --user=root --pid-file="$STATE/dnsmasq.pid" \
			--log-facility="$STATE/dnsmasq.log" </dev/null >/dev/null 2>&1
	fi
	if outbound; then start_outbound; fi
	# Wait for the listeners.
	for _ in $(seq 50); do
		if (exec 3<>/dev/tcp/127.0.0.1/$SMTP_PORT) 2>/dev/null && (exec 3<>/dev/tcp/127.0.0.1/$IMAP_PORT) 2>/dev/null &&
			{ ! outbound || { (exec 3<>/dev/tcp/127.0.0.1/$SUB_PORT) 2>/dev/null && [ -S "$DKIM/rsa.sock" ] && [ -S "$DKIM/ed.sock" ]; }; }; then
			return
		fi
		sleep 0.1
	done
	log "listeners did not come up; see $STATE/postfix.log, $STATE/postfix-out.log and $STATE/dovecot.log"
	exit 1
}

start_outbound() {
	local k
	for k in rsa ed; do
		if alive "$(dkim_pid $k)"; then log "opendkim ($k) already running"; else
			rm -f "$DKIM/$k.sock"
			opendkim -x "$DKIM/$k.conf" -P "$DKIM/$k.pid" </dev/null >>"$STATE/opendkim.log" 2>&1
		fi
	done
	if alive "$(out_pid)"; then
		log "postfix (submission) already running, reloading"
		postfix -c "$PF_OUT_ETC" reload </dev/null >>"$STATE/postfix-out.log" 2>&1
	else
		postfix -c "$PF_OUT_ETC" start </dev/null >>"$STATE/postfix-out.log" 2>&1
	fi
}

stop_outbound() {
	if alive "$(out_pid)"; then postfix -c "$PF_OUT_ETC" stop </dev/null >>"$STATE/postfix-out.log" 2>&1; fi
	local k
	for k in rsa ed; do
		if alive "$(dkim_pid $k)"; then
			kill "$(dkim_pid $k)"
			for _ in $(seq 50); do alive "$(dkim_pid $k)" || break; sleep 0.1; done
		fi
	done
	return 0
}

stop() {
	stop_outbound
	if alive "$(pf_pid)"; then postfix -c "$PF_ETC" stop </dev/null >>"$STATE/postfix.log" 2>&1; fi
	if alive "$(dc_pid)"; then doveadm -c "$DC_ETC/dovecot.conf" stop; fi
	if alive "$(dns_pid)"; then kill "$(dns_pid)"; fi
	return 0
}

# clean empties every mailbox and the queue so that each run starts alike.
# Dovecot keeps nothing of a maildir open between sessions; Postfix's
# queue is flushed by deleting everything in it.
clean() {
	postsuper -c "$PF_ETC" -d ALL >/dev/null 2>&1 || true
	if outbound; then postsuper -c "$PF_OUT_ETC" -d ALL >/dev/null 2>&1 || true; fi
	rm -rf "${MAIL:?}/$DOMAIN"
	# Let the auth cache go too: every run's first logins should be cold.
	alive "$(dc_pid)" && doveadm -c "$DC_ETC/dovecot.conf" auth cache flush >/dev/null 2>&1 || true
}

status() {
	echo "postfix master: $(pf_pid || echo -)  dovecot master: $(dc_pid || echo -)  dnsmasq: $(dns_pid || echo -)"
	echo "queued: $(find "$PF_QUEUE"/{incoming,active,deferred} -type f 2>/dev/null | wc -l)"
	if outbound; then
		echo "postfix submission master: $(out_pid || echo -)  opendkim: $(dkim_pid rsa || echo -) $(dkim_pid ed || echo -)"
		echo "queued for the sink: $(find "$PF_OUT_QUEUE"/{incoming,active,deferred} -type f 2>/dev/null | wc -l)"
	fi
	echo "stored: $(find "$MAIL" -path '*/Maildir/new/*' -o -path '*/Maildir/cur/*' -type f 2>/dev/null | wc -l)"
}

case "${1:-}" in
setup)
	install_packages
	write_postfix
	write_dovecot
	start
	log "ready: SMTP 127.0.0.1:$SMTP_PORT, IMAP 127.0.0.1:$IMAP_PORT, user0..user$((USERS - 1))@$DOMAIN, DNS 127.0.0.1:$DNS_PORT"
	;;
setup-outbound)
	OUTBOUND=1 install_packages
	write_postfix
	write_dovecot # first: the submission instance uses its certificate
	write_postfix_out
	write_opendkim
	start
	log "ready: submission 127.0.0.1:$SUB_PORT (STARTTLS, AUTH) relaying to 127.0.0.1:$SINK_PORT, OpenDKIM $DKIM/{rsa,ed}.sock"
	;;
outpids) echo "$(out_pid) $(dkim_pid rsa) $(dkim_pid ed) $(dc_pid)" ;;
start) start ;;
stop) stop ;;
clean) clean ;;
pids) echo "$(pf_pid) $(dc_pid)" ;;
status) status ;;
teardown)
	stop
	rm -rf "${STATE:?}"
	log "removed $STATE"
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
