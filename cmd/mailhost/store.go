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
  mailhost store compact [-data DIR]
  mailhost store stats [-json] [-store URL | -data DIR]

A postgres:// or postgresql:// URL names a PostgreSQL database, anything
else a bbolt data directory. verify checks the configured store, as serve
would open it: -store (MAILHOST_STORE) when set, else the bbolt file in
-data (MAILHOST_DATA); so do compact and stats. compact rewrites a bbolt
file without its free pages (the file never shrinks by itself); stats
shows its size, free pages and buckets, or a PostgreSQL database's
table sizes. All need the server stopped when the store is bbolt.
`

// storeCommand runs "mailhost store copy", "verify", "compact" and
// "stats": they work on the store itself, with the server stopped, not
// through its control socket as the other commands do.
func storeCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "copy" && args[0] != "verify" && args[0] != "compact" && args[0] != "stats") {
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
	asJSON := new(bool)
	if cmd == "stats" {
		fs.BoolVar(asJSON, "json", false, "print the statistics as JSON")
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
	switch cmd {
	case "compact":
		return compactStore(ctx, where, stdout, stderr)
	case "stats":
		return storeStats(ctx, where, *asJSON, stdout, stderr)
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
