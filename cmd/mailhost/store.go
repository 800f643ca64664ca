package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/storecopy"
)

const storeUsage = `Usage:
  mailhost store copy --from DIR_OR_URL --to DIR_OR_URL
  mailhost store verify [-store URL | -data DIR]

A postgres:// or postgresql:// URL names a PostgreSQL database, anything
else a bbolt data directory. verify checks the configured store, as serve
would open it: -store (MAILHOST_STORE) when set, else the bbolt file in
-data (MAILHOST_DATA).
`

// storeCommand runs "mailhost store copy" and "mailhost store verify":
// they work on the store itself, with the server stopped, not through
// its control socket as the other commands do.
func storeCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "copy" && args[0] != "verify") {
		fmt.Fprint(stderr, storeUsage)
		return 2
	}
	cmd := args[0]
	fs := flag.NewFlagSet("mailhost store "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var from, to string
	every := fs.Int64("progress-every", 10000, "a progress line on stderr every so many messages and bodies")
	var flags *config.Flags
	if cmd == "copy" {
		fs.StringVar(&from, "from", "", "the store to copy: a bbolt data directory or a PostgreSQL URL")
		fs.StringVar(&to, "to", "", "the empty store to copy into: a bbolt data directory or a PostgreSQL URL")
	} else {
		flags = config.Register(fs)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 || cmd == "copy" && (from == "" || to == "") {
		fmt.Fprintf(stderr, "mailhost store %s: bad arguments\n\n%s", cmd, storeUsage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if cmd == "copy" {
		rep, err := storecopy.Copy(ctx, from, to, storecopy.Options{Progress: stderr, Every: *every})
		if err != nil {
			fmt.Fprintf(stderr, "mailhost store copy: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, rep)
		return 0
	}
	cfg, err := flags.Load(nil)
	if err != nil {
		fmt.Fprintf(stderr, "mailhost: configuration: %v\n", err)
		return 2
	}
	where := cfg.Store
	if where == "" {
		where = cfg.DataDir
	}
	drift, err := storecopy.Verify(ctx, where)
	if err != nil {
		fmt.Fprintf(stderr, "mailhost store verify: %v\n", err)
		return 1
	}
	for _, d := range drift {
		fmt.Fprintln(stdout, d)
	}
	if len(drift) > 0 {
		fmt.Fprintf(stdout, "%s: %d counters drift from what they count\n", storecopy.Display(where), len(drift))
		return 1
	}
	fmt.Fprintf(stdout, "%s: no drift: every counter matches what it counts (transfer counters count traffic and are not checked)\n", storecopy.Display(where))
	return 0
}
