// Command mailhost is the mailhost server and its operator's command line.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/service"
)

const usage = `mailhost: email hosting for partners, in one binary.

Usage:
  mailhost setup [flags]                 write a production configuration, systemd unit and
                                         data directory; print the DNS records and a checklist
                                         (asks what the flags do not say; -h lists them)
  mailhost serve [flags]                 run the API, SMTP, IMAP and retention
  mailhost version                       print the version, commit and Go release
  mailhost sink [-listen ADDR]           an SMTP server that prints each message it
                                         receives (default 127.0.0.1:2626), to try outbound mail
  mailhost partner create NAME [flags]   make a partner and its first API key (JSON)
  mailhost partner list [flags]          list partners (JSON)
  mailhost partner limits PARTNER -max-domains N [flags]
                                         set a partner's limits (0 = no limit)
  mailhost key create PARTNER [flags]    make another API key for a partner (JSON)
  mailhost key list PARTNER [flags]      list a partner's keys, never their secrets
  mailhost key revoke KEY_ID [flags]     revoke a key
  mailhost retention run [flags]         run one retention pass now and print it
  mailhost queue list [flags]            list the outbound queue (JSON; -limit, -offset)
  mailhost queue flush [flags]           retry every queued message now
  mailhost queue delete ENTRY_ID [flags] drop a queued message for one destination:
                                         no bounce, not sent (JSON: the entry)
  mailhost mailbox password EMAIL [flags]
                                         set a mailbox's password (any partner's; the
                                         operator's postmaster@<hostname> first of all),
                                         read from the first line of stdin
  mailhost store copy --from DIR_OR_URL --to DIR_OR_URL
                                         copy a stopped store into an empty one (bbolt, PostgreSQL)
  mailhost backup FILE [flags]           copy the bbolt store to FILE, also while the server runs
  mailhost store verify [-store URL | -data DIR]
                                         recompute every counter and report drift (exit 1)
  mailhost store compact [-data DIR]     give a stopped bbolt store's free pages back to the disk
  mailhost store stats [-json] [-store URL | -data DIR]
                                         file size, free pages, buckets (bbolt); table sizes (PostgreSQL)

PARTNER is a partner's name or id. Every command takes the configuration
flags (mailhost serve -h lists them) and reads the same environment and
file; the CLI works while the server runs, through its control socket.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// No command is a mistake (exit 2, usage on stderr), as for any
	// other wrong use: a script that forgot its command must not pass.
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if args[0] == "version" || args[0] == "--version" || args[0] == "-version" {
		return versionCommand(stdout)
	}
	if args[0] == "sink" {
		return sinkCommand(args[1:], stdout, stderr)
	}
	if args[0] == "setup" {
		return setupCommand(args[1:], stdin, stdout, stderr)
	}
	if args[0] == "store" {
		return storeCommand(args[1:], stdout, stderr)
	}
	if args[0] == "backup" {
		return backupCommand(args[1:], stdout, stderr)
	}
	cmd, rest := args[0], args[1:]
	if cmd != "serve" && len(rest) > 0 && rest[0] != "" && rest[0][0] != '-' {
		cmd, rest = cmd+" "+rest[0], rest[1:]
	}
	want := map[string]int{
		"serve": 0, "partner create": 1, "partner list": 0, "partner limits": 1, "key create": 1,
		"key list": 1, "key revoke": 1, "retention run": 0,
		"queue list": 0, "queue flush": 0, "queue delete": 1, "mailbox password": 1,
	}
	nargs, ok := want[cmd]
	if !ok {
		fmt.Fprintf(stderr, "mailhost: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	fs := flag.NewFlagSet("mailhost "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	flags := config.Register(fs)
	var page mailstore.Page
	maxDomains := new(int64)
	if cmd == "partner limits" {
		fs.Int64Var(maxDomains, "max-domains", -1, "the most domains the partner may have; 0 = no limit")
	}
	if cmd == "queue list" {
		fs.IntVar(&page.Limit, "limit", 100, "most entries to list")
		fs.IntVar(&page.Offset, "offset", 0, "entries to skip")
	}
	// Positional arguments may come before or after the flags.
	var pos []string
	for len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			return 2
		}
		rest = fs.Args()
		if len(rest) > 0 {
			pos, rest = append(pos, rest[0]), rest[1:]
		}
	}
	if len(pos) != nargs {
		fmt.Fprintf(stderr, "mailhost %s: want %d argument(s), got %d\n\n%s", cmd, nargs, len(pos), usage)
		return 2
	}
	var limits mailstore.PartnerLimits
	if cmd == "partner limits" {
		if *maxDomains < 0 {
			fmt.Fprintf(stderr, "mailhost partner limits: say -max-domains N (0 = no limit)\n")
			return 2
		}
		limits.MaxDomains = maxDomains
	}
	var password string
	if cmd == "mailbox password" {
		var err error
		if password, err = readPassword(stdin); err != nil {
			fmt.Fprintf(stderr, "mailhost mailbox password: %v\n", err)
			return 2
		}
	}
	cfg, err := flags.Load(nil)
	if err != nil {
		fmt.Fprintf(stderr, "mailhost: configuration: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if cmd == "serve" {
		f, isFile := stdout.(*os.File)
		show := !isFile || !service.IsJournal(f)
		err = service.Run(ctx, cfg, service.Options{Stdout: stdout, ShowKey: show, Logger: service.NewLogger(cfg, stderr)})
	} else {
		err = service.WithOperator(ctx, cfg, func(op service.Operator) error {
			return operate(ctx, op, cmd, pos, page, limits, password, stdout)
		})
	}
	if err != nil {
		fmt.Fprintf(stderr, "mailhost %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

func operate(ctx context.Context, op service.Operator, cmd string, pos []string, page mailstore.Page, limits mailstore.PartnerLimits, password string, stdout io.Writer) error {
	var v any
	var err error
	switch cmd {
	case "partner create":
		v, err = op.CreatePartner(ctx, pos[0])
	case "partner list":
		v, err = op.Partners(ctx)
	case "partner limits":
		v, err = op.SetPartnerLimits(ctx, pos[0], limits)
	case "key create":
		v, err = op.CreateKey(ctx, pos[0])
	case "key list":
		v, err = op.Keys(ctx, pos[0])
	case "key revoke":
		id, perr := strconv.ParseInt(pos[0], 10, 64)
		if perr != nil {
			return errors.New("KEY_ID must be a number (see mailhost key list)")
		}
		v, err = op.RevokeKey(ctx, id)
	case "retention run":
		v, err = op.RunRetention(ctx)
	case "queue list":
		v, err = op.Queue(ctx, page)
	case "queue flush":
		v, err = op.FlushQueue(ctx)
	case "queue delete":
		id, perr := strconv.ParseInt(pos[0], 10, 64)
		if perr != nil {
			return errors.New("ENTRY_ID must be a number (see mailhost queue list)")
		}
		v, err = op.DeleteQueued(ctx, id)
	case "mailbox password":
		v, err = op.SetMailboxPassword(ctx, pos[0], password)
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// readPassword reads a password from the first line of r, without its
// line end: a password given as an argument would be in the process
// list and the shell's history.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from stdin: %w", err)
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == "" {
		return "", errors.New("give the password on stdin, one line")
	}
	return line, nil
}
