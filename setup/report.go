package setup

import (
	"fmt"
	"io"
	"net"

	"github.com/mailhost/mailhost/mailauth"
)

// writeDNS prints the records to publish, as zone-file lines with their
// purpose: the host name's addresses, then the domain's records as
// GET /domains/{d}/dns gives them, less those only the running server
// can make.
func writeDNS(w io.Writer, a Answers) {
	fmt.Fprintf(w, "\nDNS records to publish (zone-file form; at a DNS provider, the name and the value).\n")
	fmt.Fprintf(w, "\n; The server's own name: its public addresses (put them in).\n")
	fmt.Fprintf(w, "%s. IN A    <this server's IPv4 address>\n", a.Hostname)
	fmt.Fprintf(w, "%s. IN AAAA <this server's IPv6 address, if it has one>\n", a.Hostname)
	fmt.Fprintf(w, "\n; The domain %s, its mail hosted at %s.\n", a.Domain, a.Hostname)
	for _, r := range mailauth.DNSRecords(a.Domain, a.Hostname, nil) {
		fmt.Fprintf(w, "; %s\n%s\n", r.Purpose, r.Zone())
	}
	fmt.Fprintf(w, `
; Not above, made when the domain is created through the API after the
; first start (checklist, step 7): the DKIM public keys
; (<selector>._domainkey.%s) and the ownership proof (TXT
; _mailhost.%s, not needed while the MX record points here).
; GET /domains/%s/dns lists them with all the records above.
`, a.Domain, a.Domain, a.Domain)
}

// writeChecklist prints what setup cannot do: the steps on the machine,
// at the provider and in the API, in the order they are done.
func writeChecklist(w io.Writer, a Answers) {
	api := "http://" + a.API
	if host, port, err := net.SplitHostPort(a.API); err == nil && (host == "" || host == "0.0.0.0" || host == "::") {
		api = "http://127.0.0.1:" + port
	}
	steps := []string{
		fmt.Sprintf("Install the binary: install -m 0755 mailhost %s", a.Binary),
		fmt.Sprintf("Make the service's user and give it the data directory:\n"+
			"   useradd --system --home-dir %s --shell /usr/sbin/nologin mailhost\n"+
			"   chown mailhost:mailhost %s", a.DataDir, a.DataDir),
		fmt.Sprintf("Reverse DNS: at the provider, set the PTR record of each of the server's\n"+
			"   addresses (IPv4 and IPv6) to %s; large receivers refuse mail from\n"+
			"   an address without one, or with one that does not resolve back.", a.Hostname),
		"Outbound port 25: many providers block it until asked (a support ticket);\n" +
			"   without it no mail leaves, unless the relay setting names a smarthost.",
		"Firewall: open TCP 25, 465, 587, 143, 993 and 4190 (mail), 80 (the ACME\n" +
			"   challenge) and 443 (mail client set-up) to the Internet; keep the API's\n" +
			"   port closed to it.",
		"Start it: systemctl daemon-reload && systemctl enable --now mailhost\n" +
			"   then: systemctl status mailhost; journalctl -u mailhost -f",
		fmt.Sprintf("The first start makes a partner and its API key, and the mailbox\n"+
			"   postmaster@%s; the journal says where they are:\n"+
			"   cat %s/initial-api-key                # deleted after its first use: keep it\n"+
			"   cat %s/initial-postmaster-password    # keep it, then delete the file\n"+
			"   Then create the domain and get all its records, DKIM included:\n"+
			"   auth=(-H \"Authorization: Bearer $(cat %s/initial-api-key)\")\n"+
			"   curl -s \"${auth[@]}\" -X POST %s/domains/ -d '{\"name\":\"%s\"}'\n"+
			"   curl -s \"${auth[@]}\" %s/domains/%s/dns",
			a.Hostname, a.DataDir, a.DataDir, a.DataDir, api, a.Domain, api, a.Domain),
	}
	fmt.Fprintf(w, "\nWhat is left to do:\n")
	for i, s := range steps {
		fmt.Fprintf(w, "%d. %s\n", i+1, s)
	}
	fmt.Fprintf(w, "\nMore in docs/operations.md, \"Setting up a production server\".\n")
}
