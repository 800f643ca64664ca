// Package setup prepares a machine to run mailhost in production: it
// writes the configuration file and a hardened systemd unit, makes the
// data directory, and tells the operator which DNS records to publish and
// what is left to do by hand. `mailhost setup` is its command line.
//
// It is a package of its own because its role is neither the server's
// (service runs a configuration) nor the configuration's (config reads
// one): it writes files once, before the first start, and then is done.
//
// It does not open the store. The server makes the store on its first
// start, as the service user, with the default partner, its API key and
// the operator's postmaster mailbox; a store made here, as root, before
// that user exists, would be a second way to make a first store and
// would belong to the wrong user. So the domain's DKIM keys and its
// ownership token, which are made when the domain is created through the
// API, are not printed here: the output says how to create the domain and
// fetch them (GET /domains/{d}/dns) after the first start.
package setup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/mailhost/mailhost/policy"
)

// Defaults of the answers not derived from others.
const (
	DefaultConfigPath = "/etc/mailhost/mailhost.toml"
	DefaultDataDir    = "/var/lib/mailhost"
	DefaultUnitPath   = "/etc/systemd/system/mailhost.service"
	DefaultBinary     = "/usr/local/bin/mailhost"
	// DefaultAPI keeps the management API on loopback: partners' systems
	// reach it through a reverse proxy or a tunnel the operator chooses.
	DefaultAPI = "127.0.0.1:8080"
)

// Answers are what setup needs to know. An empty field is asked for, or,
// with Options.Yes, takes its default; Hostname and Domain have none.
type Answers struct {
	// Hostname is the server's public, fully qualified name: the MX
	// target, the SMTP greeting, the name of its certificate.
	Hostname string
	// Domain is the first hosted domain, whose DNS records are printed.
	Domain string
	// ACMEEmail is the contact the ACME CA is given; default
	// postmaster@Domain.
	ACMEEmail string
	// API is the management API's listen address; default DefaultAPI.
	API string
	// ConfigPath, DataDir, UnitPath and Binary are absolute paths; their
	// defaults are the constants above.
	ConfigPath, DataDir, UnitPath, Binary string
}

// Options are a run's answers and how to get the missing ones.
type Options struct {
	Answers
	// Yes asks nothing: missing answers take their defaults, and a
	// missing host name or domain is an error.
	Yes bool
	// Force replaces an existing configuration file or unit; without
	// it, setup refuses before writing anything.
	Force bool
	// In gives the answers to the questions, one a line; Out gets the
	// questions, what was written and what to do next.
	In  io.Reader
	Out io.Writer
}

// ErrExists is returned, wrapped with the file's name, when a file setup
// would write exists and Options.Force is not set.
var ErrExists = errors.New("exists; setup never overwrites a file without --force")

// maxTries bounds the questions asked again after a wrong answer, so that
// a script feeding wrong answers ends.
const maxTries = 3

// Run asks for the missing answers, writes the files and prints the DNS
// records and the checklist.
func Run(o Options) error {
	a, err := complete(o)
	if err != nil {
		return err
	}
	// Every refusal comes before the first write, so that a refused run
	// leaves nothing half done.
	if !o.Force {
		for _, p := range []string{a.ConfigPath, a.UnitPath} {
			if _, err := os.Lstat(p); err == nil {
				return fmt.Errorf("%s %w", p, ErrExists)
			} else if !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("check %s: %w", p, err)
			}
		}
	}
	if err := os.MkdirAll(a.DataDir, 0o700); err != nil {
		return fmt.Errorf("make the data directory: %w", err)
	}
	// MkdirAll leaves an existing directory's mode as it is; the store
	// and the key files in it are for the service's user alone.
	if err := os.Chmod(a.DataDir, 0o700); err != nil {
		return fmt.Errorf("make the data directory: %w", err)
	}
	// The configuration holds no secret (the ACME contact is public to
	// the CA), and the service's user must read it.
	if err := writeFile(a.ConfigPath, ConfigFile(a), 0o644, o.Force); err != nil {
		return err
	}
	if err := writeFile(a.UnitPath, Unit(a), 0o644, o.Force); err != nil {
		return err
	}
	out := o.Out
	fmt.Fprintf(out, "\nWrote %s and %s; made %s (mode 0700).\n", a.ConfigPath, a.UnitPath, a.DataDir)
	writeDNS(out, a)
	writeChecklist(out, a)
	return nil
}

