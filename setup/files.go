package setup

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// ConfigFile is the production mailhost.toml for a: the public mail
// listeners on their standard ports, the API where a says, certificates
// from ACME. config.example.toml documents every setting.
func ConfigFile(a Answers) []byte {
	q := strconv.Quote
	var b strings.Builder
	fmt.Fprintf(&b, `# mailhost production configuration, written by mailhost setup.
# Every setting, with its default and its meaning: config.example.toml and
# docs/configuration.md. Apply a change with: systemctl restart mailhost

# The store (mailhost.db), the control socket the CLI uses, the first
# start's API key and postmaster password. The systemd unit lets the
# service write here and nowhere else.
data = %s

# The server's public name: the MX target of the hosted domains, the SMTP
# greeting, the name of its certificate. It must resolve to this server,
# and the server's addresses must resolve back to it (PTR).
hostname = %s

# The management API, in plain HTTP: keep it off the Internet (loopback,
# or an internal address), and put a reverse proxy with TLS in front of it
# for the partners' systems.
http = %s

# Mail on the standard ports, on every address. Ports under 1024 need
# CAP_NET_BIND_SERVICE, which the systemd unit gives.
smtp        = ":25"     # inbound mail (MX)
submission  = ":587"    # mail clients sending, STARTTLS
submissions = ":465"    # mail clients sending, implicit TLS
imap        = ":143"    # mail clients reading, STARTTLS
imaps       = ":993"    # mail clients reading, implicit TLS
managesieve = ":4190"   # mail clients' filters (Sieve), STARTTLS

# Certificates from Let's Encrypt, for hostname and for the autoconfig.
# and autodiscover. names of each verified domain, renewed without a
# restart. Setting acme accepts the CA's terms of service. The CA checks
# the server on port 80 (HTTP-01), which must be open to the Internet.
acme       = true
acme_email = %s
acme_http  = ":80"

# Thunderbird's and Outlook's automatic account set-up, over TLS with the
# ACME certificates, at autoconfig.<domain> and autodiscover.<domain>
# (the CNAME records mailhost setup printed).
autoconfig_https = ":443"

# What a stolen mailbox password can send: recipients an hour.
send_limit_per_hour = 500
`, q(a.DataDir), q(a.Hostname), q(a.API), q(a.ACMEEmail))
	return []byte(b.String())
}

// Unit is the systemd unit for a: contrib/systemd/mailhost.service with
// a's paths (TestUnitMatchesContrib keeps the two the same).
func Unit(a Answers) []byte {
	state := ""
	if rel, ok := strings.CutPrefix(a.DataDir, "/var/lib/"); ok && rel != "" {
		// systemd makes the directory, owned by the service's user, at
		// each start: nothing to chown by hand.
		state = "StateDirectory=" + rel + "\nStateDirectoryMode=0700\n"
	}
	return []byte(fmt.Sprintf(unitTemplate, filepath.Base(a.UnitPath), a.Binary, a.ConfigPath, state, a.DataDir))
}

// unitTemplate is contrib/systemd/mailhost.service without its install
// notes; the verbs are the unit's name, the binary, the configuration,
// the StateDirectory lines and the data directory.
const unitTemplate = `# %s: mailhost as a systemd service, written by mailhost setup.
# Its hardening is docs/operations.md's, "Running it with systemd".

[Unit]
Description=mailhost mail hosting (API, SMTP, IMAP)
Documentation=file:///usr/local/share/doc/mailhost/README.md
After=network-online.target
Wants=network-online.target
# With the PostgreSQL store on this machine, uncomment:
#After=postgresql.service

[Service]
Type=simple
User=mailhost
Group=mailhost
ExecStart=%s serve -config %s
# SIGTERM stops it gracefully: listeners first, then the queue, then the
# store; sessions get up to 10 s to end.
KillSignal=SIGTERM
TimeoutStopSec=30s
Restart=on-failure
RestartSec=5s
# Mail clients keep IMAP connections open for days: allow many.
LimitNOFILE=65536

%sUMask=0077

# Ports under 1024 (25, 587, 465, 143, 993, 443, 80) without root: the one
# capability the server has, and the only one it can ever get.
AmbientCapabilities=CAP_NET_BIND_SERVICE
CapabilityBoundingSet=CAP_NET_BIND_SERVICE
NoNewPrivileges=yes

# The file system is read-only but for the data directory (the store,
# the certificates, the control socket); /home, /root, devices and
# kernel settings are out of sight.
ProtectSystem=strict
ReadWritePaths=%s
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
ProtectProc=invisible
ProcSubset=pid

# TCP for the listeners, the outbound queue, DNS and PostgreSQL; Unix
# sockets for the control socket (and a local PostgreSQL).
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
MemoryDenyWriteExecute=yes
RemoveIPC=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged
SystemCallErrorNumber=EPERM

[Install]
WantedBy=multi-user.target
`
