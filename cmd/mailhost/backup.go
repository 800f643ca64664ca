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
	"github.com/mailhost/mailhost/service"
)

const backupUsage = `Usage:
  mailhost backup FILE [flags]

Writes a consistent copy of the bbolt store (DATA/mailhost.db) to FILE:
through the running server's control socket without stopping mail, or
from the file when no server runs. FILE appears only once the copy is
whole and synced. To restore: stop the server, copy FILE over
DATA/mailhost.db, start it. With the PostgreSQL store, use pg_dump.
`

// backupCommand runs "mailhost backup FILE".
func backupCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mailhost backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	flags := config.Register(fs)
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		args = fs.Args()
		if len(args) > 0 {
			pos, args = append(pos, args[0]), args[1:]
		}
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, backupUsage)
		return 2
	}
	cfg, err := flags.Load(nil)
	if err != nil {
		fmt.Fprintf(stderr, "mailhost: configuration: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := service.Backup(ctx, cfg, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "mailhost backup: %v\n", err)
		return 1
	}
	how := "from the stopped store's file"
	if res.Live {
		how = "from the running server"
	}
	secs := res.Elapsed.Seconds()
	fmt.Fprintf(stdout, "backup: %s: %d bytes %s in %.1fs (%.0f MB/s)\n", res.File, res.Bytes, how, secs, float64(res.Bytes)/1e6/max(secs, 1e-3))
	return 0
}