// complete fills in a's missing answers: asked over o.In, or defaults
// with o.Yes. Answers given in o are checked, never asked again.
func complete(o Options) (Answers, error) {
	a := o.Answers
	in := bufio.NewReader(io.LimitReader(o.In, 1<<20))
	type question struct {
		field  *string
		prompt string
		def    func() string
		check  func(string) (string, error)
	}
	qs := []question{
		{&a.Hostname, "Host name of this server (fully qualified, its MX name, e.g. mx.example.net)", nil, checkHostname},
		{&a.Domain, "First mail domain to host (e.g. example.com)", nil, checkDomain},
		{&a.ACMEEmail, "Contact address for the ACME CA (Let's Encrypt)", func() string { return "postmaster@" + a.Domain }, checkEmail},
		{&a.API, "Listen address of the management API", func() string { return DefaultAPI }, checkAddr},
		{&a.ConfigPath, "Configuration file", func() string { return DefaultConfigPath }, checkPath},
		{&a.DataDir, "Data directory", func() string { return DefaultDataDir }, checkPath},
		{&a.UnitPath, "systemd unit file", func() string { return DefaultUnitPath }, checkPath},
		{&a.Binary, "mailhost binary the unit starts", func() string { return DefaultBinary }, checkPath},
	}
	for _, q := range qs {
		def := ""
		if q.def != nil {
			def = q.def()
		}
		if *q.field != "" || o.Yes {
			v := *q.field
			if v == "" {
				v = def
			}
			if v == "" {
				return a, fmt.Errorf("%s: give it (there is no default)", strings.ToLower(q.prompt[:1])+q.prompt[1:])
			}
			checked, err := q.check(v)
			if err != nil {
				return a, err
			}
			*q.field = checked
			continue
		}
		for try := 1; ; try++ {
			if def != "" {
				fmt.Fprintf(o.Out, "%s [%s]: ", q.prompt, def)
			} else {
				fmt.Fprintf(o.Out, "%s: ", q.prompt)
			}
			line, err := in.ReadString('\n')
			if err != nil && (!errors.Is(err, io.EOF) || line == "") {
				return a, fmt.Errorf("no answer to %q: %w", q.prompt, err)
			}
			v := strings.TrimSpace(line)
			if v == "" {
				v = def
			}
			if v == "" {
				fmt.Fprintln(o.Out, "  an answer is needed")
			} else if checked, err := q.check(v); err != nil {
				fmt.Fprintf(o.Out, "  %v\n", err)
			} else {
				*q.field = checked
				break
			}
			if try == maxTries {
				return a, fmt.Errorf("no valid answer to %q after %d tries", q.prompt, maxTries)
			}
		}
	}
	return a, nil
}

func checkHostname(s string) (string, error) {
	if p := policy.HostnameProblem(s); p != "" {
		return "", errors.New(p)
	}
	return policy.NormalizeDomain(strings.ToLower(strings.TrimSuffix(s, ".")))
}

func checkDomain(s string) (string, error) {
	d, err := policy.NormalizeDomain(strings.TrimSuffix(s, "."))
	if err != nil {
		return "", fmt.Errorf("the domain %q is not a valid domain name", s)
	}
	if d == "localhost" || strings.HasSuffix(d, ".localhost") {
		return "", fmt.Errorf("the domain %q is a loopback name", s)
	}
	return d, nil
}

func checkEmail(s string) (string, error) {
	a, err := policy.NormalizeAddress(s)
	if err != nil {
		return "", fmt.Errorf("the ACME contact %q is not an email address", s)
	}
	return a, nil
}

func checkAddr(s string) (string, error) {
	if _, _, err := net.SplitHostPort(s); err != nil {
		return "", fmt.Errorf("the API address %q is not host:port (e.g. %s)", s, DefaultAPI)
	}
	return s, nil
}

func checkPath(s string) (string, error) {
	// systemd takes absolute paths only, and a relative one in the unit
	// would depend on where setup ran.
	if !filepath.IsAbs(s) {
		return "", fmt.Errorf("the path %q is not absolute", s)
	}
	return filepath.Clean(s), nil
}

// writeFile writes data to path, its parent directories made as needed.
// Without force it never replaces a file, even one made since Run
// checked (O_EXCL); with force the old file is replaced whole (a rename),
// never left half written.
func writeFile(path string, data []byte, mode os.FileMode, force bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("make the directory of %s: %w", path, err)
	}
	name := path
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		name = f.Name()
		f.Close()
		flags = os.O_WRONLY | os.O_TRUNC
	}
	f, err := os.OpenFile(name, flags, mode)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s %w", path, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && force {
		err = os.Rename(name, path)
	}
	if err != nil {
		if force {
			os.Remove(name)
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
