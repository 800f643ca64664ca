package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/mailhost/mailhost/setup"
)

// setupCommand is `mailhost setup`: its flags are setup.Answers, and the
// answers they leave out are asked on stdin.
func setupCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mailhost setup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o setup.Options
	fs.StringVar(&o.Hostname, "hostname", "", "the server's public, fully qualified name (its MX name, e.g. mx.example.net)")
	fs.StringVar(&o.Domain, "domain", "", "the first mail domain to host, whose DNS records are printed")
	fs.StringVar(&o.ACMEEmail, "acme-email", "", "contact address given to the ACME CA (default postmaster@DOMAIN)")
	fs.StringVar(&o.API, "api", "", "listen address of the management API (default "+setup.DefaultAPI+")")
	fs.StringVar(&o.ConfigPath, "config", "", "configuration file to write (default "+setup.DefaultConfigPath+")")
	fs.StringVar(&o.DataDir, "data", "", "data directory to make (default "+setup.DefaultDataDir+")")
	fs.StringVar(&o.UnitPath, "unit", "", "systemd unit file to write (default "+setup.DefaultUnitPath+")")
	fs.StringVar(&o.Binary, "binary", "", "the mailhost binary the unit starts (default "+setup.DefaultBinary+")")
	fs.BoolVar(&o.Yes, "yes", false, "ask nothing: defaults for what the flags leave out (-hostname and -domain are then required)")
	fs.BoolVar(&o.Force, "force", false, "replace an existing configuration file or unit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mailhost setup: unexpected argument %q (the answers are flags)\n", fs.Arg(0))
		return 2
	}
	o.In, o.Out = stdin, stdout
	if err := setup.Run(o); err != nil {
		fmt.Fprintf(stderr, "mailhost setup: %v\n", err)
		return 1
	}
	return 0
}
