// Command mhprof is `mailhost serve` with profiling: the same
// configuration (flags, MAILHOST_* environment, file) and the same
// service.Run, plus net/http/pprof on -pprof (default 127.0.0.1:36060).
// The server's code is untouched; only this wrapper differs from
// cmd/mailhost, so that a load from mailhost-load can be profiled from
// outside:
//
//	go build -o /tmp/mhprof ./bench/mhprof
//	MAILHOST_DATA=/tmp/d /tmp/mhprof -pprof 127.0.0.1:36060 &
//	go tool pprof -seconds 10 http://127.0.0.1:36060/debug/pprof/profile
//
// -mutexprofile and -blockprofile turn on those profiles (fraction, rate).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/service"
)

func main() {
	fs := flag.NewFlagSet("mhprof", flag.ExitOnError)
	addr := fs.String("pprof", "127.0.0.1:36060", "net/http/pprof listen address")
	mutex := fs.Int("mutexprofile", 0, "runtime.SetMutexProfileFraction (0: off)")
	block := fs.Int("blockprofile", 0, "runtime.SetBlockProfileRate in ns (0: off)")
	flags := config.Register(fs)
	fs.Parse(os.Args[1:])
	cfg, err := flags.Load(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mhprof:", err)
		os.Exit(2)
	}
	runtime.SetMutexProfileFraction(*mutex)
	runtime.SetBlockProfileRate(*block)
	go func() { log.Println(http.ListenAndServe(*addr, nil)) }()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := service.Run(ctx, cfg, service.Options{Stdout: os.Stdout, Logger: service.NewLogger(cfg, os.Stderr)}); err != nil {
		fmt.Fprintln(os.Stderr, "mhprof:", err)
		os.Exit(1)
	}
}
