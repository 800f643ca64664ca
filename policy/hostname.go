package policy

import "strings"

// HostnameProblem says why name cannot serve as the server's public host
// name (the MX target, SPF's a: mechanism, the SMTP greeting), or ""
// when it can: it must be a fully qualified domain name, not a short
// system name ("vm") nor "localhost" or a name under it. Names reserved
// for documentation and tests (example.net, .test) pass: they are valid
// names, and test set-ups use them.
func HostnameProblem(name string) string {
	n := strings.ToLower(strings.TrimSuffix(name, "."))
	switch {
	case n == "":
		return "the host name is empty"
	case n == "localhost" || strings.HasSuffix(n, ".localhost") || n == "localhost.localdomain":
		return "the host name " + name + " is a loopback name, not one the Internet can reach"
	case !strings.Contains(n, "."):
		return "the host name " + name + " is not a fully qualified domain name (no dot)"
	}
	if _, err := NormalizeDomain(n); err != nil {
		return "the host name " + name + " is not a valid domain name"
	}
	return ""
}
